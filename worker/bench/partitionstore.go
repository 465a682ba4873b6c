package bench

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store"
)

// partitionOf is the key prefix S3 could split a request's key on: the
// first path element, plus the second where it spreads the keys (a shard,
// or the first characters of a hash); under ready/ the type and the shard
// (queue.ReadyPartition).
func partitionOf(key string) string {
	root, rest, found := strings.Cut(key, "/")
	if !found {
		return key // queue.json, control.json
	}
	if p := queue.ReadyKeyPartition(key); p != "" && strings.Count(key, "/") >= 3 {
		return queue.ReadyPartitionPrefix(p)
	}
	switch root + "/" {
	case queue.TasksPrefix, queue.ReadyPrefix, queue.LeasesPrefix, queue.DataPrefix, queue.IdempotencyPrefix:
		if sub, _, ok := strings.Cut(rest, "/"); ok && sub != "" {
			return root + "/" + sub + "/"
		}
	}
	return root + "/"
}

// simStore counts each request against the partition it lands on, per
// simulated second. A LIST lands where it starts reading (its StartAfter,
// else its prefix).
type simStore struct {
	store.Store
	clock *simClock
	mu    sync.Mutex
	// counts[second][prefix] = {writes, reads}
	counts map[int64]map[string]*[2]int
	total  int
	ops    map[store.Op]int
	roots  map[string]int // requests by first key element
}

// reset forgets what was counted.
func (s *simStore) reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.counts, s.total = map[int64]map[string]*[2]int{}, 0
	s.ops, s.roots = map[store.Op]int{}, map[string]int{}
}

func (s *simStore) op(op store.Op, key string) {
	root, _, _ := strings.Cut(key, "/")
	s.mu.Lock()
	s.ops[op]++
	s.roots[root+"/"]++
	s.mu.Unlock()
}

func (s *simStore) count(key string, write bool) {
	sec := s.clock.Now().Unix()
	s.mu.Lock()
	defer s.mu.Unlock()
	bySec := s.counts[sec]
	if bySec == nil {
		bySec = map[string]*[2]int{}
		s.counts[sec] = bySec
	}
	p := partitionOf(key)
	c := bySec[p]
	if c == nil {
		c = &[2]int{}
		bySec[p] = c
	}
	if write {
		c[0]++
	} else {
		c[1]++
	}
	s.total++
}

func (s *simStore) Get(ctx context.Context, key string) (*store.Object, error) {
	s.op(store.OpGet, key)
	s.count(key, false)
	return s.Store.Get(ctx, key)
}

func (s *simStore) GetVersion(ctx context.Context, key, version string) (*store.Object, error) {
	s.op(store.OpGet, key)
	s.count(key, false)
	return s.Store.GetVersion(ctx, key, version)
}

func (s *simStore) Put(ctx context.Context, key string, body []byte, cond store.Condition) (store.PutResult, error) {
	s.op(store.OpPut, key)
	s.count(key, true)
	return s.Store.Put(ctx, key, body, cond)
}

func (s *simStore) Delete(ctx context.Context, key string, cond store.Condition) error {
	s.op(store.OpDelete, key)
	s.count(key, true)
	return s.Store.Delete(ctx, key, cond)
}

func (s *simStore) List(ctx context.Context, p store.ListParams) (store.ListPage, error) {
	at := p.Prefix
	if p.StartAfter != "" {
		at = p.StartAfter
	}
	s.op(store.OpList, p.Prefix)
	s.count(at, false)
	return s.Store.List(ctx, p)
}

func (s *simStore) ListVersions(ctx context.Context, key string) ([]store.Version, error) {
	s.op(store.OpListVersions, key)
	s.count(key, false)
	return s.Store.ListVersions(ctx, key)
}

// simClock is simulated time, moved by the simulation only.
type simClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *simClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *simClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}
