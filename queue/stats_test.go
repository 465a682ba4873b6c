package queue_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/queue/registry"
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
		// Workers publish their finishes by minute; a malformed entry is
		// reported and skipped.
		var recent queue.MinuteCounter
		recent.Add(b.q.Now(), 3, 1)
		recent.Add(b.q.Now().Add(-time.Hour), 100, 100) // out of the window
		require.NoError(t, registry.Put(b.ctx, b.q, &queue.WorkerInfo{ID: "w1", LastHeartbeat: b.q.Now(), Recent: recent.Snapshot(b.q.Now())}))
		_, err = b.raw.Put(b.ctx, queue.WorkerKey("broken"), []byte(`{"format":1`), store.Condition{})
		require.NoError(t, err)

		c := b.q.NewStatsCounter(queue.StatsOptions{RecentMinutes: 5})
		st, err := c.Refresh(b.ctx)
		require.NoError(t, err)
		require.False(t, st.Partial)
		require.Equal(t, queue.CountedStatuses, st.Counted)
		require.Equal(t, 4, st.Total, "pending, running and dead letters")
		require.Equal(t, map[queue.Status]int{
			queue.StatusPending: 2, queue.StatusRunning: 1, queue.StatusFailed: 1, queue.StatusWaiting: 0,
		}, st.ByStatus, "the counted statuses only: a finished one is absent, not 0")
		require.Equal(t, 1, st.Delayed)
		require.Equal(t, 90*time.Second, st.OldestPendingAge)
		require.Equal(t, map[string]time.Time{"resize": st.OldestPending}, st.OldestPendingByType,
			"per type too; the email task waiting for its time is not waiting yet")
		require.Equal(t, map[queue.Status]int{queue.StatusPending: 1, queue.StatusRunning: 1}, st.ByType["resize"])
		require.Equal(t, map[queue.Status]int{queue.StatusPending: 1, queue.StatusFailed: 1}, st.ByType["email"])
		sum := 0
		for _, m := range st.ByShard {
			for _, n := range m {
				sum += n
			}
		}
		require.Equal(t, 4, sum)
		require.Len(t, st.Malformed, 1)
		require.Equal(t, queue.WorkerKey("broken"), st.Malformed[0].Key)
		require.Len(t, st.Recent, 5)
		last := st.Recent[len(st.Recent)-1]
		require.Equal(t, 3, last.Completed)
		require.Equal(t, 1, last.Failed)

		// A second refresh reads no task object and no unchanged worker:
		// 5 LISTs (4 indexes + registry), no GET.
		_, err = b.q.Replay(b.ctx, failed.ID)
		require.NoError(t, err)
		before := b.counts()
		st, err = c.Refresh(b.ctx)
		require.NoError(t, err)
		d := b.counts().Sub(before)
		require.Zero(t, d.Total(store.OpGet), "%s", d)
		require.Equal(t, int64(5), d.Total(store.OpList), "%s", d)
		require.Equal(t, 3, st.ByStatus[queue.StatusPending])
		require.Equal(t, 1, st.ByStatus[queue.StatusFailed], "a replay shows at the next full count of the dead letters")

		// New dead letters are counted at once, from the one LIST.
		l := b.claim(t, b.submit(t, "email", `{"n":5}`), "w1")
		_, err = b.q.Fail(b.ctx, l, "boom")
		require.NoError(t, err)
		st, err = c.Refresh(b.ctx)
		require.NoError(t, err)
		require.Equal(t, 2, st.ByStatus[queue.StatusFailed])
		require.Equal(t, 2, st.ByType["email"][queue.StatusFailed])

		// A failure written late by a worker whose clock is behind sorts
		// after the newest key counted; it is counted once all the same.
		at := b.q.Now().Add(-queue.DeadSkew / 2)
		late := &queue.Task{ID: queue.NewIDAt(at), Type: "late", Status: queue.StatusFailed, CompletedAt: &at}
		late.Shard = queue.ShardOf(late.ID, 1)
		_, err = b.raw.Put(b.ctx, queue.DeadKey(late), nil, store.Condition{})
		require.NoError(t, err)
		for range 2 {
			st, err = c.Refresh(b.ctx)
			require.NoError(t, err)
			require.Equal(t, 3, st.ByStatus[queue.StatusFailed])
			require.Equal(t, 1, st.ByType["late"][queue.StatusFailed])
		}
		require.NoError(t, b.raw.Delete(b.ctx, queue.DeadKey(late), store.Condition{}))
		b.clock.Advance(queue.DeadRecount)
		st, err = c.Refresh(b.ctx)
		require.NoError(t, err)
		require.Equal(t, 1, st.ByStatus[queue.StatusFailed], "the full count sees the replay")
	})
}

func TestMinuteCounter(t *testing.T) {
	t.Parallel()
	var c queue.MinuteCounter
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	c.Add(t0, 1, 0)
	c.Add(t0.Add(10*time.Second), 1, 1)
	c.Add(t0.Add(time.Minute), 0, 2)
	got := c.Snapshot(t0.Add(time.Minute))
	require.Equal(t, []queue.MinuteCount{
		{Start: t0.Truncate(time.Minute), Completed: 2, Failed: 1},
		{Start: t0.Truncate(time.Minute).Add(time.Minute), Completed: 0, Failed: 2},
	}, got)
	// Minutes older than the window are dropped.
	require.Len(t, c.Snapshot(t0.Add(time.Duration(queue.DefaultRecentMinutes)*time.Minute)), 1)
	require.Empty(t, c.Snapshot(t0.Add(time.Hour)))
	b, err := json.Marshal(got[0])
	require.NoError(t, err)
	require.JSONEq(t, `{"start":"2026-01-02T03:04:00Z","completed":2,"failed":1}`, string(b))
}
