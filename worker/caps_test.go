package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/internal/testutil"
	"github.com/qo-queue/qo/monitor"
	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/store/memstore"
)

// The share rule: a cap split evenly over the live workers serving the
// type, by sorted id, the remainder to the first; as workers join, leave
// or are found dead, the shares of one live set always sum to the cap.
func TestCapShare(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		n    int
		ids  []string
		want map[string]int
	}{
		{"alone", 5, []string{"a"}, map[string]int{"a": 5}},
		{"a joins", 5, []string{"a", "b"}, map[string]int{"a": 3, "b": 2}},
		{"an earlier id joins", 5, []string{"0", "a", "b"}, map[string]int{"0": 2, "a": 2, "b": 1}},
		{"four workers", 5, []string{"a", "b", "c", "d"}, map[string]int{"a": 2, "b": 1, "c": 1, "d": 1}},
		{"b killed (found dead)", 5, []string{"a", "c", "d"}, map[string]int{"a": 2, "c": 2, "d": 1}},
		{"more workers than the cap", 2, []string{"a", "b", "c"}, map[string]int{"a": 1, "b": 1, "c": 0}},
		{"not among the live", 5, []string{"a"}, map[string]int{"z": 0}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sum := 0
			for id, want := range c.want {
				got := capShare(c.n, c.ids, id)
				require.Equal(t, want, got, "share of %s", id)
				sum += got
			}
			if _, ok := c.want[c.ids[0]]; ok && len(c.want) == len(c.ids) {
				require.Equal(t, c.n, sum, "the shares of one live set sum to the cap")
			}
		})
	}
}

// A fleet-wide cap holds across workers, as the handlers themselves count
// it: three workers of 4 slots start, a fourth joins, one loses the
// bucket (its heartbeats stop, as a killed worker's) mid-run; at no
// instant do more than 3 handlers run, and every task finishes.
func TestFleetCapHolds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	base := memstore.New()
	_, err := queue.Init(ctx, base, 1)
	require.NoError(t, err)
	q, err := queue.Open(ctx, base, queue.Options{Logger: testLogger(t)})
	require.NoError(t, err)
	const capN, tasks = 3, 60
	_, err = q.SetLimit(ctx, "capped", capN)
	require.NoError(t, err)
	bd := &bundle{s: base, q: q}
	var ids []*queue.Task
	for i := range tasks {
		ids = append(ids, bd.submit(t, "capped", fmt.Sprint(i)))
	}

	var mu sync.Mutex
	cur, most := 0, 0
	var done atomic.Int64
	handler := func(ctx context.Context, _ *queue.Task) (json.RawMessage, error) {
		mu.Lock()
		cur++
		most = max(most, cur)
		mu.Unlock()
		defer func() {
			mu.Lock()
			cur--
			mu.Unlock()
		}()
		select { // some work
		case <-time.After(20 * time.Millisecond):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		done.Add(1)
		return []byte(`{}`), nil
	}
	stores := []*downStore{}
	add := func(withMonitor bool) {
		ds := &downStore{Store: base}
		wq, err := queue.Open(ctx, ds, queue.Options{Logger: testLogger(t)})
		require.NoError(t, err)
		o := bd.opts(t)
		o.Concurrency = 4
		o.DeadAfter = 2 * time.Second
		o.KillGrace = 100 * time.Millisecond
		o.HandlerGrace = 200 * time.Millisecond
		if withMonitor {
			o.NoMonitor = false
			o.Monitor = monitor.Options{LeaseCheckInterval: 100 * time.Millisecond, Logger: testLogger(t)}
		}
		w := New(wq, o)
		w.Handle("capped", handler)
		start(t, w)
		stores = append(stores, ds)
	}
	for i := range 3 {
		add(i == 0)
	}
	testutil.Eventually(t, func() bool { return done.Load() >= 10 }, "10 tasks done")
	add(false)
	testutil.Eventually(t, func() bool { return done.Load() >= 25 }, "25 tasks done")
	stores[1].down.Store(true) // killed: no heartbeat, no write lands
	for _, task := range ids {
		bd.waitStatus(t, task.ID, queue.StatusCompleted)
	}
	mu.Lock()
	defer mu.Unlock()
	require.LessOrEqual(t, most, capN, "handlers running at once")
	require.Positive(t, most)
}

// registryCount counts the requests that touch the registry or the
// control object.
type registryCount struct {
	store.Store
	n atomic.Int64
}

func (s *registryCount) note(key string) {
	if strings.HasPrefix(key, queue.WorkersPrefix) || key == queue.ControlKey {
		s.n.Add(1)
	}
}

func (s *registryCount) Get(ctx context.Context, key string) (*store.Object, error) {
	s.note(key)
	return s.Store.Get(ctx, key)
}

func (s *registryCount) Put(ctx context.Context, key string, body []byte, cond store.Condition) (store.PutResult, error) {
	s.note(key)
	return s.Store.Put(ctx, key, body, cond)
}

func (s *registryCount) List(ctx context.Context, p store.ListParams) (store.ListPage, error) {
	s.note(p.Prefix)
	return s.Store.List(ctx, p)
}

// A cap costs nothing per task: a worker draining 200 capped tasks reads
// and writes the registry and control.json a few times in all (its
// heartbeats and the confirmation of its share), not per task.
func TestFleetCapCostsNoRequestPerTask(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	base := memstore.New()
	_, err := queue.Init(ctx, base, 1)
	require.NoError(t, err)
	cs := &registryCount{Store: base}
	q, err := queue.Open(ctx, cs, queue.Options{Logger: testLogger(t)})
	require.NoError(t, err)
	_, err = q.SetLimit(ctx, "capped", 4)
	require.NoError(t, err)
	bd := &bundle{s: cs, q: q}
	const tasks = 200
	for range tasks {
		bd.submit(t, "capped", `{}`)
	}
	var done atomic.Int64
	o := bd.opts(t)
	o.Concurrency = 4
	o.HeartbeatInterval = 9 * time.Second
	o.ControlRefresh = time.Hour
	w := New(q, o)
	w.Handle("capped", func(context.Context, *queue.Task) (json.RawMessage, error) {
		done.Add(1)
		return nil, nil
	})
	before := cs.n.Load()
	r := start(t, w)
	testutil.Eventually(t, func() bool { return done.Load() == tasks }, "every task to run")
	require.NoError(t, r.stop(t))
	used := cs.n.Load() - before
	t.Logf("%d registry and control requests for %d tasks", used, tasks)
	require.Less(t, used, int64(tasks/10), "registry and control requests")
}
