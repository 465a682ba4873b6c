package queue_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/store/storetest"
)

func TestStatsCounter(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		b := setup(t, be)
		done := b.submit(t, "email", `{"n":1}`)
		failed := b.submit(t, "email", `{"n":2}`)
		running := b.submit(t, "resize", `{"n":3}`)
		b.submit(t, "resize", `{"n":4}`)  // waits
		b.clock.Advance(90 * time.Second) // waiting has waited 90 s
		_, err := b.q.Complete(b.ctx, b.claim(t, done, "w1"), nil)
		require.NoError(t, err)
		_, err = b.q.Fail(b.ctx, b.claim(t, failed, "w1"), "boom")
		require.NoError(t, err)
		b.claim(t, running, "w1")
		_, _, err = b.q.Submit(b.ctx, queue.SubmitRequest{Type: "email", AvailableAt: b.q.Now().Add(time.Hour)})
		require.NoError(t, err)
		_, err = b.raw.Put(b.ctx, "tasks/0/not-a-task.json", []byte(`{"format":1`), store.Condition{})
		require.NoError(t, err)

		c := b.q.NewStatsCounter(queue.StatsOptions{RecentMinutes: 5})
		st, err := c.Refresh(b.ctx)
		require.NoError(t, err)
		require.False(t, st.Partial)
		require.Equal(t, 5, st.Total)
		require.Equal(t, map[queue.Status]int{
			queue.StatusPending: 2, queue.StatusRunning: 1, queue.StatusCompleted: 1,
			queue.StatusFailed: 1, queue.StatusCancelled: 0, queue.StatusExpired: 0, queue.StatusArchived: 0,
		}, st.ByStatus)
		require.Equal(t, 1, st.Delayed)
		require.Equal(t, 90*time.Second, st.OldestPendingAge)
		require.Equal(t, map[queue.Status]int{queue.StatusPending: 1, queue.StatusRunning: 1}, st.ByType["resize"])
		sum := 0
		for _, m := range st.ByShard {
			for _, n := range m {
				sum += n
			}
		}
		require.Equal(t, 5, sum)
		require.Len(t, st.Malformed, 1)
		require.Equal(t, "tasks/0/not-a-task.json", st.Malformed[0].Key)
		require.Len(t, st.Recent, 5)
		last := st.Recent[len(st.Recent)-1]
		require.Equal(t, 1, last.Completed)
		require.Equal(t, 1, last.Failed)

		// A second refresh reads only what changed: one GET for the
		// replayed task, none for the rest.
		_, err = b.q.Replay(b.ctx, failed.ID)
		require.NoError(t, err)
		before := b.counts()
		st, err = c.Refresh(b.ctx)
		require.NoError(t, err)
		require.Equal(t, int64(1), b.counts().Sub(before).Total(store.OpGet))
		require.Equal(t, 3, st.ByStatus[queue.StatusPending])
		require.Equal(t, 0, st.ByStatus[queue.StatusFailed])

		// A small read budget gives partial counts that fill in.
		small := b.q.NewStatsCounter(queue.StatsOptions{MaxReads: 4})
		st, err = small.Refresh(b.ctx)
		require.NoError(t, err)
		require.True(t, st.Partial)
		st, err = small.Refresh(b.ctx)
		require.NoError(t, err)
		require.False(t, st.Partial)
		require.Equal(t, 5, st.Total)
	})
}
