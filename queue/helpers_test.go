package queue_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/store/storetest"
)

func newFakeClock() *storetest.Clock {
	return storetest.NewClock(time.Now().UTC().Truncate(time.Second))
}

// faultStore wraps a store. When dropPut returns true for a key, the Put is
// committed but the caller gets an error instead of the response (a timeout
// or reset after the request reached the server).
type faultStore struct {
	store.Store
	mu      sync.Mutex
	dropPut func(key string) bool
	failPut func(key string) bool // fail without committing
	failDel func(key string) bool
	failGet func(key string) bool // reads fail (a re-read after a lost response, say)
	slowGet func(key string) bool // read responses take a few milliseconds to arrive (writers that read together race)
	tornGet func(key string) bool // reads fail as s3store fails a read that stays torn
	getGate func(key string)      // called before a read reaches the store (it may hold it)
	sent    atomic.Int64          // bytes of the PUT bodies that reached the store
}

func (f *faultStore) Get(ctx context.Context, key string) (*store.Object, error) {
	f.mu.Lock()
	fail, slow, torn, gate := f.failGet, f.slowGet, f.tornGet, f.getGate
	f.mu.Unlock()
	if gate != nil {
		gate(key)
	}
	if fail != nil && fail(key) {
		return nil, errors.New("injected get failure")
	}
	if torn != nil && torn(key) {
		return nil, fmt.Errorf("get %s: injected: %w", key, store.ErrTornRead)
	}
	obj, err := f.Store.Get(ctx, key)
	if slow != nil && slow(key) {
		time.Sleep(5 * time.Millisecond)
	}
	return obj, err
}

var errLostResponse = errors.New("connection reset by peer (response lost)")

func (f *faultStore) Put(ctx context.Context, key string, body []byte, cond store.Condition) (store.PutResult, error) {
	f.mu.Lock()
	drop, fail := f.dropPut, f.failPut
	f.mu.Unlock()
	if fail != nil && fail(key) {
		if c, ok := f.Store.(store.Counted); ok {
			c.Requests().Add(store.OpPut, true)
		}
		return store.PutResult{}, errors.New("injected put failure")
	}
	f.sent.Add(int64(len(body)))
	res, err := f.Store.Put(ctx, key, body, cond)
	if err == nil && drop != nil && drop(key) {
		return store.PutResult{}, errLostResponse
	}
	return res, err
}

func (f *faultStore) Delete(ctx context.Context, key string, cond store.Condition) error {
	f.mu.Lock()
	fail := f.failDel
	f.mu.Unlock()
	if fail != nil && fail(key) {
		return errors.New("injected delete failure")
	}
	return f.Store.Delete(ctx, key, cond)
}

func (f *faultStore) set(fn func(*faultStore)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}

func (f *faultStore) Requests() *store.Counters { return f.Store.(store.Counted).Requests() }

// bundle is what every test gets from setup.
type bundle struct {
	ctx   context.Context
	q     *queue.Queue
	s     *faultStore
	raw   store.Store
	clock *storetest.Clock
}

func (b *bundle) counts() store.Counts { return b.s.Requests().Snapshot() }

type setupOpts struct {
	shardChars int
	ids        string // seed of reproducible task ids ("": random)
	maxPayload int64  // queue.json's max_payload_bytes (0: the default)
}

// withMaxPayload sets the queue's limit on inputs and outputs.
func withMaxPayload(n int64) func(*setupOpts) { return func(o *setupOpts) { o.maxPayload = n } }

// withIDs gives the queue reproducible task ids (queue.SequentialIDs).
func withIDs(seed string) func(*setupOpts) { return func(o *setupOpts) { o.ids = seed } }

// setup initialises a queue on a fresh store of backend be.
func setup(t *testing.T, be storetest.Backend, opts ...func(*setupOpts)) *bundle {
	t.Helper()
	o := setupOpts{shardChars: 1}
	for _, fn := range opts {
		fn(&o)
	}
	raw := be.New(t)
	fs := &faultStore{Store: raw}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	clock := newFakeClock()
	_, err := queue.InitWithOptions(ctx, raw, queue.InitOptions{ShardChars: o.shardChars, MaxPayloadBytes: o.maxPayload})
	require.NoError(t, err)
	qo := queue.Options{Clock: clock, Rand: rand.New(rand.NewSource(1))}
	if o.ids != "" {
		qo.NewID = queue.SequentialIDs(o.ids)
	}
	q, err := queue.Open(ctx, fs, qo)
	require.NoError(t, err)
	return &bundle{ctx: ctx, q: q, s: fs, raw: raw, clock: clock}
}

func (b *bundle) submit(t *testing.T, typ string, input string) *queue.Task {
	t.Helper()
	task, created, err := b.q.Submit(b.ctx, queue.SubmitRequest{Type: typ, Input: json.RawMessage(input)})
	require.NoError(t, err)
	require.True(t, created)
	return task
}

// expired submits a task that expires in a second, lets the clock pass it
// and has a claim attempt expire it.
func (b *bundle) expired(t *testing.T, typ string) *queue.Task {
	t.Helper()
	task, _, err := b.q.Submit(b.ctx, queue.SubmitRequest{Type: typ, ExpiresAt: b.q.Now().Add(time.Second)})
	require.NoError(t, err)
	b.clock.Advance(time.Second)
	_, err = b.q.Claim(b.ctx, queue.ReadyEntry{ID: task.ID, Key: queue.ReadyKey(task)}, "w1")
	require.ErrorIs(t, err, queue.ErrConflict)
	got, err := b.q.Get(b.ctx, task.ID)
	require.NoError(t, err)
	require.Equal(t, queue.StatusExpired, got.Status)
	return got
}

// readyEntries pages through every ready entry.
func (b *bundle) readyEntries(t *testing.T, qry queue.ReadyQuery) []queue.ReadyEntry {
	t.Helper()
	var all []queue.ReadyEntry
	for {
		es, next, err := b.q.ListReady(b.ctx, qry)
		require.NoError(t, err)
		all = append(all, es...)
		if next == "" {
			return all
		}
		qry.StartAfter = next
	}
}

// claim claims the ready entry of task id.
func (b *bundle) claim(t *testing.T, task *queue.Task, worker string) *queue.Lease {
	t.Helper()
	l, err := b.q.Claim(b.ctx, readyEntryOf(task), worker)
	require.NoError(t, err)
	return l
}

func readyEntryOf(task *queue.Task) queue.ReadyEntry {
	e, err := queue.ParseReadyKey(queue.ReadyKey(task))
	if err != nil {
		panic(err)
	}
	return e
}

// keys lists every current key under prefix.
func (b *bundle) keys(t *testing.T, prefix string) []string {
	t.Helper()
	var out []string
	token := ""
	for {
		p, err := b.raw.List(b.ctx, store.ListParams{Prefix: prefix, Token: token})
		require.NoError(t, err)
		for _, o := range p.Objects {
			out = append(out, o.Key)
		}
		if p.NextToken == "" {
			return out
		}
		token = p.NextToken
	}
}

func (b *bundle) get(t *testing.T, task *queue.Task) *queue.Task {
	t.Helper()
	got, err := b.q.Get(b.ctx, task.ID)
	require.NoError(t, err)
	return got
}

// requireCounts asserts the exact requests made since before.
func requireCounts(t *testing.T, what string, before, after store.Counts, want map[store.Op]int64) {
	t.Helper()
	d := after.Sub(before)
	got := map[store.Op]int64{}
	for _, op := range store.Ops {
		if n := d.Total(op); n != 0 {
			got[op] = n
		}
	}
	require.Equal(t, want, got, "%s: requests %s", what, d)
}

func hasPrefixAny(s string, prefixes ...string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// submitReq submits req and wants a new task.
func (b *bundle) submitReq(t *testing.T, req queue.SubmitRequest) *queue.Task {
	t.Helper()
	task, created, err := b.q.Submit(b.ctx, req)
	require.NoError(t, err)
	require.True(t, created)
	return task
}
