package queue_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/store/storetest"
)

func reasons(skipped []queue.ActSkip) map[uuid.UUID]string {
	m := map[uuid.UUID]string{}
	for _, s := range skipped {
		m[s.ID] = s.Reason
	}
	return m
}

// TestBulkActionFilter cancels every pending task of a type: the dry run
// writes nothing and states the cost, the run writes each task once with
// the ETag the listing read (no second GET), and running it again finds
// nothing to do.
func TestBulkActionFilter(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		b := setup(t, be)
		const n = 40
		var mine []*queue.Task
		for range n {
			mine = append(mine, b.submit(t, "resize", `{}`))
		}
		other := b.submit(t, "mail", `{}`)
		running := b.submit(t, "resize", `{}`)
		b.claim(t, running, "w1")

		req := queue.BulkActionRequest{Op: queue.OpCancel, Reason: "bulk", Filter: &queue.ActFilter{Statuses: []queue.Status{queue.StatusPending}, Type: "resize"}}
		before := b.counts()
		plan, err := b.q.PlanBulkAction(b.ctx, req)
		require.NoError(t, err)
		requireCounts(t, "plan", before, b.counts(), map[store.Op]int64{store.OpList: 1, store.OpGet: n})
		require.Equal(t, n, plan.Len())
		require.Empty(t, plan.Skipped)
		require.Equal(t, map[queue.Status]int{queue.StatusPending: n}, plan.ByStatus)
		require.Equal(t, int64(n), plan.Cost.Total(store.OpPut))
		require.Equal(t, int64(n), plan.Cost.Total(store.OpDelete))
		require.Equal(t, "cancel 40 tasks: 40 PUT + 40 DELETE (finding them took 1 LIST + 40 GET)", plan.Summary())
		dry := plan.DryRun()
		require.True(t, dry.DryRun)
		require.Len(t, dry.Done, n)
		for _, task := range mine {
			require.Equal(t, queue.StatusPending, b.get(t, task).Status, "a dry run writes nothing")
		}

		before = b.counts()
		var progress []int
		sum := plan.Run(b.ctx, queue.ActOptions{Concurrency: 4, Progress: func(done, total int) {
			require.Equal(t, n, total)
			progress = append(progress, done)
		}})

		requireCounts(t, "run", before, b.counts(), map[store.Op]int64{store.OpPut: n, store.OpDelete: n})
		require.NoError(t, sum.Stopped)
		require.Len(t, sum.Done, n)
		require.Empty(t, sum.Skipped)
		require.Empty(t, sum.Failed)
		require.Len(t, progress, n)
		require.Equal(t, n, progress[n-1])
		for _, task := range mine {
			got := b.get(t, task)
			require.Equal(t, queue.StatusCancelled, got.Status)
			require.Equal(t, "bulk", got.CancelReason)
			require.Equal(t, task.Rev+1, got.Rev, "written once")
		}
		require.Equal(t, queue.StatusPending, b.get(t, other).Status)
		require.Equal(t, queue.StatusRunning, b.get(t, running).Status)

		// Again: nothing left to cancel.
		plan, err = b.q.PlanBulkAction(b.ctx, req)
		require.NoError(t, err)
		require.Zero(t, plan.Len())
		sum = plan.Run(b.ctx, queue.ActOptions{})
		require.Empty(t, sum.Done)

		// Without a status: every status cancel applies to; the running
		// task gets cancel_requested, and a second run skips it, saying why.
		plan, err = b.q.PlanBulkAction(b.ctx, queue.BulkActionRequest{Op: queue.OpCancel, Filter: &queue.ActFilter{Type: "resize"}})
		require.NoError(t, err)
		require.Equal(t, []uuid.UUID{running.ID}, plan.IDs())
		sum = plan.Run(b.ctx, queue.ActOptions{})
		require.Equal(t, []uuid.UUID{running.ID}, sum.Done)
		require.True(t, b.get(t, running).CancelRequested)
		plan, err = b.q.PlanBulkAction(b.ctx, queue.BulkActionRequest{Op: queue.OpCancel, Filter: &queue.ActFilter{Type: "resize"}})
		require.NoError(t, err)
		require.Zero(t, plan.Len())
		require.Equal(t, map[uuid.UUID]string{running.ID: "running: cancellation already requested"}, reasons(plan.Skipped))
	})
}

// TestBulkActionIDs acts on named tasks: each once, whatever its state,
// skipping with the reason those the action does not apply to.
func TestBulkActionIDs(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		b := setup(t, be)
		p1, p2 := b.submit(t, "a", `1`), b.submit(t, "a", `2`)
		done := b.submit(t, "a", `3`)
		l := b.claim(t, done, "w1")
		_, err := b.q.Complete(b.ctx, l, json.RawMessage(`{}`))
		require.NoError(t, err)
		changed := b.submit(t, "a", `4`)
		missing := uuid.Must(uuid.NewV7())

		plan, err := b.q.PlanBulkAction(b.ctx, queue.BulkActionRequest{Op: queue.OpCancel,
			IDs: []uuid.UUID{p1.ID, done.ID, p1.ID, missing, p2.ID, changed.ID}})
		require.NoError(t, err)
		require.Equal(t, []uuid.UUID{p1.ID, p2.ID, changed.ID}, plan.IDs())
		require.Equal(t, map[uuid.UUID]string{
			done.ID: "completed: only waiting, pending or running tasks can be cancelled",
			missing: "not found",
		}, reasons(plan.Skipped))

		// changed ends before the run: its write is refused and re-read,
		// and the rule, applied again, leaves it alone.
		lc := b.claim(t, changed, "w1")
		_, err = b.q.Complete(b.ctx, lc, json.RawMessage(`{}`))
		require.NoError(t, err)
		sum := plan.Run(b.ctx, queue.ActOptions{})
		require.Equal(t, []uuid.UUID{p1.ID, p2.ID}, sum.Done)
		require.Empty(t, sum.Failed)
		require.Equal(t, "changed meanwhile: completed: only waiting, pending or running tasks can be cancelled", reasons(sum.Skipped)[changed.ID])
		require.Len(t, sum.Skipped, 3)
		require.Equal(t, queue.StatusCompleted, b.get(t, changed).Status)

		// Replay the cancelled ones, then archive: each skips what it does
		// not apply to.
		plan, err = b.q.PlanBulkAction(b.ctx, queue.BulkActionRequest{Op: queue.OpReplay, IDs: []uuid.UUID{p1.ID, done.ID}})
		require.NoError(t, err)
		sum = plan.Run(b.ctx, queue.ActOptions{})
		require.Equal(t, []uuid.UUID{p1.ID}, sum.Done)
		require.Equal(t, queue.StatusPending, b.get(t, p1).Status)
		require.Equal(t, "completed: only failed, cancelled or expired tasks can be replayed", reasons(sum.Skipped)[done.ID])

		_, err = b.q.PlanBulkAction(b.ctx, queue.BulkActionRequest{Op: queue.OpRequeue, IDs: []uuid.UUID{p1.ID}})
		require.ErrorIs(t, err, queue.ErrInvalidInput)
		_, err = b.q.PlanBulkAction(b.ctx, queue.BulkActionRequest{Op: queue.OpCancel})
		require.ErrorIs(t, err, queue.ErrInvalidInput)
	})
}

// TestBulkActionCost500 counts what cancelling 500 pending tasks costs:
// one listing, then one conditional PUT and one index DELETE per task, in
// place of a process per task that reads each task twice.
func TestBulkActionCost500(t *testing.T) {
	t.Parallel()
	b := setup(t, storetest.Backends()[0])
	const n = 500
	for range n {
		b.submit(t, "bulk", `{}`)
	}
	before := b.counts()
	plan, err := b.q.PlanBulkAction(b.ctx, queue.BulkActionRequest{Op: queue.OpCancel, Filter: &queue.ActFilter{Statuses: []queue.Status{queue.StatusPending}}})
	require.NoError(t, err)
	sum := plan.Run(b.ctx, queue.ActOptions{})
	require.Len(t, sum.Done, n)
	requireCounts(t, "cancel 500", before, b.counts(), map[store.Op]int64{store.OpList: 1, store.OpGet: n, store.OpPut: n, store.OpDelete: n})
	require.Equal(t, int64(3*n+1), sum.Requests.Total(store.OpList)+sum.Requests.Total(store.OpGet)+sum.Requests.Total(store.OpPut)+sum.Requests.Total(store.OpDelete))
}

// TestBulkActionFailures: a write that fails is reported with its error
// and the rest go on; a run whose context ends reports the tasks it never
// started, and running the plan again finishes the job.
func TestBulkActionFailures(t *testing.T) {
	t.Parallel()
	b := setup(t, storetest.Backends()[0])
	var tasks []*queue.Task
	for range 6 {
		tasks = append(tasks, b.submit(t, "x", `{}`))
	}
	bad := tasks[2]
	b.s.set(func(f *faultStore) { f.failPut = func(key string) bool { return key == bad.Key() } })
	plan, err := b.q.PlanBulkAction(b.ctx, queue.BulkActionRequest{Op: queue.OpCancel, Filter: &queue.ActFilter{Type: "x"}})
	require.NoError(t, err)
	sum := plan.Run(b.ctx, queue.ActOptions{Concurrency: 2})
	require.Len(t, sum.Done, 5)
	require.Len(t, sum.Failed, 1)
	require.Equal(t, bad.ID, sum.Failed[0].ID)
	require.Contains(t, sum.Failed[0].Reason, "injected put failure")
	require.NoError(t, sum.Stopped, "one task's failure does not stop the others")
	require.Equal(t, queue.StatusPending, b.get(t, bad).Status)

	b.s.set(func(f *faultStore) { f.failPut = nil })
	ctx, cancel := context.WithCancel(b.ctx)
	cancel()
	plan, err = b.q.PlanBulkAction(b.ctx, queue.BulkActionRequest{Op: queue.OpCancel, IDs: []uuid.UUID{bad.ID}})
	require.NoError(t, err)
	sum = plan.Run(ctx, queue.ActOptions{})
	require.ErrorIs(t, sum.Stopped, context.Canceled)
	require.Len(t, sum.Failed, 1)
	require.Empty(t, sum.Done)
	sum = plan.Run(b.ctx, queue.ActOptions{})
	require.Equal(t, []uuid.UUID{bad.ID}, sum.Done)
	require.Equal(t, queue.StatusCancelled, b.get(t, bad).Status)
}
