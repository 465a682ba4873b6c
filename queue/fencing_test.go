package queue_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/store/storetest"
)

func TestFencing(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		b := setup(t, be)

		// A stale worker (its lease expired and the task was re-claimed) is
		// rejected on every write, and nothing is written.
		task, _, err := b.q.Submit(b.ctx, queue.SubmitRequest{Type: "f", Timeout: 5 * time.Second})
		require.NoError(t, err)
		stale := b.claim(t, task, "slow")
		b.clock.Advance(6*time.Second + queue.LeaseGrace)
		exp, _, err := b.q.Recovery().ListLeases(b.ctx, queue.ExpiredLeases, 0, "")
		require.NoError(t, err)
		require.Len(t, exp, 1)
		back, err := b.q.Recovery().ExpireLease(b.ctx, exp[0])
		require.NoError(t, err)
		b.clock.Advance(time.Hour)
		fresh := b.claim(t, back, "fast")

		staleCopy := *stale
		before := b.counts()
		_, err = b.q.Complete(b.ctx, stale, json.RawMessage(`"late"`))
		require.ErrorIs(t, err, queue.ErrLeaseLost)
		err = b.q.Extend(b.ctx, &staleCopy)
		require.ErrorIs(t, err, queue.ErrLeaseLost)
		_, err = b.q.Retry(b.ctx, &staleCopy, "x", 0)
		require.ErrorIs(t, err, queue.ErrLeaseLost)
		_, err = b.q.Fail(b.ctx, &staleCopy, "x")
		require.ErrorIs(t, err, queue.ErrLeaseLost)
		_, err = b.q.Release(b.ctx, &staleCopy, "x")
		require.ErrorIs(t, err, queue.ErrLeaseLost)
		// Its writes reach at most the index entries it puts first, and
		// each of them is removed again once the task write is refused.
		d := b.counts().Sub(before)
		require.Equal(t, d.OK[store.OpPut], d.OK[store.OpDelete], "a stale worker left entries behind: %s", d)
		require.Equal(t, []string{fresh.LeaseKey}, b.keys(t, queue.LeasesPrefix))
		require.Empty(t, b.keys(t, queue.ReadyPrefix))
		require.Empty(t, b.keys(t, queue.DeadPrefix))
		cur := b.get(t, task)
		require.Equal(t, fresh.Task.LeaseID, cur.LeaseID)
		require.Equal(t, fresh.Task.Rev, cur.Rev)

		// An operator's cancel request changes the ETag but not the lease:
		// the holder still completes (re-read, re-applied).
		_, err = b.q.Cancel(b.ctx, task.ID, "too late")
		require.NoError(t, err)
		before = b.counts()
		done, err := b.q.Complete(b.ctx, fresh, json.RawMessage(`"ok"`))
		require.NoError(t, err)
		requireCounts(t, "complete over a cancel request", before, b.counts(),
			map[store.Op]int64{store.OpPut: 2, store.OpGet: 1, store.OpDelete: 1})
		require.Equal(t, queue.StatusCompleted, done.Status)
		require.True(t, done.CancelRequested)
		require.Equal(t, cur.Rev+2, done.Rev)
	})
}
