package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/internal/testutil"
	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/queue/registry"
	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/store/memstore"
	"github.com/qo-queue/qo/store/storetest"
)

func newFakeClock() *storetest.Clock {
	return storetest.NewClock(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC))
}

type bundle struct {
	s     store.Store
	q     *queue.Queue
	clock store.Clock      // nil: the store's clock
	fake  *storetest.Clock // set when the bundle runs on a fake clock
}

type setupOpts struct {
	fake       bool
	shardChars int
}

func setup(t *testing.T, b storetest.Backend, o setupOpts) *bundle {
	t.Helper()
	ctx := context.Background()
	bd := &bundle{}
	qo := queue.Options{Logger: testLogger(t)}
	if o.fake {
		bd.fake = newFakeClock()
		bd.clock = bd.fake
		qo.Clock = bd.fake
	}
	s := b.New(t)
	if o.fake && b.Name == "mem" {
		// The bucket stamps objects on the queue's clock, as a server
		// does on the time the queue syncs to: on the machine's clock
		// every index entry would look years old, and readers drop an
		// entry that old when its task has not been written yet.
		s = memstore.New(memstore.WithClock(bd.fake))
	}
	bd.s = s
	if o.shardChars == 0 {
		o.shardChars = 1
	}
	_, err := queue.Init(ctx, s, o.shardChars)
	require.NoError(t, err)
	bd.q, err = queue.Open(ctx, s, qo)
	require.NoError(t, err)
	return bd
}

// testLogger logs to the test output when QO_TEST_LOG=1, else discards.
func testLogger(t testing.TB) *slog.Logger {
	if os.Getenv("QO_TEST_LOG") == "1" {
		return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

type tWriter struct{ t testing.TB }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}

// opts returns fast test options for a worker on bd.
func (bd *bundle) opts(t *testing.T) Options {
	return Options{
		ID:                 "w-" + uuid.NewString()[:8],
		PollMin:            5 * time.Millisecond,
		PollMax:            50 * time.Millisecond,
		HeartbeatInterval:  50 * time.Millisecond,
		LeaseCheckInterval: 50 * time.Millisecond,
		ShutdownTimeout:    time.Minute,
		HandlerGrace:       5 * time.Second,
		NoMonitor:          true,
		IndexMode:          IndexOnly,
		Clock:              bd.clock,
		Logger:             testLogger(t),
	}
}

func (bd *bundle) submit(t *testing.T, typ string, input string, mod ...func(*queue.SubmitRequest)) *queue.Task {
	t.Helper()
	req := queue.SubmitRequest{Type: typ, Input: json.RawMessage(input), Timeout: 30 * time.Second}
	for _, m := range mod {
		m(&req)
	}
	task, created, err := bd.q.Submit(context.Background(), req)
	require.NoError(t, err)
	require.True(t, created)
	return task
}

func retries(n int) func(*queue.SubmitRequest) {
	return func(r *queue.SubmitRequest) { r.MaxRetries = &n }
}

func timeout(d time.Duration) func(*queue.SubmitRequest) {
	return func(r *queue.SubmitRequest) { r.Timeout = d }
}

func (bd *bundle) get(t *testing.T, id uuid.UUID) *queue.Task {
	t.Helper()
	task, err := bd.q.Get(context.Background(), id)
	require.NoError(t, err)
	return task
}

// waitStatus waits (generously: this is a liveness condition, not a timing
// assertion) until the task reaches status.
func (bd *bundle) waitStatus(t *testing.T, id uuid.UUID, status queue.Status) *queue.Task {
	t.Helper()
	var last *queue.Task
	testutil.Eventually(t, func() bool {
		task, err := bd.q.Get(context.Background(), id)
		if err != nil {
			return false
		}
		last = task
		return task.Status == status
	}, "task %s to become %s", id, status)
	return last
}

// running starts w.Run in the background; stop cancels it and returns
// Run's error once it returned.
type running struct {
	cancel context.CancelFunc
	done   chan error
}

func start(t *testing.T, w *Worker) *running {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- w.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		w.Abort()
		select {
		case <-r.done:
		case <-time.After(60 * time.Second):
			t.Errorf("worker did not stop")
		}
	})
	return r
}

func (r *running) stop(t *testing.T) error {
	t.Helper()
	r.cancel()
	select {
	case err := <-r.done:
		r.done <- err // keep it for the cleanup
		return err
	case <-time.After(60 * time.Second):
		t.Fatal("worker did not stop")
		return nil
	}
}

// finished reports whether Run returned.
func (r *running) finished() bool {
	select {
	case err := <-r.done:
		r.done <- err
		return true
	default:
		return false
	}
}

// waitRegistered waits until the worker's registry entry exists.
func (bd *bundle) waitRegistered(t *testing.T, id string) *queue.WorkerInfo {
	t.Helper()
	var found *queue.WorkerInfo
	testutil.Eventually(t, func() bool {
		ws, err := registry.List(context.Background(), bd.q)
		if err != nil {
			return false
		}
		for _, w := range ws {
			if w.ID == id {
				found = w
				return true
			}
		}
		return false
	}, "worker %s to register", id)
	return found
}

func (bd *bundle) registered(t *testing.T, id string) bool {
	t.Helper()
	ws, err := registry.List(context.Background(), bd.q)
	require.NoError(t, err)
	for _, w := range ws {
		if w.ID == id {
			return true
		}
	}
	return false
}

// blocker is a handler that signals when it starts and returns when
// released (or, with honourCtx, when its context ends).
type blocker struct {
	started   chan *queue.Task
	release   chan struct{}
	honourCtx bool
	result    json.RawMessage
	causes    chan error
}

func newBlocker(honourCtx bool) *blocker {
	return &blocker{started: make(chan *queue.Task, 16), release: make(chan struct{}), honourCtx: honourCtx,
		result: json.RawMessage(`{"ok":true}`), causes: make(chan error, 16)}
}

func (b *blocker) handle(ctx context.Context, t *queue.Task) (json.RawMessage, error) {
	b.started <- t
	if b.honourCtx {
		select {
		case <-b.release:
			return b.result, nil
		case <-ctx.Done():
			b.causes <- context.Cause(ctx)
			return nil, context.Cause(ctx)
		}
	}
	<-b.release
	if ctx.Err() != nil {
		b.causes <- context.Cause(ctx)
	}
	return b.result, nil
}

func (b *blocker) waitStarted(t *testing.T) *queue.Task {
	t.Helper()
	select {
	case task := <-b.started:
		return task
	case <-time.After(60 * time.Second):
		t.Fatal("handler did not start")
		return nil
	}
}

func counts(s store.Store) store.Counts {
	if c, ok := s.(store.Counted); ok {
		return c.Requests().Snapshot()
	}
	return store.Counts{}
}

// blockHandler runs until its task is cancelled.
func blockHandler(ctx context.Context, _ *queue.Task) (json.RawMessage, error) {
	<-ctx.Done()
	return nil, context.Cause(ctx)
}

// runningTypes counts the tasks w runs, by type.
func runningTypes(w *Worker) map[string]int {
	out := map[string]int{}
	for _, rt := range w.snapshotRunning() {
		out[rt.typ]++
	}
	return out
}

// pollSettled polls once and waits for the claims it started to be won
// or lost, so that a test sees their outcome.
func (w *Worker) pollSettled(ctx context.Context, free int) pollResult {
	r := w.poll(ctx, free)
	w.claims.Wait()
	return r
}

// releaseWatch is a store that, before each task write that turns a task
// pending once armed, calls check (which records whatever it finds wrong).
type releaseWatch struct {
	store.Store
	check atomic.Pointer[func()]
}

func (s *releaseWatch) Put(ctx context.Context, key string, body []byte, cond store.Condition) (store.PutResult, error) {
	if f := s.check.Load(); f != nil && strings.HasPrefix(key, queue.TasksPrefix) && bytes.Contains(body, []byte(`"status":"pending"`)) {
		(*f)()
	}
	return s.Store.Put(ctx, key, body, cond)
}

// memBackend is the in-memory backend alone, for tests that need no real
// S3 server.
func memBackend() storetest.Backend {
	return storetest.Backend{Name: "mem", New: func(testing.TB) store.Store { return memstore.New() }}
}
