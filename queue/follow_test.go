package queue_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/store/memstore"
	"github.com/qo-queue/qo/store/storetest"
)

// seenEvent is what a test checks of an event.
type seenEvent struct {
	Name    string
	ID      uuid.UUID
	Type    string
	Worker  string
	Attempt int
	Missed  int64
}

func seenOf(evs []queue.Event) []seenEvent {
	out := []seenEvent{}
	for _, e := range evs {
		out = append(out, seenEvent{e.Name, e.TaskID, e.Type, e.WorkerID, e.Attempt, e.Missed})
	}
	return out
}

func poll(t *testing.T, b *bundle, f *queue.Follower) []queue.Event {
	t.Helper()
	evs, err := f.Poll(b.ctx)
	require.NoError(t, err)
	return evs
}

// TestFollowQueue follows the whole queue through its indexes while tasks
// are submitted, claimed, finished, retried and cancelled one step at a
// time, with a poll after each step.
func TestFollowQueue(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		b := setup(t, be)
		b.submit(t, "old", `{}`) // there before following: never reported

		f := b.q.NewFollower(queue.FollowOptions{})
		require.Empty(t, poll(t, b, f), "the first poll records the indexes")
		pending, running := f.Counts()
		require.Equal(t, [2]int{1, 0}, [2]int{pending, running})

		// An idle queue costs 2 LISTs a poll and nothing else.
		before := b.counts()
		require.Empty(t, poll(t, b, f))
		requireCounts(t, "idle poll", before, b.counts(), map[store.Op]int64{store.OpList: 2})

		one := func(want seenEvent) queue.Event {
			t.Helper()
			evs := poll(t, b, f)
			require.Equal(t, []seenEvent{want}, seenOf(evs))
			return evs[0]
		}
		a := b.submit(t, "resize", `{"w":1}`)
		one(seenEvent{"enqueued", a.ID, "resize", "", 0, 0})
		la := b.claim(t, a, "w7")
		one(seenEvent{"claimed", a.ID, "resize", "w7", 1, 0})
		_, err := b.q.Complete(b.ctx, la, json.RawMessage(`{"ok":1}`))
		require.NoError(t, err)
		ev := one(seenEvent{"succeeded", a.ID, "resize", "w7", 1, 0})
		require.Equal(t, queue.StatusCompleted, ev.Status)
		require.JSONEq(t, `{"ok":1}`, string(ev.Task.Output))

		retries := 1
		m, _, err := b.q.Submit(b.ctx, queue.SubmitRequest{Type: "mail", MaxRetries: &retries})
		require.NoError(t, err)
		one(seenEvent{"enqueued", m.ID, "mail", "", 0, 0})
		lm := b.claim(t, m, "w8")
		one(seenEvent{"claimed", m.ID, "mail", "w8", 1, 0})
		_, err = b.q.Retry(b.ctx, lm, "smtp down", time.Hour)
		require.NoError(t, err)
		ev = one(seenEvent{"retried", m.ID, "mail", "w8", 1, 0})
		require.Equal(t, "smtp down", ev.Task.LastError)
		_, err = b.q.Cancel(b.ctx, m.ID, "give up")
		require.NoError(t, err)
		one(seenEvent{"cancelled", m.ID, "mail", "", 1, 0})

		// Writes between two polls coalesce into the latest, counted.
		c := b.submit(t, "resize", `{}`)
		one(seenEvent{"enqueued", c.ID, "resize", "", 0, 0})
		lc := b.claim(t, c, "w9")
		_, err = b.q.Complete(b.ctx, lc, nil)
		require.NoError(t, err)
		one(seenEvent{"succeeded", c.ID, "resize", "w9", 1, 1})

		// A task created since the last poll reports the writes it missed.
		d := b.submit(t, "resize", `{}`)
		b.claim(t, d, "w9")
		one(seenEvent{"claimed", d.ID, "resize", "w9", 1, 1})

		require.Empty(t, poll(t, b, f), "nothing new")
	})
}

// A submit the listing meets halfway (its ready entry written, its task
// not yet: index entries come first) is reported once the task is
// written, not missed; an entry whose task never appears is read no more
// once IndexGrace old.
func TestFollowQueueSeesSubmitMetHalfway(t *testing.T) {
	t.Parallel()
	b := setup(t, storetest.Backends()[0])
	f := b.q.NewFollower(queue.FollowOptions{})
	require.Empty(t, poll(t, b, f))

	// The entry of a task about to be written.
	task := b.submit(t, "resize", `{}`)
	obj, err := b.raw.Get(b.ctx, task.Key())
	require.NoError(t, err)
	require.NoError(t, b.raw.Delete(b.ctx, task.Key(), store.Condition{}))
	require.Empty(t, poll(t, b, f), "the task is not written yet")
	require.Empty(t, poll(t, b, f), "still not")
	_, err = b.raw.Put(b.ctx, task.Key(), obj.Body, store.Condition{})
	require.NoError(t, err)
	require.Equal(t, []seenEvent{{"enqueued", task.ID, "resize", "", 0, 0}}, seenOf(poll(t, b, f)))

	// An entry whose task never appears: given up once IndexGrace old.
	stray := queue.NewIDAt(b.q.Now())
	key := queue.ReadyKey(&queue.Task{ID: stray, Type: "resize", Shard: queue.ShardOf(stray, 1), Priority: queue.PriorityNormal, AvailableAt: b.q.Now()})
	_, err = b.raw.Put(b.ctx, key, nil, store.Condition{})
	require.NoError(t, err)
	gets := func() int64 {
		before := b.counts()
		require.Empty(t, poll(t, b, f))
		return b.counts().Sub(before).Total(store.OpGet)
	}
	require.Positive(t, gets(), "read while it may be a submit halfway")
	b.clock.Advance(queue.IndexGrace)
	require.Positive(t, gets(), "the last read")
	require.Zero(t, gets(), "given up")
}

// TestFollowTasks follows two tasks by id: their history first, then each
// new version, until both ended.
func TestFollowTasks(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		b := setup(t, be)
		retries := 2
		a, _, err := b.q.Submit(b.ctx, queue.SubmitRequest{Type: "resize", Input: json.RawMessage(`{"w":1}`), MaxRetries: &retries})
		require.NoError(t, err)
		m := b.submit(t, "mail", `{}`)
		lm := b.claim(t, m, "w2") // before following: part of m's history

		f := b.q.NewFollower(queue.FollowOptions{IDs: []uuid.UUID{a.ID, m.ID, a.ID}})
		require.ElementsMatch(t, []seenEvent{
			{"enqueued", a.ID, "resize", "", 0, 0}, {"enqueued", m.ID, "mail", "", 0, 0}, {"claimed", m.ID, "mail", "w2", 1, 0},
		}, seenOf(poll(t, b, f)))
		require.False(t, f.Done())

		var got []seenEvent
		var evs []queue.Event
		step := func() {
			e := poll(t, b, f)
			got = append(got, seenOf(e)...)
			evs = append(evs, e...)
		}
		la := b.claim(t, a, "w1")
		step()
		require.NoError(t, b.q.Extend(b.ctx, la))
		step()
		_, err = b.q.Retry(b.ctx, la, "try again", time.Millisecond)
		require.NoError(t, err)
		step()
		_, err = b.q.Fail(b.ctx, lm, "broken")
		require.NoError(t, err)
		step()
		require.False(t, f.Done())
		_, err = b.q.Cancel(b.ctx, a.ID, "")
		require.NoError(t, err)
		step()
		require.True(t, f.Done())
		require.Equal(t, []seenEvent{
			{"claimed", a.ID, "resize", "w1", 1, 0},
			{"lease_extended", a.ID, "resize", "w1", 1, 0},
			{"retried", a.ID, "resize", "w1", 1, 0},
			{"failed", m.ID, "mail", "w2", 1, 0},
			{"cancelled", a.ID, "resize", "", 1, 0},
		}, got)
		require.Equal(t, "try again", evs[2].Task.LastError)
		require.Equal(t, "broken", evs[3].Task.LastError)
		require.Equal(t, queue.StatusCancelled, evs[4].Status)
	})
}

// TestFollowFillsGaps: several writes between two polls are all reported,
// from the task's history; without versioning the gap is counted instead.
func TestFollowFillsGaps(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		b := setup(t, be)
		task := b.submit(t, "t", `{}`)
		f := b.q.NewFollower(queue.FollowOptions{IDs: []uuid.UUID{task.ID}, NewOnly: true})
		require.Empty(t, poll(t, b, f))
		l := b.claim(t, task, "w1")
		require.NoError(t, b.q.Extend(b.ctx, l))
		_, err := b.q.Complete(b.ctx, l, nil)
		require.NoError(t, err)
		require.Equal(t, []seenEvent{
			{"claimed", task.ID, "t", "w1", 1, 0},
			{"lease_extended", task.ID, "t", "w1", 1, 0},
			{"succeeded", task.ID, "t", "w1", 1, 0},
		}, seenOf(poll(t, b, f)))
		require.Empty(t, poll(t, b, f), "nothing new")
		require.True(t, f.Done())

		// A task whose object is deleted is reported once.
		require.NoError(t, b.raw.Delete(b.ctx, b.q.TaskKey(task.ID), store.Condition{}))
		evs := poll(t, b, f)
		require.Equal(t, []seenEvent{{queue.EventDeleted, task.ID, "t", "", 1, 0}}, seenOf(evs))
		require.Equal(t, int64(4), evs[0].Rev)
		require.Empty(t, poll(t, b, f))
	})

	t.Run("unversioned", func(t *testing.T) {
		t.Parallel()
		s := memstore.New(memstore.WithoutVersioning())
		ctx := t.Context()
		// A store without Admin: Init cannot turn versioning on.
		_, err := queue.Init(ctx, struct{ store.Store }{s}, 1)
		require.NoError(t, err)
		q, err := queue.Open(ctx, s, queue.Options{})
		require.NoError(t, err)
		b := &bundle{ctx: ctx, q: q}
		task := b.submit(t, "t", `{}`)
		f := q.NewFollower(queue.FollowOptions{IDs: []uuid.UUID{task.ID}, NewOnly: true})
		require.Empty(t, poll(t, b, f))
		l := b.claim(t, task, "w1")
		_, err = q.Complete(ctx, l, nil)
		require.NoError(t, err)
		require.Equal(t, []seenEvent{{"succeeded", task.ID, "t", "w1", 1, 1}}, seenOf(poll(t, b, f)))
	})
}

// TestFollowNamesEventsAsHistory: following a task, polled after every
// write, reports exactly the events its history lists, and the whole-queue
// follower names every write it sees the same way.
func TestFollowNamesEventsAsHistory(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		b := setup(t, be)
		retries := 1
		task, _, err := b.q.Submit(b.ctx, queue.SubmitRequest{Type: "t", MaxRetries: &retries})
		require.NoError(t, err)
		byID := b.q.NewFollower(queue.FollowOptions{IDs: []uuid.UUID{task.ID}})
		whole := b.q.NewFollower(queue.FollowOptions{})
		require.Empty(t, poll(t, b, whole))
		followed := poll(t, b, byID)
		var seen []queue.Event
		write := func(fn func()) {
			t.Helper()
			fn()
			followed = append(followed, poll(t, b, byID)...)
			seen = append(seen, poll(t, b, whole)...)
		}
		cur := func() *queue.Task { return b.get(t, task) }
		var l *queue.Lease
		write(func() { l = b.claim(t, cur(), "w1") })
		write(func() { require.NoError(t, b.q.Extend(b.ctx, l)) })
		write(func() { _, err = b.q.Cancel(b.ctx, task.ID, "stop"); require.NoError(t, err) })
		write(func() { require.ErrorIs(t, b.q.Extend(b.ctx, l), queue.ErrCancelRequested) })
		write(func() { _, err = b.q.AckCancel(b.ctx, l); require.NoError(t, err) })
		write(func() { _, err = b.q.Replay(b.ctx, task.ID); require.NoError(t, err) })
		write(func() { l = b.claim(t, cur(), "w2") })
		write(func() { _, err = b.q.Retry(b.ctx, l, "again", time.Hour); require.NoError(t, err) })
		write(func() { _, err = b.q.RequeueNow(b.ctx, task.ID); require.NoError(t, err) })
		write(func() { l = b.claim(t, cur(), "w3") })
		write(func() { _, err = b.q.Fail(b.ctx, l, "broken"); require.NoError(t, err) })
		write(func() { _, err = b.q.Archive(b.ctx, task.ID); require.NoError(t, err) })

		history, err := b.q.History(b.ctx, task.ID)
		require.NoError(t, err)
		type named struct {
			Name, Worker string
			Rev          int64
			Status       queue.Status
		}
		strip := func(evs []queue.Event) []named {
			var out []named
			for _, e := range evs {
				out = append(out, named{e.Name, e.WorkerID, e.Rev, e.Status})
			}
			return out
		}
		require.Equal(t, strip(history), strip(followed))
		var names []string
		for _, e := range history {
			names = append(names, e.Name)
		}
		require.Equal(t, []string{"enqueued", "claimed", "lease_extended", "cancel_requested", "lease_extended", "cancelled", "replayed",
			"claimed", "retried", "requeued", "claimed", "failed", "archived"}, names)
		// The whole queue sees the writes that change an index entry, under
		// the same names.
		byRev := map[int64]named{}
		for _, e := range strip(history) {
			byRev[e.Rev] = e
		}
		require.NotEmpty(t, seen)
		for _, e := range strip(seen) {
			require.Equal(t, byRev[e.Rev], e)
		}
	})
}

// TestFollow runs the loop: its ends, its callbacks and its first poll's
// errors.
func TestFollow(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		b := setup(t, be)
		done := b.submit(t, "t", `{}`)
		_, err := b.q.Cancel(b.ctx, done.ID, "")
		require.NoError(t, err)
		open := b.submit(t, "t", `{}`)
		missing := uuid.Must(uuid.NewV7())

		tests := []struct {
			name     string
			opt      queue.FollowOptions
			fn       func(context.CancelFunc, queue.Event) error
			wantErr  error
			wantSeen []string
		}{
			{name: "until done", opt: queue.FollowOptions{IDs: []uuid.UUID{done.ID}, UntilDone: true},
				wantSeen: []string{"enqueued", "cancelled"}},
			{name: "stop", opt: queue.FollowOptions{IDs: []uuid.UUID{done.ID, open.ID}},
				fn:       func(context.CancelFunc, queue.Event) error { return queue.ErrStopFollowing },
				wantSeen: []string{"enqueued"}},
			{name: "callback error", opt: queue.FollowOptions{IDs: []uuid.UUID{open.ID}},
				fn:       func(context.CancelFunc, queue.Event) error { return errBoom },
				wantErr:  errBoom,
				wantSeen: []string{"enqueued"}},
			{name: "context ends", opt: queue.FollowOptions{IDs: []uuid.UUID{open.ID}},
				fn:       func(cancel context.CancelFunc, _ queue.Event) error { cancel(); return nil },
				wantSeen: []string{"enqueued"}},
			{name: "missing task", opt: queue.FollowOptions{IDs: []uuid.UUID{open.ID, missing}},
				wantErr: queue.ErrNotFound},
			{name: "missing task, new only", opt: queue.FollowOptions{IDs: []uuid.UUID{missing}, NewOnly: true},
				wantErr: queue.ErrNotFound},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				ctx, cancel := context.WithCancel(b.ctx)
				defer cancel()
				tc.opt.Interval = time.Millisecond
				var seen []string
				err := b.q.Follow(ctx, tc.opt, func(ev queue.Event) error {
					seen = append(seen, ev.Name)
					if tc.fn != nil {
						return tc.fn(cancel, ev)
					}
					return nil
				})
				if tc.wantErr != nil {
					require.ErrorIs(t, err, tc.wantErr)
				} else {
					require.NoError(t, err)
				}
				if errors.Is(err, queue.ErrNotFound) {
					var te *queue.TaskError
					require.ErrorAs(t, err, &te)
					require.Equal(t, missing, te.ID)
				}
				require.Equal(t, tc.wantSeen, seen)
			})
		}

		t.Run("whole queue", func(t *testing.T) {
			var started [2]int
			var polls int
			var task *queue.Task
			err := b.q.Follow(b.ctx, queue.FollowOptions{Interval: time.Millisecond,
				OnStart: func(pending, running int) {
					started = [2]int{pending, running}
					task = b.submit(t, "new", `{}`) // a write after the first poll
				},
				OnPoll: func(err error) {
					require.NoError(t, err)
					polls++
				},
			}, func(ev queue.Event) error {
				require.Equal(t, "enqueued", ev.Name)
				require.Equal(t, task.ID, ev.TaskID)
				return queue.ErrStopFollowing
			})
			require.NoError(t, err)
			require.Equal(t, [2]int{1, 0}, started, "the open task")
			require.Equal(t, 2, polls)
		})
	})
}

var errBoom = errors.New("boom")
