package queue_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/store/memstore"
	"github.com/qo-queue/qo/store/storetest"
)

// listLog records the LISTs sent through it.
type listLog struct {
	store.Store
	mu    sync.Mutex
	lists []store.ListParams
}

func (l *listLog) List(ctx context.Context, p store.ListParams) (store.ListPage, error) {
	l.mu.Lock()
	l.lists = append(l.lists, p)
	l.mu.Unlock()
	return l.Store.List(ctx, p)
}

// take returns the LISTs recorded since the last call.
func (l *listLog) take() []store.ListParams {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.lists
	l.lists = nil
	return out
}

// readyBucket is a queue of 16 shards on a memstore whose ready index is
// written directly (entries only, no task objects: ListReady reads keys
// alone), its LISTs recorded.
type readyBucket struct {
	ctx   context.Context
	q     *queue.Queue
	raw   *memstore.Store
	log   *listLog
	clock *storetest.Clock
}

func newReadyBucket(t *testing.T) *readyBucket {
	t.Helper()
	ctx := context.Background()
	raw := memstore.New()
	_, err := queue.Init(ctx, raw, 1)
	require.NoError(t, err)
	log := &listLog{Store: raw}
	clock := newFakeClock()
	q, err := queue.Open(ctx, log, queue.Options{Clock: clock})
	require.NoError(t, err)
	return &readyBucket{ctx: ctx, q: q, raw: raw, log: log, clock: clock}
}

// fill writes n ready entries of each type, available a minute ago (or at
// the given offset from now), spread over the shards by their random ids,
// and returns their keys by type.
func (b *readyBucket) fill(t *testing.T, n int, at time.Duration, types ...string) map[string][]string {
	t.Helper()
	now := b.clock.Now()
	byType := map[string][]string{}
	var all []string
	for _, typ := range types {
		for i := range n {
			id := queue.NewIDAt(now.Add(-time.Hour + time.Duration(i)*time.Millisecond))
			task := &queue.Task{ID: id, Type: typ, Shard: queue.ShardOf(id, 1), Priority: queue.PriorityNormal, AvailableAt: now.Add(at)}
			k := queue.ReadyKey(task)
			byType[typ] = append(byType[typ], k)
			all = append(all, k)
		}
	}
	slices.Sort(all) // memstore appends keys written in order
	for _, k := range all {
		_, err := b.raw.Put(b.ctx, k, nil, store.Condition{})
		require.NoError(t, err)
	}
	return byType
}

// walk pages through ListReady from qry.StartAfter to the end and returns
// the keys listed and the LISTs sent. Every next moves forward.
func (b *readyBucket) walk(t *testing.T, qry queue.ReadyQuery) ([]string, []store.ListParams) {
	t.Helper()
	b.log.take()
	var keys []string
	for calls := 0; ; calls++ {
		require.Less(t, calls, 100000, "the walk ends")
		es, next, err := b.q.ListReady(b.ctx, qry)
		require.NoError(t, err)
		for _, e := range es {
			keys = append(keys, e.Key)
		}
		if next == "" {
			return keys, b.log.take()
		}
		require.Greater(t, next, qry.StartAfter, "next moves forward")
		qry.StartAfter = next
	}
}

// A worker that serves type b lists all of b's entries in at most 2 LISTs
// however deep the backlogs of the types sorting before and after b: a
// LIST that runs into a type not asked for hops past all of it, and a
// LIST of b alone never meets another type.
func TestListReadyHopsPastOtherTypes(t *testing.T) {
	t.Parallel()
	lists := map[string][]int{}
	depths := []int{500, 5000}
	if !testing.Short() {
		depths = append(depths, 50000)
	}
	for _, depth := range depths {
		b := newReadyBucket(t)
		deep := b.fill(t, depth, -time.Minute, "a", "c", "e")
		mine := b.fill(t, 10, -time.Minute, "b")
		shards := map[string]bool{}
		for _, k := range mine["b"] {
			e, err := queue.ParseReadyKey(k)
			require.NoError(t, err)
			shards[e.Shard] = true
		}
		require.Greater(t, len(shards), 1, "b's entries lie in several shards")
		require.Len(t, deep["a"], depth)

		for _, tc := range []struct {
			name   string
			qry    queue.ReadyQuery
			prefix string // of every LIST
		}{
			{"b alone", queue.ReadyQuery{Types: []string{"b"}, Limit: 100}, "ready/b/"},
			// d has no entry, so nothing wanted lies between b and it:
			// the first LIST meets c's backlog and the second begins at d.
			{"b and d", queue.ReadyQuery{Types: []string{"d", "b"}, Limit: 100}, "ready/"},
			{"b, d and the default page", queue.ReadyQuery{Types: []string{"b", "d"}}, "ready/"},
			// A walk resumed inside a's backlog (a stale cursor).
			{"b and d from inside a", queue.ReadyQuery{Types: []string{"b", "d"}, Limit: 100, StartAfter: deep["a"][depth/2]}, "ready/"},
		} {
			got, sent := b.walk(t, tc.qry)
			require.ElementsMatch(t, mine["b"], got, "%s, %d deep: every entry of b and nothing else", tc.name, depth)
			require.LessOrEqual(t, len(sent), 2, "%s, %d deep: %+v", tc.name, depth, sent)
			for _, p := range sent {
				require.Equal(t, tc.prefix, p.Prefix, tc.name)
			}
			if tc.qry.Limit != 0 { // a default page holds the shallow backlogs whole
				lists[tc.name] = append(lists[tc.name], len(sent))
			}
		}
	}
	for name, counts := range lists {
		for _, n := range counts {
			require.Equal(t, counts[0], n, "%s: the same LISTs whatever the depth of the other types: %v", name, counts)
		}
	}
}

// The LIST's prefix is one partition when only one is wanted, one type's
// when every wanted partition is of one type.
func TestListReadyNarrowsThePrefix(t *testing.T) {
	t.Parallel()
	b := newReadyBucket(t)
	keys := b.fill(t, 20, -time.Minute, "a", "b")
	for _, tc := range []struct {
		qry    queue.ReadyQuery
		prefix string
	}{
		{queue.ReadyQuery{}, "ready/"},
		{queue.ReadyQuery{Shards: []string{"3"}}, "ready/"},
		{queue.ReadyQuery{Types: []string{"b"}}, "ready/b/"},
		{queue.ReadyQuery{Types: []string{"b", "b"}, Shards: []string{"3", "4"}}, "ready/b/"},
		{queue.ReadyQuery{Types: []string{"b"}, Shards: []string{"3"}}, "ready/b/3/"},
		{queue.ReadyQuery{Types: []string{"a", "b"}, Shards: []string{"3"}}, "ready/"},
	} {
		got, sent := b.walk(t, tc.qry)
		require.Len(t, sent, 1, "%+v", tc.qry)
		require.Equal(t, tc.prefix, sent[0].Prefix, "%+v", tc.qry)
		var want []string
		for _, typ := range []string{"a", "b"} {
			for _, k := range keys[typ] {
				e, err := queue.ParseReadyKey(k)
				require.NoError(t, err)
				if (tc.qry.Types == nil || slices.Contains(tc.qry.Types, typ)) && (tc.qry.Shards == nil || slices.Contains(tc.qry.Shards, e.Shard)) {
					want = append(want, k)
				}
			}
		}
		require.ElementsMatch(t, want, got, "%+v", tc.qry)
	}
	for _, qry := range []queue.ReadyQuery{{Types: []string{}}, {Shards: []string{}}} {
		got, sent := b.walk(t, qry)
		require.Empty(t, got)
		require.Empty(t, sent, "an empty filter wants nothing: no LIST")
	}
}

// next names where the walk stands: a key inside a partition it has not
// finished, or the prefix of the next partition to list; the partitions
// wanted come in key order (type, then shard), each in rank order, and a
// partition stops at the first rank past the horizon.
func TestListReadyNextAcrossPartitions(t *testing.T) {
	t.Parallel()
	b := newReadyBucket(t)
	now := b.clock.Now()
	put := func(typ string, shard string, at time.Duration) string {
		t.Helper()
		var id uuid.UUID
		for id = queue.NewIDAt(now); queue.ShardOf(id, 1) != shard; id = queue.NewIDAt(now) {
		}
		k := queue.ReadyKey(&queue.Task{ID: id, Type: typ, Shard: shard, Priority: queue.PriorityNormal, AvailableAt: now.Add(at)})
		_, err := b.raw.Put(b.ctx, k, nil, store.Condition{})
		require.NoError(t, err)
		return k
	}
	b1 := put("b", "1", -time.Minute)
	b1late := put("b", "1", time.Hour) // past the horizon: the rest of b/1 is skipped
	put("b", "1", 2*time.Hour)
	b2 := put("b", "2", -time.Minute)
	put("b", "5", -time.Minute) // a shard not asked for
	put("b", "5", -time.Minute)
	c2 := put("c", "2", -time.Minute)

	list := func(startAfter string, limit int) ([]string, string) {
		t.Helper()
		es, next, err := b.q.ListReady(b.ctx, queue.ReadyQuery{Types: []string{"c", "b"}, Shards: []string{"2", "1"}, Limit: limit, StartAfter: startAfter})
		require.NoError(t, err)
		return keysOf(es), next
	}
	got, next := list("", 1)
	require.Equal(t, []string{b1}, got)
	require.Equal(t, b1, next, "the page ended inside b/1: next is its last key")
	require.Equal(t, "b/1", queue.ReadyKeyPartition(next))
	got, next = list(next, 1)
	require.Empty(t, got, "the next entry of b/1 is past the horizon")
	require.Equal(t, queue.ReadyPartitionPrefix("b/2"), next, "b/1 is done: next begins b/2")

	got, next = list("", 2)
	require.Equal(t, []string{b1}, got)
	require.Equal(t, "ready/b/2/", next, "b/1 stopped at "+b1late+": next begins b/2")
	require.Equal(t, "b/2", queue.ReadyKeyPartition(next))
	got, next = list(next, 2)
	require.Equal(t, []string{b2}, got)
	require.Equal(t, queue.ReadyPartitionPrefix(queue.ReadyPartition("c", "1")), next, "b/5 is not wanted: next begins c/1")
	got, next = list(next, 2)
	require.Equal(t, []string{c2}, got)
	require.Empty(t, next, "the end")

	// Every type: past the last shard wanted of a type, next begins past
	// all of that type (its shard segment "~" sorts after every shard).
	es, next, err := b.q.ListReady(b.ctx, queue.ReadyQuery{Shards: []string{"1", "2"}, Limit: 5})
	require.NoError(t, err)
	require.Equal(t, []string{b1, b2}, keysOf(es))
	require.Equal(t, "ready/b/~/", next)
	require.Equal(t, "b/~", queue.ReadyKeyPartition(next))
	es, next, err = b.q.ListReady(b.ctx, queue.ReadyQuery{Shards: []string{"1", "2"}, Limit: 5, StartAfter: next})
	require.NoError(t, err)
	require.Equal(t, []string{c2}, keysOf(es))
	require.Empty(t, next)
}

func keysOf(es []queue.ReadyEntry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.Key
	}
	return out
}

// Types order as their keys do, not as their names: "t-x/" sorts before
// "t/", "t0/" after it. Every type, one shard: the walk hops from each
// type's shards not wanted to the wanted one, past each type's end to the
// next, over junk keys too, and finds every entry of the shard.
func TestListReadyEveryTypeOneShard(t *testing.T) {
	t.Parallel()
	b := newReadyBucket(t)
	keys := b.fill(t, 300, -time.Minute, "t", "t-x", "t.y", "t0", "u")
	for _, junk := range []string{"ready/t/~zz", "ready/t/~zz/x", "ready/t", "ready/t0/3", "ready/u/3/junk"} {
		_, err := b.raw.Put(b.ctx, junk, nil, store.Condition{})
		require.NoError(t, err)
	}
	var want []string
	for _, ks := range keys {
		for _, k := range ks {
			if e, _ := queue.ParseReadyKey(k); e.Shard == "3" {
				want = append(want, k)
			}
		}
	}
	require.NotEmpty(t, want)
	for _, limit := range []int{1, 7, 100} {
		got, sent := b.walk(t, queue.ReadyQuery{Shards: []string{"3"}, Limit: limit})
		require.ElementsMatch(t, want, got, "limit %d", limit)
		if limit == 100 {
			require.Less(t, len(sent), 3*5, "a few LISTs per type, not one per page of its other shards: %d", len(sent))
		}
	}
	// Two of the types, in any order.
	got, _ := b.walk(t, queue.ReadyQuery{Types: []string{"t", "t-x"}, Shards: []string{"3"}, Limit: 10})
	var two []string
	for _, k := range want {
		if p := queue.ReadyKeyPartition(k); p == "t/3" || p == "t-x/3" {
			two = append(two, k)
		}
	}
	require.ElementsMatch(t, two, got)
	require.NotEmpty(t, two)
}

// A partition's task keys each have a section, in rank order, before its
// entries without a key. A section of entries not available yet is
// skipped to its end, not the partition's: the keys after it and the
// entries without a key are still listed, a page that ends inside it goes
// on at the next section, and its depth costs one LIST at most.
func TestListReadyKeySections(t *testing.T) {
	t.Parallel()
	for _, depth := range []int{30, 3000} {
		b := newReadyBucket(t)
		now := b.clock.Now()
		var want, all []string
		put := func(key string, n int, at time.Duration) {
			for i := range n {
				var id uuid.UUID
				for id = queue.NewIDAt(now.Add(-time.Hour + time.Duration(len(all))*time.Millisecond)); queue.ShardOf(id, 1) != "3"; {
					id = queue.NewIDAt(now.Add(-time.Hour + time.Duration(len(all))*time.Millisecond))
				}
				k := queue.ReadyKey(&queue.Task{ID: id, Type: "sync", Shard: "3", Priority: queue.PriorityNormal, AvailableAt: now.Add(at + time.Duration(i)*time.Millisecond), TaskKey: key})
				all = append(all, k)
				if at < 0 {
					want = append(want, k)
				}
			}
		}
		put("a", depth, time.Hour) // not available for an hour
		put("b", 3, -time.Minute)
		put("", 3, -time.Minute)
		slices.Sort(all)
		for _, k := range all {
			_, err := b.raw.Put(b.ctx, k, nil, store.Condition{})
			require.NoError(t, err)
		}
		require.Contains(t, all[0], "/-a/", "the key sections come first")
		got, sent := b.walk(t, queue.ReadyQuery{Types: []string{"sync"}, Shards: []string{"3"}, Limit: 10})
		require.ElementsMatch(t, want, got, "depth %d", depth)
		require.Len(t, sent, 2, "depth %d: one LIST into a's section, one past it: %+v", depth, sent)
		require.Equal(t, "ready/sync/3/-a/~", sent[1].StartAfter)
	}
}
