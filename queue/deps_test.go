package queue_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/store/storetest"
)

// after submits a task of type typ that runs after parents.
func (b *bundle) after(t *testing.T, typ string, policy queue.ParentFailure, parents ...*queue.Task) *queue.Task {
	t.Helper()
	ids := make([]uuid.UUID, len(parents))
	for i, p := range parents {
		ids[i] = p.ID
	}
	task, created, err := b.q.Submit(b.ctx, queue.SubmitRequest{Type: typ, After: ids, OnParentFailure: policy})
	require.NoError(t, err)
	require.True(t, created)
	return task
}

// complete claims and completes task.
func (b *bundle) complete(t *testing.T, task *queue.Task) {
	t.Helper()
	_, err := b.q.Complete(b.ctx, b.claim(t, task, "w1"), json.RawMessage(`{"ok":true}`))
	require.NoError(t, err)
}

// fail claims task and fails it for good.
func (b *bundle) fail(t *testing.T, task *queue.Task) {
	t.Helper()
	_, err := b.q.Fail(b.ctx, b.claim(t, task, "w1"), "boom")
	require.NoError(t, err)
}

// events returns the events of task's history, oldest first.
func (b *bundle) events(t *testing.T, task *queue.Task) []string {
	t.Helper()
	h, err := b.q.History(b.ctx, task.ID)
	require.NoError(t, err)
	var out []string
	for _, e := range h {
		out = append(out, e.Name)
	}
	return out
}

// requireIndexed checks that task has exactly the index entries its
// status needs among the ready and waiting indexes.
func (b *bundle) requireIndexed(t *testing.T, task *queue.Task) {
	t.Helper()
	got := b.get(t, task)
	var have []string
	for _, k := range append(b.keys(t, queue.ReadyPrefix), b.keys(t, queue.WaitingPrefix)...) {
		if e, err := queue.ParseReadyKey(k); err == nil && e.ID == got.ID {
			have = append(have, k)
		}
		if _, id, err := queue.ParseWaitingKey(k); err == nil && id == got.ID {
			have = append(have, k)
		}
	}
	var want []string
	for _, k := range queue.IndexKeys(got) {
		if k[:len(queue.ReadyPrefix)] == queue.ReadyPrefix || k[:len(queue.WaitingPrefix)] == queue.WaitingPrefix {
			want = append(want, k)
		}
	}
	require.ElementsMatch(t, want, have, "index entries of %s task %s", got.Status, got.ID)
}

func TestChildRunsAfterItsParent(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		b := setup(t, be)
		a := b.submit(t, "extract", `{}`)
		child := b.after(t, "load", "", a)
		require.Equal(t, queue.StatusWaiting, child.Status)
		b.requireIndexed(t, child)
		require.Equal(t, []uuid.UUID{child.ID}, b.get(t, a).Children, "the parent knows its child")
		require.Empty(t, b.readyEntries(t, queue.ReadyQuery{Types: []string{"load"}}), "a waiting task is never claimable")

		// The parent's completion releases the child: per edge one GET and
		// one PUT of the child, its ready entry, and the waiting entry's
		// removal. Nothing is listed.
		l := b.claim(t, a, "w1")
		before := b.counts()
		_, err := b.q.Complete(b.ctx, l, nil)
		require.NoError(t, err)
		requireCounts(t, "complete with one child", before, b.counts(), map[store.Op]int64{
			store.OpPut: 1 + 2, store.OpDelete: 1 + 1, store.OpGet: 1,
		})
		got := b.get(t, child)
		require.Equal(t, queue.StatusPending, got.Status)
		require.Equal(t, []queue.Parent{{ID: a.ID, Done: queue.StatusCompleted}}, got.Parents)
		b.requireIndexed(t, got)
		require.Equal(t, []string{queue.EventEnqueued, queue.EventReleased}, b.events(t, child))
		require.Equal(t, []string{queue.EventEnqueued, queue.EventChildAdded, queue.EventClaimed, queue.EventSucceeded}, b.events(t, a))
	})
}

func TestChildOfFinishedParents(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		b := setup(t, be)
		done := b.submit(t, "a", `{}`)
		b.complete(t, done)
		failed := b.submit(t, "a", `{}`)
		b.fail(t, failed)

		// A parent that completed long ago: the child is pending at once,
		// and the parent is not written.
		before := b.counts()
		child := b.after(t, "b", "", done)
		require.Equal(t, queue.StatusPending, child.Status)
		require.Zero(t, b.counts().Sub(before).Total(store.OpList))
		require.Empty(t, b.get(t, done).Children)

		tests := []struct {
			policy queue.ParentFailure
			want   queue.Status
		}{
			{"", queue.StatusCancelled},
			{queue.ParentFailureCancel, queue.StatusCancelled},
			{queue.ParentFailureFail, queue.StatusFailed},
			{queue.ParentFailureRun, queue.StatusPending},
		}
		for _, tt := range tests {
			got := b.get(t, b.after(t, "b", tt.policy, done, failed))
			require.Equal(t, tt.want, got.Status, "policy %q with a failed parent", tt.policy)
			b.requireIndexed(t, got)
			if tt.want != queue.StatusPending {
				reason := got.CancelReason + got.LastError
				require.Contains(t, reason, failed.ID.String(), "the reason names the parent")
			}
		}
	})
}

func TestParentFailurePolicies(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		b := setup(t, be)
		tests := []struct {
			policy   queue.ParentFailure
			want     queue.Status
			deadDiff int
		}{
			{"", queue.StatusCancelled, 0},
			{queue.ParentFailureFail, queue.StatusFailed, 1},
			{queue.ParentFailureRun, queue.StatusPending, 0},
		}
		for _, tt := range tests {
			p := b.submit(t, "p", `{}`)
			c := b.after(t, "c", tt.policy, p)
			dead := len(b.keys(t, queue.DeadPrefix))
			b.fail(t, p)
			got := b.get(t, c)
			require.Equal(t, tt.want, got.Status, "policy %q", tt.policy)
			require.Equal(t, dead+1+tt.deadDiff, len(b.keys(t, queue.DeadPrefix)), "dead letters: the parent, and the child when it fails")
			b.requireIndexed(t, got)
		}
	})
}

// Two parents finishing at once release their child exactly once.
func TestFanInReleasesOnce(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		b := setup(t, be)
		const n = 8
		parents := make([]*queue.Task, n)
		for i := range parents {
			parents[i] = b.submit(t, "p", `{}`)
		}
		child := b.after(t, "c", "", parents...)
		leases := make([]*queue.Lease, n)
		for i, p := range parents {
			leases[i] = b.claim(t, p, "w1")
		}
		var wg sync.WaitGroup
		for _, l := range leases {
			wg.Go(func() {
				_, err := b.q.Complete(b.ctx, l, nil)
				require.NoError(t, err)
			})
		}
		wg.Wait()
		got := b.get(t, child)
		require.Equal(t, queue.StatusPending, got.Status)
		ev := b.events(t, child)
		released := 0
		for _, e := range ev {
			if e == queue.EventReleased {
				released++
			}
		}
		require.Equal(t, 1, released, "history %v", ev)
		require.Len(t, ev, 1+n, "enqueued, n-1 parent_done, released: %v", ev)
		b.requireIndexed(t, got)
	})
}

// A chain runs level by level; cancelling a waiting task cancels what waits
// for it.
func TestChainAndCascade(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		b := setup(t, be)
		a := b.submit(t, "a", `{}`)
		bb := b.after(t, "b", "", a)
		c := b.after(t, "c", "", bb)
		b.complete(t, a)
		require.Equal(t, queue.StatusPending, b.get(t, bb).Status)
		require.Equal(t, queue.StatusWaiting, b.get(t, c).Status)
		b.complete(t, b.get(t, bb))
		require.Equal(t, queue.StatusPending, b.get(t, c).Status)

		x := b.submit(t, "x", `{}`)
		y := b.after(t, "y", "", x)
		z := b.after(t, "z", "", y)
		_, err := b.q.Cancel(b.ctx, y.ID, "not needed")
		require.NoError(t, err)
		require.Equal(t, queue.StatusCancelled, b.get(t, y).Status)
		gz := b.get(t, z)
		require.Equal(t, queue.StatusCancelled, gz.Status)
		require.Contains(t, gz.CancelReason, y.ID.String())
		b.requireIndexed(t, gz)
	})
}

// Replaying a failed parent lets the children it cancelled wait again, and
// run when it completes.
func TestReplayedParentLetsChildrenGoOn(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		b := setup(t, be)
		p := b.submit(t, "p", `{}`)
		c := b.after(t, "c", "", p)
		d := b.after(t, "d", "", c)
		b.fail(t, p)
		require.Equal(t, queue.StatusCancelled, b.get(t, c).Status)
		require.Equal(t, queue.StatusCancelled, b.get(t, d).Status)

		// Replaying the child alone: its parent still failed, so it is
		// cancelled again at once.
		got, err := b.q.Replay(b.ctx, c.ID)
		require.NoError(t, err)
		require.Equal(t, queue.StatusCancelled, got.Status)

		_, err = b.q.Replay(b.ctx, p.ID)
		require.NoError(t, err)
		require.Equal(t, queue.StatusWaiting, b.get(t, c).Status)
		require.Equal(t, queue.StatusWaiting, b.get(t, d).Status)
		b.complete(t, b.get(t, p))
		require.Equal(t, queue.StatusPending, b.get(t, c).Status)
		b.requireIndexed(t, b.get(t, c))
		b.requireIndexed(t, b.get(t, d))
	})
}

// A child submitted while its parent runs: the holder's completion is
// re-applied over the child_added write and releases the child.
func TestChildOfRunningParent(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		b := setup(t, be)
		p := b.submit(t, "p", `{}`)
		l := b.claim(t, p, "w1")
		c := b.after(t, "c", "", p)
		_, err := b.q.Complete(b.ctx, l, nil)
		require.NoError(t, err)
		require.Equal(t, queue.StatusCompleted, b.get(t, p).Status)
		require.Equal(t, queue.StatusPending, b.get(t, c).Status)
	})
}

func TestAfterRefusesBadParents(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		b := setup(t, be)
		p := b.submit(t, "p", `{}`)
		tests := []struct {
			name string
			req  queue.SubmitRequest
			want string
		}{
			{"unknown", queue.SubmitRequest{Type: "c", After: []uuid.UUID{queue.NewID()}}, "no such task in this queue"},
			{"twice", queue.SubmitRequest{Type: "c", After: []uuid.UUID{p.ID, p.ID}}, "listed twice"},
			{"nil", queue.SubmitRequest{Type: "c", After: []uuid.UUID{uuid.Nil}}, "nil UUID"},
			{"policy", queue.SubmitRequest{Type: "c", After: []uuid.UUID{p.ID}, OnParentFailure: "ignore"}, "want cancel, fail or run"},
			{"policy without parents", queue.SubmitRequest{Type: "c", OnParentFailure: queue.ParentFailureRun}, `"on_parent_failure" needs "after"`},
			{"too many", queue.SubmitRequest{Type: "c", After: make([]uuid.UUID, queue.MaxParents+1)}, "at most"},
		}
		for _, tt := range tests {
			before := b.counts()
			_, _, err := b.q.Submit(b.ctx, tt.req)
			require.ErrorIs(t, err, queue.ErrInvalidInput, tt.name)
			require.ErrorContains(t, err, tt.want, tt.name)
			d := b.counts().Sub(before)
			require.Zero(t, d.Total(store.OpPut)+d.Total(store.OpDelete), "%s wrote", tt.name)
		}
	})
}

// A submit that died before telling its parent leaves a waiting task the
// parent does not know; its end is still recorded, by the same submit
// repeated with its idempotency key or by the sweeper.
func TestHalfSubmittedChildIsRepaired(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		for _, repair := range []string{"resubmit", "sweep"} {
			b := setup(t, be)
			p := b.submit(t, "p", `{}`)
			// The parent's child_added write fails: the child exists and waits.
			b.s.set(func(f *faultStore) { f.failPut = func(key string) bool { return key == p.Key() } })
			req := queue.SubmitRequest{Type: "c", After: []uuid.UUID{p.ID}, IdempotencyKey: "c-1"}
			c, created, err := b.q.Submit(b.ctx, req)
			require.Error(t, err)
			require.True(t, created)
			b.s.set(func(f *faultStore) { f.failPut = nil })
			require.Equal(t, queue.StatusWaiting, b.get(t, c).Status)
			require.Empty(t, b.get(t, p).Children)
			b.complete(t, b.get(t, p))
			require.Equal(t, queue.StatusWaiting, b.get(t, c).Status, "nobody told the child")

			switch repair {
			case "resubmit":
				got, created, err := b.q.Submit(b.ctx, req)
				require.NoError(t, err)
				require.False(t, created)
				require.Equal(t, queue.StatusPending, got.Status)
			case "sweep":
				res, next, err := b.q.Recovery().SweepWaiting(b.ctx, "", 0, 0)
				require.NoError(t, err)
				require.Empty(t, next)
				require.Equal(t, 1, res.WaitingDecided)
			}
			got := b.get(t, c)
			require.Equal(t, queue.StatusPending, got.Status, repair)
			b.requireIndexed(t, got)
		}
	})
}

// A parent's end lost between the parent's write and the child's (the
// writer died): the sweeper records it within one pass, and a pass over
// waiting tasks reads only them: the same requests beside 0 or 60
// finished tasks.
func TestSweepWaitingRecordsAMissedEnd(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		for _, finished := range []int{0, 60} {
			b := setup(t, be)
			for range finished {
				b.complete(t, b.submit(t, "history", `{}`))
			}
			p := b.submit(t, "p", `{}`)
			c := b.after(t, "c", "", p)
			// The child's release write fails, as if the worker died after
			// completing the parent.
			b.s.set(func(f *faultStore) { f.failPut = func(key string) bool { return key == c.Key() } })
			b.complete(t, p)
			b.s.set(func(f *faultStore) { f.failPut = nil })
			require.Equal(t, queue.StatusWaiting, b.get(t, c).Status)
			before := b.counts()
			res, _, err := b.q.Recovery().SweepWaiting(b.ctx, "", 0, 0)
			require.NoError(t, err)
			require.Equal(t, 1, res.WaitingDecided)
			requireCounts(t, fmt.Sprintf("a waiting pass beside %d finished tasks", finished), before, b.counts(), map[store.Op]int64{
				store.OpList:   1,
				store.OpGet:    3, // the child, its parent, the child again for its write
				store.OpPut:    2, // the child's ready entry, the child
				store.OpDelete: 1, // its waiting entry
			})
			got := b.get(t, c)
			require.Equal(t, queue.StatusPending, got.Status)
			b.requireIndexed(t, got)
		}
	})
}

// Many writers on one object at once, as many as a fleet of workers runs:
// the parents of a fan-in ending together all record their ends on the
// child, and children submitted together with After all register on their
// parent. Each write that loses a race rebases onto the one that won;
// none gives up and leaves its edge to the sweeper, however many rebases
// it takes (here reads of the contended object are slowed down so that
// the writers race in lockstep, each round won by one of them).
func TestEdgesUnderContention(t *testing.T) {
	t.Parallel()
	const n = 32
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		b := setup(t, be)
		parents := make([]*queue.Task, n)
		for i := range parents {
			parents[i] = b.submit(t, "p", `{}`)
		}
		child := b.after(t, "c", "", parents...)
		leases := make([]*queue.Lease, n)
		for i, p := range parents {
			leases[i] = b.claim(t, p, "w1")
		}
		childKey := b.q.TaskKey(child.ID)
		b.s.set(func(f *faultStore) { f.slowGet = func(key string) bool { return key == childKey } })
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i, l := range leases {
			wg.Go(func() { _, errs[i] = b.q.Complete(b.ctx, l, nil) })
		}
		wg.Wait()
		require.NoError(t, errors.Join(errs...))
		got := b.get(t, child)
		require.Equal(t, queue.StatusPending, got.Status, "every parent's end is recorded (%d not)", got.ParentsLeft())
		released := 0
		for _, e := range b.events(t, child) {
			if e == queue.EventReleased {
				released++
			}
		}
		require.Equal(t, 1, released)
		b.requireIndexed(t, got)

		// n children submitted at once onto one parent.
		parent := b.submit(t, "p", `{}`)
		parentKey := b.q.TaskKey(parent.ID)
		b.s.set(func(f *faultStore) { f.slowGet = func(key string) bool { return key == parentKey } })
		ids := make([]uuid.UUID, n)
		for i := range n {
			wg.Go(func() {
				var task *queue.Task
				task, _, errs[i] = b.q.Submit(b.ctx, queue.SubmitRequest{Type: "c", After: []uuid.UUID{parent.ID}})
				if task != nil {
					ids[i] = task.ID
				}
			})
		}
		wg.Wait()
		require.NoError(t, errors.Join(errs...))
		require.ElementsMatch(t, ids, b.get(t, parent).Children, "every child registered on the parent")
	})
}

// unarchiveFrom rewrites archived task's object as qo wrote it before
// archived_from existed (a new version of the same rev, so its history
// still holds the version it was archived from).
func (b *bundle) unarchiveFrom(t *testing.T, task *queue.Task) *queue.Task {
	t.Helper()
	obj, err := b.raw.Get(b.ctx, b.q.TaskKey(task.ID))
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(obj.Body, &m))
	require.Contains(t, m, "archived_from")
	delete(m, "archived_from")
	body, err := json.Marshal(m)
	require.NoError(t, err)
	_, err = b.raw.Put(b.ctx, b.q.TaskKey(task.ID), body, store.Condition{})
	require.NoError(t, err)
	got := b.get(t, task)
	require.Empty(t, got.ArchivedFrom)
	return got
}

// An archived parent counts as the status it was archived from, however
// its fields look: a task that completed with a null output while a cancel
// request was pending, or after its expires_at, is completed, so a child
// submitted after it runs. Objects archived before archived_from existed
// read it from their history.
func TestChildOfArchivedParent(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		b := setup(t, be)
		tests := []struct {
			name  string
			ended func() *queue.Task // a completed task
		}{
			{"completed with a cancel request pending", func() *queue.Task {
				p := b.submit(t, "p", `{}`)
				l := b.claim(t, p, "w1")
				b.cancel(t, p)
				done, err := b.q.Complete(b.ctx, l, nil)
				require.NoError(t, err)
				require.True(t, done.CancelRequested)
				return done
			}},
			{"completed after its expires_at with a null output", func() *queue.Task {
				p, _, err := b.q.Submit(b.ctx, queue.SubmitRequest{Type: "p", ExpiresAt: b.q.Now().Add(time.Second)})
				require.NoError(t, err)
				l := b.claim(t, p, "w1")
				b.clock.Advance(2 * time.Second)
				done, err := b.q.Complete(b.ctx, l, nil)
				require.NoError(t, err)
				require.True(t, done.CompletedAt.After(*done.ExpiresAt))
				return done
			}},
		}
		for _, tt := range tests {
			for _, old := range []bool{false, true} {
				name := tt.name
				p := b.archive(t, tt.ended())
				if old {
					name += ", archived before archived_from"
					p = b.unarchiveFrom(t, p)
				}
				require.Equal(t, queue.OutcomeCompleted, b.q.OutcomeOf(b.ctx, p), name)
				child := b.after(t, "c", "", p)
				require.Equal(t, queue.StatusPending, child.Status, name)
				require.Equal(t, []queue.Parent{{ID: p.ID, Done: queue.StatusCompleted}}, child.Parents, name)
				if !old {
					require.Equal(t, queue.StatusCompleted, p.ArchivedFrom, name)
				}
			}
		}
	})
}

// A child two of whose parents failed, both recorded on it in one write
// (submitted after both failed, or replayed alone after both failed), is
// cancelled naming both; however the two ends reach it (also when both
// fail at once), replaying and completing both parents brings it back to
// pending, in either order, and it runs.
func TestChildOfTwoFailedParentsComesBack(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		b := setup(t, be)
		constructions := []struct {
			name      string
			namesBoth bool
			build     func(p1, p2 *queue.Task) *queue.Task // returns the child
		}{
			{"submitted after both failed", true, func(p1, p2 *queue.Task) *queue.Task {
				b.fail(t, p1)
				b.fail(t, p2)
				return b.after(t, "c", "", p1, p2)
			}},
			{"replayed alone after both failed", true, func(p1, p2 *queue.Task) *queue.Task {
				c := b.after(t, "c", "", p1, p2)
				b.fail(t, p1)
				b.fail(t, p2)
				_, err := b.q.Replay(b.ctx, c.ID)
				require.NoError(t, err)
				return c
			}},
			{"both failed at once", false, func(p1, p2 *queue.Task) *queue.Task {
				c := b.after(t, "c", "", p1, p2)
				l1, l2 := b.claim(t, p1, "w1"), b.claim(t, p2, "w2")
				var wg sync.WaitGroup
				for _, l := range []*queue.Lease{l1, l2} {
					wg.Go(func() {
						_, err := b.q.Fail(b.ctx, l, "boom")
						require.NoError(t, err)
					})
				}
				wg.Wait()
				return c
			}},
		}
		orders := []struct {
			name string
			run  func(p1, p2 *queue.Task)
		}{
			{"replay both, then complete both", func(p1, p2 *queue.Task) {
				for _, p := range []*queue.Task{p1, p2} {
					_, err := b.q.Replay(b.ctx, p.ID)
					require.NoError(t, err)
				}
				b.complete(t, b.get(t, p1))
				b.complete(t, b.get(t, p2))
			}},
			{"replay and complete one, then the other", func(p1, p2 *queue.Task) {
				for _, p := range []*queue.Task{p2, p1} {
					_, err := b.q.Replay(b.ctx, p.ID)
					require.NoError(t, err)
					b.complete(t, b.get(t, p))
				}
			}},
		}
		for _, c := range constructions {
			for _, o := range orders {
				name := c.name + ", " + o.name
				p1, p2 := b.submit(t, "p", `{}`), b.submit(t, "p", `{}`)
				child := b.get(t, c.build(p1, p2))
				require.Equal(t, queue.StatusCancelled, child.Status, name)
				if c.namesBoth {
					require.Contains(t, child.CancelReason, p1.ID.String(), name)
					require.Contains(t, child.CancelReason, p2.ID.String(), name)
				}
				o.run(p1, p2)
				got := b.get(t, child)
				require.Equal(t, queue.StatusPending, got.Status, "%s: %s", name, got.CancelReason)
				require.Equal(t, []queue.Parent{{ID: p1.ID, Done: queue.StatusCompleted}, {ID: p2.ID, Done: queue.StatusCompleted}}, got.Parents, name)
				b.requireIndexed(t, got)
				b.complete(t, got)
				require.Equal(t, queue.StatusCompleted, b.get(t, child).Status, name)
			}
		}
	})
}
