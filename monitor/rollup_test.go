package monitor

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/queue/throughput"
	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/store/storetest"
)

// TestRollUp: the leader folds each worker's minutes once, writes only
// what changed, and writes a malformed hour anew instead of stopping.
func TestRollUp(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	q, s, clock := setup(t, storetest.Backends()[0], true)
	now := clock.Now()
	minute := now.Truncate(time.Minute)
	_, err := s.Put(ctx, throughput.Key(now), []byte(`not json`), store.Condition{})
	require.NoError(t, err)
	m := New(q, Options{Logger: discard})
	w := &queue.WorkerInfo{ID: "w", LastHeartbeat: now, Recent: []queue.MinuteCount{{Start: minute, Completed: 2, Failed: 1}}}
	require.NoError(t, m.RollUp(ctx, []*queue.WorkerInfo{w}, now))
	require.NoError(t, m.RollUp(ctx, []*queue.WorkerInfo{w}, now), "the same heartbeat again")
	h, err := throughput.Load(ctx, q, now)
	require.NoError(t, err)
	require.Len(t, h.Minutes, 1)
	require.Equal(t, queue.MinuteCount{Start: minute, Completed: 2, Failed: 1}, h.Minutes[0].MinuteCount, "counted once")

	puts := func() int64 { return s.(store.Counted).Requests().Snapshot().Total(store.OpPut) }
	before := puts()
	require.NoError(t, m.RollUp(ctx, []*queue.WorkerInfo{w}, now.Add(time.Second)))
	require.Equal(t, before, puts(), "nothing changed: nothing written")
	w.Recent[0].Completed = 3
	require.NoError(t, m.RollUp(ctx, []*queue.WorkerInfo{w}, now.Add(2*time.Second)))
	require.Equal(t, before+1, puts(), "one minute grew: one PUT")
	w.Recent[0].Completed = 2

	later := now.Add(throughput.OpenFor + time.Minute)
	require.NoError(t, m.RollUp(ctx, nil, later))
	h, err = throughput.Load(ctx, q, now)
	require.NoError(t, err)
	require.Nil(t, h.Minutes[0].Workers, "the minute closed")
	require.Equal(t, 3, h.Minutes[0].Completed)
}
