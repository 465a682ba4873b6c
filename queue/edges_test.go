package queue_test

import (
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/store/storetest"
)

// A fan-in of MaxParents parents ending 32 at a time: each parent's end
// writes its own task and one empty edge object, never the child's growing
// parent list; the child is written once, by the end that finds every
// other one, and released exactly once.
func TestFanInEndCostsConstantPerParent(t *testing.T) {
	t.Parallel()
	b := setup(t, memBackend())
	const n = queue.MaxParents
	parents := make([]*queue.Task, n)
	for i := range parents {
		parents[i] = b.submit(t, "p", `{}`)
	}
	child := b.after(t, "c", "", parents...)
	leases := make([]*queue.Lease, n)
	for i, p := range parents {
		leases[i] = b.claim(t, p, "w1")
	}
	const par = 32
	before, sent := b.counts(), b.s.sent.Load()
	errs := make([]error, n)
	sem := make(chan struct{}, par)
	var wg sync.WaitGroup
	for i, l := range leases {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			_, errs[i] = b.q.Complete(b.ctx, l, nil)
		})
	}
	wg.Wait()
	require.NoError(t, errors.Join(errs...))
	d := b.counts().Sub(before)
	perParent := float64(b.s.sent.Load()-sent) / n
	// Each end: the parent's own write and its edge object (2 PUT); the
	// child's release (its write and ready entry) by each of the last
	// writers that found every end, at most one per writer in flight.
	require.LessOrEqual(t, d.Total(store.OpPut), int64(2*n+2*par), "PUT requests of %d parents' ends: %s", n, d)
	require.Less(t, perParent, 2048.0, "bytes written per parent's end (the child's parent list is %d parents)", n)
	require.LessOrEqual(t, d.Total(store.OpList), int64(n), "one LIST of the child's edges per end: %s", d)

	got := b.get(t, child)
	require.Equal(t, queue.StatusPending, got.Status)
	require.Zero(t, got.ParentsLeft())
	require.Equal(t, []string{queue.EventEnqueued, queue.EventReleased}, b.events(t, child), "the child is written by its release alone")
	b.requireIndexed(t, got)
	require.Empty(t, b.keys(t, queue.EdgesPrefix), "the release removes the edge objects it recorded")
}

// A parent with MaxChildren children returns from Complete after its own
// write, without waiting for any child; the children are told in the
// background (Settle waits for that), each for 1 GET + 1 PUT of the child,
// its ready entry and the waiting entry's removal.
func TestFanOutCompleteDoesNotWaitForChildren(t *testing.T) {
	t.Parallel()
	b := setup(t, memBackend())
	const n = queue.MaxChildren
	parent := b.submit(t, "p", `{}`)
	children := b.fanOut(t, parent, n)

	childKeys := map[string]bool{}
	for _, id := range children {
		childKeys[b.q.TaskKey(id)] = true
	}
	release := make(chan struct{})
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
	})
	b.s.set(func(f *faultStore) {
		f.getGate = func(key string) {
			if childKeys[key] {
				<-release // no child is read until Complete has returned
			}
		}
	})
	l := b.claim(t, parent, "w1")
	before := b.counts()
	done := make(chan error, 1)
	go func() {
		_, err := b.q.Complete(b.ctx, l, nil)
		done <- err
	}()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(time.Minute): // a watchdog: Complete waits on its children
		t.Fatal("Complete of a parent with many children did not return before its children were read")
	}
	requireCounts(t, "complete with many children, before any is told", before, b.counts(), map[store.Op]int64{
		store.OpPut: 1, store.OpDelete: 1,
	})

	told, sent := b.counts(), b.s.sent.Load()
	close(release)
	require.NoError(t, b.q.Settle(b.ctx))
	requireCounts(t, "telling the children", told, b.counts(), map[store.Op]int64{
		store.OpGet: n, store.OpPut: 2 * n, store.OpDelete: n,
	})
	require.Less(t, float64(b.s.sent.Load()-sent)/n, 2048.0, "bytes written per child")
	for _, id := range []uuid.UUID{children[0], children[n/2], children[n-1]} {
		got, err := b.q.Get(b.ctx, id)
		require.NoError(t, err)
		require.Equal(t, queue.StatusPending, got.Status)
		b.requireIndexed(t, got)
	}
	require.Len(t, b.keys(t, queue.WaitingPrefix), 0, "every child released")
}

// fanOut gives parent (pending) n waiting children. The first is
// submitted with After; the others are copies of it written straight to
// the store, and the parent's children list is set to all of them at
// once, which is what n submits would leave (n submits with After would
// rewrite the growing parent n times).
func (b *bundle) fanOut(t *testing.T, parent *queue.Task, n int) []uuid.UUID {
	t.Helper()
	first := b.after(t, "c", "", parent)
	ids := []uuid.UUID{first.ID}
	for range n - 1 {
		c := first.Clone()
		c.ID = uuid.Must(uuid.NewV7())
		c.Shard = queue.ShardOf(c.ID, b.q.Config().ShardChars)
		body, err := queue.EncodeTask(c)
		require.NoError(t, err)
		for _, k := range queue.IndexKeys(c) {
			_, err := b.raw.Put(b.ctx, k, nil, store.Condition{})
			require.NoError(t, err)
		}
		_, err = b.raw.Put(b.ctx, b.q.TaskKey(c.ID), body, store.Condition{})
		require.NoError(t, err)
		ids = append(ids, c.ID)
	}
	p := b.get(t, parent)
	require.Equal(t, []uuid.UUID{first.ID}, p.Children)
	p.Children = ids
	body, err := queue.EncodeTask(p)
	require.NoError(t, err)
	_, err = b.raw.Put(b.ctx, b.q.TaskKey(p.ID), body, store.Condition{})
	require.NoError(t, err)
	return ids
}

// The last parent's end lands as an edge object but its writer hears
// nothing back (or dies) before it lists the child's edges: the child
// waits with every end in edge objects, and the sweeper's pass over
// waiting tasks releases it from them, reading none of the parents.
func TestSweeperReleasesFromEdgesALostEndLeft(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		b := setup(t, be)
		const n = 20 // more than a child's own writes carry
		parents := make([]*queue.Task, n)
		for i := range parents {
			parents[i] = b.submit(t, "p", `{}`)
		}
		child := b.after(t, "c", "", parents...)
		for _, p := range parents[:n-1] {
			b.complete(t, p)
		}
		require.Len(t, b.keys(t, queue.EdgesPrefix), n-1, "the first ends are edge objects")
		b.s.set(func(f *faultStore) {
			f.dropPut = func(key string) bool { return strings.HasPrefix(key, queue.EdgesPrefix) }
		})
		b.complete(t, parents[n-1]) // the end itself lands; telling the child does not finish
		b.s.set(func(f *faultStore) { f.dropPut = nil })
		got := b.get(t, child)
		require.Equal(t, queue.StatusWaiting, got.Status)
		require.Zero(t, got.ParentsLeft(), "Get shows the ends the edges hold")

		parentKeys := map[string]bool{}
		for _, p := range parents {
			parentKeys[b.q.TaskKey(p.ID)] = true
		}
		var parentReads atomic.Int64
		b.s.set(func(f *faultStore) {
			f.getGate = func(key string) {
				if parentKeys[key] {
					parentReads.Add(1)
				}
			}
		})
		res, _, err := b.q.Recovery().SweepWaiting(b.ctx, "", 0, 0)
		require.NoError(t, err)
		require.Equal(t, 1, res.WaitingDecided)
		require.Zero(t, parentReads.Load(), "the edges stand for the parents")
		got = b.get(t, child)
		require.Equal(t, queue.StatusPending, got.Status)
		require.Equal(t, []string{queue.EventEnqueued, queue.EventReleased}, b.events(t, child))
		b.requireIndexed(t, got)
		require.Empty(t, b.keys(t, queue.EdgesPrefix))
	})
}

// A child with more parents than its own writes carry, one of which ends
// badly after the others completed (as edge objects): cancel cancels it
// naming that parent, and a replay of the parent brings it back to run
// once the parent completes; run releases it with the parent's end
// recorded as failed.
func TestWideFanInParentEndsBadly(t *testing.T) {
	t.Parallel()
	for _, policy := range []queue.ParentFailure{queue.ParentFailureCancel, queue.ParentFailureRun} {
		t.Run(string(policy), func(t *testing.T) {
			t.Parallel()
			storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
				b := setup(t, be)
				const n = 20
				parents := make([]*queue.Task, n)
				for i := range parents {
					parents[i] = b.submit(t, "p", `{}`)
				}
				child := b.after(t, "c", policy, parents...)
				for _, p := range parents[1:] {
					b.complete(t, p)
				}
				bad := parents[0]
				b.fail(t, bad)
				got := b.get(t, child)
				b.requireIndexed(t, got)
				if policy == queue.ParentFailureRun {
					require.Equal(t, queue.StatusPending, got.Status)
					require.Equal(t, queue.Parent{ID: bad.ID, Done: queue.StatusFailed}, got.Parents[0])
					require.Zero(t, got.ParentsLeft())
					require.Empty(t, b.keys(t, queue.EdgesPrefix))
					return
				}
				require.Equal(t, queue.StatusCancelled, got.Status)
				require.Equal(t, "parent "+bad.ID.String()+" failed", got.CancelReason)
				require.Empty(t, b.keys(t, queue.EdgesPrefix), "a decided child keeps no edge objects")

				_, err := b.q.Replay(b.ctx, bad.ID)
				require.NoError(t, err)
				got = b.get(t, child)
				require.Equal(t, queue.StatusWaiting, got.Status, "the replay brings the child back")
				require.Equal(t, 1, got.ParentsLeft(), "waiting for the replayed parent alone")
				b.complete(t, b.get(t, bad))
				got = b.get(t, child)
				require.Equal(t, queue.StatusPending, got.Status)
				require.Zero(t, got.ParentsLeft())
				b.requireIndexed(t, got)
			})
		})
	}
}
