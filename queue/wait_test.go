package queue_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/store/memstore"
	"github.com/qo-queue/qo/store/storetest"
)

// ended builds one task of every ending, archived or not.
type ended struct {
	completed, failed, cancelled, expired                                 *queue.Task
	archivedCompleted, archivedFailed, archivedCancelled, archivedExpired *queue.Task
	pending                                                               *queue.Task
}

func (b *bundle) completeWith(t *testing.T, task *queue.Task, output string) *queue.Task {
	t.Helper()
	done, err := b.q.Complete(b.ctx, b.claim(t, task, "w1"), json.RawMessage(output))
	require.NoError(t, err)
	return done
}

func (b *bundle) failWith(t *testing.T, task *queue.Task, why string) *queue.Task {
	t.Helper()
	done, err := b.q.Fail(b.ctx, b.claim(t, task, "w1"), why)
	require.NoError(t, err)
	return done
}

func (b *bundle) archive(t *testing.T, task *queue.Task) *queue.Task {
	t.Helper()
	got, err := b.q.Archive(b.ctx, task.ID)
	require.NoError(t, err)
	return got
}

func (b *bundle) cancel(t *testing.T, task *queue.Task) *queue.Task {
	t.Helper()
	got, err := b.q.Cancel(b.ctx, task.ID, "not needed")
	require.NoError(t, err)
	return got
}

func buildEnded(t *testing.T, b *bundle) ended {
	var e ended
	e.completed = b.completeWith(t, b.submit(t, "t", `{"n":1}`), `{"ok":true}`)
	e.failed = b.failWith(t, b.submit(t, "t", `{}`), "disk full")
	e.cancelled = b.cancel(t, b.submit(t, "t", `{}`))
	e.expired = b.expired(t, "t")
	e.archivedCompleted = b.archive(t, b.completeWith(t, b.submit(t, "t", `{}`), `1`))
	e.archivedFailed = b.archive(t, b.failWith(t, b.submit(t, "t", `{}`), "bad input"))
	e.archivedCancelled = b.archive(t, b.cancel(t, b.submit(t, "t", `{}`)))
	e.archivedExpired = b.archive(t, b.expired(t, "t"))
	e.pending = b.submit(t, "t", `{}`)
	return e
}

func TestOutcomeOf(t *testing.T) {
	t.Parallel()
	check := func(t *testing.T, b *bundle, e ended) {
		tests := []struct {
			task *queue.Task
			want queue.Outcome
		}{
			{e.completed, queue.OutcomeCompleted},
			{e.failed, queue.OutcomeFailed},
			{e.cancelled, queue.OutcomeCancelled},
			{e.expired, queue.OutcomeExpired},
			{e.archivedCompleted, queue.OutcomeCompleted},
			{e.archivedFailed, queue.OutcomeFailed},
			{e.archivedCancelled, queue.OutcomeCancelled},
			{e.archivedExpired, queue.OutcomeExpired},
			{e.pending, queue.OutcomeUnfinished},
		}
		for _, tc := range tests {
			require.Equal(t, tc.want, b.q.OutcomeOf(b.ctx, tc.task), "%s task", tc.task.Status)
		}
	}
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		b := setup(t, be)
		e := buildEnded(t, b)
		check(t, b, e)
		// An archived task says what it was archived from.
		before := b.counts()
		require.Equal(t, queue.OutcomeFailed, b.q.OutcomeOf(b.ctx, e.archivedFailed))
		requireCounts(t, "outcome of an archived task", before, b.counts(), map[store.Op]int64{})
		// One archived before archived_from existed reads its history from
		// the newest version back to the one it was archived from (here 3
		// GETs: the rewrite that removed the field is one version more).
		old := b.unarchiveFrom(t, e.archivedFailed)
		before = b.counts()
		require.Equal(t, queue.OutcomeFailed, b.q.OutcomeOf(b.ctx, old))
		requireCounts(t, "outcome of a task archived before archived_from", before, b.counts(),
			map[store.Op]int64{store.OpListVersions: 1, store.OpGet: 3})
	})
	t.Run("unversioned", func(t *testing.T) {
		// Without versions the fields the archive kept tell.
		t.Parallel()
		s := memstore.New(memstore.WithoutVersioning())
		ctx := t.Context()
		_, err := queue.Init(ctx, struct{ store.Store }{s}, 1)
		require.NoError(t, err)
		clock := newFakeClock()
		q, err := queue.Open(ctx, s, queue.Options{Clock: clock})
		require.NoError(t, err)
		b := &bundle{ctx: ctx, q: q, raw: s, clock: clock}
		e := buildEnded(t, b)
		check(t, b, e)
		// Archived before archived_from existed, and no history to read.
		for _, a := range []**queue.Task{&e.archivedCompleted, &e.archivedFailed, &e.archivedCancelled, &e.archivedExpired} {
			*a = b.unarchiveFrom(t, *a)
		}
		check(t, b, e)
	})
}

func ids(tasks ...*queue.Task) []uuid.UUID {
	out := make([]uuid.UUID, len(tasks))
	for i, t := range tasks {
		out[i] = t.ID
	}
	return out
}

func outcomes(rs []queue.WaitResult) []queue.Outcome {
	out := make([]queue.Outcome, len(rs))
	for i, r := range rs {
		out[i] = r.Outcome
	}
	return out
}

func TestWait(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		b := setup(t, be)
		e := buildEnded(t, b)
		missing := uuid.Must(uuid.NewV7())
		fast := queue.WaitOptions{Interval: time.Millisecond, MaxInterval: 2 * time.Millisecond}
		with := func(fn func(*queue.WaitOptions)) queue.WaitOptions {
			o := fast
			fn(&o)
			return o
		}
		tests := []struct {
			name    string
			ids     []uuid.UUID
			opt     queue.WaitOptions
			want    []queue.Outcome
			wantErr error
		}{
			{"every ending", ids(e.completed, e.failed, e.cancelled, e.expired, e.archivedCompleted, e.archivedFailed), fast,
				[]queue.Outcome{"completed", "failed", "cancelled", "expired", "completed", "failed"}, nil},
			{"a repeated id", ids(e.completed, e.failed, e.completed), fast,
				[]queue.Outcome{"completed", "failed", "completed"}, nil},
			{"timeout", ids(e.completed, e.pending), with(func(o *queue.WaitOptions) { o.Timeout = 20 * time.Millisecond }),
				[]queue.Outcome{"completed", "unfinished"}, queue.ErrWaitTimeout},
			{"fail fast", ids(e.pending, e.failed), with(func(o *queue.WaitOptions) { o.FailFast = true }),
				[]queue.Outcome{"unfinished", "failed"}, nil},
			{"missing task", ids(e.completed, &queue.Task{ID: missing}), fast,
				[]queue.Outcome{"unfinished", "unfinished"}, queue.ErrNotFound},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				var done []uuid.UUID
				tc.opt.OnDone = func(r queue.WaitResult) { done = append(done, r.ID) }
				rs, err := b.q.Wait(b.ctx, tc.ids, tc.opt)
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
				require.Equal(t, tc.want, outcomes(rs))
				var ended []uuid.UUID
				seen := map[uuid.UUID]bool{}
				for i, r := range rs {
					require.Equal(t, tc.ids[i], r.ID)
					if r.Outcome != queue.OutcomeUnfinished && !seen[r.ID] {
						seen[r.ID] = true
						ended = append(ended, r.ID)
						require.NotNil(t, r.Task)
					}
				}
				require.Equal(t, ended, done, "OnDone once per ended task, in order")
			})
		}

		// The output of a task that ended is there.
		rs, err := b.q.Wait(b.ctx, ids(e.completed), fast)
		require.NoError(t, err)
		require.JSONEq(t, `{"ok":true}`, string(rs[0].Task.Output))
		// A pending task is reported as it stands.
		rs, err = b.q.Wait(b.ctx, ids(e.pending), with(func(o *queue.WaitOptions) { o.Timeout = time.Millisecond }))
		require.ErrorIs(t, err, queue.ErrWaitTimeout)
		require.Equal(t, queue.StatusPending, rs[0].Task.Status)
		// The end of ctx.
		ctx, cancel := context.WithCancel(b.ctx)
		cancel()
		_, err = b.q.Wait(ctx, ids(e.pending), fast)
		require.ErrorIs(t, err, context.Canceled)
	})
}

// TestWaitBlocksUntilDone: Wait keeps polling a running task and returns
// once it completes; an offloaded output is loaded in.
func TestWaitBlocksUntilDone(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		b := setup(t, be)
		a := b.submit(t, "t", `{}`)
		c := b.completeWith(t, b.submit(t, "t", `{}`), `{}`)
		lease := b.claim(t, a, "w1")

		finished := make(chan queue.WaitResult, 2)
		type waited struct {
			rs  []queue.WaitResult
			err error
		}
		res := make(chan waited, 1)
		go func() {
			rs, err := b.q.Wait(b.ctx, ids(a, c), queue.WaitOptions{Interval: time.Millisecond, MaxInterval: 5 * time.Millisecond,
				OnDone: func(r queue.WaitResult) { finished <- r }})
			res <- waited{rs, err}
		}()
		// c ends in the first round, which saw a running.
		require.Equal(t, c.ID, (<-finished).ID)
		big := `{"blob":"` + strings.Repeat("x", 300<<10) + `"}`
		_, err := b.q.Complete(b.ctx, lease, json.RawMessage(big))
		require.NoError(t, err)
		r := <-finished
		require.Equal(t, a.ID, r.ID)
		got := <-res
		require.NoError(t, got.err)
		require.Equal(t, []queue.Outcome{"completed", "completed"}, outcomes(got.rs))
		require.NotNil(t, got.rs[0].Task.OutputRef, "stored in its own object")
		require.JSONEq(t, big, string(got.rs[0].Task.Output), "and loaded in")
	})
}

// TestWaitWorkflow waits for every step of a workflow.
func TestWaitWorkflow(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		b := setup(t, be)
		spec := decodeFlow(t, `{"name":"etl","steps":[{"name":"extract","type":"x"},{"name":"load","type":"y","after":["extract"]}]}`)
		w, _, err := b.q.Workflows().Submit(b.ctx, spec)
		require.NoError(t, err)
		got, err := b.q.Workflows().Get(b.ctx, "etl")
		require.NoError(t, err)
		require.Equal(t, []uuid.UUID{w.Steps[0].TaskID, w.Steps[1].TaskID}, got.TaskIDs())
		_, err = b.q.Workflows().Cancel(b.ctx, "etl", "stop")
		require.NoError(t, err)
		rs, err := b.q.Wait(b.ctx, got.TaskIDs(), queue.WaitOptions{})
		require.NoError(t, err)
		require.Equal(t, []queue.Outcome{"cancelled", "cancelled"}, outcomes(rs))
		for i, r := range rs {
			require.Equal(t, w.Steps[i].Name, r.Task.Workflow.Step)
		}
	})
}
