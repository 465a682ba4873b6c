package inspect

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/monitor"
	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/queue/registry"
	"github.com/qo-queue/qo/queue/throughput"
	"github.com/qo-queue/qo/store"
)

func sum(ms []queue.MinuteCount) (done, failed int) {
	for _, m := range ms {
		done += m.Completed
		failed += m.Failed
	}
	return done, failed
}

// TestThroughputSurvivesRestart: finishes a worker reported before it
// stopped are still shown once a new worker has replaced it, in the last
// minutes, the last hour and the last day, and after their minutes close.
func TestThroughputSurvivesRestart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	q, _, clock := open(t)
	mon := monitor.New(q, monitor.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	now := clock.Now()
	minute := now.Truncate(time.Minute)
	old := &queue.WorkerInfo{ID: "old", LastHeartbeat: now, Types: []string{"t"},
		Recent: []queue.MinuteCount{{Start: minute.Add(-time.Minute), Completed: 40, Failed: 2}, {Start: minute, Completed: 13}}}
	require.NoError(t, registry.Put(ctx, q, old))
	_, err := mon.CheckWorkers(ctx)
	require.NoError(t, err)

	// The restart: the old worker is gone, a new one has done a little.
	require.NoError(t, registry.Delete(ctx, q, "old"))
	clock.Advance(20 * time.Second)
	require.NoError(t, registry.Put(ctx, q, &queue.WorkerInfo{ID: "new", LastHeartbeat: clock.Now(), Types: []string{"t"},
		Recent: []queue.MinuteCount{{Start: minute, Completed: 5}}}))
	m := New(q, Options{})
	snap, err := m.Snapshot(ctx)
	require.NoError(t, err)
	require.NoError(t, snap.RollupErr)
	for name, ms := range map[string][]queue.MinuteCount{"recent": snap.Stats.Recent, "last hour": snap.LastHour, "last day": snap.LastDay} {
		done, failed := sum(ms)
		require.Equal(t, 58, done, name)
		require.Equal(t, 2, failed, name)
	}
	require.Len(t, snap.LastHour, 60)
	require.Len(t, snap.LastDay, DayHours)

	// The new worker's count is folded too, and counted once; later the
	// minutes close and the new worker stops as well.
	_, err = mon.CheckWorkers(ctx)
	require.NoError(t, err)
	require.NoError(t, registry.Delete(ctx, q, "new"))
	clock.Advance(30 * time.Minute)
	_, err = mon.CheckWorkers(ctx)
	require.NoError(t, err)
	snap, err = m.Snapshot(ctx)
	require.NoError(t, err)
	done, failed := sum(snap.LastDay)
	require.Equal(t, 58, done)
	require.Equal(t, 2, failed)
	done, _ = sum(snap.Stats.Recent)
	require.Zero(t, done, "nothing finished in the last 15 minutes")
}

// TestThroughputReadCost: reading the rollup costs one LIST and a GET per
// hour object changed since the last read, the same with 2 hours of
// history as with the 7 days the monitor keeps.
func TestThroughputReadCost(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cost := func(hours int) (first, again int64) {
		q, s, clock := open(t)
		now := clock.Now()
		for i := 0; i < hours; i++ {
			at := now.Add(-time.Duration(i) * time.Hour)
			h := &throughput.Hour{Hour: at.UTC().Truncate(time.Hour),
				Minutes: []throughput.Minute{{MinuteCount: queue.MinuteCount{Start: at.Truncate(time.Hour), Completed: 1}}}}
			require.NoError(t, throughput.Save(ctx, q, h))
		}
		m := New(q, Options{})
		before := count(s, store.OpGet)
		snap, err := m.Snapshot(ctx)
		require.NoError(t, err)
		first = count(s, store.OpGet) - before
		done, _ := sum(snap.LastDay)
		require.Equal(t, min(hours, DayHours), done)
		before = count(s, store.OpGet)
		_, err = m.Snapshot(ctx)
		require.NoError(t, err)
		return first, count(s, store.OpGet) - before
	}
	smallFirst, smallAgain := cost(2)
	bigFirst, bigAgain := cost(int(throughput.Keep / time.Hour))
	require.Equal(t, smallAgain, bigAgain, "an unchanged rollup costs no GET, whatever its history")
	require.LessOrEqual(t, bigFirst-smallFirst, int64(DayHours-2+1), "the first read GETs at most the day's hours")
}

// TestThroughputPrune: the leader keeps throughput.Keep of hours.
func TestThroughputPrune(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	q, _, clock := open(t)
	now := clock.Now()
	for _, age := range []time.Duration{0, 24 * time.Hour, throughput.Keep + time.Hour, throughput.Keep + 50*time.Hour} {
		require.NoError(t, throughput.Save(ctx, q, &throughput.Hour{Hour: now.Add(-age).UTC().Truncate(time.Hour)}))
	}
	n, err := throughput.Prune(ctx, q, now)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	left, err := throughput.List(ctx, q, time.Time{})
	require.NoError(t, err)
	require.Len(t, left, 2)
}

// TestThroughputMalformedHour: a malformed hour object is reported and
// skipped; the others are read.
func TestThroughputMalformedHour(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	q, s, clock := open(t)
	now := clock.Now()
	require.NoError(t, throughput.Save(ctx, q, &throughput.Hour{Hour: now.UTC().Truncate(time.Hour),
		Minutes: []throughput.Minute{{MinuteCount: queue.MinuteCount{Start: now.Truncate(time.Minute), Completed: 4}}}}))
	bad := throughput.Key(now.Add(-time.Hour))
	_, err := s.Put(ctx, bad, []byte(`{"format":1,`), store.Condition{})
	require.NoError(t, err)
	snap, err := New(q, Options{}).Snapshot(ctx)
	require.NoError(t, err)
	require.NoError(t, snap.RollupErr)
	done, _ := sum(snap.LastDay)
	require.Equal(t, 4, done)
	require.Len(t, snap.Stats.Malformed, 1)
	require.Equal(t, bad, snap.Stats.Malformed[0].Key)
}
