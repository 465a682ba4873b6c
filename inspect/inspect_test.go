package inspect

import (
	"context"
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/monitor"
	"github.com/qo-queue/qo/monitor/view"
	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/queuetest"
	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/store/memstore"
)

// open makes a queue on a counting memory store with a fake clock.
func open(t *testing.T) (*queue.Queue, *memstore.Store, *queuetest.Clock) {
	q := queuetest.New(t)
	q.Clock.Advance(12*time.Hour + 30*time.Second) // mid-day, mid-minute
	return q.Queue, q.Store, q.Clock
}

// count returns the requests of kind op s has served so far.
func count(s *memstore.Store, op store.Op) int64 { return s.Requests().Snapshot().Total(op) }

// TestRateMeter: a fleet whose counters grow at a known rate, heartbeating
// every 10 s at offsets of their own, read at refresh intervals that do
// not line up with the heartbeats: the rate is within 2% every time.
func TestRateMeter(t *testing.T) {
	t.Parallel()
	start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	type fake struct {
		id     string
		perSec float64 // GETs per second
		offset time.Duration
	}
	fleet := []fake{{"a", 10, 0}, {"b", 5.5, 3300 * time.Millisecond}, {"c", 9, 7100 * time.Millisecond}}
	const truth = 24.5
	// beatAt is the last heartbeat of f at or before now (every 10 s
	// from its offset), with its counters then.
	beatAt := func(f fake, now time.Time) *queue.WorkerInfo {
		n := now.Sub(start.Add(f.offset)) / (10 * time.Second)
		at := start.Add(f.offset + n*10*time.Second)
		reqs := store.Counts{OK: map[store.Op]int64{store.OpGet: int64(math.Round(f.perSec * at.Sub(start).Seconds()))}}
		return &queue.WorkerInfo{ID: f.id, LastHeartbeat: at, Requests: &reqs, Types: []string{"t"}}
	}
	for _, refresh := range []time.Duration{2 * time.Second, 2500 * time.Millisecond, 5 * time.Second, 7300 * time.Millisecond} {
		var m RateMeter
		now := start.Add(8 * time.Second)
		ready := false
		for i := 0; i < 60; i++ {
			var ws []*queue.WorkerInfo
			for _, f := range fleet {
				ws = append(ws, beatAt(f, now))
			}
			r := m.Observe(monitor.Health(ws, now), store.AWSStandardPrices)
			if r != nil && r.Workers == len(fleet) {
				ready = true
			}
			if ready {
				require.NotNil(t, r)
				require.InEpsilon(t, truth, r.PerSecond, 0.02, "refresh every %s, at %s", refresh, now.Sub(start))
				require.InEpsilon(t, truth*0.0004/1000*3600, r.DollarsPerHour, 0.02)
			}
			now = now.Add(refresh)
		}
		require.True(t, ready, "refresh every %s: never measured the whole fleet", refresh)
	}
}

// TestRateMeterDeadAndGone: a dead worker adds nothing, a gone one is
// forgotten, and a worker seen once only waits.
func TestRateMeterDeadAndGone(t *testing.T) {
	t.Parallel()
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	w := func(id string, beat time.Time, gets int64) *queue.WorkerInfo {
		return &queue.WorkerInfo{ID: id, LastHeartbeat: beat, Requests: &store.Counts{OK: map[store.Op]int64{store.OpGet: gets}}}
	}
	var m RateMeter
	require.Nil(t, m.Observe(monitor.Health([]*queue.WorkerInfo{w("a", now, 0)}, now), store.AWSStandardPrices))
	later := now.Add(10 * time.Second)
	r := m.Observe(monitor.Health([]*queue.WorkerInfo{w("a", later, 100), w("b", later, 5)}, later), store.AWSStandardPrices)
	require.Equal(t, 10.0, r.PerSecond)
	require.Equal(t, 1, r.Workers)
	require.Equal(t, 1, r.Waiting)
	gone := later.Add(time.Minute)
	require.Nil(t, m.Observe(monitor.Health([]*queue.WorkerInfo{w("a", later, 100)}, gone), store.AWSStandardPrices), "a dead worker sends nothing")
}

// TestUnserved names the types nothing runs.
func TestUnserved(t *testing.T) {
	t.Parallel()
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	st := queue.Stats{ByType: map[string]map[queue.Status]int{
		"served": {queue.StatusPending: 2}, "nobody": {queue.StatusPending: 1}, "paused": {queue.StatusPending: 3},
		"deadonly": {queue.StatusPending: 1}, "running": {queue.StatusRunning: 1},
	}}
	ws := monitor.Health([]*queue.WorkerInfo{
		{ID: "live", LastHeartbeat: now, Types: []string{"served", "paused"}},
		{ID: "gone", LastHeartbeat: now.Add(-time.Minute), Types: []string{"deadonly", "nobody2"}},
	}, now)
	ctl := queue.Control{Types: map[string]queue.Pause{"paused": {}}}
	require.Equal(t, []view.Unserved{
		{Type: "deadonly", Pending: 1, Reason: ReasonNoWorker},
		{Type: "nobody", Pending: 1, Reason: ReasonNoWorker},
		{Type: "paused", Pending: 3, Reason: ReasonTypePaused},
	}, Unserved(st, ws, ctl))
	ctl.Paused = true
	require.Len(t, Unserved(st, ws, ctl), 4, "a paused queue serves nothing")
	require.Equal(t, ReasonQueuePaused, Unserved(st, ws, ctl)[0].Reason)
}

// TestHistoryReadOnce: reading again the history of a 30-version task that
// did not change costs its version listing alone.
func TestHistoryReadOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	q, s, _ := open(t)
	task, _, err := q.Submit(ctx, queue.SubmitRequest{Type: "t", Input: json.RawMessage(`{}`)})
	require.NoError(t, err)
	key := q.TaskKey(task.ID)
	obj, err := s.Get(ctx, key)
	require.NoError(t, err)
	for i := 0; i < 29; i++ {
		_, err := s.Put(ctx, key, obj.Body, store.Condition{})
		require.NoError(t, err)
	}
	m := New(q, Options{})
	first, err := m.History(ctx, task.ID)
	require.NoError(t, err)
	require.Len(t, first, 30)
	gets, lists := count(s, store.OpGet), count(s, store.OpListVersions)
	again, err := m.History(ctx, task.ID)
	require.NoError(t, err)
	require.Len(t, again, 30)
	require.Equal(t, gets, count(s, store.OpGet), "no version is read twice")
	require.Equal(t, lists+1, count(s, store.OpListVersions))
	_, err = s.Put(ctx, key, obj.Body, store.Condition{})
	require.NoError(t, err)
	third, err := m.History(ctx, task.ID)
	require.NoError(t, err)
	require.Len(t, third, 31)
	require.Equal(t, gets+1, count(s, store.OpGet), "only the new version is read")
}
