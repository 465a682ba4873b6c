package monitor_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/monitor"
	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/queue/registry"
	"github.com/qo-queue/qo/queue/schedule"
	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/store/storetest"
	"github.com/qo-queue/qo/worker/bench"
)

// TestNewLeaderCostIndependentOfHistory: a monitor that becomes leader
// (as every restarted worker's embedded monitor may) sends the same
// requests in an empty bucket and beside 10,000 finished tasks: it never
// reads history. Its lease round is one LIST either way.
func TestNewLeaderCostIndependentOfHistory(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		costs := map[int]string{}
		for _, n := range []int{0, 10_000} {
			ctx := context.Background()
			s := be.New(t)
			_, err := queue.Init(ctx, s, 1)
			require.NoError(t, err)
			clock := storetest.NewClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
			q, err := queue.Open(ctx, s, queue.Options{Clock: clock, NewID: queue.SequentialIDs("leader")})
			require.NoError(t, err)
			require.NoError(t, bench.SeedFinished(ctx, s, q, bench.Seed{Tasks: n}))
			for i := 0; i < 5; i++ {
				_, _, err := q.Submit(ctx, queue.SubmitRequest{Type: "job"})
				require.NoError(t, err)
			}
			_, err = schedule.Create(ctx, q, schedule.Spec{Name: "hourly", Cron: "@hourly", Task: schedule.Task{Type: "job"}})
			require.NoError(t, err)
			require.NoError(t, registry.Put(ctx, q, &queue.WorkerInfo{ID: "w1", LastHeartbeat: clock.Now()}))

			counted := s.(store.Counted)
			before := counted.Requests().Snapshot()
			m := monitor.New(q, monitor.Options{ID: "m", Clock: clock, Logger: slog.New(slog.DiscardHandler)})
			require.True(t, m.Elect(ctx))
			leaseBefore := counted.Requests().Snapshot()
			_, err = m.CheckTimeouts(ctx)
			require.NoError(t, err)
			lease := counted.Requests().Snapshot().Sub(leaseBefore)
			require.Equal(t, int64(1), lease.All(), "a lease round with nothing running is one LIST beside %d finished tasks (%s)", n, lease)
			require.Equal(t, int64(1), lease.Total(store.OpList))
			_, err = m.CheckWorkers(ctx)
			require.NoError(t, err)
			require.NoError(t, m.SweepRound(ctx))
			_, err = m.RunSchedules(ctx)
			require.NoError(t, err)
			d := counted.Requests().Snapshot().Sub(before)
			costs[n] = fmt.Sprintf("LIST=%d GET=%d PUT=%d DELETE=%d", d.Total(store.OpList), d.Total(store.OpGet), d.Total(store.OpPut), d.Total(store.OpDelete))
		}
		require.Equal(t, costs[0], costs[10_000], "a new leader's first round never reads history")
		t.Logf("a new leader's first round: %s", costs[0])
	})
}
