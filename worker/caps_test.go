package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/internal/testutil"
	"github.com/qo-queue/qo/monitor"
	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/queue/control"
	"github.com/qo-queue/qo/queue/registry"
	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/store/memstore"
)

// The share rule: a cap split evenly over the live workers serving the
// type, in their order (see TestCapOrder), the remainder to the first; as workers join, leave
// or are found dead, the shares of one live set always sum to the cap.
func TestCapShare(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		n    int
		ids  []string
		most map[string]int
		want map[string]int
	}{
		{"alone", 5, []string{"a"}, nil, map[string]int{"a": 5}},
		{"a joins", 5, []string{"a", "b"}, nil, map[string]int{"a": 3, "b": 2}},
		{"an earlier id joins", 5, []string{"0", "a", "b"}, nil, map[string]int{"0": 2, "a": 2, "b": 1}},
		{"four workers", 5, []string{"a", "b", "c", "d"}, nil, map[string]int{"a": 2, "b": 1, "c": 1, "d": 1}},
		{"b killed (found dead)", 5, []string{"a", "c", "d"}, nil, map[string]int{"a": 2, "c": 2, "d": 1}},
		{"more workers than the cap", 2, []string{"a", "b", "c"}, nil, map[string]int{"a": 1, "b": 1, "c": 0}},
		{"not among the live", 5, []string{"a"}, nil, map[string]int{"z": 0}},
		// A worker that runs fewer (its concurrency or its own limit)
		// gets that, and the rest goes to the others.
		{"one runs at most 1", 5, []string{"a", "b", "c"}, map[string]int{"a": 1}, map[string]int{"a": 1, "b": 2, "c": 2}},
		{"two bounded, in turn", 9, []string{"a", "b", "c", "d"}, map[string]int{"b": 1, "c": 2}, map[string]int{"a": 3, "b": 1, "c": 2, "d": 3}},
		{"a bound above the share", 4, []string{"a", "b"}, map[string]int{"a": 8}, map[string]int{"a": 2, "b": 2}},
		{"all bounded below the cap", 10, []string{"a", "b"}, map[string]int{"a": 2, "b": 3}, map[string]int{"a": 2, "b": 3}},
		{"a bound of 0", 3, []string{"a", "b", "c"}, map[string]int{"b": 0}, map[string]int{"a": 2, "b": 0, "c": 1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sum := 0
			for id, want := range c.want {
				got := capShare(c.n, c.ids, id, c.most)
				require.Equal(t, want, got, "share of %s", id)
				sum += got
			}
			if _, ok := c.want[c.ids[0]]; ok && len(c.want) == len(c.ids) && c.name != "all bounded below the cap" {
				require.Equal(t, c.n, sum, "the shares of one live set sum to the cap")
			}
		})
	}
}

// The order a cap's units are given out in: workers serving fewer types
// first, then those with more slots, then by id; a worker whose types are
// unknown comes last. With fewer units than workers, the units go to the
// workers likeliest to use them: a fleet where a dedicated worker of one
// slot and one of eight never ran a task of their type, its two units held
// by workers whose slots older tasks of other types kept full (simulation
// seed 667), now gives them the units.
func TestCapOrder(t *testing.T) {
	t.Parallel()
	abc := []string{"a", "b", "c"}
	cases := []struct {
		name  string
		n     int
		cs    []capCandidate
		order []string
		want  map[string]int // shares of b
	}{
		{"by id when alike", 5, []capCandidate{{"y", abc, 4}, {"x", abc, 4}}, []string{"x", "y"}, map[string]int{"x": 3, "y": 2}},
		{"dedicated first", 2, []capCandidate{{"w0", abc, 2}, {"w1", abc, 4}, {"w2", abc, 4}, {"w4", []string{"b"}, 1}},
			[]string{"w4", "w1", "w2", "w0"}, map[string]int{"w4": 1, "w1": 1, "w2": 0, "w0": 0}},
		{"more slots first", 1, []capCandidate{{"a", abc, 2}, {"b", abc, 8}}, []string{"b", "a"}, map[string]int{"a": 0, "b": 1}},
		{"unknown types last", 1, []capCandidate{{"a", nil, 16}, {"b", abc, 1}}, []string{"b", "a"}, map[string]int{"a": 0, "b": 1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ids := capOrder(c.cs)
			require.Equal(t, c.order, ids)
			most := map[string]int{}
			for _, cd := range c.cs {
				if cd.slots > 0 {
					most[cd.id] = cd.slots
				}
			}
			for id, want := range c.want {
				require.Equal(t, want, capShare(c.n, ids, id, most), "share of %s", id)
			}
		})
	}
}

// A fleet-wide cap holds across workers, as the handlers themselves count
// it: three workers of 4 slots start, a fourth joins, one loses the
// bucket (its heartbeats stop, as a killed worker's) mid-run; at no
// instant do more than 3 handlers run, and every task finishes.
// A fleet-wide limit on a type whose name begins with the prefix of
// another kind of limit (written to control.json by hand, or by a qo that
// allowed it) cannot be held apart from that kind's limit of another
// type: the worker claims none of the type's tasks, rather than run them
// past the limit, and claims its other types as usual.
func TestUnheldLimitStopsItsType(t *testing.T) {
	t.Parallel()
	bd := setup(t, memBackend(), setupOpts{})
	ctx := context.Background()
	_, err := bd.s.Put(ctx, queue.ControlKey, []byte(`{"format":1,"limits":{"rate:x":{"concurrency":1}}}`), store.Condition{})
	require.NoError(t, err)
	var ran atomic.Int64
	o := bd.opts(t)
	w := New(bd.q, o)
	w.Handle("rate:x", func(context.Context, *queue.Task) (json.RawMessage, error) { ran.Add(1); return []byte(`{}`), nil })
	w.Handle("plain", func(context.Context, *queue.Task) (json.RawMessage, error) { return []byte(`{}`), nil })
	held := bd.submit(t, "rate:x", `1`)
	plain := bd.submit(t, "plain", `2`)
	start(t, w)
	bd.waitStatus(t, plain.ID, queue.StatusCompleted)
	testutil.Eventually(t, func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.caps.unheld["rate:x"]
	}, "the worker to find the limit it cannot hold")
	require.Zero(t, ran.Load(), "a task of the type with the limit it cannot hold ran")
	require.Equal(t, queue.StatusPending, bd.get(t, held.ID).Status)
}

func TestFleetCapHolds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	base := memstore.New()
	_, err := queue.Init(ctx, base, 1)
	require.NoError(t, err)
	q, err := queue.Open(ctx, base, queue.Options{Logger: testLogger(t)})
	require.NoError(t, err)
	const capN, tasks = 3, 60
	_, err = control.SetLimit(ctx, q, "capped", capN)
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

// A cap costs nothing per task: a worker draining 200 capped tasks reads
// and writes the registry and control.json a few times in all (its
// heartbeats and the confirmation of its share), not per task.
func TestFleetCapCostsNoRequestPerTask(t *testing.T) {
	t.Parallel()
	limitCostsNoRequestPerTask(t, "capped", func(ctx context.Context, q *queue.Queue) error {
		_, err := control.SetLimit(ctx, q, "capped", 4)
		return err
	})
}

// limitCostsNoRequestPerTask drains 200 tasks of typ, under the limit set
// sets, through one worker of 4 slots, and counts the registry and
// control.json requests it made: fewer than one per ten tasks.
func limitCostsNoRequestPerTask(t *testing.T, typ string, set func(context.Context, *queue.Queue) error) {
	t.Helper()
	ctx := context.Background()
	base := memstore.New()
	_, err := queue.Init(ctx, base, 1)
	require.NoError(t, err)
	cs := &taskCount{Store: base}
	q, err := queue.Open(ctx, cs, queue.Options{Logger: testLogger(t)})
	require.NoError(t, err)
	require.NoError(t, set(ctx, q))
	bd := &bundle{s: cs, q: q}
	const tasks = 200
	for range tasks {
		bd.submit(t, typ, `{}`)
	}
	var done atomic.Int64
	o := bd.opts(t)
	o.Concurrency = 4
	o.HeartbeatInterval = 9 * time.Second
	o.ControlRefresh = time.Hour
	w := New(q, o)
	w.Handle(typ, func(context.Context, *queue.Task) (json.RawMessage, error) {
		done.Add(1)
		return nil, nil
	})
	before := cs.registry.Load()
	r := start(t, w)
	testutil.Eventually(t, func() bool { return done.Load() == tasks }, "every task to run")
	require.NoError(t, r.stop(t))
	used := cs.registry.Load() - before
	t.Logf("%d registry and control requests for %d tasks", used, tasks)
	require.Less(t, used, int64(tasks/10), "registry and control requests")
}

// The live set behind a worker's target, step by step: joins count, a
// worker serving other types does not, a killed worker counts until it is
// dead by the monitor's rule (DeadAfter + MaxClockSkew after its last
// heartbeat) and a deregistered one stops counting at once.
func TestCapTargetsFollowTheLiveSet(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := newFakeClock()
	s := memstore.New(memstore.WithClock(clock))
	_, err := queue.Init(ctx, s, 1)
	require.NoError(t, err)
	q, err := queue.Open(ctx, s, queue.Options{Logger: testLogger(t), Clock: clock})
	require.NoError(t, err)
	w := New(q, Options{ID: "b", Concurrency: 8, Clock: clock, NoMonitor: true, Logger: testLogger(t)})
	w.Handle("t", func(context.Context, *queue.Task) (json.RawMessage, error) { return nil, nil })
	require.NoError(t, w.Validate())
	beat := func(id string, types ...string) {
		require.NoError(t, registry.Put(ctx, q, &queue.WorkerInfo{ID: id, Types: types, Concurrency: 8}))
	}
	steps := []struct {
		name string
		act  func()
		want int
	}{
		{"alone", func() {}, 5},
		{"a joins", func() { beat("a", "t") }, 2},
		{"c joins, serving another type", func() { beat("c", "other") }, 2},
		{"d joins", func() { beat("d", "t", "other") }, 2},
		{"a stops heartbeating: still counted at the bound", func() {
			clock.Advance(queue.DefaultDeadAfter + queue.MaxClockSkew)
			beat("d", "t", "other")
		}, 2},
		{"a is dead past the bound", func() {
			clock.Advance(time.Second)
			beat("d", "t", "other")
		}, 3},
		{"d deregisters", func() { require.NoError(t, registry.Delete(ctx, q, "d")) }, 5},
	}
	for _, st := range steps {
		st.act()
		got, err := w.capTargets(ctx, map[string]int{"t": 5, rateKey("t"): 5})
		require.NoError(t, err, st.name)
		require.Equal(t, st.want, got["t"], st.name)
		require.Equal(t, st.want, got[rateKey("t")], "%s: a rate is shared over the same live set", st.name)
	}
}

// The hand-over of shares between two workers, heartbeat by heartbeat: a
// joiner holds nothing usable until the other's published hold shrank; a
// worker publishes no less than what it runs, but claims no more than its
// target; a dead worker's share is taken only past the liveness bound.
func TestCapHandOver(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := newFakeClock()
	s := memstore.New(memstore.WithClock(clock))
	_, err := queue.Init(ctx, s, 1)
	require.NoError(t, err)
	q, err := queue.Open(ctx, s, queue.Options{Logger: testLogger(t), Clock: clock})
	require.NoError(t, err)
	ctl, err := control.SetLimit(ctx, q, "t", 4)
	require.NoError(t, err)
	newW := func(id string) *Worker {
		w := New(q, Options{ID: id, Concurrency: 8, Clock: clock, NoMonitor: true, Logger: testLogger(t)})
		w.Handle("t", func(context.Context, *queue.Task) (json.RawMessage, error) { return nil, nil })
		require.NoError(t, w.Validate())
		w.setCaps(ctl)
		return w
	}
	usable := func(w *Worker) int {
		w.mu.Lock()
		defer w.mu.Unlock()
		n, ok := w.capLimit("t")
		require.True(t, ok)
		return n
	}
	held := func(w *Worker) int {
		info, err := registry.Get(ctx, q, w.ID())
		require.NoError(t, err)
		return info.Holds["t"]
	}
	a := newW("a")
	require.NoError(t, a.Heartbeat(ctx))
	require.Equal(t, 4, usable(a), "alone: the whole cap")

	b := newW("b")
	require.NoError(t, b.Heartbeat(ctx))
	require.Equal(t, 2, held(b), "b publishes its target")
	require.Equal(t, 0, usable(b), "but a still holds 4")

	a.mu.Lock()
	a.claiming["t"] = 3 // a runs 3
	a.mu.Unlock()
	require.NoError(t, a.Heartbeat(ctx))
	require.Equal(t, 3, held(a), "a shrinks no lower than it runs")
	require.Equal(t, 2, usable(a), "but claims no more than its target: kept busy, it still hands over")
	require.NoError(t, b.Heartbeat(ctx))
	require.Equal(t, 0, usable(b), "3 + 2 is over the cap")

	a.mu.Lock()
	a.claiming["t"] = 1
	a.mu.Unlock()
	require.NoError(t, a.Heartbeat(ctx))
	require.Equal(t, 2, usable(a))
	require.NoError(t, b.Heartbeat(ctx))
	require.Equal(t, 2, usable(b), "a shrank to its target: b takes its share")

	// a is killed: b's share grows only once a is dead by the monitor's rule.
	clock.Advance(queue.DefaultDeadAfter / 2)
	require.NoError(t, b.Heartbeat(ctx))
	clock.Advance(queue.DefaultDeadAfter/2 + queue.MaxClockSkew)
	require.NoError(t, b.Heartbeat(ctx))
	require.Equal(t, 2, usable(b), "a is not dead yet")
	clock.Advance(time.Second)
	require.NoError(t, b.Heartbeat(ctx))
	require.Equal(t, 4, usable(b), "a is dead: b holds the whole cap")
}

// A peer whose registry entry says it runs fewer of a type (its own limit,
// or its concurrency) is given no more of the type's cap than that, and
// the rest goes to the others: the fleet runs up to the cap. Rates are
// not bounded so.
func TestCapTargetsLeaveNothingUnused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := newFakeClock()
	s := memstore.New(memstore.WithClock(clock))
	_, err := queue.Init(ctx, s, 1)
	require.NoError(t, err)
	q, err := queue.Open(ctx, s, queue.Options{Logger: testLogger(t), Clock: clock})
	require.NoError(t, err)
	w := New(q, Options{ID: "b", Concurrency: 8, Clock: clock, NoMonitor: true, Logger: testLogger(t)})
	require.NoError(t, registry.Put(ctx, q, &queue.WorkerInfo{ID: "a", Types: []string{"t"}, Concurrency: 8, Limits: map[string]int{"t": 1}}))
	require.NoError(t, registry.Put(ctx, q, &queue.WorkerInfo{ID: "c", Types: []string{"t"}, Concurrency: 2}))
	got, err := w.capTargets(ctx, map[string]int{"t": 6, rateKey("t"): 6})
	require.NoError(t, err)
	// a runs at most 1 and c at most 2 of t: b takes the other 3 (an even
	// split would give each 2, and a's second would go unused).
	require.Equal(t, 3, got["t"])
	require.Equal(t, 2, got[rateKey("t")], "a rate is split evenly")
}
