package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/internal/testutil"
	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/store/storetest"
)

// prepared readies w for direct poll calls (without Run).
// jobWorker is a prepared worker on q whose "job" handler blocks until its
// context ends, so the tasks it claims stay running.
func jobWorker(t *testing.T, q *queue.Queue, o Options) *Worker {
	t.Helper()
	w := New(q, o)
	w.Handle("job", blockHandler)
	return prepared(t, w)
}

// over opens the bundle's queue over s, a wrapper of its store (on the
// bundle's fake clock when it has one).
func (bd *bundle) over(t *testing.T, s store.Store) *queue.Queue {
	t.Helper()
	q, err := queue.Open(context.Background(), s, queue.Options{Logger: testLogger(t), Clock: bd.clock})
	require.NoError(t, err)
	return q
}

func prepared(t *testing.T, w *Worker) *Worker {
	t.Helper()
	require.NoError(t, w.prepare())
	w.handlerBase = context.Background()
	t.Cleanup(func() {
		for _, rt := range w.snapshotRunning() {
			rt.cancel(ErrShuttingDown)
		}
		w.tasks.Wait()
	})
	return w
}

// An idle worker sends one LIST per poll, whatever the shard count (the
// pause switches are read only when there is something to claim), and
// never reads tasks of types it does not serve.
func TestIdlePollCost(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		bd := setup(t, b, setupOpts{shardChars: 2}) // 256 shards
		w := New(bd.q, bd.opts(t))
		w.Handle("mine", echoHandler)
		prepared(t, w)

		// The first poll reads control.json, once in the worker's life
		// (see control.go); every idle poll after it is one LIST.
		before := counts(bd.s)
		r := w.pollSettled(ctx, 1)
		require.NoError(t, r.err)
		require.Zero(t, r.claimed)
		d := counts(bd.s).Sub(before)
		require.Equal(t, int64(1), d.Total(store.OpList), "requests: %s", d)
		require.Equal(t, int64(1), d.Total(store.OpGet), "the switches, read once: %s", d)
		require.Equal(t, int64(2), total(d), "requests: %s", d)
		for range 3 {
			before = counts(bd.s)
			require.NoError(t, w.pollSettled(ctx, 1).err)
			d = counts(bd.s).Sub(before)
			require.Equal(t, int64(1), d.Total(store.OpList), "requests: %s", d)
			require.Equal(t, int64(1), total(d), "requests: %s", d)
		}

		for range 5 {
			bd.submit(t, "other", `{}`)
		}
		before = counts(bd.s)
		r = w.pollSettled(ctx, 1)
		require.NoError(t, r.err)
		require.Zero(t, r.claimed)
		d = counts(bd.s).Sub(before)
		require.Equal(t, int64(1), d.Total(store.OpList), "requests: %s", d)
		require.Zero(t, d.Total(store.OpGet), "a worker must not read tasks it cannot run: %s", d)
	})
}

func total(c store.Counts) int64 {
	var n int64
	for _, op := range store.Ops {
		n += c.Total(op)
	}
	return n
}

// Pages full of other types' entries are paged through, not stuck on.
func TestPollPagesPastOtherTypes(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		bd := setup(t, b, setupOpts{})
		o := bd.opts(t)
		o.ReadyPageSize = 2
		w := New(bd.q, o)
		blk := newBlocker(true)
		w.Handle("mine", blk.handle)
		prepared(t, w)
		var others []*queue.Task
		for range 7 {
			others = append(others, bd.submit(t, "other", `{}`))
		}
		mine := bd.submit(t, "mine", `{}`)

		claimed := 0
		for i := 0; i < 20 && claimed == 0; i++ {
			r := w.pollSettled(ctx, 1)
			require.NoError(t, r.err)
			claimed += r.claimed
		}
		require.Equal(t, 1, claimed)
		require.Equal(t, mine.ID, blk.waitStarted(t).ID)
		for _, o := range others {
			require.Equal(t, queue.StatusPending, bd.get(t, o.ID).Status)
		}
		close(blk.release)
		bd.waitStatus(t, mine.ID, queue.StatusCompleted)
	})
}

// Hybrid mode finds a pending task whose ready entry was removed from
// outside; index-only does not (qo repair would restore it); log-scan
// never needs the index.
func TestIndexModes(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, b storetest.Backend) {
		for _, mode := range []IndexMode{IndexOnly, Hybrid, LogScan} {
			t.Run(string(mode), func(t *testing.T) {
				t.Parallel()
				ctx := context.Background()
				bd := setup(t, b, setupOpts{})
				o := bd.opts(t)
				o.IndexMode = mode
				o.HybridScanAfter = 1 // ns: scan on the second empty poll
				w := New(bd.q, o)
				w.Handle("mine", echoHandler)
				prepared(t, w)
				task := bd.submit(t, "mine", `{}`)
				require.NoError(t, bd.s.Delete(ctx, queue.ReadyKey(task), store.Condition{}))

				claimed := 0
				for i := 0; i < 60 && claimed == 0; i++ {
					r := w.pollSettled(ctx, 1)
					require.NoError(t, r.err)
					claimed += r.claimed
				}
				if mode == IndexOnly {
					require.Zero(t, claimed)
					require.Equal(t, queue.StatusPending, bd.get(t, task.ID).Status)
					return
				}
				require.Equal(t, 1, claimed)
				bd.waitStatus(t, task.ID, queue.StatusCompleted)
			})
		}
	})
}

func TestParseIndexMode(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]IndexMode{"": IndexOnly, "hybrid": Hybrid, "index-only": IndexOnly, "log-scan": LogScan} {
		got, err := ParseIndexMode(in)
		require.NoError(t, err)
		require.Equal(t, want, got)
	}
	_, err := ParseIndexMode("fast")
	require.ErrorContains(t, err, "want index-only, hybrid or log-scan")
}

// Within a shard and a priority, a task is overtaken only by tasks of the
// same page (the worker starts a page at its stable offset): with pages of
// 4, by at most 3 (tasks of the same millisecond have no order).
func TestOrderWithinShard(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, b storetest.Backend) {
		bd := setup(t, b, setupOpts{fake: true})
		const page = 4
		var mu sync.Mutex
		var order []*queue.Task
		var ids []uuid.UUID
		for i := range 160 {
			task := bd.submit(t, "rec", fmt.Sprintf(`{"i":%d}`, i))
			ids = append(ids, task.ID)
			bd.fake.Advance(time.Millisecond)
		}
		o := bd.opts(t)
		o.ReadyPageSize = page
		w := New(bd.q, o)
		w.Handle("rec", func(_ context.Context, task *queue.Task) (json.RawMessage, error) {
			mu.Lock()
			order = append(order, task)
			mu.Unlock()
			return nil, nil
		})
		r := start(t, w)
		for _, id := range ids {
			bd.waitStatus(t, id, queue.StatusCompleted)
		}
		require.NoError(t, r.stop(t))
		var worst int
		var why string
		for i, task := range order {
			var by []string
			for _, before := range order[:i] {
				if before.Shard == task.Shard && before.CreatedAt.After(task.CreatedAt) {
					by = append(by, string(before.Input))
				}
			}
			if len(by) > worst {
				worst, why = len(by), fmt.Sprintf("%s (shard %s) ran after %s", task.Input, task.Shard, strings.Join(by, " "))
			}
		}
		require.Less(t, worst, page, "a task overtaken by more than its page: %s", why)
	})
}

// A busy worker's requests do not grow with the finished tasks in the
// bucket: claiming the same 8 pending tasks costs the same requests, one
// for one, beside 0 and beside 300 finished ones (the walk reads the
// ready index, where finished tasks have no entry).
func TestBusyPollCostIgnoresHistory(t *testing.T) {
	t.Parallel()
	cost := func(finished int) string {
		ctx := context.Background()
		bd := setupRegistry(t)
		for range finished {
			task := bd.submit(t, "job", `{}`)
			e, err := queue.ParseReadyKey(queue.ReadyKey(task))
			require.NoError(t, err)
			l, err := bd.q.Claim(ctx, e, "seed")
			require.NoError(t, err)
			_, err = bd.q.Complete(ctx, l, nil)
			require.NoError(t, err)
		}
		// The measured tasks get the same ids in both buckets.
		q, err := queue.Open(ctx, bd.s, queue.Options{Logger: testLogger(t), Clock: bd.fake, NewID: queue.SequentialIDs("busy")})
		require.NoError(t, err)
		for range 8 {
			_, _, err := q.Submit(ctx, queue.SubmitRequest{Type: "job", Timeout: 30 * time.Second})
			require.NoError(t, err)
		}
		w := jobWorker(t, q, bd.opts(t))
		before := counts(bd.s)
		for claimed := 0; claimed < 8; {
			r := w.pollSettled(ctx, 8-claimed)
			require.NoError(t, r.err)
			claimed += r.claimed
		}
		d := counts(bd.s).Sub(before)
		require.Positive(t, d.Total(store.OpList), "requests: %s", d)
		require.GreaterOrEqual(t, d.Total(store.OpGet), int64(8), "a GET per claim (and the pause switches): %s", d)
		return d.String()
	}
	empty, large := cost(0), cost(300)
	t.Logf("requests to claim 8 tasks: %s", empty)
	require.Equal(t, empty, large)
}

// gatedGets holds each GET of a task object until a second one is in
// flight (or a second has passed) and records the most in flight at once.
type gatedGets struct {
	store.Store
	mu       sync.Mutex
	inFlight int
	most     int
	both     chan struct{}
}

func (g *gatedGets) Get(ctx context.Context, key string) (*store.Object, error) {
	if !strings.HasPrefix(key, queue.TasksPrefix) {
		return g.Store.Get(ctx, key)
	}
	g.mu.Lock()
	g.inFlight++
	g.most = max(g.most, g.inFlight)
	if g.inFlight == 2 {
		close(g.both)
	}
	g.mu.Unlock()
	select {
	case <-g.both:
	case <-time.After(time.Second):
	}
	g.mu.Lock()
	g.inFlight--
	g.mu.Unlock()
	return g.Store.Get(ctx, key)
}

// A worker claims its free slots together: a claim is four requests in a
// row, so claiming one entry after another would let a busy worker start
// tasks no faster than one claim's latency allows.
func TestClaimsGoOutTogether(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	bd := setupRegistry(t)
	for range 2 {
		bd.submit(t, "job", `{}`)
	}
	gated := &gatedGets{Store: bd.s, both: make(chan struct{})}
	w := jobWorker(t, bd.over(t, gated), bd.opts(t))
	r := w.pollSettled(ctx, 2)
	require.NoError(t, r.err)
	require.Equal(t, 2, r.claimed)
	gated.mu.Lock()
	defer gated.mu.Unlock()
	require.Equal(t, 2, gated.most, "the two claims' task reads were in flight together")
}

// heldGets holds every GET of a task object until release is closed.
type heldGets struct {
	store.Store
	release chan struct{}
}

func (h *heldGets) Get(ctx context.Context, key string) (*store.Object, error) {
	if strings.HasPrefix(key, queue.TasksPrefix) {
		<-h.release
	}
	return h.Store.Get(ctx, key)
}

// A poll starts its claims and returns: a claim holds its slot while it is
// in flight, and a slot that frees meanwhile is filled without waiting for
// the slowest claim of a batch.
func TestPollDoesNotWaitForClaims(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	bd := setupRegistry(t)
	for range 3 {
		bd.submit(t, "job", `{}`)
	}
	held := &heldGets{Store: bd.s, release: make(chan struct{})}
	w := jobWorker(t, bd.over(t, held), bd.opts(t))

	polled := make(chan pollResult, 1)
	go func() { polled <- w.poll(ctx, 2) }()
	var r pollResult
	select {
	case r = <-polled:
	case <-time.After(30 * time.Second):
		close(held.release)
		t.Fatal("the poll waited for its claims")
	}
	require.NoError(t, r.err)
	require.Equal(t, 2, r.claimed, "claims started")
	require.Equal(t, 2, w.slotsTaken(), "a claim in flight holds its slot")
	require.Zero(t, w.runningCount())

	close(held.release)
	w.claims.Wait()
	require.Equal(t, 2, w.runningCount())
	require.Equal(t, 2, w.slotsTaken(), "each won claim's slot is its task's now")
}

// A claim lost to another claimer is reported to the next poll, which
// drops the held view's page of that shard and lists it again at once
// (its free slot does not wait a poll for it), then claims from the new
// page.
func TestLostClaimDropsView(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	bd := setupRegistry(t)
	o := bd.opts(t)
	o.PageHold = time.Hour
	w := jobWorker(t, bd.q, o)
	tasks := bd.submitSpread(t, "job", 3)

	require.Equal(t, 1, w.pollSettled(ctx, 1).claimed)
	// Another claimer takes the next entry of the worker's view.
	require.Len(t, w.view.entries, 2)
	stolen := w.view.entries[0].ReadyEntry
	_, err := bd.q.Claim(ctx, stolen, "thief")
	require.NoError(t, err)

	lists := counts(bd.s).Total(store.OpList)
	require.Equal(t, 1, w.pollSettled(ctx, 1).claimed, "the claim started from the view")
	require.Equal(t, 1, w.runningCount(), "and was lost")
	require.Equal(t, lists, counts(bd.s).Total(store.OpList), "claimed from the held view")

	r := w.pollSettled(ctx, 1)
	require.NoError(t, r.err)
	require.Equal(t, 1, r.claimed, "the shard's page is listed again and claimed from in the same poll")
	require.Greater(t, counts(bd.s).Total(store.OpList), lists)
	require.False(t, w.view.blind)
	running := map[uuid.UUID]bool{stolen.ID: true}
	for _, rt := range w.snapshotRunning() {
		running[rt.id] = true
	}
	require.Len(t, running, len(tasks), "every task runs once")
}

// A walk made while the worker's own claim is in flight still shows that
// claim's entry; the worker does not claim it again (it would lose to
// itself and drop its view).
func TestWalkSkipsOwnClaimsInFlight(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	bd := setupRegistry(t)
	bd.submit(t, "job", `{}`)
	held := &heldGets{Store: bd.s, release: make(chan struct{})}
	o := bd.opts(t)
	ob := &countingObserver{}
	o.Observer = ob
	w := jobWorker(t, bd.over(t, held), o)

	require.Equal(t, 1, w.poll(ctx, 1).claimed)
	lists := counts(bd.s).Total(store.OpList)
	r := w.poll(ctx, 1)
	require.NoError(t, r.err)
	require.Greater(t, counts(bd.s).Total(store.OpList), lists, "the spent view was walked again")
	require.Zero(t, r.claimed, "the entry of the claim in flight is not claimed twice")

	close(held.release)
	w.claims.Wait()
	require.Equal(t, 1, w.runningCount())
	require.Zero(t, ob.conflicts.Load())
}

// A worker told to stop while a claim is in flight lets the claim finish
// and then releases its task like any other running one: it is not left
// running with a lease that only its expiry would recover.
func TestShutdownWaitsForClaimsInFlight(t *testing.T) {
	t.Parallel()
	bd := setupRegistry(t)
	task := bd.submit(t, "job", `{}`)
	held := &heldGets{Store: bd.s, release: make(chan struct{})}
	o := bd.opts(t)
	o.ShutdownTimeout = 10 * time.Millisecond
	w := New(bd.over(t, held), o)
	w.Handle("job", blockHandler)
	r := start(t, w)
	testutil.Eventually(t, func() bool { return w.slotsTaken() == 1 }, "the claim to be in flight")
	r.cancel()
	close(held.release)
	require.NoError(t, r.stop(t))
	got := bd.get(t, task.ID)
	require.Equal(t, queue.StatusPending, got.Status, "released at shutdown")
	require.Equal(t, 1, got.Attempt, "the claim ran once")
}

// A worker that scans tasks/ (log-scan) never walks the ready index, so it
// remembers nothing of its claims for walks: what it claimed is not kept.
func TestScanClaimsAreNotRemembered(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	bd := setupRegistry(t)
	o := bd.opts(t)
	o.IndexMode = LogScan
	w := jobWorker(t, bd.q, o)
	for range 3 {
		bd.submit(t, "job", `{}`)
	}
	claimed := 0
	for i := 0; i < 40 && claimed < 3; i++ {
		r := w.pollSettled(ctx, 3-claimed)
		require.NoError(t, r.err)
		claimed += r.claimed
	}
	require.Equal(t, 3, claimed)
	w.tried.mu.Lock()
	defer w.tried.mu.Unlock()
	require.Empty(t, w.tried.m)
}

// placedQueue opens a queue over bd's store whose place submits a task of
// type typ to shard shard (0-15) and available at at, and returns its id.
func placedQueue(t *testing.T, bd *bundle) (*queue.Queue, func(typ string, shard byte, at time.Time) uuid.UUID) {
	t.Helper()
	var next byte
	q, err := queue.Open(context.Background(), bd.s, queue.Options{Logger: testLogger(t), Clock: bd.fake, NewID: func(at time.Time) uuid.UUID {
		id := queue.NewIDAt(at)
		id[15] = id[15]&0xf0 | next
		return id
	}})
	require.NoError(t, err)
	return q, func(typ string, shard byte, at time.Time) uuid.UUID {
		t.Helper()
		next = shard
		task, _, err := q.Submit(context.Background(), queue.SubmitRequest{Type: typ, Timeout: 30 * time.Second, AvailableAt: at})
		require.NoError(t, err)
		require.Equal(t, fmt.Sprintf("%x", shard), task.Shard)
		return task.ID
	}
}

// A shard whose first pages hold only types the worker does not serve is
// paged past, and holds back none of the worker's entries ranked after
// them: they are claimed within the walks it takes to reach them.
func TestWalkPagesPastOtherTypesInAShard(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	bd := setupRegistry(t)
	base := bd.fake.Now()
	q, place := placedQueue(t, bd)
	ms := func(n int) time.Time { return base.Add(time.Duration(n) * time.Millisecond) }
	// Pages of 2 keys, 4 LISTs a walk: shard 1 holds 11 entries of another
	// type (more than a walk lists) ranked before both of the worker's.
	for i := 1; i <= 11; i++ {
		place("other", 1, ms(i))
	}
	behind := place("job", 1, ms(12)) // after them in their shard
	other := place("job", 0, ms(20))  // in a shard listed before theirs
	bd.fake.Advance(time.Second)
	o := bd.opts(t)
	o.ReadyPageSize = 2
	o.Concurrency = 4
	w := jobWorker(t, q, o)

	claimed := 0
	for range 4 {
		r := w.poll(ctx, 4-claimed)
		require.NoError(t, r.err)
		w.claims.Wait()
		claimed += r.claimed
	}
	require.Equal(t, 2, claimed)
	for _, id := range []uuid.UUID{behind, other} {
		task, err := q.Get(ctx, id)
		require.NoError(t, err)
		require.Equal(t, queue.StatusRunning, task.Status)
	}

	// With nothing of its own left, a walk through the other type's
	// backlog costs one walk's LISTs a poll, not one walk after another.
	for range 3 {
		before := counts(bd.s)
		r := w.poll(ctx, 2)
		require.NoError(t, r.err)
		require.Zero(t, r.claimed)
		require.False(t, r.more, "a walk that found nothing to claim waits for the next poll")
		d := counts(bd.s).Sub(before)
		require.Positive(t, d.Total(store.OpList), "requests: %s", d)
		require.LessOrEqual(t, d.Total(store.OpList), int64(maxWalkLists), "requests: %s", d)
		require.Zero(t, d.Total(store.OpGet), "requests: %s", d)
	}
}

// A walk cut short by its LIST budget in the middle of a shard's first
// page keeps what it listed of that shard with a cut at its last key, and
// shards it did not reach hold every entry back until a walk lists them:
// an entry ranked after a cut is claimed before the entries ranked after
// it, never passed over until the walks come round.
func TestCutWalkKeepsShardOrder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	bd := setupRegistry(t)
	base := bd.fake.Now()
	// Pages of 2 keys, 4 LISTs a walk: [0:10 0:11] (a cut at 11),
	// [1:1 2:2] and on in shard 2, [3:3 4:4] and on in shard 4, [5:5 6:30]
	// (a cut at 30); shards 7 to f wait for the next walk.
	layout := []struct {
		shard byte
		at    int
	}{{1, 1}, {2, 2}, {3, 3}, {4, 4}, {5, 5}, {0, 10}, {0, 11}, {0, 12}, {6, 30}, {6, 31}}
	q, place := placedQueue(t, bd)
	at := map[int]uuid.UUID{}
	for _, l := range layout {
		at[l.at] = place("job", l.shard, base.Add(time.Duration(l.at)*time.Millisecond))
	}
	bd.fake.Advance(time.Second)
	o := bd.opts(t)
	o.ReadyPageSize = 2
	o.Concurrency = 20
	w := jobWorker(t, q, o)

	status := func(ms int) queue.Status {
		task, err := q.Get(ctx, at[ms])
		require.NoError(t, err)
		return task.Status
	}
	r := w.poll(ctx, 20)
	require.NoError(t, r.err)
	w.claims.Wait()
	require.Zero(t, r.claimed, "shards 7 to f not listed yet")
	require.True(t, r.more, "the next walk goes on at once")
	// From then on, no task runs while an older one waits.
	for polls, claimed := 0, 0; claimed < len(layout); polls++ {
		require.Less(t, polls, 10, "claimed %d of %d", claimed, len(layout))
		r = w.poll(ctx, 20)
		require.NoError(t, r.err)
		w.claims.Wait()
		claimed += r.claimed
		oldestPending := -1
		for _, l := range layout {
			if status(l.at) == queue.StatusPending && (oldestPending < 0 || l.at < oldestPending) {
				oldestPending = l.at
			}
		}
		for _, l := range layout {
			if oldestPending >= 0 && l.at > oldestPending {
				require.Equal(t, queue.StatusPending, status(l.at), "task at %d ms runs while the one at %d ms waits", l.at, oldestPending)
			}
		}
	}
}

// A shard the worker no longer polls (a shard lease given up) leaves the
// held view: the pages of its partitions and their entries, so nothing of
// it is claimed.
func TestHeldViewKeepsPolledShards(t *testing.T) {
	t.Parallel()
	at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	e := func(shard string, ms int) heldEntry {
		return heldEntry{ReadyEntry: queue.ReadyEntry{Shard: shard, Type: "a", Rank: at.Add(time.Duration(ms) * time.Millisecond)}, own: true}
	}
	v := heldView{
		entries: []heldEntry{e("1", 1), e("2", 2), e("1", 3), e("2", 4)},
		pages:   map[string]*partPage{"a/1": {listed: at, cut: at.Add(3 * time.Millisecond)}, "a/2": {listed: at, cut: at.Add(2 * time.Millisecond)}},
	}
	v.bound([]string{"a/1", "a/2"})
	require.Equal(t, at.Add(2*time.Millisecond), v.horizon)

	v.keep([]string{"a/1"}, []string{"a/1"})
	require.Len(t, v.pages, 1)
	require.Len(t, v.entries, 2)
	for _, h := range v.entries {
		require.Equal(t, "1", h.Shard)
		require.True(t, v.claimable(&h), "shard 2's cut no longer holds it back")
	}
	require.Equal(t, at.Add(3*time.Millisecond), v.horizon)
}

// The partitions of a type the worker does not claim now (at its limit or
// its share of a fleet-wide cap, or paused) set no horizon: a deep backlog
// of that type, cut short by its page, does not hold back the worker's
// other types (the fleet simulation's seeds 163 and 222 found that wait
// when the types shared a partition). Its pages and entries stay in the
// view, and hold the horizon again once the type is claimed again.
func TestTypeNotClaimedSetsNoHorizon(t *testing.T) {
	t.Parallel()
	at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	sec := func(n int) time.Time { return at.Add(time.Duration(n) * time.Second) }
	v := heldView{
		entries: []heldEntry{
			{ReadyEntry: queue.ReadyEntry{Shard: "1", Type: "a", Rank: sec(-60)}, own: true},
			{ReadyEntry: queue.ReadyEntry{Shard: "1", Type: "b", Rank: sec(-10)}, own: true},
		},
		pages: map[string]*partPage{
			"a/1": {listed: sec(0), cut: sec(-60), next: "ready/a/1/next"},
			"b/1": {listed: sec(0)},
		},
	}
	served := []string{"a/1", "b/1"}
	v.keep(served, []string{"b/1"})
	v.bound([]string{"b/1"})
	require.True(t, v.horizon.IsZero(), "a at its limit: no horizon")
	require.True(t, v.claimable(&v.entries[1]), "b's entry, ranked after a's cut, may be claimed")
	require.Len(t, v.entries, 2, "a's entry stays in the view")
	require.False(t, v.spent([]string{"b"}))

	v.bound(served)
	require.Equal(t, sec(-60), v.horizon, "a claimable again: its cut holds the horizon")
	require.False(t, v.claimable(&v.entries[1]))
}

// A ready task whose object is malformed is read once, warned about once,
// and left alone for malformedRetry: not a GET and a warning at every poll
// for ever. After that it is tried again (someone may have fixed it).
func TestMalformedTaskReadOnceAWhile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	bd := setup(t, storetest.Backends()[0], setupOpts{fake: true})
	w := New(bd.q, bd.opts(t))
	w.Handle("job", echoHandler)
	prepared(t, w)
	task := bd.submit(t, "job", `{}`)
	_, err := bd.s.Put(ctx, bd.q.TaskKey(task.ID), []byte(`{"format":1, "id": `), store.Condition{})
	require.NoError(t, err)

	gets := func(polls int) int64 {
		before := counts(bd.s)
		for range polls {
			require.NoError(t, w.pollSettled(ctx, 4).err)
		}
		return counts(bd.s).Sub(before).Total(store.OpGet)
	}
	// The first polls read control.json, then the task: malformed.
	require.Equal(t, int64(2), gets(2))
	require.Zero(t, gets(5), "the malformed task is not read again at every poll")
	bd.fake.Advance(malformedRetry)
	require.Equal(t, int64(1), gets(5), "read once more after malformedRetry")
}

// The page whose cut is the horizon, due for what it holds back (another
// worker's entries, not late yet, and nothing of this worker's), is
// listed before pages that are only older than a hold: at 4 LISTs a walk
// those come due faster than a worker with nothing to claim walks, and
// behind them the horizon page waited minutes while the worker's free slot
// stayed idle (the fleet simulation's seed 222).
func TestHorizonPageListedFirst(t *testing.T) {
	t.Parallel()
	at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	sec := func(n int) time.Time { return at.Add(time.Duration(n) * time.Second) }
	v := heldView{
		entries: []heldEntry{{ReadyEntry: queue.ReadyEntry{Shard: "4", Type: "a", Rank: sec(-60)}}},
		pages: map[string]*partPage{
			// Listed to their end, longer than a hold ago.
			"a/1": {listed: sec(0)},
			"a/2": {listed: sec(1)},
			"a/3": {listed: sec(2)},
			// Cut inside another worker's backlog.
			"a/4": {listed: sec(20), cut: sec(-60), next: "ready/a/4/next"},
		},
	}
	wanted := []string{"a/1", "a/2", "a/3", "a/4"}
	v.bound(wanted)
	require.Equal(t, sec(-60), v.horizon)
	due, onward, urgent := v.due(wanted, sec(30), 10*time.Second, false)
	require.True(t, urgent)
	require.Equal(t, []string{"a/4", "a/1", "a/2", "a/3"}, due, "the horizon's page first, then by when they came due")
	require.True(t, onward["a/4"], "listed on past its cut")

	// With the entry its own, the page holds work for the worker: not
	// due, and the others keep their order.
	v.entries[0].own = true
	due, _, _ = v.due(wanted, sec(25), 10*time.Second, false)
	require.Equal(t, []string{"a/1", "a/2", "a/3"}, due)
}
