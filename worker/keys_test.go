package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/internal/testutil"
	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/queue/control"
	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/store/memstore"
)

func withKey(k string) func(*queue.SubmitRequest) {
	return func(r *queue.SubmitRequest) { r.Key = k }
}

// A per-key cap holds for each key across workers, as the handlers count
// it: three workers of 4 slots, a per-key cap of 2, tasks of three keys;
// no key ever has more than 2 handlers running, and every task finishes.
func TestPerKeyCapHolds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	base := memstore.New()
	_, err := queue.Init(ctx, base, 1)
	require.NoError(t, err)
	q, err := queue.Open(ctx, base, queue.Options{Logger: testLogger(t)})
	require.NoError(t, err)
	const capN, tasks = 2, 60
	keys := []string{"customer-1", "customer-2", "customer-3"}
	_, err = control.SetKeyLimit(ctx, q, "sync", capN)
	require.NoError(t, err)
	bd := &bundle{s: base, q: q}
	var ids []*queue.Task
	for i := range tasks {
		ids = append(ids, bd.submit(t, "sync", fmt.Sprint(i), withKey(keys[i%len(keys)])))
	}
	var mu sync.Mutex
	cur, most := map[string]int{}, map[string]int{}
	var done atomic.Int64
	handler := func(ctx context.Context, task *queue.Task) (json.RawMessage, error) {
		mu.Lock()
		cur[task.TaskKey]++
		most[task.TaskKey] = max(most[task.TaskKey], cur[task.TaskKey])
		mu.Unlock()
		defer func() {
			mu.Lock()
			cur[task.TaskKey]--
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
	for range 3 {
		o := bd.opts(t)
		o.Concurrency = 4
		w := New(q, o)
		w.Handle("sync", handler)
		start(t, w)
	}
	for _, task := range ids {
		bd.waitStatus(t, task.ID, queue.StatusCompleted)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, k := range keys {
		require.LessOrEqual(t, most[k], capN, "handlers of key %s running at once", k)
		require.Positive(t, most[k], "key %s", k)
	}
}

// Keys take turns: with a worker of one slot, one key's backlog of 300
// tasks submitted first does not hold back another key's 5 tasks; each of
// those starts within the first 2x5 starts (one of the backlog between
// every two of them), not after the backlog.
func TestKeysTakeTurns(t *testing.T) {
	t.Parallel()
	keysTakeTurns(t, 300, 0)
}

// Keys take turns however deep one key's backlog is: with pages of 10
// keys over 16 shards, a backlog of 1,600 (10 pages in every partition)
// holds back another key's 5 tasks no more than one of 100 does (a page
// at most in any partition): each starts within the first 2x5 starts,
// and the LISTs sent until the last of them do not grow with the backlog.
func TestKeysTakeTurnsAtAnyDepth(t *testing.T) {
	t.Parallel()
	shallow := keysTakeTurns(t, 100, 10)
	deep := keysTakeTurns(t, 1600, 10)
	t.Logf("ready LISTs until the small key's last start: %d behind 100 tasks, %d behind 1,600", shallow, deep)
	// Listing every partition once, past the big key's section in each:
	// about one LIST a partition whatever the backlog (paging through it,
	// 1,600 tasks cost 160 LISTs of 10).
	for _, n := range []int64{shallow, deep} {
		require.LessOrEqual(t, n, int64(40), "ready LISTs until the small key's last start")
	}
}

// keysTakeTurns submits deep tasks of key "big", then 5 of key "small",
// runs them on a worker of one slot with pages of page keys (0: the
// default), checks that the small key's last task is among the first 2x5
// starts, and returns the LISTs of the ready index sent until it started.
func keysTakeTurns(t *testing.T, deep, page int) int64 {
	t.Helper()
	const few = 5
	bd := setup(t, memBackend(), setupOpts{})
	for i := range deep {
		bd.submit(t, "sync", fmt.Sprint(i), withKey("big")) // "-big" sorts before "-small"
	}
	for i := range few {
		bd.submit(t, "sync", fmt.Sprint(i), withKey("small"))
	}
	counted := &readyLists{Store: bd.s}
	var mu sync.Mutex
	var order []string
	var last int
	var lists int64
	o := bd.opts(t)
	o.Concurrency, o.ReadyPageSize = 1, page
	w := New(bd.over(t, counted), o)
	w.Handle("sync", func(_ context.Context, task *queue.Task) (json.RawMessage, error) {
		mu.Lock()
		defer mu.Unlock()
		order = append(order, task.TaskKey)
		if task.TaskKey == "small" {
			last, lists = len(order)-1, counted.n.Load()
		}
		return []byte(`{}`), nil
	})
	r := start(t, w)
	testutil.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return countOf(order, "small") == few
	}, "the small key's tasks started")
	r.cancel()
	require.NoError(t, r.stop(t))
	mu.Lock()
	defer mu.Unlock()
	require.Less(t, last, 2*few, "backlog %d: the small key's last task started as start %d: %v", deep, last+1, order[:min(len(order), 2*few+2)])
	return lists
}

// readyLists counts the LISTs of the ready index.
type readyLists struct {
	store.Store
	n atomic.Int64
}

func (s *readyLists) List(ctx context.Context, p store.ListParams) (store.ListPage, error) {
	if strings.HasPrefix(p.Prefix, queue.ReadyPrefix) {
		s.n.Add(1)
	}
	return s.Store.List(ctx, p)
}

func countOf(xs []string, x string) (n int) {
	for _, y := range xs {
		if y == x {
			n++
		}
	}
	return n
}

// A key none of whose held entries is within its horizon takes its turns
// with its first own (or late) entry beyond it; a key with one within
// does not, nor do other workers' entries; entries without a key do
// where their type has keys.
func TestKeyTurnsPastTheHorizon(t *testing.T) {
	t.Parallel()
	base := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	at := func(ms int) time.Time { return base.Add(time.Duration(ms) * time.Millisecond) }
	e := func(ms int, key string, own bool) heldEntry {
		return heldEntry{ReadyEntry: queue.ReadyEntry{Type: "sync", TaskKey: key, Rank: at(ms)}, own: own}
	}
	// big's sections were cut at 10 ms, small's at 21 ms, the entries
	// without a key at 10 ms; other's were listed to their end.
	v := &heldView{horizon: at(10), keyHorizon: map[typeKey]time.Time{{"sync", "big"}: at(10), {"sync", "small"}: at(21)}, entries: []heldEntry{
		e(1, "big", true), e(2, "big", true), e(20, "big", true), e(21, "small", false), e(22, "small", true), e(23, "small", true), e(24, "", true), e(25, "other", true),
	}}
	var order []int
	for i := range v.entries {
		if v.claimable(&v.entries[i]) {
			order = append(order, i)
		}
	}
	require.Equal(t, []int{0, 1, 7}, order, "each key's entries up to its own cut; the unkeyed horizon holds back no key")
	// small's first own entry past its cut, and the type's tasks without
	// a key (one key more, as the type has keys).
	require.Equal(t, []int{4, 6}, v.keyTurns(order))
	v.horizon, v.keyHorizon = time.Time{}, nil // no horizon: every entry is within
	require.Empty(t, v.keyTurns(order))
	plain := &heldView{horizon: at(10), entries: []heldEntry{e(1, "", true), e(20, "", true)}}
	require.Empty(t, plain.keyTurns([]int{0}), "without keys the horizon holds")
}

// fairOrder deals the held entries round-robin over keys within each
// priority, keeping the claim order in each round.
func TestFairOrder(t *testing.T) {
	t.Parallel()
	e := func(typ, key string, p queue.Priority) heldEntry {
		return heldEntry{ReadyEntry: queue.ReadyEntry{Type: typ, TaskKey: key, Priority: p}}
	}
	n := queue.PriorityNormal
	entries := []heldEntry{
		e("a", "x", n), e("a", "x", n), e("a", "x", n), e("a", "y", n), e("b", "", n), e("b", "", n), e("a", "y", queue.PriorityHigh),
	}
	var turns keyTurns
	got := fairOrder(entries, []int{0, 1, 2, 3, 4, 5, 6}, &turns)
	require.Equal(t, []int{6, 0, 3, 4, 1, 5, 2}, got)
	// The turns go on: key x had the last one, so y and b go first.
	turns.took("a", "x")
	got = fairOrder(entries, []int{0, 1, 2, 3, 4, 5, 6}, &turns)
	require.Equal(t, []int{6, 3, 4, 0, 5, 1, 2}, got)
	// Without keys the claim order stays as it is.
	plain := []heldEntry{e("a", "", n), e("a", "", queue.PriorityHigh)}
	require.Equal(t, []int{0, 1}, fairOrder(plain, []int{0, 1}, &keyTurns{}))
}

// taskCount counts the GETs, PUTs and DELETEs of a store outside the
// registry and control.json (what a task's life costs), and the requests
// of the registry and control.json apart.
type taskCount struct {
	store.Store
	task, registry atomic.Int64
}

func (s *taskCount) note(key string) {
	if strings.HasPrefix(key, queue.WorkersPrefix) || key == queue.ControlKey {
		s.registry.Add(1)
	} else {
		s.task.Add(1)
	}
}

func (s *taskCount) Get(ctx context.Context, key string) (*store.Object, error) {
	s.note(key)
	return s.Store.Get(ctx, key)
}

func (s *taskCount) Put(ctx context.Context, key string, body []byte, cond store.Condition) (store.PutResult, error) {
	s.note(key)
	return s.Store.Put(ctx, key, body, cond)
}

func (s *taskCount) Delete(ctx context.Context, key string, cond store.Condition) error {
	s.note(key)
	return s.Store.Delete(ctx, key, cond)
}

func (s *taskCount) List(ctx context.Context, p store.ListParams) (store.ListPage, error) {
	if strings.HasPrefix(p.Prefix, queue.WorkersPrefix) {
		s.registry.Add(1)
	}
	return s.Store.List(ctx, p)
}

// Keys and a per-key cap cost nothing per task: a worker draining 200
// tasks of 10 keys under a per-key cap makes exactly the task requests
// (GET, PUT, DELETE) of 200 tasks without keys, and reads and writes the
// registry and control.json a few times in all, not per task.
func TestTaskKeysCostNoRequestPerTask(t *testing.T) {
	t.Parallel()
	const tasks = 200
	drain := func(keyed bool) (task, registry int64) {
		ctx := context.Background()
		base := memstore.New()
		_, err := queue.Init(ctx, base, 1)
		require.NoError(t, err)
		cs := &taskCount{Store: base}
		q, err := queue.Open(ctx, cs, queue.Options{Logger: testLogger(t)})
		require.NoError(t, err)
		if keyed {
			_, err = control.SetKeyLimit(ctx, q, "sync", 2)
			require.NoError(t, err)
		}
		bd := &bundle{s: cs, q: q}
		for i := range tasks {
			if keyed {
				bd.submit(t, "sync", `{}`, withKey(fmt.Sprint("customer-", i%10)))
			} else {
				bd.submit(t, "sync", `{}`)
			}
		}
		var done atomic.Int64
		o := bd.opts(t)
		o.Concurrency = 4
		o.HeartbeatInterval = 9 * time.Second
		o.ControlRefresh = time.Hour
		w := New(q, o)
		w.Handle("sync", func(context.Context, *queue.Task) (json.RawMessage, error) {
			done.Add(1)
			return nil, nil
		})
		taskBefore, regBefore := cs.task.Load(), cs.registry.Load()
		r := start(t, w)
		testutil.Eventually(t, func() bool { return done.Load() == tasks }, "every task to run")
		require.NoError(t, r.stop(t))
		return cs.task.Load() - taskBefore, cs.registry.Load() - regBefore
	}
	plainTask, _ := drain(false)
	keyedTask, keyedRegistry := drain(true)
	t.Logf("task requests: %d without keys, %d with keys and a per-key cap; %d registry and control requests", plainTask, keyedTask, keyedRegistry)
	require.Equal(t, plainTask, keyedTask, "task requests")
	require.Less(t, keyedRegistry, int64(tasks/10), "registry and control requests")
}

// A keyed task whose ready entry lacks its key (written by a process that
// does not know keys) is not run past its key's per-key cap: the worker
// that claimed it gives it back, with an entry that carries the key.
func TestPerKeyCapHoldsForEntryWithoutKey(t *testing.T) {
	t.Parallel()
	bd := setup(t, memBackend(), setupOpts{})
	ctx := context.Background()
	_, err := control.SetKeyLimit(ctx, bd.q, "sync", 1)
	require.NoError(t, err)
	b := newBlocker(false)
	o := bd.opts(t)
	o.Concurrency = 4
	w := New(bd.q, o)
	w.Handle("sync", b.handle)
	first := bd.submit(t, "sync", `1`, withKey("k"))
	start(t, w)
	require.Equal(t, first.ID, b.waitStarted(t).ID)

	second := bd.submit(t, "sync", `2`, withKey("k"))
	unkeyed := *second
	unkeyed.TaskKey = ""
	require.NoError(t, bd.s.Delete(ctx, queue.ReadyKey(second), store.Condition{}))
	_, err = bd.s.Put(ctx, queue.ReadyKey(&unkeyed), nil, store.Condition{})
	require.NoError(t, err)

	testutil.Eventually(t, func() bool {
		return len(b.started) > 0 || bd.get(t, second.ID).LastEvent == queue.EventRequeued
	}, "the second task to start or be given back")
	require.Empty(t, b.started, "a second task of key k started while the first ran")
	require.Contains(t, queue.ReadyKey(second), "/-k/")
	close(b.release)
	bd.waitStatus(t, second.ID, queue.StatusCompleted)
}

// A per-key rate holds for each key: a per-key rate of 10/s (burst 1)
// over two workers, 25 tasks of each of two keys; in no second do more
// than 10 + 1 + 2 (the rate, the burst, a token per worker) of one key
// start, as the handlers see it, while the two keys run side by side.
func TestPerKeyRateHolds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	bd := setup(t, memBackend(), setupOpts{})
	const perSec, burst, workers, perKey = 10, 1, 2, 25
	_, err := control.SetKeyRate(ctx, bd.q, "sync", perSec, time.Second, burst)
	require.NoError(t, err)
	keys := []string{"customer-1", "customer-2"}
	var ids []*queue.Task
	for i := range perKey * len(keys) {
		ids = append(ids, bd.submit(t, "sync", `{}`, withKey(keys[i%len(keys)])))
	}
	var mu sync.Mutex
	starts := map[string][]time.Time{}
	for range workers {
		o := bd.opts(t)
		o.Concurrency = 8
		w := New(bd.q, o)
		w.Handle("sync", func(_ context.Context, task *queue.Task) (json.RawMessage, error) {
			mu.Lock()
			starts[task.TaskKey] = append(starts[task.TaskKey], time.Now())
			mu.Unlock()
			return []byte(`{}`), nil
		})
		start(t, w)
	}
	for _, task := range ids {
		bd.waitStatus(t, task.ID, queue.StatusCompleted)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, k := range keys {
		ts := starts[k]
		require.Len(t, ts, perKey)
		slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
		most := 0
		for i := range ts {
			n := 0
			for j := i; j < len(ts) && ts[j].Sub(ts[i]) < time.Second; j++ {
				n++
			}
			most = max(most, n)
		}
		t.Logf("key %s: at most %d starts in a second", k, most)
		require.LessOrEqual(t, most, perSec+burst+workers, "starts of key %s in a second", k)
	}
}

// Passing is per group (a type's task key, or its entries without one): a
// group with a record of its own is judged by it alone, so a pass that
// stopped at the worker's own oldest entry of key j makes none of j's
// later entries late, while key k's, passed further, are; a group with
// no record is judged by the passes of every group (anyGroup).
func TestKeyPassMakesOnlyItsKeyLate(t *testing.T) {
	t.Parallel()
	const hold = 10 * time.Second
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	entry := func(key string, rank time.Time) heldEntry {
		return heldEntry{ReadyEntry: queue.ReadyEntry{Type: "a", TaskKey: key, Rank: rank, AvailableAt: rank}}
	}
	var p keyedPasses
	older := now.Add(-time.Minute)
	p.note(anyGroup, now, now.Add(-time.Second), hold)
	p.note(typeKey{"a", "k"}, now, now.Add(-time.Second), hold)
	p.note(typeKey{"a", "j"}, now, older.Add(-time.Second), hold) // its own oldest j entry came first
	v := heldView{passed: p.before(now.Add(2*hold), hold, nil)}
	for key, late := range map[string]bool{"k": true, "j": false, "never-seen": true} {
		h := entry(key, older)
		require.Equal(t, late, v.late(&h), "key %q", key)
	}
	newer := entry("k", now.Add(time.Minute))
	require.False(t, v.late(&newer), "ranked after what was passed")
	fresh := entry("k", now.Add(-2*time.Second))
	fresh.AvailableAt = now.Add(time.Second)
	require.False(t, v.late(&fresh), "not ready when it was passed")
}
