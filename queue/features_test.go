package queue_test

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/store/storetest"
)

func (b *bundle) submitReq(t *testing.T, req queue.SubmitRequest) *queue.Task {
	t.Helper()
	task, created, err := b.q.Submit(b.ctx, req)
	require.NoError(t, err)
	require.True(t, created)
	return task
}

func TestPriorityOrder(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		b := setup(t, be)
		now := b.q.Now()
		// Submitted oldest first: low, normal, high, all available now.
		low := b.submitReq(t, queue.SubmitRequest{Type: "p", Priority: queue.PriorityLow})
		b.clock.Advance(time.Second)
		normal := b.submitReq(t, queue.SubmitRequest{Type: "p"})
		b.clock.Advance(time.Second)
		high := b.submitReq(t, queue.SubmitRequest{Type: "p", Priority: queue.PriorityHigh})
		// Not available yet, whatever its priority: never listed.
		b.submitReq(t, queue.SubmitRequest{Type: "p", Priority: queue.PriorityHigh, AvailableAt: now.Add(time.Hour)})

		// Entries come partition by partition (shard by shard), each in rank
		// order; the rank orders them across shards (workers claim a page
		// by priority).
		es := b.readyEntries(t, queue.ReadyQuery{})
		byRank := func(es []queue.ReadyEntry) []queue.ReadyEntry {
			slices.SortStableFunc(es, func(a, b queue.ReadyEntry) int { return a.Rank.Compare(b.Rank) })
			return es
		}
		var got []uuid.UUID
		for _, e := range byRank(es) {
			got = append(got, e.ID)
		}
		require.Equal(t, []uuid.UUID{high.ID, normal.ID, low.ID}, got, "high first, low last, the delayed task not at all")
		require.Equal(t, queue.PriorityLow, es[2].Priority)
		require.Equal(t, low.AvailableAt, es[2].AvailableAt, "a low task is claimable as soon as it is available")

		// No starvation: a low task that has waited more than two steps
		// goes ahead of a high task submitted now.
		b.clock.Advance(2*queue.PriorityStep + time.Minute)
		late := b.submitReq(t, queue.SubmitRequest{Type: "p", Priority: queue.PriorityHigh})
		es = byRank(b.readyEntries(t, queue.ReadyQuery{}))
		require.Equal(t, late.ID, es[len(es)-1].ID, "the new high task ranks after tasks that waited longer than 2 x PriorityStep")

		// The priority survives a retry.
		l := b.claim(t, high, "w1")
		next, err := b.q.Retry(b.ctx, l, "again", time.Millisecond)
		require.NoError(t, err)
		require.Equal(t, queue.PriorityHigh, next.Priority)

		_, _, err = b.q.Submit(b.ctx, queue.SubmitRequest{Type: "p", Priority: "urgent"})
		require.ErrorIs(t, err, queue.ErrInvalidInput)
		require.Contains(t, err.Error(), "high, normal, low")
	})
}

func TestExpiry(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		b := setup(t, be)
		now := b.q.Now()

		// A task started in time runs normally.
		ok := b.submitReq(t, queue.SubmitRequest{Type: "e", ExpiresAt: now.Add(time.Minute)})
		l := b.claim(t, ok, "w1")
		require.Equal(t, queue.StatusRunning, l.Task.Status)

		// A claim after the deadline expires the task instead of running it.
		exp := b.expired(t, "e")
		require.Equal(t, queue.EventExpired, exp.LastEvent)
		require.Zero(t, exp.Attempt, "an expired task never ran")
		require.NotContains(t, b.keys(t, queue.ReadyPrefix), queue.ReadyKey(exp), "its ready entry is gone")

		// The sweeper expires tasks no worker looks at (a paused type).
		idle := b.submitReq(t, queue.SubmitRequest{Type: "nobody", ExpiresAt: b.q.Now().Add(time.Second)})
		b.clock.Advance(2 * time.Second)
		res, _, err := b.q.Sweep(b.ctx, "", 0, 0)
		require.NoError(t, err)
		require.Equal(t, 1, res.Expired)
		require.Equal(t, queue.StatusExpired, b.get(t, idle).Status)

		// Replay runs it after all: the passed deadline is cleared.
		re, err := b.q.Replay(b.ctx, exp.ID)
		require.NoError(t, err)
		require.Equal(t, queue.StatusPending, re.Status)
		require.Nil(t, re.ExpiresAt)
		b.claim(t, re, "w1")
		_, err = b.q.Archive(b.ctx, idle.ID)
		require.NoError(t, err)

		// A deadline at or before availability can never be met.
		_, _, err = b.q.Submit(b.ctx, queue.SubmitRequest{Type: "e", AvailableAt: now.Add(time.Hour), ExpiresAt: now.Add(time.Minute)})
		require.ErrorIs(t, err, queue.ErrInvalidInput)
		require.Contains(t, err.Error(), "could never run")
	})
}

func TestPayloadOffload(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		b := setup(t, be)
		q, err := queue.Open(b.ctx, b.s, queue.Options{Clock: b.clock, OffloadThreshold: 64})
		require.NoError(t, err)
		big := json.RawMessage(`{"blob":"` + strings.Repeat("x", 200) + `"}`)

		// Small inputs stay inline.
		small, _, err := q.Submit(b.ctx, queue.SubmitRequest{Type: "o", Input: json.RawMessage(`{"a":1}`)})
		require.NoError(t, err)
		require.Nil(t, small.InputRef)

		before := b.counts()
		task, created, err := q.Submit(b.ctx, queue.SubmitRequest{Type: "o", Input: big, IdempotencyKey: "k1"})
		require.NoError(t, err)
		require.True(t, created)
		requireCounts(t, "offloaded keyed submit", before, b.counts(), map[store.Op]int64{store.OpPut: 4}) // marker, input, entry, task
		require.Nil(t, task.Input)
		require.NotNil(t, task.InputRef)
		require.Equal(t, queue.DataKey(task.Shard, task.ID, "input"), task.InputRef.Key)
		require.Equal(t, int64(len(big)), task.InputRef.Bytes)

		stored := b.get(t, task)
		require.Nil(t, stored.Input, "the task object does not carry the payload")
		in, err := q.LoadInput(b.ctx, stored)
		require.NoError(t, err)
		require.JSONEq(t, string(big), string(in))

		// A repeated submit is a duplicate, not a mismatch; another input
		// with the same key is refused and leaves the stored input alone.
		_, created, err = q.Submit(b.ctx, queue.SubmitRequest{Type: "o", Input: big, IdempotencyKey: "k1"})
		require.NoError(t, err)
		require.False(t, created)
		other := json.RawMessage(`{"blob":"` + strings.Repeat("y", 200) + `"}`)
		_, _, err = q.Submit(b.ctx, queue.SubmitRequest{Type: "o", Input: other, IdempotencyKey: "k1"})
		require.ErrorIs(t, err, queue.ErrIdempotencyMismatch)
		in, err = q.LoadInput(b.ctx, b.get(t, task))
		require.NoError(t, err)
		require.JSONEq(t, string(big), string(in))

		// A large output is offloaded by Complete and loaded back.
		l, err := q.Claim(b.ctx, readyEntryOf(task), "w1")
		require.NoError(t, err)
		done, err := q.Complete(b.ctx, l, big)
		require.NoError(t, err)
		require.Nil(t, done.Output)
		require.NotNil(t, done.OutputRef)
		full, err := q.WithPayloads(b.ctx, b.get(t, task))
		require.NoError(t, err)
		require.JSONEq(t, string(big), string(full.Input))
		require.JSONEq(t, string(big), string(full.Output))

		// An overwritten payload is reported, never handed out as the task's.
		_, err = b.raw.Put(b.ctx, done.OutputRef.Key, []byte(`{"tampered":true}`), store.Condition{})
		require.NoError(t, err)
		if done.OutputRef.VersionID == "" {
			_, err = q.LoadOutput(b.ctx, done)
			var m *queue.MalformedError
			require.ErrorAs(t, err, &m)
		} else {
			out, err := q.LoadOutput(b.ctx, done)
			require.NoError(t, err, "the reference pins the version written")
			require.JSONEq(t, string(big), string(out))
		}
	})
}

func TestPauseControl(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		b := setup(t, be)
		c, err := b.q.Control(b.ctx)
		require.NoError(t, err)
		require.False(t, c.IsPaused("a"), "a queue never paused has no control object")

		// Concurrent pauses of different types all land (compare-and-swap).
		var wg sync.WaitGroup
		for _, typ := range []string{"a", "b", "c", "d"} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := b.q.Pause(b.ctx, typ, "reason "+typ)
				require.NoError(t, err)
			}()
		}
		wg.Wait()
		c, err = b.q.Control(b.ctx)
		require.NoError(t, err)
		require.Equal(t, []string{"a", "b", "c", "d"}, c.PausedTypes())
		require.Equal(t, "reason b", c.Types["b"].Reason)
		require.False(t, c.IsPaused("e"))

		c, err = b.q.Pause(b.ctx, "", "maintenance")
		require.NoError(t, err)
		require.True(t, c.IsPaused("e"))
		c, err = b.q.Resume(b.ctx, "")
		require.NoError(t, err)
		require.False(t, c.IsPaused("e"))
		require.True(t, c.IsPaused("a"), "resuming the queue leaves types paused by name")
		c, err = b.q.Resume(b.ctx, "a")
		require.NoError(t, err)
		require.False(t, c.IsPaused("a"))

		// Repeating a change writes nothing.
		before := b.counts()
		_, err = b.q.Resume(b.ctx, "a")
		require.NoError(t, err)
		require.Zero(t, b.counts().Sub(before).Total(store.OpPut))

		_, err = b.q.Pause(b.ctx, "bad type", "")
		require.ErrorIs(t, err, queue.ErrInvalidInput)
	})
}

func TestScheduleValidation(t *testing.T) {
	t.Parallel()
	b := setup(t, storetest.Backends()[0])
	base := queue.ScheduleSpec{Name: "ok", Cron: "*/5 * * * *", Task: queue.ScheduleTask{Type: "t"}}
	for _, tc := range []struct {
		name string
		edit func(*queue.ScheduleSpec)
		want string
	}{
		{"six fields", func(s *queue.ScheduleSpec) { s.Cron = "0 */5 * * * *" }, "5 fields"},
		{"garbage", func(s *queue.ScheduleSpec) { s.Cron = "every day" }, "5 fields"},
		{"zone inside", func(s *queue.ScheduleSpec) { s.Cron = "CRON_TZ=Europe/Berlin 0 9 * * *" }, "--tz"},
		{"every", func(s *queue.ScheduleSpec) { s.Cron = "@every 5m" }, "*/5 * * * *"},
		{"zone", func(s *queue.ScheduleSpec) { s.Timezone = "Mars/Olympus" }, "IANA"},
		{"name", func(s *queue.ScheduleSpec) { s.Name = "a/b" }, "schedule name"},
		{"type", func(s *queue.ScheduleSpec) { s.Task.Type = "" }, "task type"},
		{"missed", func(s *queue.ScheduleSpec) { s.Missed = "all" }, "catch-up"},
		{"input", func(s *queue.ScheduleSpec) { s.Task.Input = json.RawMessage(`{`) }, "not valid JSON"},
		{"priority", func(s *queue.ScheduleSpec) { s.Task.Priority = "top" }, "priority"},
	} {
		spec := base
		tc.edit(&spec)
		_, err := b.q.CreateSchedule(b.ctx, spec)
		require.ErrorIs(t, err, queue.ErrInvalidInput, tc.name)
		require.Contains(t, err.Error(), tc.want, tc.name)
	}
	require.Empty(t, b.keys(t, queue.SchedulesPrefix), "nothing written for bad input")
}

func TestSchedules(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		b := setup(t, be)
		// Start just after a 5-minute boundary.
		start := b.q.Now().Truncate(5 * time.Minute).Add(5*time.Minute + time.Second)
		b.clock.Set(start)
		s, err := b.q.CreateSchedule(b.ctx, queue.ScheduleSpec{
			Name: "every5", Cron: "*/5 * * * *",
			Task: queue.ScheduleTask{Type: "tick", Input: json.RawMessage(`{"n":1}`), Priority: queue.PriorityHigh},
		})
		require.NoError(t, err)
		due := start.Truncate(5 * time.Minute).Add(5 * time.Minute)
		require.Equal(t, due, s.NextDue())
		_, err = b.q.CreateSchedule(b.ctx, queue.ScheduleSpec{Name: "every5", Cron: "@daily", Task: queue.ScheduleTask{Type: "x"}})
		require.ErrorIs(t, err, queue.ErrConflict)

		// Two schedulers at the due time: one task.
		s1, s2 := b.q.NewScheduler(), b.q.NewScheduler()
		for _, sc := range []*queue.Scheduler{s1, s2} {
			_, err := sc.Refresh(b.ctx)
			require.NoError(t, err)
			require.Empty(t, sc.RunDue(b.ctx), "nothing due yet")
		}
		b.clock.Set(due.Add(3 * time.Second))
		r1 := s1.RunDue(b.ctx)
		r2 := s2.RunDue(b.ctx)
		require.Len(t, r1, 1)
		require.NoError(t, r1[0].Err)
		require.True(t, r1[0].Created)
		require.False(t, r1[0].Late)
		require.Empty(t, r2, "the second scheduler sees the run recorded")
		task := b.get(t, &queue.Task{ID: r1[0].TaskID, Shard: b.q.ShardOf(r1[0].TaskID)})
		require.Equal(t, "tick", task.Type)
		require.Equal(t, queue.PriorityHigh, task.Priority)
		require.Equal(t, queue.ScheduleRunKey("every5", due), task.IdempotencyKey)
		// A scheduler that missed the schedule's update still submits nothing new.
		stale := b.q.NewScheduler()
		_, err = stale.Refresh(b.ctx)
		require.NoError(t, err)
		require.Empty(t, stale.RunDue(b.ctx))

		// Downtime of an hour, catch-up (default): one task for the latest
		// missed due time, the others counted as skipped.
		b.clock.Set(due.Add(time.Hour + 3*time.Minute))
		runs := s1.RunDue(b.ctx)
		require.Len(t, runs, 1)
		require.True(t, runs[0].Late)
		require.Equal(t, due.Add(time.Hour), runs[0].Due)
		require.Equal(t, 11, runs[0].Skipped)
		require.True(t, runs[0].Created)
		got, err := b.q.GetSchedule(b.ctx, "every5")
		require.NoError(t, err)
		require.Equal(t, int64(11), got.Skipped)
		require.Equal(t, runs[0].TaskID.String(), got.LastTaskID)

		// Skip policy: the missed run is dropped.
		_, err = b.q.CreateSchedule(b.ctx, queue.ScheduleSpec{Name: "skipper", Cron: "*/5 * * * *", Missed: queue.MissedSkip, Task: queue.ScheduleTask{Type: "tick"}})
		require.NoError(t, err)
		_, err = s1.Refresh(b.ctx)
		require.NoError(t, err)
		b.clock.Advance(time.Hour)
		runs = s1.RunDue(b.ctx)
		require.Len(t, runs, 2)
		for _, r := range runs {
			if r.Schedule == "skipper" {
				require.Equal(t, uuid.Nil, r.TaskID)
				require.True(t, r.Late)
			}
		}

		// Disabled: nothing; enabling starts from now.
		_, err = b.q.SetScheduleEnabled(b.ctx, "every5", false)
		require.NoError(t, err)
		b.clock.Advance(10 * time.Minute)
		for _, r := range s1.RunDue(b.ctx) {
			require.NotEqual(t, "every5", r.Schedule, "a disabled schedule never runs, even from a stale cache")
		}
		en, err := b.q.SetScheduleEnabled(b.ctx, "every5", true)
		require.NoError(t, err)
		require.True(t, en.NextDue().After(b.q.Now()))

		// Trigger: a task now, timing unchanged.
		trig, err := b.q.TriggerSchedule(b.ctx, "every5")
		require.NoError(t, err)
		require.Equal(t, "tick", trig.Type)
		after, err := b.q.GetSchedule(b.ctx, "every5")
		require.NoError(t, err)
		require.Equal(t, trig.ID.String(), after.LastTaskID)
		require.Equal(t, en.NextDue(), after.NextDue())

		// Delete leaves a tombstone; the name can be used again.
		require.NoError(t, b.q.DeleteSchedule(b.ctx, "every5"))
		_, err = b.q.GetSchedule(b.ctx, "every5")
		require.ErrorIs(t, err, queue.ErrNotFound)
		list, _, err := b.q.ListSchedules(b.ctx)
		require.NoError(t, err)
		require.Len(t, list, 1)
		_, err = b.q.CreateSchedule(b.ctx, queue.ScheduleSpec{Name: "every5", Cron: "@hourly", Task: queue.ScheduleTask{Type: "tick"}})
		require.NoError(t, err)
		for _, r := range s1.RunDue(b.ctx) {
			require.NotEqual(t, "every5", r.Schedule, "a deleted schedule never runs from a stale cache")
		}
	})
}

func TestScheduleTimezone(t *testing.T) {
	t.Parallel()
	b := setup(t, storetest.Backends()[0])
	b.clock.Set(time.Date(2026, 1, 14, 12, 0, 0, 0, time.UTC))
	s, err := b.q.CreateSchedule(b.ctx, queue.ScheduleSpec{Name: "nine", Cron: "0 9 * * *", Timezone: "Europe/Berlin", Task: queue.ScheduleTask{Type: "t"}})
	require.NoError(t, err)
	require.Equal(t, time.Date(2026, 1, 15, 8, 0, 0, 0, time.UTC), s.NextDue(), "09:00 in Berlin is 08:00 UTC in winter")
	require.Equal(t, time.Date(2026, 7, 15, 7, 0, 0, 0, time.UTC), s.Next(time.Date(2026, 7, 14, 12, 0, 0, 0, time.UTC)), "and 07:00 UTC in summer")
}

func TestScheduleMalformedSkipped(t *testing.T) {
	t.Parallel()
	b := setup(t, storetest.Backends()[0])
	_, err := b.raw.Put(b.ctx, queue.ScheduleKey("bad"), []byte(`{"format":1,"name":"bad","cron":"nope"}`), store.Condition{})
	require.NoError(t, err)
	_, err = b.q.CreateSchedule(b.ctx, queue.ScheduleSpec{Name: "good", Cron: "@daily", Task: queue.ScheduleTask{Type: "t"}})
	require.NoError(t, err)
	list, malformed, err := b.q.ListSchedules(b.ctx)
	require.NoError(t, err)
	require.Len(t, list, 1)
	require.Len(t, malformed, 1)
	require.Equal(t, queue.ScheduleKey("bad"), malformed[0].Key)
	_, err = b.q.GetSchedule(b.ctx, "bad")
	var m *queue.MalformedError
	require.True(t, errors.As(err, &m))
	require.False(t, errors.Is(err, queue.ErrInvalidInput), "a bad object is not the caller's bad input")
}

// TestStaleOutputNeverReplacesWinner: an offloaded output is written under
// its attempt's own key, so a worker that lost its lease cannot replace
// the output of the attempt that completed the task (on an unversioned
// bucket it would be lost), and its own orphan is removed.
func TestStaleOutputNeverReplacesWinner(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		b := setup(t, be)
		q, err := queue.Open(b.ctx, b.s, queue.Options{Clock: b.clock, OffloadThreshold: 64})
		require.NoError(t, err)
		task, _, err := q.Submit(b.ctx, queue.SubmitRequest{Type: "o", Timeout: time.Second})
		require.NoError(t, err)
		stale, err := q.Claim(b.ctx, readyEntryOf(task), "w1")
		require.NoError(t, err)

		// w1's lease runs out; the task is taken back and claimed by w2.
		b.clock.Advance(time.Minute)
		exp, _, err := q.ListExpired(b.ctx, 0, "")
		require.NoError(t, err)
		require.Len(t, exp, 1)
		_, err = q.ExpireLease(b.ctx, exp[0])
		require.NoError(t, err)
		b.clock.Advance(time.Hour) // past the retry's backoff
		winner, err := q.Claim(b.ctx, readyEntryOf(b.get(t, task)), "w2")
		require.NoError(t, err)

		won := json.RawMessage(`{"by":"w2","blob":"` + strings.Repeat("a", 200) + `"}`)
		late := json.RawMessage(`{"by":"w1","blob":"` + strings.Repeat("b", 200) + `"}`)
		done, err := q.Complete(b.ctx, winner, won)
		require.NoError(t, err)
		require.NotNil(t, done.OutputRef)
		_, err = q.Complete(b.ctx, stale, late)
		require.ErrorIs(t, err, queue.ErrLeaseLost)

		obj, err := b.raw.Get(b.ctx, done.OutputRef.Key)
		require.NoError(t, err)
		require.JSONEq(t, string(won), string(obj.Body), "the winner's output object is untouched")
		out, err := q.LoadOutput(b.ctx, b.get(t, task))
		require.NoError(t, err)
		require.JSONEq(t, string(won), string(out))
		require.Equal(t, []string{done.OutputRef.Key}, b.keys(t, queue.DataPrefix), "the stale attempt's output is removed")
	})
}
