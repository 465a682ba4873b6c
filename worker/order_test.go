package worker

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/queue/registry"
	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/store/memstore"
	"github.com/qo-queue/qo/store/storetest"
)

// The claim order merges the pages of several shards by rank, then
// priority, then task id.
func TestCompareReady(t *testing.T) {
	t.Parallel()
	at := func(ms int64) time.Time { return time.UnixMilli(1_700_000_000_000 + ms) }
	id := func(n byte) uuid.UUID { return uuid.UUID{15: n} }
	e := func(name byte, shard string, rank int64, p queue.Priority) queue.ReadyEntry {
		return queue.ReadyEntry{ID: id(name), Shard: shard, Rank: at(rank), Priority: p}
	}
	for _, tc := range []struct {
		name  string
		pages [][]queue.ReadyEntry // each in key order, as a shard's partition lists them
		want  []byte
	}{
		{"one shard keeps its key order", [][]queue.ReadyEntry{
			{e(1, "0", 1, queue.PriorityNormal), e(2, "0", 2, queue.PriorityNormal), e(3, "0", 3, queue.PriorityNormal)},
		}, []byte{1, 2, 3}},
		{"shards interleave by rank", [][]queue.ReadyEntry{
			{e(1, "0", 1, queue.PriorityNormal), e(4, "0", 9, queue.PriorityNormal)},
			{e(2, "7", 3, queue.PriorityNormal), e(5, "7", 10, queue.PriorityNormal)},
			{e(3, "f", 5, queue.PriorityNormal)},
		}, []byte{1, 2, 3, 4, 5}},
		{"a high task ranks a priority step early", [][]queue.ReadyEntry{
			{e(1, "0", 0, queue.PriorityNormal), e(3, "0", 1, queue.PriorityNormal)},
			{e(2, "1", 1-queue.PriorityStep.Milliseconds()+1, queue.PriorityHigh)},
		}, []byte{2, 1, 3}},
		{"same millisecond: higher priority, then id", [][]queue.ReadyEntry{
			{e(9, "0", 4, queue.PriorityLow), e(8, "0", 4, queue.PriorityNormal)},
			{e(7, "1", 4, queue.PriorityNormal), e(6, "1", 4, queue.PriorityHigh)},
		}, []byte{6, 7, 8, 9}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var all []queue.ReadyEntry
			for _, p := range tc.pages {
				all = append(all, p...)
			}
			slices.SortFunc(all, compareReady)
			var got []byte
			for _, e := range all {
				got = append(got, e.ID[15])
			}
			require.Equal(t, tc.want, got)
		})
	}
}

// claimOrder polls w with one free slot at a time until n tasks were
// claimed (the handler blocks, so each poll's claim stays running) and
// returns the tasks in the order they were claimed. Each poll runs after
// the functions in before.
func claimOrder(t *testing.T, w *Worker, n int, before ...func()) []uuid.UUID {
	t.Helper()
	ctx := context.Background()
	var order []uuid.UUID
	seen := map[uuid.UUID]bool{}
	for polls := 0; len(order) < n; polls++ {
		require.Less(t, polls, 10*n, "claimed %d of %d", len(order), n)
		for _, f := range before {
			f()
		}
		r := w.pollSettled(ctx, 1)
		require.NoError(t, r.err)
		for _, rt := range w.snapshotRunning() {
			if !seen[rt.id] {
				seen[rt.id] = true
				order = append(order, rt.id)
			}
		}
		require.Len(t, order, len(seen))
	}
	return order
}

// submitSpread submits n tasks of typ one millisecond apart (so their
// ranks differ) and returns them in submit order.
func (bd *bundle) submitSpread(t *testing.T, typ string, n int) []*queue.Task {
	t.Helper()
	var out []*queue.Task
	for range n {
		out = append(out, bd.submit(t, typ, `{}`))
		bd.fake.Advance(time.Millisecond)
	}
	return out
}

func ids(ts []*queue.Task) []uuid.UUID {
	out := make([]uuid.UUID, len(ts))
	for i, task := range ts {
		out[i] = task.ID
	}
	return out
}

type countingObserver struct {
	nopObserver
	claimed, conflicts atomic.Int64
}

func (o *countingObserver) Claimed(string)       { o.claimed.Add(1) }
func (o *countingObserver) ClaimConflict(string) { o.conflicts.Add(1) }

// A worker claims the oldest ready task across every shard, not shard by
// shard, and claims a whole backlog from one walk: one LIST of the ready
// index (and one of the registry, since the walk found more than it had
// free slots) for 48 claims.
func TestPollClaimsOldestAcrossShards(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, b storetest.Backend) {
		bd := setup(t, b, setupOpts{fake: true})
		o := bd.opts(t)
		o.PageHold = time.Hour
		w := jobWorker(t, bd.q, o)
		tasks := bd.submitSpread(t, "job", 48)
		shards := map[string]bool{}
		for _, task := range tasks {
			shards[task.Shard] = true
		}
		require.Greater(t, len(shards), 4, "the tasks spread over the shards")

		before := counts(bd.s)
		require.Equal(t, ids(tasks), claimOrder(t, w, len(tasks)))
		d := counts(bd.s).Sub(before)
		require.Equal(t, int64(2), d.Total(store.OpList), "one walk of the ready index and one of the registry: %s", d)
	})
}

// A shard deeper than a page contributes one page to a walk, and nothing
// ranked after the last key of that page is claimed before the next walk
// has read on: the order stays oldest first across shards.
func TestWalkHoldsAPagePerShard(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, b storetest.Backend) {
		bd := setup(t, b, setupOpts{fake: true})
		o := bd.opts(t)
		o.PageHold = time.Hour
		o.ReadyPageSize = 3
		o.Shards = []string{"2", "5", "9"}
		w := jobWorker(t, bd.q, o)
		var mine []*queue.Task
		per := map[string]int{}
		for per["2"] < 7 || per["5"] < 7 || per["9"] < 7 {
			task := bd.submit(t, "job", `{}`)
			bd.fake.Advance(time.Millisecond)
			if slices.Contains(o.Shards, task.Shard) {
				mine = append(mine, task)
				per[task.Shard]++
			}
		}

		before := counts(bd.s)
		require.Equal(t, ids(mine), claimOrder(t, w, len(mine)))
		d := counts(bd.s).Sub(before)
		// A walk lists at most a page per shard, and claims several
		// tasks from what it holds.
		require.Less(t, d.Total(store.OpList), int64(len(mine)), "requests: %s", d)
	})
}

// setupRegistry is setup on the in-memory store with the fake clock as the
// store's clock too, so that heartbeats (the registry's LastModified
// times) and the queue clock agree.
func setupRegistry(t *testing.T) *bundle {
	t.Helper()
	fake := newFakeClock()
	s := memstore.New(memstore.WithClock(fake))
	_, err := queue.Init(context.Background(), s, 1)
	require.NoError(t, err)
	q, err := queue.Open(context.Background(), s, queue.Options{Logger: testLogger(t), Clock: fake})
	require.NoError(t, err)
	return &bundle{s: s, q: q, clock: fake, fake: fake}
}

// Two workers reading the same entries split them: each claims its own
// share, oldest first, and no claim is lost to the other but where one
// helps with the other's last entry.
func TestWorkersSplitReadyWork(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	bd := setupRegistry(t)
	var ws []*Worker
	var obs []*countingObserver
	for i := range 2 {
		o := bd.opts(t)
		o.ID = fmt.Sprintf("split-%d", i)
		o.PageHold = time.Hour
		ob := &countingObserver{}
		o.Observer = ob
		w := jobWorker(t, bd.q, o)
		require.NoError(t, w.Heartbeat(ctx))
		ws, obs = append(ws, w), append(obs, ob)
	}
	tasks := bd.submitSpread(t, "job", 40)
	rank := map[uuid.UUID]int{}
	for i, task := range tasks {
		rank[task.ID] = i
	}

	claimed := map[uuid.UUID]int{}
	orders := make([][]int, 2)
	for polls := 0; len(claimed) < len(tasks); polls++ {
		require.Less(t, polls, 10*len(tasks))
		for i, w := range ws {
			require.NoError(t, w.pollSettled(ctx, 1).err)
			for _, rt := range w.snapshotRunning() {
				if _, ok := claimed[rt.id]; !ok {
					claimed[rt.id] = i
					orders[i] = append(orders[i], rank[rt.id])
				}
			}
		}
	}
	var conflicts, helpedAll int64
	for i, w := range ws {
		conflicts += obs[i].conflicts.Load()
		var own []int
		helped := 0
		for _, r := range orders[i] {
			if w.owns(queue.ReadyEntry{ID: tasks[r].ID, Shard: tasks[r].Shard, Type: "job"}) {
				own = append(own, r)
			} else {
				helped++
			}
		}
		require.NotEmpty(t, own, "worker %d got a share", i)
		require.True(t, slices.IsSorted(own), "worker %d claims its share oldest first: %v", i, own)
		// With nothing of its own left a worker helps with what is
		// left of the other's share, when that fits its free slot.
		require.LessOrEqual(t, helped, 1, "worker %d took the other's share: %v", i, orders[i])
		helpedAll += int64(helped)
	}
	// The one race left: a worker helping with the other's last entry
	// while the other still holds it.
	require.LessOrEqual(t, conflicts, helpedAll, "claims lost")
}

// A share its worker leaves behind (registered, heartbeating, but not
// claiming) is taken once the worker passed it a page hold ago (by the
// queue's clock, which moves a tenth of a hold per poll here), oldest
// first.
func TestLateShareTaken(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	bd := setupRegistry(t)
	o := bd.opts(t)
	o.PageHold = time.Second
	w := jobWorker(t, bd.q, o)
	require.NoError(t, registry.Put(ctx, bd.q, &queue.WorkerInfo{ID: "stalled", LastHeartbeat: bd.fake.Now(), Types: []string{"job"}}))
	tasks := bd.submitSpread(t, "job", 24)

	order := claimOrder(t, w, len(tasks), func() { bd.fake.Advance(o.PageHold / 10) })
	require.ElementsMatch(t, ids(tasks), order)
	rank := map[uuid.UUID]int{}
	for i, task := range tasks {
		rank[task.ID] = i
	}
	var own, others []int
	for _, id := range order {
		if w.owns(queue.ReadyEntry{ID: id, Type: "job"}) {
			own = append(own, rank[id])
		} else {
			others = append(others, rank[id])
		}
	}
	require.NotEmpty(t, own)
	require.NotEmpty(t, others)
	require.True(t, slices.IsSorted(own), "its own share oldest first: %v", own)
	require.True(t, slices.IsSorted(others), "the share left behind oldest first: %v", others)
}

// A worker with nothing of its own helps with the others' entries when
// they are no more than its free slots; with more, it leaves them to
// their worker and backs off.
func TestHelpWithFewOthers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		others, free int
		help         bool
	}{{3, 4, true}, {4, 4, true}, {5, 4, false}} {
		t.Run(fmt.Sprintf("%d entries, %d free", tc.others, tc.free), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			bd := setupRegistry(t)
			o := bd.opts(t)
			o.PageHold = time.Hour
			w := jobWorker(t, bd.q, o)
			require.NoError(t, registry.Put(ctx, bd.q, &queue.WorkerInfo{ID: "busy", LastHeartbeat: bd.fake.Now(), Types: []string{"job"}}))
			w.refreshPeers(ctx)
			for n := 0; n < tc.others; {
				task := bd.submit(t, "job", `{}`)
				if w.owns(queue.ReadyEntry{ID: task.ID, Type: "job"}) {
					_, err := bd.q.Cancel(ctx, task.ID, "falls to the worker under test")
					require.NoError(t, err)
					continue
				}
				n++
			}
			r := w.pollSettled(ctx, tc.free)
			require.NoError(t, r.err)
			if tc.help {
				require.Equal(t, tc.others, r.claimed)
				return
			}
			require.Zero(t, r.claimed)
			require.True(t, r.others, "backs off")

			// Left to their worker for a page hold (by the queue's clock),
			// they are late: the worker takes them, as many as it has free
			// slots for.
			bd.fake.Advance(o.PageHold * 9 / 8)
			r = w.pollSettled(ctx, tc.free)
			require.NoError(t, r.err)
			require.Equal(t, tc.free, r.claimed)
		})
	}
}

// A task that becomes ready while a worker holds a view waits at most for
// the hold to end: the next walk claims it first if it ranks first (here a
// high-priority task behind a backlog of normal ones).
func TestHeldViewYieldsToNewWorkAfterHold(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		bd := setup(t, b, setupOpts{fake: true})
		o := bd.opts(t)
		o.PageHold = time.Hour
		w := jobWorker(t, bd.q, o)
		normal := bd.submitSpread(t, "job", 6)
		require.Equal(t, ids(normal[:1]), claimOrder(t, w, 1))

		high := bd.submit(t, "job", `{}`, func(r *queue.SubmitRequest) { r.Priority = queue.PriorityHigh })
		before := counts(bd.s)
		require.Equal(t, 1, w.pollSettled(ctx, 1).claimed)
		require.Zero(t, counts(bd.s).Sub(before).Total(store.OpList), "the held view is claimed from without listing")
		require.False(t, isRunning(w, high.ID), "not seen before the hold ends")

		for _, p := range w.view.pages { // the hold ended
			p.listed = p.listed.Add(-o.PageHold)
		}
		require.Equal(t, 1, w.pollSettled(ctx, 1).claimed)
		require.True(t, isRunning(w, high.ID), "the next walk claims it first")
	})
}

func isRunning(w *Worker, id uuid.UUID) bool {
	for _, rt := range w.snapshotRunning() {
		if rt.id == id {
			return true
		}
	}
	return false
}

// Every task falls to exactly one of the workers that serve its type and
// poll its shard, whichever of them decides, and the shares are even.
func TestOwnsSplitsEachTaskOnce(t *testing.T) {
	t.Parallel()
	all := []peer{
		{id: "a", types: []string{"x", "y"}},
		{id: "b", types: []string{"x", "y"}},
		{id: "c", types: []string{"x"}},
		{id: "d", types: []string{"x", "y"}, shards: []string{"0"}},
	}
	workers := make([]*Worker, len(all))
	for i, me := range all {
		w := &Worker{opts: Options{ID: me.id}}
		for j, p := range all {
			if j != i {
				w.peers.live = append(w.peers.live, p)
			}
		}
		workers[i] = w
	}
	shares := map[string]int{}
	const n = 4000
	for i := range n {
		e := queue.ReadyEntry{ID: uuid.NewSHA1(uuid.NameSpaceOID, []byte(fmt.Sprint(i))), Type: []string{"x", "y"}[i%2], Shard: fmt.Sprintf("%x", i%16)}
		var owners []string
		for j, w := range workers {
			if all[j].serves(e) && w.owns(e) {
				owners = append(owners, all[j].id)
			}
		}
		require.Len(t, owners, 1, "entry %v", e)
		shares[owners[0]+"/"+e.Type]++
	}
	// x: a, b, c everywhere, d in shard 0 only; y: a and b, d in shard 0.
	for _, k := range []string{"b/x", "c/x"} {
		require.InDelta(t, shares["a/x"], shares[k], n/20, "shares %v", shares)
	}
	require.InDelta(t, shares["a/y"], shares["b/y"], n/20, "shares %v", shares)
	require.Zero(t, shares["c/y"], "c does not serve y")
	require.Positive(t, shares["d/x"])
	require.Less(t, shares["d/x"], n/16, "d polls one shard of 16")
}

// Two workers serve one type over a backlog deeper than a walk reads (four
// pages of ten over sixteen shards), and new tasks keep coming. One worker is registered and
// heartbeating but leaves its share alone (saturated: concurrency 1 and a
// task that does not end; or at its limit for the type); the other has
// free slots and keeps up. Every task of the held-up worker's share among
// the oldest of the backlog, and a high-priority one of that share
// submitted later, is started by the free worker within PageHold (by the
// queue's clock) plus a round of its walks over the shards after it first
// passed the task (started one ranked after it).
func TestDeepBacklogShareNotStarved(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		concurrency int
		limits      map[string]int
	}{
		{"saturated", 1, nil},
		{"at its type limit", 4, map[string]int{"job": 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			bd := setupRegistry(t)
			const (
				hold     = time.Second
				step     = 50 * time.Millisecond // queue clock per step
				pageSize = 10
				backlog  = 300
				free     = 8  // the free worker's free slots at each poll
				oldest   = 40 // the backlog's oldest tasks checked
			)
			// The bound in steps (a poll of each worker per step): a hold
			// and a quarter (passing counts from the end of the eighth of
			// a hold it falls in, for what was ready when that eighth
			// began), a step, and a round of the free
			// worker's walks over the 16 shards: at most 16/4+1 walks,
			// each within ceil(4 pages / free) polls of the last (its
			// view is used up by then).
			bound := int(hold/step) + int(hold/4/step) + 1 + (16/4+1)*((4*pageSize+free-1)/free)

			ho := bd.opts(t)
			ho.ID, ho.Concurrency, ho.Limits = "held-up", tc.concurrency, tc.limits
			ho.PageHold, ho.ReadyPageSize = hold, pageSize
			heldUp := jobWorker(t, bd.q, ho)
			fo := bd.opts(t)
			fo.ID, fo.Concurrency = "free", 10_000
			fo.PageHold, fo.ReadyPageSize = hold, pageSize
			w := jobWorker(t, bd.q, fo)
			require.NoError(t, heldUp.Heartbeat(ctx))
			require.NoError(t, w.Heartbeat(ctx))

			rank := map[uuid.UUID]time.Time{}
			submittedAt := map[uuid.UUID]int{} // task -> step it was submitted at
			var passed []time.Time             // step -> highest rank the free worker started so far
			submitted := func(task *queue.Task) *queue.Task {
				e, err := queue.ParseReadyKey(queue.ReadyKey(task))
				require.NoError(t, err)
				rank[task.ID], submittedAt[task.ID] = e.Rank, len(passed)
				return task
			}
			var tasks []*queue.Task
			for range backlog {
				tasks = append(tasks, submitted(bd.submit(t, "job", `{}`)))
				bd.fake.Advance(time.Millisecond)
			}
			w.refreshPeers(ctx)
			entry := func(task *queue.Task) queue.ReadyEntry {
				return queue.ReadyEntry{ID: task.ID, Shard: task.Shard, Type: task.Type}
			}

			started := map[uuid.UUID]int{} // task -> step it started at
			collect := func(s int) {
				top := time.Time{}
				if s > 0 {
					top = passed[s-1]
				}
				for _, x := range []*Worker{heldUp, w} {
					for _, rt := range x.snapshotRunning() {
						if _, ok := started[rt.id]; ok {
							continue
						}
						started[rt.id] = s
						if x == w && rank[rt.id].After(top) {
							top = rank[rt.id]
						}
					}
				}
				passed = append(passed, top)
			}
			// The held-up worker takes the first task it can, then no more.
			for heldUp.slotsTaken() == 0 {
				require.Less(t, len(passed), 10, "the held-up worker claims a task")
				require.NoError(t, heldUp.pollSettled(ctx, 1).err)
				collect(len(passed))
			}

			var watched []*queue.Task
			for _, task := range tasks[:oldest] {
				if _, ok := started[task.ID]; !ok && !w.owns(entry(task)) {
					watched = append(watched, task)
				}
			}
			require.NotEmpty(t, watched)
			var high *queue.Task
			for s := len(passed); ; s++ {
				require.Less(t, s, 400, "steps")
				if s == 10 { // a high-priority task of the held-up worker's share
					for high == nil || w.owns(entry(high)) {
						high = submitted(bd.submit(t, "job", `{}`, func(r *queue.SubmitRequest) { r.Priority = queue.PriorityHigh }))
					}
					watched = append(watched, high)
				}
				bd.fake.Advance(step)
				submitted(bd.submit(t, "job", `{}`)) // new work keeps coming
				require.NoError(t, heldUp.Heartbeat(ctx))
				if n := ho.Concurrency - heldUp.slotsTaken(); n > 0 {
					require.NoError(t, heldUp.pollSettled(ctx, n).err)
				}
				require.NoError(t, w.pollSettled(ctx, free).err)
				collect(s)

				waiting := 0
				for _, task := range watched {
					if _, ok := started[task.ID]; !ok {
						waiting++
					}
				}
				for _, task := range watched {
					// Passed: the free worker had started a task ranked
					// after it (once it was submitted).
					first := slices.IndexFunc(passed[submittedAt[task.ID]:], func(top time.Time) bool { return top.After(rank[task.ID]) })
					if first < 0 {
						continue // not passed yet
					}
					first += submittedAt[task.ID]
					at, ok := started[task.ID]
					if !ok {
						at = s
					}
					require.LessOrEqual(t, at-first, bound, "task %s (priority %s) passed at step %d, not started by step %d (%d of %d watched waiting)",
						task.ID, task.Priority, first, at, waiting, len(watched))
				}
				if s > 10 && waiting == 0 && len(started) > backlog/2 {
					break
				}
			}
			require.NotNil(t, high)
		})
	}
}

// Another worker's entry is late only if this worker passed its rank
// while it was ready. A worker that started a low-priority task (ranked a
// quarter hour on) while nothing else waited, and then had no free slot
// for longer than a hold, did not pass the entries that came meanwhile:
// the first poll with a slot free claims its own oldest entry, not the
// other worker's older one (which its worker, alive, may be claiming).
func TestLateOnlyWhatWasReadyWhenPassed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	bd := setupRegistry(t)
	o := bd.opts(t)
	o.ID, o.PageHold = "passer", time.Second
	w := jobWorker(t, bd.q, o)
	require.NoError(t, w.Heartbeat(ctx))

	low := bd.submit(t, "job", `{}`, func(r *queue.SubmitRequest) { r.Priority = queue.PriorityLow })
	require.Equal(t, 1, w.pollSettled(ctx, 1).claimed, "alone, it claims the low-priority task")
	require.Equal(t, low.ID, w.snapshotRunning()[0].id)

	// Another worker joins; this one has no free slot for two holds while
	// tasks of both shares come, the other's first.
	const other = "other"
	require.NoError(t, registry.Put(ctx, bd.q, &queue.WorkerInfo{ID: other, LastHeartbeat: bd.fake.Now(), Types: []string{"job"}}))
	bd.fake.Advance(2 * o.PageHold)
	var first *queue.Task
	for first == nil {
		task := bd.submit(t, "job", `{}`)
		if weight(other, task.ID) > weight(w.opts.ID, task.ID) {
			first = task
			continue
		}
		_, err := bd.q.Cancel(ctx, task.ID, "test: the other worker's entry comes first")
		require.NoError(t, err)
	}
	bd.fake.Advance(time.Millisecond)
	rest := bd.submitSpread(t, "job", 20)
	bd.fake.Advance(2 * o.PageHold)
	require.NoError(t, registry.Put(ctx, bd.q, &queue.WorkerInfo{ID: other, LastHeartbeat: bd.fake.Now(), Types: []string{"job"}}))

	require.Equal(t, 1, w.pollSettled(ctx, 1).claimed)
	var got uuid.UUID
	for _, rt := range w.snapshotRunning() {
		if rt.id != low.ID {
			got = rt.id
		}
	}
	require.NotEqual(t, first.ID, got, "claimed the other worker's entry, which it never passed")
	require.Contains(t, ids(rest), got)
	require.True(t, w.owns(queue.ReadyEntry{ID: got, Type: "job"}), "claimed its own oldest entry")
}

// The record of passed ranks answers, for any moment and an entry ready
// since a given time, the highest rank passed while the entry was ready,
// at least a hold before that moment (a rank counts from the end of the
// eighth of a hold it was noted in, for what was ready when that eighth
// began), and keeps a few buckets whatever the number of notes.
func TestPassedRanks(t *testing.T) {
	t.Parallel()
	const hold = 8 * time.Second
	t0 := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	var p passedRanks
	require.Empty(t, p.before(at(time.Hour), hold), "nothing passed")

	p.note(at(0), at(-time.Minute), hold)
	p.note(at(500*time.Millisecond), at(-30*time.Second), hold) // same bucket (0-1 s)
	p.note(at(700*time.Millisecond), at(-50*time.Second), hold) // lower: the bucket keeps its highest
	p.note(at(2*time.Second), at(-10*time.Second), hold)        // next bucket (2-3 s)
	p.note(at(4*time.Second), at(-20*time.Second), hold)        // a lower rank later (4-5 s)
	for _, tc := range []struct {
		now, ready time.Duration
		want       time.Time
	}{
		{8 * time.Second, -time.Minute, time.Time{}},               // the first bucket ends at 1 s: not a hold ago yet
		{9 * time.Second, -time.Minute, at(-30 * time.Second)},     // the first bucket, its highest rank
		{9 * time.Second, 100 * time.Millisecond, time.Time{}},     // ready after the bucket began: not passed by it
		{10 * time.Second, -time.Minute, at(-30 * time.Second)},    // the second ends at 3 s
		{11 * time.Second, -time.Minute, at(-10 * time.Second)},    // both
		{11 * time.Second, time.Second, at(-10 * time.Second)},     // ready before the second began
		{11 * time.Second, 3 * time.Second, time.Time{}},           // ready after it began
		{13 * time.Second, 3 * time.Second, at(-20 * time.Second)}, // the third (lower) passed it
		{13 * time.Second, 0, at(-10 * time.Second)},               // the second still ranks higher for it
		{time.Hour, -time.Minute, at(-10 * time.Second)},           // nothing passed since
		{time.Hour, 5 * time.Second, time.Time{}},                  // ready after every pass
	} {
		require.Equal(t, tc.want, lateUpTo(p.before(at(tc.now), hold), at(tc.ready)), "at %s, ready at %s", tc.now, tc.ready)
	}

	// A note every millisecond for a minute, ranks rising, keeps at most
	// a hold's eighths in the record, and one counted bucket.
	var q passedRanks
	for ms := range 60_000 {
		now := at(time.Duration(ms) * time.Millisecond)
		q.note(now, now, hold)
		if ms%100 == 0 {
			require.LessOrEqual(t, len(q.before(now, hold)), 1)
			require.LessOrEqual(t, len(q.recent), 9)
		}
	}
	// Ranks falling at every note keep at most maxPassedSteps.
	var r passedRanks
	for ms := range 60_000 {
		now := at(time.Duration(ms) * time.Millisecond)
		r.note(now, at(-time.Duration(ms)*time.Millisecond), hold)
		if ms%100 == 0 {
			require.LessOrEqual(t, len(r.before(now, hold)), maxPassedSteps)
		}
	}
}

// One worker with one slot over a backlog many walks deep (pages of 3
// keys, 16 shards, 10 tasks each): the held view keeps a page of every
// shard, so the worker starts the tasks oldest first across every shard,
// as it does when the backlog fits in a walk, instead of shard by shard as
// the walks come round; and it lists no more for that than a LIST per
// page claimed and one per shard to begin with.
func TestDeepBacklogClaimedOldestFirst(t *testing.T) {
	t.Parallel()
	bd := setup(t, storetest.Backends()[0], setupOpts{fake: true})
	o := bd.opts(t)
	o.PageHold = time.Hour
	o.ReadyPageSize = 3
	o.Concurrency = 1
	w := jobWorker(t, bd.q, o)
	tasks := bd.submitSpread(t, "job", 160)
	require.Len(t, bd.q.Shards(), 16)

	before := counts(bd.s)
	order := claimOrder(t, w, len(tasks))
	d := counts(bd.s).Sub(before)
	t.Logf("%d tasks: %s", len(tasks), d)
	require.Equal(t, ids(tasks), order)
	pages := (len(tasks) + o.ReadyPageSize - 1) / o.ReadyPageSize
	require.LessOrEqual(t, d.Total(store.OpList), int64(16+pages+16), "LISTs for %d tasks: %s", len(tasks), d)
}

// A task that becomes ready ranked before what the held view keeps of its
// shard (a high-priority one behind a deep backlog) is claimed ahead of
// every entry ranked after it within a round of walks once that page is
// older than PageHold: the walks list the pages due, oldest first, 4 a
// walk, so its shard's comes within ceil(16/4) walks.
func TestEntryBeforeKeptPageSeenAfterHold(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	bd := setup(t, storetest.Backends()[0], setupOpts{fake: true})
	o := bd.opts(t)
	o.PageHold = time.Hour
	o.ReadyPageSize = 3
	o.Concurrency = 1
	w := jobWorker(t, bd.q, o)
	bd.submitSpread(t, "job", 160)
	claimOrder(t, w, 1)

	high := bd.submit(t, "job", `{}`, func(r *queue.SubmitRequest) { r.Priority = queue.PriorityHigh })
	require.Equal(t, 1, w.pollSettled(ctx, 1).claimed)
	require.False(t, isRunning(w, high.ID), "its shard's page is kept until it is older than the hold")

	for _, p := range w.view.pages { // the hold ended
		p.listed = p.listed.Add(-o.PageHold)
	}
	for polls := 0; !isRunning(w, high.ID); polls++ {
		require.Less(t, polls, 16/maxWalkLists+1, "claimed within a round of the walks")
		require.NoError(t, w.pollSettled(ctx, 1).err)
	}
}

// A worker at its limit for a type whose pages are cut inside a backlog of
// that type (deeper than a page in every shard it polls) does not hold
// back its other types behind those cuts: it no longer lists that type,
// and starts the tasks of its other type ranked after them while the
// pages are still held (the hold is an hour here), in as many LISTs as
// the other type's pages take.
func TestTypeAtLimitDoesNotHoldOtherTypes(t *testing.T) {
	t.Parallel()
	// The LISTs from a at its limit to every b started are bounded by b's
	// pages alone, at two depths of a (3 and 33 pages of it per shard).
	for _, depth := range []int{10, 100} {
		t.Run(fmt.Sprintf("a=%d", depth), func(t *testing.T) {
			t.Parallel()
			typeAtLimitLists(t, depth)
		})
	}
}

// typeAtLimitLists runs TestTypeAtLimitDoesNotHoldOtherTypes with depth a
// tasks in each shard polled.
func typeAtLimitLists(t *testing.T, depth int) {
	ctx := context.Background()
	bd := setup(t, storetest.Backends()[0], setupOpts{fake: true})
	o := bd.opts(t)
	o.PageHold = time.Hour
	o.ReadyPageSize = 3
	o.Shards = []string{"2", "5", "9"}
	o.Concurrency = 64
	o.Limits = map[string]int{"a": 1}
	w := New(bd.q, o)
	w.Handle("a", blockHandler)
	w.Handle("b", blockHandler)
	prepared(t, w)

	// Each shard polled holds depth a (over several pages), then five b
	// (low priority: ranked a quarter hour after them).
	var as, bs []*queue.Task
	for _, tc := range []struct {
		typ  string
		n    int
		list *[]*queue.Task
		mod  func(*queue.SubmitRequest)
	}{
		{"a", depth, &as, func(*queue.SubmitRequest) {}},
		{"b", 5, &bs, func(r *queue.SubmitRequest) { r.Priority = queue.PriorityLow }},
	} {
		per := map[string]int{}
		for per["2"] < tc.n || per["5"] < tc.n || per["9"] < tc.n {
			task := bd.submit(t, tc.typ, `{}`, tc.mod)
			bd.fake.Advance(time.Millisecond)
			if slices.Contains(o.Shards, task.Shard) {
				*tc.list = append(*tc.list, task)
				per[task.Shard]++
			}
		}
	}

	// Six partitions (two types in three shards), all deeper than a page:
	// two walks of 4 LISTs list each once, then one a is claimed.
	claimed := 0
	for polls := 0; claimed == 0; polls++ {
		require.Less(t, polls, 2, "claimed once every partition was listed")
		claimed = w.pollSettled(ctx, o.Concurrency).claimed
	}
	require.Equal(t, 1, claimed, "one a, then it is at its limit")
	require.Equal(t, map[string]int{"a": 1}, runningTypes(w))
	require.True(t, isRunning(w, as[0].ID), "the oldest a first")

	before := counts(bd.s)
	polls := 0
	for ; runningTypes(w)["b"] < len(bs); polls++ {
		require.Less(t, polls, 40, "b tasks started: %d of %d", runningTypes(w)["b"], len(bs))
		require.NoError(t, w.pollSettled(ctx, o.Concurrency-w.slotsTaken()).err)
	}
	for _, task := range bs {
		require.True(t, isRunning(w, task.ID), "task %s", task.ID)
	}
	require.Equal(t, 1, runningTypes(w)["a"], "still at its limit for a")
	// Only b is listed, each key about once: the a backlog is not listed
	// again while a is at its limit.
	d := counts(bd.s).Sub(before)
	require.LessOrEqual(t, d.Total(store.OpList), int64(len(bs)/o.ReadyPageSize+len(o.Shards)), "LISTs in %d polls: %s", polls, d)
	t.Logf("%d polls, %s", polls, d)
}

// A walk made while a type is at its limit (for the worker's other types)
// leaves the entries of the type at its limit in the view, so when a slot
// of it frees the worker claims its oldest entry across every shard, not
// a newer one in a partition listed in a moment a slot was free (fleet
// simulation, seed 127: a late entry of another worker's share passed for
// minutes that way).
func TestListingForOtherTypesKeepsEntriesOfTypeAtLimit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	bd := setup(t, storetest.Backends()[0], setupOpts{fake: true})
	o := bd.opts(t)
	o.Shards = []string{"2", "5"}
	o.Limits = map[string]int{"a": 1}
	w := New(bd.q, o)
	w.Handle("a", blockHandler)
	w.Handle("b", blockHandler)
	prepared(t, w)

	at := bd.fake.Now()
	entry := func(shard, typ string, ms int) queue.ReadyEntry {
		return queue.ReadyEntry{Shard: shard, Type: typ, Rank: at.Add(time.Duration(ms) * time.Millisecond), ID: uuid.Must(uuid.NewV7())}
	}
	older, newer := entry("2", "a", 1), entry("5", "a", 2)
	served := []string{"a/2", "a/5", "b/2", "b/5"}
	both := []string{"a", "b"}
	w.hold(ctx, []queue.ReadyEntry{older, newer}, map[string]*partPage{
		"a/2": {listed: at}, "a/5": {listed: at}, "b/2": {listed: at}, "b/5": {listed: at},
	}, served, served, both, 4)
	// a is at its limit: b's partition in shard 2 is listed again, and
	// holds no b.
	w.hold(ctx, nil, map[string]*partPage{"b/2": {listed: at}}, served, []string{"b/2", "b/5"}, []string{"b"}, 4)

	var held []uuid.UUID
	for _, h := range w.view.entries {
		held = append(held, h.ID)
	}
	require.Equal(t, []uuid.UUID{older.ID, newer.ID}, held, "the a entries of both shards, oldest first")

	// Listed again, a's partition in shard 2 says what it holds now.
	w.hold(ctx, nil, map[string]*partPage{"a/2": {listed: at}}, served, served, both, 4)
	require.Len(t, w.view.entries, 1)
	require.Equal(t, newer.ID, w.view.entries[0].ID)
}

// Under a fleet-wide limit split over more workers than it has units, the
// entries of its type fall only to the workers holding a share (the first
// ids): one that fell to a worker with none would wait until another took
// it as late. A per-key limit does so for keyed entries only.
func TestEntriesFallToShareHolders(t *testing.T) {
	t.Parallel()
	ids := []string{"a", "b", "c", "d", "e"}
	for _, tc := range []struct {
		name    string
		limits  map[string]int
		key     string
		holders []string
	}{
		{"no limit", nil, "", ids},
		{"cap 2 of 5", map[string]int{"x": 2}, "", []string{"a", "b"}},
		{"cap 7 of 5", map[string]int{"x": 7}, "", ids},
		{"rate 3 a minute", map[string]int{rateKey("x"): 3}, "", []string{"a", "b", "c"}},
		{"cap and rate", map[string]int{"x": 4, rateKey("x"): 1}, "", []string{"a"}},
		{"per-key cap, unkeyed", map[string]int{keyCapKey("x"): 1}, "", ids},
		{"per-key cap, keyed", map[string]int{keyCapKey("x"): 1}, "k", []string{"a"}},
		{"per-key rate, keyed", map[string]int{keyRateKey("x"): 2}, "k", []string{"a", "b"}},
		{"another type's cap", map[string]int{"y": 1}, "", ids},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			workers := make([]*Worker, len(ids))
			for i, me := range ids {
				w := &Worker{opts: Options{ID: me}, types: []string{"x", "y"}}
				w.caps.limits = tc.limits
				for _, p := range ids {
					if p != me {
						w.peers.live = append(w.peers.live, peer{id: p, types: []string{"x", "y"}})
					}
				}
				workers[i] = w
			}
			got := map[string]int{}
			for i := range 500 {
				e := queue.ReadyEntry{ID: uuid.NewSHA1(uuid.NameSpaceOID, []byte(fmt.Sprint(i))), Type: "x", Key: tc.key}
				var owners []string
				for j, w := range workers {
					if w.owns(e) {
						owners = append(owners, ids[j])
					}
				}
				require.Len(t, owners, 1, "entry %d", i)
				got[owners[0]]++
			}
			require.ElementsMatch(t, tc.holders, slices.Collect(maps.Keys(got)), "owners %v", got)
		})
	}
}

// Under a fleet-wide cap, the entries of its type are split in proportion
// to the workers' shares of it: a worker whose own limit holds it to 1 of
// a cap of 5 takes a fifth, not a third, and no worker waits on a share it
// cannot run.
func TestSplitFollowsCapShares(t *testing.T) {
	t.Parallel()
	type spec struct {
		id    string
		conc  int
		limit map[string]int
	}
	fleet := []spec{{"a", 16, nil}, {"b", 8, map[string]int{"x": 1}}, {"c", 4, nil}}
	workers := make([]*Worker, len(fleet))
	for i, me := range fleet {
		w := &Worker{opts: Options{ID: me.id, Concurrency: me.conc, Limits: me.limit}, types: []string{"x"}}
		w.caps.limits = map[string]int{"x": 5}
		for _, p := range fleet {
			if p.id != me.id {
				w.peers.live = append(w.peers.live, peer{id: p.id, types: []string{"x"}, bound: runBound{concurrency: p.conc, limits: p.limit}})
			}
		}
		workers[i] = w
	}
	const n = 6000
	got := map[string]int{}
	for i := range n {
		e := queue.ReadyEntry{ID: uuid.NewSHA1(uuid.NameSpaceOID, []byte(fmt.Sprint(i))), Type: "x"}
		var owners []string
		for j, w := range workers {
			if w.owns(e) {
				owners = append(owners, fleet[j].id)
			}
		}
		require.Len(t, owners, 1, "entry %d", i)
		got[owners[0]]++
	}
	// Shares of the cap: a 2, b 1 (its limit), c 2.
	for id, share := range map[string]int{"a": 2, "b": 1, "c": 2} {
		require.InDelta(t, n*share/5, got[id], n/25, "%s's part of %d entries: %v", id, n, got)
	}
}

// The walker's rules found by the fleet simulation (seed 163: a worker of
// types a and b, a at its cap share, a low-priority b entry of a saturated
// peer's share behind a deep a backlog waited 56-87 s behind newer ones).
func TestWalkReachesEntriesBehindOthers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	bd := setup(t, storetest.Backends()[0], setupOpts{fake: true})
	o := bd.opts(t)
	o.Shards = []string{"2", "5"}
	at := bd.fake.Now()
	served := []string{"a/2", "a/5", "b/2", "b/5"}
	claimB := []string{"b/2", "b/5"}
	newWorker := func(t *testing.T) *Worker {
		w := New(bd.q, o)
		w.Handle("a", blockHandler)
		w.Handle("b", blockHandler)
		w.peers.live = []peer{{id: "peer", types: []string{"a", "b"}}}
		w.peers.readAt = at
		return w
	}
	// entry returns a ready entry of typ in shard ranked ms after at,
	// falling to this worker (own) or to its peer.
	entry := func(w *Worker, shard, typ string, ms int, own bool) queue.ReadyEntry {
		for {
			e := queue.ReadyEntry{Shard: shard, Type: typ, Priority: queue.PriorityNormal, Rank: at.Add(time.Duration(ms) * time.Millisecond), ID: uuid.Must(uuid.NewV7())}
			if w.owns(e) == own {
				return e
			}
		}
	}

	t.Run("a page of others' entries with a cut is listed on", func(t *testing.T) {
		t.Parallel()
		w := newWorker(t)
		theirs := entry(w, "2", "b", 1, false)
		w.hold(ctx, []queue.ReadyEntry{theirs}, map[string]*partPage{
			"b/2": {listed: at, cut: theirs.Rank, next: "ready/b/2/next"},
			"b/5": {listed: at},
		}, served, claimB, []string{"b"}, 4)
		// Not late yet, not claimed from: the worker's own entries of the
		// partition may lie past the cut.
		due, onward, urgent := w.view.due(claimB, time.Now(), o.PageHold, false)
		require.True(t, urgent)
		require.Equal(t, []string{"b/2"}, due)
		require.True(t, onward["b/2"], "listed on past the cut, not from the top again")
	})

	t.Run("own entries of a type at its limit do not hide the others' passed", func(t *testing.T) {
		t.Parallel()
		w := newWorker(t)
		var es []queue.ReadyEntry
		for i := range 3 {
			es = append(es, entry(w, "2", "a", i, true))     // its own, a at its limit
			es = append(es, entry(w, "5", "b", 10+i, false)) // its peer's
		}
		w.hold(ctx, es, map[string]*partPage{
			"a/2": {listed: at}, "a/5": {listed: at}, "b/2": {listed: at}, "b/5": {listed: at},
		}, served, claimB, []string{"b"}, 2)
		require.NotNil(t, w.passed[typeKey{"b", ""}], "more of the peer's b entries than free slots, none of its own b: passed")
		require.NotEmpty(t, w.passed[typeKey{"b", ""}].recent, "more of the peer's b entries than free slots, none of its own b: passed")
	})

	t.Run("a listing stopped in a run of keys not available yet keeps what lies past it", func(t *testing.T) {
		t.Parallel()
		w := newWorker(t)
		deep := entry(w, "2", "b", 50, true)
		w.hold(ctx, []queue.ReadyEntry{deep}, map[string]*partPage{
			"b/2": {listed: at}, "b/5": {listed: at},
		}, served, claimB, []string{"b"}, 4)
		// Listed again from the top: a run of keys not available yet
		// (high-priority, delayed), and the listing stops inside it,
		// before the entry's rank.
		id := uuid.Must(uuid.NewV7())
		for queue.ShardOf(id, 1) != "2" {
			id = uuid.Must(uuid.NewV7())
		}
		stop := queue.ReadyKey(&queue.Task{ID: id, Type: "b", Shard: "2", Priority: queue.PriorityHigh, AvailableAt: at.Add(queue.PriorityStep + 20*time.Millisecond)})
		w.hold(ctx, nil, map[string]*partPage{"b/2": {listed: at, resume: stop}}, served, claimB, []string{"b"}, 4)
		require.Len(t, w.view.entries, 1, "the b entry past the stop stays in the view")
		require.Equal(t, deep.ID, w.view.entries[0].ID)
	})
}

// A LIST that runs on into a partition from the one before (the one
// before is empty) meets that partition's run of keys the worker cannot
// claim yet from its top: the walk goes on from where the partition's
// page had already paged to, not through the run again (fleet
// simulation, seed 163, when the run was another type's keys: with four
// LISTs a walk, a shard restarted so never reached its entries behind 16
// pages of them).
func TestWalkRunningOnKeepsShardsProgress(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	bd := setup(t, storetest.Backends()[0], setupOpts{fake: true})
	o := bd.opts(t)
	o.ReadyPageSize = 10
	o.Shards = []string{"2", "5"}
	w := New(bd.q, o)
	w.Handle("a", blockHandler)
	w.Handle("b", blockHandler)
	prepared(t, w)

	// 50 high-priority tasks available in ten minutes (ranked five
	// minutes ago), then one of normal priority available now, all in
	// shard 5.
	var as []*queue.Task
	var b *queue.Task
	for b == nil {
		delayed := len(as) < 50
		task := bd.submit(t, "b", `{}`, func(r *queue.SubmitRequest) {
			if delayed {
				r.Priority, r.Delay = queue.PriorityHigh, 10*time.Minute
			}
		})
		bd.fake.Advance(time.Millisecond)
		switch {
		case task.Shard != "5":
			_, err := bd.q.Cancel(ctx, task.ID, "not in shard 5")
			require.NoError(t, err)
		case delayed:
			as = append(as, task)
		default:
			b = task
		}
	}
	// The view paged shard 5's partition past 40 of the delayed ones.
	now := time.Now()
	w.view.pages = map[string]*partPage{
		"b/2": {listed: now},
		"b/5": {listed: now, resume: queue.ReadyKey(as[39])},
	}
	entries, pages, err := w.walk(ctx, o.Shards, []string{"b"}, w.partitions(o.Shards, []string{"b"}), []string{"b/2", "b/5"}, nil)
	require.NoError(t, err)
	require.Len(t, entries, 1, "pages: %+v", pages)
	require.Equal(t, b.ID, entries[0].ID)
}

// A task started ahead of older ones of the worker's own, its key's turn
// (keys take turns), passes no entry of a key beyond that key's oldest own
// entry left: the others' entries beside those are not late for it, else
// every worker would race for them a page hold later (qo bench --keys:
// 14-23% more requests per task over 20 keys than over none).
func TestKeyTurnPassesOnlyWhatItLeftBehind(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	bd := setup(t, storetest.Backends()[0], setupOpts{fake: true})
	o := bd.opts(t)
	o.Shards = []string{"2"}
	w := New(bd.q, o)
	w.Handle("a", blockHandler)
	prepared(t, w)
	w.pollSettled(ctx, 1) // reads control.json
	at := bd.fake.Now()
	entry := func(ms int, key string, own bool) heldEntry {
		return heldEntry{ReadyEntry: queue.ReadyEntry{Shard: "2", Type: "a", Priority: queue.PriorityNormal, Rank: at.Add(time.Duration(ms) * time.Millisecond), ID: uuid.Must(uuid.NewV7()), TaskKey: key}, own: own}
	}
	w.view = heldView{
		entries: []heldEntry{entry(1, "deep", true), entry(2, "deep", true), entry(3, "deep", true), entry(5, "", false), entry(10, "small", true)},
		pages:   map[string]*partPage{"a/2": {listed: time.Now()}},
	}
	require.Equal(t, 2, w.claimHeld(ctx, 2))
	w.claims.Wait()
	var left []string
	for _, h := range w.view.entries {
		left = append(left, fmt.Sprintf("%s@%d", h.TaskKey, h.Rank.Sub(at).Milliseconds()))
	}
	require.Equal(t, []string{"deep@2", "deep@3", "@5"}, left, "the deep key's first and the small key's took a turn each")
	passedTo := func(k typeKey) time.Time {
		r := w.passed[k]
		require.NotNil(t, r, "%v passed", k)
		require.NotEmpty(t, r.recent, "%v passed", k)
		return r.recent[len(r.recent)-1].rank
	}
	require.Equal(t, at.Add(2*time.Millisecond), passedTo(typeKey{"a", "deep"}), "the deep key passed up to its next own entry, not the small key's rank")
	require.Equal(t, at.Add(10*time.Millisecond), passedTo(typeKey{"a", "small"}))
	require.Equal(t, at.Add(10*time.Millisecond), passedTo(typeKey{"a", ""}), "none of its own there: up to the rank started")
}
