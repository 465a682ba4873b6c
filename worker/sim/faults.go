package sim

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store"
)

// errInjected is the error of a request the simulation failed (or whose
// response it lost).
var errInjected = errors.New("sim: injected request failure")

// errDead is what a crashed process's requests return once the run is
// torn down (until then they never return).
var errDead = errors.New("sim: process is dead")

// netState is the network as every process sees it: the lossy and slow
// windows of the timeline.
type netState struct {
	mu    sync.Mutex
	loss  float64       // share of requests that fail or lose their response
	delay time.Duration // extra latency per request
}

// set starts (on) a window of request loss or delay, or ends every
// window of that kind (a window's zero field is left alone).
func (n *netState) set(on bool, loss float64, delay time.Duration) {
	n.mu.Lock()
	defer n.mu.Unlock()
	switch {
	case on:
		n.loss, n.delay = max(n.loss, loss), max(n.delay, delay)
	case loss > 0:
		n.loss = 0
	case delay > 0:
		n.delay = 0
	}
}

func (n *netState) get() (float64, time.Duration) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.loss, n.delay
}

// procStore is the bucket as one process sees it: every request takes a
// little time, some fail or land with their response lost (while the
// network is lossy or the process partitioned), the process's clock is
// off by its skew, and once the process is crashed its requests never
// return (nothing it sends lands) until the run is torn down.
type procStore struct {
	store.Store
	net      *netState
	skew     time.Duration
	teardown <-chan struct{}
	faults   *faultCounts

	seed uint64

	mu          sync.Mutex
	sent        map[string]uint64 // requests sent, by operation and key
	dead        chan struct{}     // closed when the process crashes
	partitioned bool
	// taskGets: when the process last sent a GET of each task object (a
	// claim's first request, sent right after it took its token of a rate
	// limit), by task id; now gives the time.
	taskGets map[uuid.UUID]time.Duration
	now      func() time.Duration
}

func newProcStore(s store.Store, net *netState, skew time.Duration, seed uint64, teardown <-chan struct{}, fc *faultCounts) *procStore {
	return &procStore{
		Store: s, net: net, skew: skew, teardown: teardown, faults: fc,
		seed: seed, sent: map[string]uint64{}, dead: make(chan struct{}),
	}
}

// lastGet returns when the process last sent a GET of the task object
// of id (false: never).
func (p *procStore) lastGet(id uuid.UUID) (time.Duration, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	at, ok := p.taskGets[id]
	return at, ok
}

// crash stops the process dead.
func (p *procStore) crash() {
	p.mu.Lock()
	defer p.mu.Unlock()
	close(p.dead)
}

func (p *procStore) setPartitioned(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.partitioned = on
}

// fault decides what happens to one request: it is sent (after its
// latency), and it fails before landing, lands with its response lost, or
// goes through.
type fault int

const (
	none fault = iota
	failed
	lost
)

// before waits out one request's latency and decides its fault. Both are
// drawn from the process's seed, the request (operation and key) and how
// many such requests the process sent before, not from one stream shared
// by all of its requests: so the goroutines of a process that send at the
// same instant, in whatever order the scheduler runs them, draw the same.
func (p *procStore) before(ctx context.Context, write bool, op, key string) (fault, error) {
	loss, delay := p.net.get()
	req := op + " " + key
	p.mu.Lock()
	dead := p.dead
	part := p.partitioned
	n := p.sent[req]
	p.sent[req] = n + 1
	p.mu.Unlock()
	h := fnv.New64a()
	_, _ = h.Write([]byte(req))
	r := rand.New(rand.NewPCG(p.seed^h.Sum64(), n))
	latency := time.Duration(2+r.IntN(18)) * time.Millisecond
	x := r.Float64()
	y := r.IntN(2)
	select {
	case <-dead:
		<-p.teardown
		return failed, errDead
	default:
	}
	t := time.NewTimer(latency + delay)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		return failed, ctx.Err()
	case <-dead:
		<-p.teardown
		return failed, errDead
	}
	switch {
	case part:
		p.faults.add("partitioned request")
		return failed, nil
	case x < loss && write && y == 0:
		p.faults.add("lost response")
		return lost, nil
	case x < loss:
		p.faults.add("failed request")
		return failed, nil
	}
	return none, nil
}

func (p *procStore) Get(ctx context.Context, key string) (*store.Object, error) {
	if p.now != nil && strings.HasPrefix(key, queue.TasksPrefix) {
		// tasks/{shard}/{id}.json
		if id, err := uuid.Parse(strings.TrimSuffix(path.Base(key), ".json")); err == nil {
			p.mu.Lock()
			if p.taskGets == nil {
				p.taskGets = map[uuid.UUID]time.Duration{}
			}
			p.taskGets[id] = p.now()
			p.mu.Unlock()
		}
	}
	if f, err := p.before(ctx, false, "get", key); err != nil {
		return nil, err
	} else if f != none {
		return nil, fmt.Errorf("get %s: %w", key, errInjected)
	}
	return p.Store.Get(ctx, key)
}

func (p *procStore) GetVersion(ctx context.Context, key, versionID string) (*store.Object, error) {
	if f, err := p.before(ctx, false, "getversion", key+"?"+versionID); err != nil {
		return nil, err
	} else if f != none {
		return nil, fmt.Errorf("get %s: %w", key, errInjected)
	}
	return p.Store.GetVersion(ctx, key, versionID)
}

func (p *procStore) Put(ctx context.Context, key string, body []byte, cond store.Condition) (store.PutResult, error) {
	f, err := p.before(ctx, true, "put", key)
	if err != nil {
		return store.PutResult{}, err
	}
	switch f {
	case failed:
		return store.PutResult{}, fmt.Errorf("put %s: %w", key, errInjected)
	case lost:
		if _, err := p.Store.Put(ctx, key, body, cond); err != nil {
			return store.PutResult{}, err
		}
		return store.PutResult{}, fmt.Errorf("put %s: response lost: %w", key, errInjected)
	}
	return p.Store.Put(ctx, key, body, cond)
}

func (p *procStore) Delete(ctx context.Context, key string, cond store.Condition) error {
	f, err := p.before(ctx, true, "delete", key)
	if err != nil {
		return err
	}
	switch f {
	case failed:
		return fmt.Errorf("delete %s: %w", key, errInjected)
	case lost:
		if err := p.Store.Delete(ctx, key, cond); err != nil {
			return err
		}
		return fmt.Errorf("delete %s: response lost: %w", key, errInjected)
	}
	return p.Store.Delete(ctx, key, cond)
}

func (p *procStore) List(ctx context.Context, lp store.ListParams) (store.ListPage, error) {
	if f, err := p.before(ctx, false, "list", lp.Prefix+"|"+lp.StartAfter+"|"+lp.Token); err != nil {
		return store.ListPage{}, err
	} else if f != none {
		return store.ListPage{}, fmt.Errorf("list %s: %w", lp.Prefix, errInjected)
	}
	return p.Store.List(ctx, lp)
}

func (p *procStore) ListVersions(ctx context.Context, key string) ([]store.Version, error) {
	if f, err := p.before(ctx, false, "versions", key); err != nil {
		return nil, err
	} else if f != none {
		return nil, fmt.Errorf("list versions %s: %w", key, errInjected)
	}
	return p.Store.ListVersions(ctx, key)
}

// Now is the server's time as this process estimates it: off by its skew.
func (p *procStore) Now(ctx context.Context) (time.Time, error) {
	t, err := p.Store.Now(ctx)
	return t.Add(p.skew), err
}

var _ store.Store = (*procStore)(nil)

// faultCounts counts the faults injected, by kind.
type faultCounts struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *faultCounts) add(kind string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[kind]++
}

func (c *faultCounts) snapshot() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int, len(c.n))
	for k, v := range c.n {
		out[k] = v
	}
	return out
}
