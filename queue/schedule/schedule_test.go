package schedule_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/queue/schedule"
	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/store/storetest"
)

func TestScheduleValidation(t *testing.T) {
	t.Parallel()
	b := setup(t, storetest.Backends()[0])
	base := schedule.Spec{Name: "ok", Cron: "*/5 * * * *", Task: schedule.Task{Type: "t"}}
	for _, tc := range []struct {
		name string
		edit func(*schedule.Spec)
		want string
	}{
		{"six fields", func(s *schedule.Spec) { s.Cron = "0 */5 * * * *" }, "5 fields"},
		{"garbage", func(s *schedule.Spec) { s.Cron = "every day" }, "5 fields"},
		{"zone inside", func(s *schedule.Spec) { s.Cron = "CRON_TZ=Europe/Berlin 0 9 * * *" }, "--tz"},
		{"every", func(s *schedule.Spec) { s.Cron = "@every 5m" }, "*/5 * * * *"},
		{"zone", func(s *schedule.Spec) { s.Timezone = "Mars/Olympus" }, "IANA"},
		{"name", func(s *schedule.Spec) { s.Name = "a/b" }, "schedule name"},
		{"type", func(s *schedule.Spec) { s.Task.Type = "" }, "task type"},
		{"missed", func(s *schedule.Spec) { s.Missed = "all" }, "catch-up"},
		{"input", func(s *schedule.Spec) { s.Task.Input = json.RawMessage(`{`) }, "not valid JSON"},
		{"priority", func(s *schedule.Spec) { s.Task.Priority = "top" }, "priority"},
		// The rules of a submit (queue.SubmitRequest.Validate): a schedule
		// that every run's submit would refuse is refused at create.
		{"input not UTF-8", func(s *schedule.Spec) { s.Task.Input = json.RawMessage("\"caf\xe9\"") }, "not valid UTF-8"},
		{"timeout", func(s *schedule.Spec) { s.Task.TimeoutSeconds = -1 }, `"timeout_seconds" -1s is below the 1s minimum`},
		{"retries", func(s *schedule.Spec) { s.Task.MaxRetries = new(int); *s.Task.MaxRetries = -1 }, `"max_retries" -1 is negative`},
		{"expiry", func(s *schedule.Spec) { s.Task.ExpiresAfterSeconds = -1 }, `"expires_in" -1s must be positive`},
	} {
		spec := base
		tc.edit(&spec)
		_, err := schedule.Create(b.ctx, b.q, spec)
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
		s, err := schedule.Create(b.ctx, b.q, schedule.Spec{
			Name: "every5", Cron: "*/5 * * * *",
			Task: schedule.Task{Type: "tick", Input: json.RawMessage(`{"n":1}`), Priority: queue.PriorityHigh},
		})
		require.NoError(t, err)
		due := start.Truncate(5 * time.Minute).Add(5 * time.Minute)
		require.Equal(t, due, s.NextDue())
		_, err = schedule.Create(b.ctx, b.q, schedule.Spec{Name: "every5", Cron: "@daily", Task: schedule.Task{Type: "x"}})
		require.ErrorIs(t, err, queue.ErrConflict)

		// Two schedulers at the due time: one task.
		s1, s2 := schedule.NewScheduler(b.q), schedule.NewScheduler(b.q)
		for _, sc := range []*schedule.Scheduler{s1, s2} {
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
		task := b.get(t, r1[0].TaskID)
		require.Equal(t, "tick", task.Type)
		require.Equal(t, queue.PriorityHigh, task.Priority)
		require.Equal(t, schedule.RunKey("every5", due), task.IdempotencyKey)
		// A scheduler that missed the schedule's update still submits nothing new.
		stale := schedule.NewScheduler(b.q)
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
		got, err := schedule.Get(b.ctx, b.q, "every5")
		require.NoError(t, err)
		require.Equal(t, int64(11), got.Skipped)
		require.Equal(t, runs[0].TaskID.String(), got.LastTaskID)

		// Skip policy: the missed run is dropped.
		_, err = schedule.Create(b.ctx, b.q, schedule.Spec{Name: "skipper", Cron: "*/5 * * * *", Missed: schedule.MissedSkip, Task: schedule.Task{Type: "tick"}})
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
		_, err = schedule.SetEnabled(b.ctx, b.q, "every5", false)
		require.NoError(t, err)
		b.clock.Advance(10 * time.Minute)
		for _, r := range s1.RunDue(b.ctx) {
			require.NotEqual(t, "every5", r.Schedule, "a disabled schedule never runs, even from a stale cache")
		}
		en, err := schedule.SetEnabled(b.ctx, b.q, "every5", true)
		require.NoError(t, err)
		require.True(t, en.NextDue().After(b.q.Now()))

		// Trigger: a task now, timing unchanged.
		trig, err := schedule.Trigger(b.ctx, b.q, "every5")
		require.NoError(t, err)
		require.Equal(t, "tick", trig.Type)
		after, err := schedule.Get(b.ctx, b.q, "every5")
		require.NoError(t, err)
		require.Equal(t, trig.ID.String(), after.LastTaskID)
		require.Equal(t, en.NextDue(), after.NextDue())

		// Delete leaves a tombstone; the name can be used again.
		require.NoError(t, schedule.Delete(b.ctx, b.q, "every5"))
		_, err = schedule.Get(b.ctx, b.q, "every5")
		require.ErrorIs(t, err, queue.ErrNotFound)
		list, _, err := schedule.List(b.ctx, b.q)
		require.NoError(t, err)
		require.Len(t, list, 1)
		_, err = schedule.Create(b.ctx, b.q, schedule.Spec{Name: "every5", Cron: "@hourly", Task: schedule.Task{Type: "tick"}})
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
	s, err := schedule.Create(b.ctx, b.q, schedule.Spec{Name: "nine", Cron: "0 9 * * *", Timezone: "Europe/Berlin", Task: schedule.Task{Type: "t"}})
	require.NoError(t, err)
	require.Equal(t, time.Date(2026, 1, 15, 8, 0, 0, 0, time.UTC), s.NextDue(), "09:00 in Berlin is 08:00 UTC in winter")
	require.Equal(t, time.Date(2026, 7, 15, 7, 0, 0, 0, time.UTC), s.Next(time.Date(2026, 7, 14, 12, 0, 0, 0, time.UTC)), "and 07:00 UTC in summer")
}

func TestScheduleMalformedSkipped(t *testing.T) {
	t.Parallel()
	b := setup(t, storetest.Backends()[0])
	_, err := b.raw.Put(b.ctx, queue.ScheduleKey("bad"), []byte(`{"format":1,"name":"bad","cron":"nope"}`), store.Condition{})
	require.NoError(t, err)
	_, err = schedule.Create(b.ctx, b.q, schedule.Spec{Name: "good", Cron: "@daily", Task: schedule.Task{Type: "t"}})
	require.NoError(t, err)
	list, malformed, err := schedule.List(b.ctx, b.q)
	require.NoError(t, err)
	require.Len(t, list, 1)
	require.Len(t, malformed, 1)
	require.Equal(t, queue.ScheduleKey("bad"), malformed[0].Key)
	_, err = schedule.Get(b.ctx, b.q, "bad")
	var m *queue.MalformedError
	require.True(t, errors.As(err, &m))
	require.False(t, errors.Is(err, queue.ErrInvalidInput), "a bad object is not the caller's bad input")
}

// bundle is a queue on a test clock, over one of the test stores.
type bundle struct {
	ctx   context.Context
	q     *queue.Queue
	raw   store.Store
	clock *storetest.Clock
}

func setup(t *testing.T, be storetest.Backend) *bundle {
	t.Helper()
	raw := be.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	clock := storetest.NewClock(time.Now().UTC().Truncate(time.Second))
	_, err := queue.InitWithOptions(ctx, raw, queue.InitOptions{ShardChars: 1})
	require.NoError(t, err)
	q, err := queue.Open(ctx, raw, queue.Options{Clock: clock})
	require.NoError(t, err)
	return &bundle{ctx: ctx, q: q, raw: raw, clock: clock}
}

// keys lists the keys under prefix.
func (b *bundle) keys(t *testing.T, prefix string) []string {
	t.Helper()
	var out []string
	token := ""
	for {
		p, err := b.raw.List(b.ctx, store.ListParams{Prefix: prefix, Token: token})
		require.NoError(t, err)
		for _, o := range p.Objects {
			out = append(out, o.Key)
		}
		if p.NextToken == "" {
			return out
		}
		token = p.NextToken
	}
}

func (b *bundle) get(t *testing.T, id uuid.UUID) *queue.Task {
	t.Helper()
	got, err := b.q.Get(b.ctx, id)
	require.NoError(t, err)
	return got
}
