package worker

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/internal/testutil"
	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/queue/namedlease"
	"github.com/qo-queue/qo/queue/registry"
	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/store/memstore"
	"github.com/qo-queue/qo/store/storetest"
)

// leasingBundle is a queue over a memory store whose LastModified times
// follow the bundle's fake clock, as the registry and lease listings are
// read by it; wrap, when set, sits between the queue and the store.
func leasingBundle(t *testing.T, wrap func(store.Store) store.Store) *bundle {
	t.Helper()
	ctx := context.Background()
	fake := newFakeClock()
	var s store.Store = memstore.New(memstore.WithClock(fake))
	_, err := queue.Init(ctx, s, 1)
	require.NoError(t, err)
	if wrap != nil {
		s = wrap(s)
	}
	q, err := queue.Open(ctx, s, queue.Options{Logger: testLogger(t), Clock: fake})
	require.NoError(t, err)
	return &bundle{s: s, q: q, clock: fake, fake: fake}
}

func leasingWorker(t *testing.T, bd *bundle, id string) *Worker {
	t.Helper()
	o := bd.opts(t)
	o.ID = id
	o.ShardLeasing = ShardLeasing{Enabled: true, TTL: 30 * time.Second, RenewInterval: 10 * time.Second, LiveAfter: 30 * time.Second}
	w := New(bd.q, o)
	w.Handle("echo", echoHandler)
	prepared(t, w)
	w.leaser = newShardLeaser(w)
	w.startedAt = bd.clock.Now()
	require.NoError(t, w.Heartbeat(context.Background()))
	return w
}

// step runs one leasing round and publishes the result in the registry.
func step(t *testing.T, w *Worker) []string {
	t.Helper()
	w.leaser.round(context.Background(), true)
	require.NoError(t, w.Heartbeat(context.Background()))
	return w.leaser.owned()
}

func holder(t *testing.T, bd *bundle, shard string) *queue.NamedLease {
	t.Helper()
	l, err := namedlease.Read(context.Background(), bd.q, queue.ShardLeaseKey(shard))
	require.NoError(t, err)
	return l
}

func TestShardLeasing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	bd := leasingBundle(t, nil)
	all := bd.q.Shards()

	// Acquire: a lone worker takes every shard.
	w1 := leasingWorker(t, bd, "w1")
	require.Equal(t, all, step(t, w1))
	for _, sh := range all {
		require.Equal(t, "w1", holder(t, bd, sh).Holder)
	}

	// Balance: a second worker appears; w1 sheds half, w2 takes it
	// once the released leases are older than a renewal would leave
	// a held one (w1 meanwhile renews the half it keeps).
	w2 := leasingWorker(t, bd, "w2")
	require.Empty(t, step(t, w2), "nothing is free while w1 holds everything")
	require.Len(t, step(t, w1), 8)
	require.Empty(t, step(t, w2), "a lease written within 2 renew intervals counts as held")
	bd.fake.Advance(10 * time.Second)
	require.Len(t, step(t, w1), 8)
	bd.fake.Advance(11 * time.Second)
	o2 := step(t, w2)
	require.Len(t, o2, 8)
	o1 := w1.leaser.owned()
	union := append(append([]string(nil), o1...), o2...)
	sort.Strings(union)
	require.Equal(t, all, union, "every shard owned exactly once")
	for _, sh := range o2 {
		require.Equal(t, "w2", holder(t, bd, sh).Holder)
	}

	// Only owned shards are polled.
	var inOwned, elsewhere *queue.Task
	for inOwned == nil || elsewhere == nil {
		task := bd.submit(t, "echo", `{}`)
		switch {
		case contains(o1, task.Shard) && inOwned == nil:
			inOwned = task
		case !contains(o1, task.Shard) && elsewhere == nil:
			elsewhere = task
		default:
			_, err := bd.q.Cancel(ctx, task.ID, "not needed")
			require.NoError(t, err)
		}
	}
	claimed := 0
	for range 5 {
		r := w1.pollSettled(ctx, 5)
		require.NoError(t, r.err)
		claimed += r.claimed
	}
	require.Equal(t, 1, claimed)
	bd.waitStatus(t, inOwned.ID, queue.StatusCompleted)
	require.Equal(t, queue.StatusPending, bd.get(t, elsewhere.ID).Status)

	// Renew: leases move forward with the clock.
	sh := o2[0]
	before := holder(t, bd, sh).ExpiresAt
	bd.fake.Advance(10 * time.Second)
	step(t, w1)
	require.Len(t, step(t, w2), 8)
	require.True(t, holder(t, bd, sh).ExpiresAt.After(before))

	// No free shard: a third worker stays under its target, sends
	// no acquisition requests, and backs off; the others shed to
	// their share of ceil(16/3) = 6 and it picks up the rest.
	w3 := leasingWorker(t, bd, "w3")
	c0 := counts(bd.s)
	w3.leaser.round(ctx, true)
	require.Zero(t, counts(bd.s).Sub(c0).Total(store.OpPut), "no lease writes when every lease was renewed lately")
	require.Empty(t, w3.leaser.owned())
	require.False(t, w3.leaser.nextAcquire.IsZero(), "acquisition backs off")
	require.Len(t, step(t, w1), 6)
	require.Len(t, step(t, w2), 6)
	bd.fake.Advance(10 * time.Second)
	step(t, w1)
	step(t, w2)
	bd.fake.Advance(11 * time.Second)
	require.Len(t, step(t, w3), 4)

	// Takeover: w1 and w3 die; once their heartbeats and leases are
	// old, w2 takes every shard over.
	bd.fake.Advance(31 * time.Second)
	require.Equal(t, all, step(t, w2))
	for _, sh := range all {
		require.Equal(t, "w2", holder(t, bd, sh).Holder)
	}
	// The dead holder's renewal now fails and it drops the shard.
	w1.leaser.renew(ctx)
	require.Empty(t, w1.leaser.owned())

	// Release: on shutdown every lease is given back.
	w2.leaser.releaseAll(ctx)
	require.Empty(t, w2.leaser.owned())
	for _, sh := range all {
		require.Empty(t, holder(t, bd, sh).Holder)
	}
}

// A cap on shards per worker limits what one worker takes.
func TestShardLeasingCap(t *testing.T) {
	t.Parallel()
	bd := setup(t, storetest.Backends()[0], setupOpts{fake: true})
	w := leasingWorker(t, bd, "capped")
	w.leaser.cfg.ShardsPerWorker = 4
	require.Len(t, step(t, w), 4)
}

// Run wires leasing in: a leasing worker runs tasks and releases its shards
// and registry entry on shutdown.
func TestShardLeasingRun(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, b storetest.Backend) {
		bd := setup(t, b, setupOpts{})
		o := bd.opts(t)
		o.ShardLeasing = ShardLeasing{Enabled: true, TTL: 3 * time.Second, RenewInterval: time.Second}
		w := New(bd.q, o)
		w.Handle("echo", echoHandler)
		r := start(t, w)
		tasks := make([]*queue.Task, 5)
		for i := range tasks {
			tasks[i] = bd.submit(t, "echo", `{"i":1}`)
		}
		for _, task := range tasks {
			bd.waitStatus(t, task.ID, queue.StatusCompleted)
		}
		testutil.Eventually(t, func() bool { return len(bd.waitRegistered(t, w.ID()).Shards) == 16 }, "registry to list the held shards")
		require.NoError(t, r.stop(t))
		for _, sh := range bd.q.Shards() {
			require.Empty(t, holder(t, bd, sh).Holder)
		}
	})
}

func contains(set []string, s string) bool {
	for _, v := range set {
		if v == s {
			return true
		}
	}
	return false
}

// prefixCounter counts GETs and LISTs by the first path element of the key
// (a LIST by its prefix).
type prefixCounter struct {
	store.Store
	mu    sync.Mutex
	gets  map[string]int
	lists map[string]int
}

func newPrefixCounter(s store.Store) *prefixCounter {
	return &prefixCounter{Store: s, gets: map[string]int{}, lists: map[string]int{}}
}

func rootOf(key string) string {
	root, _, _ := strings.Cut(key, "/")
	return root + "/"
}

func (c *prefixCounter) Get(ctx context.Context, key string) (*store.Object, error) {
	c.mu.Lock()
	c.gets[rootOf(key)]++
	c.mu.Unlock()
	return c.Store.Get(ctx, key)
}

func (c *prefixCounter) List(ctx context.Context, p store.ListParams) (store.ListPage, error) {
	c.mu.Lock()
	c.lists[rootOf(p.Prefix)]++
	c.mu.Unlock()
	return c.Store.List(ctx, p)
}

func (c *prefixCounter) reset() {
	c.mu.Lock()
	clear(c.gets)
	clear(c.lists)
	c.mu.Unlock()
}

// A leasing round reads no registry entry: one LIST of workers/ and no
// GET, whether 10 or 100 other workers are registered, so the fleet's
// registry reads grow linearly with it (not as its square).
func TestShardLeasingRegistryReads(t *testing.T) {
	t.Parallel()
	for _, n := range []int{10, 100} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			var pc *prefixCounter
			bd := leasingBundle(t, func(s store.Store) store.Store { pc = newPrefixCounter(s); return pc })
			for i := range n {
				require.NoError(t, registry.Put(ctx, bd.q, &queue.WorkerInfo{ID: fmt.Sprintf("peer-%03d", i), LastHeartbeat: bd.fake.Now()}))
			}
			w := leasingWorker(t, bd, "w")
			target := (16 + n) / (n + 1) // ceil(16 / (n+1))
			for i := range 3 {
				pc.reset()
				w.leaser.round(ctx, true)
				require.Zero(t, pc.gets[queue.WorkersPrefix], "registry GETs in one round with %d workers registered", n)
				require.Equal(t, 1, pc.lists[queue.WorkersPrefix], "registry LISTs in one round")
				lists := 0
				if i == 0 {
					lists = 1 // below the target: one listing of the shard leases
				}
				require.Equal(t, lists, pc.lists[queue.ShardLeasePrefix], "shard-lease LISTs in round %d", i)
				require.Len(t, w.leaser.owned(), target)
				bd.fake.Advance(10 * time.Second)
			}
		})
	}
}
