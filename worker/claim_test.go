package worker

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store"
)

// The entries of lost claims: hidden from the walks until one began after
// the claim ended; an entry lost on again waits a backoff that doubles up
// to the cap; a won claim, or an entry the walks no longer show, is
// forgotten.
func TestTriedKeysBackOffLostEntries(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	e := queue.ReadyEntry{Key: "ready/job/0/1~normal~x"}
	shows := func(k *triedKeys, began, now int) bool {
		return len(k.drop([]queue.ReadyEntry{e}, at(began), at(now))) == 1
	}
	var k triedKeys
	k.begin(e.Key)
	require.False(t, shows(&k, 0, 0), "in flight")
	k.end(e.Key, true, at(10), time.Second)
	require.False(t, shows(&k, 5, 10), "a walk that began before the claim ended")
	require.True(t, shows(&k, 11, 11), "first loss: tried again at the next walk")
	var waits []int
	for ended := 20; len(waits) < 6; {
		k.begin(e.Key)
		k.end(e.Key, true, at(ended), time.Second)
		next := ended + 1
		for !shows(&k, next, next) {
			next++
		}
		waits = append(waits, next-ended)
		ended = next
	}
	require.Equal(t, []int{100, 200, 400, 800, 1000, 1000}, waits, "the backoff doubles up to the cap")
	k.begin(e.Key)
	k.end(e.Key, false, at(10_000), time.Second)
	require.True(t, shows(&k, 10_001, 10_001), "a won claim is forgotten at the next walk")
	require.Empty(t, k.m)
	k.begin(e.Key)
	k.end(e.Key, true, at(20_000), time.Second)
	k.begin(e.Key)
	k.end(e.Key, true, at(20_001), time.Second)
	require.Empty(t, k.drop(nil, at(30_000), at(30_000)), "no longer listed")
	require.Empty(t, k.m, "forgotten with its count")
}

// countTaskGets counts the GETs of task objects.
type countTaskGets struct {
	store.Store
	n atomic.Int32
}

func (s *countTaskGets) Get(ctx context.Context, key string) (*store.Object, error) {
	if strings.HasPrefix(key, queue.TasksPrefix) {
		s.n.Add(1)
	}
	return s.Store.Get(ctx, key)
}

// A ready entry left behind by a task that moved on (its delete failed),
// not yet IndexGrace old, so claims leave it: an idle worker tried it
// again after every walk, a LIST and a GET per request latency for up to
// a minute. Its claims now back off: a handful of GETs in 1.5 s (at most
// 6 by the backoff, fewer on a slow machine), where it sent hundreds.
func TestLeftoverEntryIsNotTriedNonstop(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	bd := setupRegistry(t)
	task := bd.submit(t, "job", `{}`)
	key := queue.ReadyKey(task)
	_, err := bd.q.Cancel(ctx, task.ID, "test")
	require.NoError(t, err)
	_, err = bd.s.Put(ctx, key, nil, store.Condition{})
	require.NoError(t, err, "the leftover entry")
	counted := &countTaskGets{Store: bd.s}
	w := New(bd.over(t, counted), bd.opts(t))
	w.Handle("job", blockHandler)
	r := start(t, w)
	time.Sleep(1500 * time.Millisecond) // an observation window: slowness only lowers the count
	r.cancel()
	require.NoError(t, r.stop(t))
	got := counted.n.Load()
	require.Positive(t, got, "the entry was tried")
	require.LessOrEqual(t, got, int32(8), "GETs of the leftover's task in 1.5 s")
}
