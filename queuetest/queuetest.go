// Package queuetest is a kit for testing code that submits qo tasks or
// handles them: an in-memory queue on a clock the test controls, a worker
// run until the queue is idle (the clock jumps over delays and retry
// backoffs, so nothing sleeps), typed assertions on what was submitted, and
// tasks completed, failed or expired by hand through the queue's real
// transitions.
//
//	q := queuetest.New(t)
//	signup(ctx, q.Queue, "ada@example.com") // the code under test submits
//	mails := queuetest.Submitted[Mail](t, q, "send_email")
//
//	w := q.NewWorker(worker.Options{})
//	w.Handle("send_email", sendEmail)
//	q.RunUntilIdle(ctx, t, w)
//	require.Equal(t, queue.StatusCompleted, q.Get(t, id).Status)
//
// Everything fails the test (t.Fatalf) on an error, with a message naming
// what went wrong; nothing returns an error to check.
package queuetest

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/store/memstore"
	"github.com/qo-queue/qo/store/storetest"
	"github.com/qo-queue/qo/worker"
)

// T is what the kit needs of a test: *testing.T, *testing.B and
// testing.TB satisfy it.
type T interface {
	Helper()
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
}

// Start is the time a new queue's clock reads.
var Start = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// Clock is the queue's time source (a store.Clock): it stands still until
// the test, or RunUntilIdle, moves it (Advance, AdvanceTo, Set). Safe for
// concurrent use.
type Clock = storetest.Clock

// watchedStore is the memory store with a count of the writes to task
// objects begun and ended, so that RunUntilIdle can tell a consistent look
// at the tasks (no write in flight or begun during it) from a torn one.
type watchedStore struct {
	*memstore.Store
	began, ended atomic.Int64
}

func (s *watchedStore) watch(key string) func() {
	if !strings.HasPrefix(key, queue.TasksPrefix) {
		return func() {}
	}
	s.began.Add(1)
	return func() { s.ended.Add(1) }
}

func (s *watchedStore) Put(ctx context.Context, key string, body []byte, cond store.Condition) (store.PutResult, error) {
	defer s.watch(key)()
	return s.Store.Put(ctx, key, body, cond)
}

func (s *watchedStore) PutTagged(ctx context.Context, key string, body []byte, cond store.Condition, tags []store.Tag) (store.PutResult, error) {
	defer s.watch(key)()
	return s.Store.PutTagged(ctx, key, body, cond, tags)
}

func (s *watchedStore) Delete(ctx context.Context, key string, cond store.Condition) error {
	defer s.watch(key)()
	return s.Store.Delete(ctx, key, cond)
}

// Queue is a queue in memory for one test. Its embedded *queue.Queue is
// the one to hand to the code under test.
type Queue struct {
	*queue.Queue
	Clock *Clock
	Store *memstore.Store

	watched *watchedStore

	mu        sync.Mutex
	submitted []*queue.Task // every task created through Queue, in order
}

// New returns an empty queue (one shard) in memory, its clock at Start.
// Every task submitted through it, by the test, the code under test or a
// handler, is recorded for Submitted and Tasks.
func New(t T) *Queue {
	t.Helper()
	ctx := context.Background()
	clock := storetest.NewClock(Start)
	// The bucket stamps objects on the queue's clock, as a server does on
	// the time the queue syncs to: on the machine's clock every index
	// entry would look years old, and readers drop an entry that old
	// when its task has not been written yet.
	q := &Queue{Clock: clock, Store: memstore.New(memstore.WithClock(clock))}
	q.watched = &watchedStore{Store: q.Store}
	if _, err := queue.Init(ctx, q.Store, 1); err != nil {
		t.Fatalf("queuetest: init the queue: %v", err)
	}
	var err error
	q.Queue, err = queue.Open(ctx, q.watched, queue.Options{Clock: q.Clock})
	if err != nil {
		t.Fatalf("queuetest: open the queue: %v", err)
	}
	q.OnSubmit(queue.SubmitHook{After: func(_ context.Context, _ queue.SubmitRequest, task *queue.Task, created bool, err error) {
		if err == nil && created && task != nil {
			q.mu.Lock()
			q.submitted = append(q.submitted, task.Clone())
			q.mu.Unlock()
		}
	}})
	return q
}

// Tasks returns the tasks submitted through q of type typ ("": every
// type), as they were when created, oldest first. Duplicates of an
// idempotency key are not repeated.
func (q *Queue) Tasks(typ string) []*queue.Task {
	q.mu.Lock()
	defer q.mu.Unlock()
	var out []*queue.Task
	for _, task := range q.submitted {
		if typ == "" || task.Type == typ {
			out = append(out, task.Clone())
		}
	}
	return out
}

// Submitted returns the inputs of the tasks of type typ submitted through
// q, decoded into V, oldest first. It fails the test when an input does not
// decode into V.
func Submitted[V any](t T, q *Queue, typ string) []V {
	t.Helper()
	var out []V
	for _, task := range q.Tasks(typ) {
		in, err := q.LoadPayload(context.Background(), task, queue.InputPayload)
		if err != nil {
			t.Fatalf("queuetest: load the input of task %s: %v", task.ID, err)
		}
		var v V
		if err := json.Unmarshal(in, &v); err != nil {
			t.Fatalf("queuetest: the input of task %s (type %s) does not decode into %T: %v (input %s)", task.ID, typ, v, err, in)
		}
		out = append(out, v)
	}
	return out
}

// Get returns the task id as it is now.
func (q *Queue) Get(t T, id uuid.UUID) *queue.Task {
	t.Helper()
	task, err := q.Queue.Get(context.Background(), id)
	if err != nil {
		t.Fatalf("queuetest: get task %s: %v", id, err)
	}
	return task
}

// NewWorker returns a worker on q with opts, completed with what a test
// wants: q's clock, no monitor, short polls and heartbeats, and no logs
// (unless opts.Logger is set). Register handlers on it and run it with
// RunUntilIdle.
func (q *Queue) NewWorker(opts worker.Options) *worker.Worker {
	if opts.ID == "" {
		opts.ID = "queuetest-" + uuid.NewString()[:8]
	}
	opts.Clock = q.Clock
	opts.NoMonitor = true
	opts.IndexMode = worker.IndexOnly
	if opts.PollMin == 0 {
		opts.PollMin = time.Millisecond
	}
	if opts.PollMax == 0 {
		opts.PollMax = 5 * time.Millisecond
	}
	if opts.HeartbeatInterval == 0 {
		opts.HeartbeatInterval = 5 * time.Millisecond
	}
	if opts.LeaseCheckInterval == 0 {
		opts.LeaseCheckInterval = 10 * time.Millisecond
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return worker.New(q.Queue, opts)
}

// Work runs a worker with handlers (by task type) until q is idle: a
// shorthand for NewWorker, Handle and RunUntilIdle.
func (q *Queue) Work(ctx context.Context, t T, handlers map[string]worker.HandlerFunc) {
	t.Helper()
	w := q.NewWorker(worker.Options{})
	for typ, h := range handlers {
		w.Handle(typ, h)
	}
	q.RunUntilIdle(ctx, t, w)
}

// RunUntilIdle runs w (not started yet; a worker runs once) until no task
// of a type it serves is pending or running, then stops it and returns.
// While nothing runs and every such pending task waits for a later time (a
// delay, a retry's backoff, a reschedule), it moves the clock to the
// earliest of them, so retries happen at once. It never moves the clock
// while a handler runs: a handler that does not return keeps it waiting
// until ctx ends, which fails the test. Tasks of other types, and waiting
// tasks whose parents have not ended, are left as they are. Make w with
// NewWorker: a worker with the default options polls too slowly for a
// test, and one on another clock does not see the moves.
func (q *Queue) RunUntilIdle(ctx context.Context, t T, w *worker.Worker) {
	t.Helper()
	if err := w.Validate(); err != nil {
		t.Fatalf("queuetest: %v", err)
	}
	serves := map[string]bool{}
	for _, typ := range w.Types() {
		serves[typ] = true
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(runCtx) }()
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("queuetest: the worker's Run: %v", err)
		}
	}()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			done <- err
			t.Fatalf("queuetest: the worker stopped before the queue was idle: %v", err)
		case <-ctx.Done():
			t.Fatalf("queuetest: the queue did not become idle: %v (running: %v, pending: %v)",
				context.Cause(ctx), q.ids(t, queue.StatusRunning, serves), q.ids(t, queue.StatusPending, serves))
		case <-tick.C:
		}
		// A look is consistent when no task write was in flight when it
		// began and none began during it; a torn one is taken again.
		ended := q.watched.ended.Load()
		running := q.list(t, queue.StatusRunning, serves)
		pending := q.list(t, queue.StatusPending, serves)
		if q.watched.began.Load() != ended || len(running) > 0 {
			continue
		}
		if len(pending) == 0 {
			return
		}
		now := q.Now()
		next := pending[0].AvailableAt
		for _, task := range pending {
			next = minTime(next, task.AvailableAt)
		}
		if next.After(now) {
			q.Clock.AdvanceTo(next)
		}
	}
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// list returns the tasks with status of the types in serves.
func (q *Queue) list(t T, status queue.Status, serves map[string]bool) []*queue.Task {
	t.Helper()
	var out []*queue.Task
	qry := queue.ListQuery{Status: status, Limit: queue.MaxListLimit}
	for {
		page, err := q.List(context.Background(), qry)
		if err != nil {
			t.Fatalf("queuetest: list %s tasks: %v", status, err)
		}
		for _, task := range page.Tasks {
			if serves[task.Type] {
				out = append(out, task)
			}
		}
		if page.Cursor == "" {
			return out
		}
		qry.Cursor = page.Cursor
	}
}

func (q *Queue) ids(t T, status queue.Status, serves map[string]bool) []string {
	var out []string
	for _, task := range q.list(t, status, serves) {
		out = append(out, task.ID.String()+" ("+task.Type+")")
	}
	return out
}

// handWorker is the worker id of the claims made by hand.
const handWorker = "queuetest-by-hand"

// claim claims pending task id as a worker would. A task that waits for a
// later time fails the test: move the clock first (q.Clock.Advance).
func (q *Queue) claim(t T, id uuid.UUID, what string) *queue.Lease {
	t.Helper()
	task := q.Get(t, id)
	if task.Status != queue.StatusPending {
		t.Fatalf("queuetest: cannot %s task %s: it is %s; only a pending task can be %s by hand", what, id, task.Status, what+"d")
	}
	if now := q.Now(); task.AvailableAt.After(now) {
		t.Fatalf("queuetest: cannot %s task %s: it is not available before %s (the clock reads %s; move it with q.Clock.Advance)",
			what, id, task.AvailableAt.Format(time.RFC3339), now.Format(time.RFC3339))
	}
	e, err := queue.ParseReadyKey(queue.ReadyKey(task))
	if err != nil {
		t.Fatalf("queuetest: %s task %s: %v", what, id, err)
	}
	l, err := q.Claim(context.Background(), e, handWorker)
	if err != nil {
		t.Fatalf("queuetest: claim task %s to %s it: %v", id, what, err)
	}
	return l
}

// Complete claims pending task id and completes it with output (marshalled
// to JSON; nil for none), as a worker whose handler returned output would.
// It returns the completed task.
func (q *Queue) Complete(t T, id uuid.UUID, output any) *queue.Task {
	t.Helper()
	var out json.RawMessage
	if output != nil {
		var err error
		if out, err = json.Marshal(output); err != nil {
			t.Fatalf("queuetest: complete task %s: marshal the output: %v", id, err)
		}
	}
	l := q.claim(t, id, "complete")
	task, err := q.Queue.Complete(context.Background(), l, out)
	if err != nil {
		t.Fatalf("queuetest: complete task %s: %v", id, err)
	}
	return task
}

// Fail claims pending task id and fails it for good with message msg (no
// retry, as a worker does for a worker.Permanent error). It returns the
// failed task.
func (q *Queue) Fail(t T, id uuid.UUID, msg string) *queue.Task {
	t.Helper()
	l := q.claim(t, id, "fail")
	task, err := q.Queue.Fail(context.Background(), l, msg)
	if err != nil {
		t.Fatalf("queuetest: fail task %s: %v", id, err)
	}
	return task
}

// Expire moves the clock to the expires_at of pending task id and lets the
// claim find it expired: the task becomes expired, as when no worker
// started it in time. A task without expires_at fails the test.
func (q *Queue) Expire(t T, id uuid.UUID) *queue.Task {
	t.Helper()
	task := q.Get(t, id)
	if task.Status != queue.StatusPending || task.ExpiresAt == nil {
		t.Fatalf("queuetest: cannot expire task %s: only a pending task with an expires_at can expire (it is %s, expires_at %v; set SubmitRequest.ExpiresAt, or time out an attempt with ExpireLease)",
			id, task.Status, task.ExpiresAt)
	}
	q.Clock.AdvanceTo(*task.ExpiresAt)
	q.Clock.AdvanceTo(task.AvailableAt)
	e, err := queue.ParseReadyKey(queue.ReadyKey(task))
	if err != nil {
		t.Fatalf("queuetest: expire task %s: %v", id, err)
	}
	if _, err := q.Claim(context.Background(), e, handWorker); err == nil {
		t.Fatalf("queuetest: expire task %s: the claim took it instead of expiring it", id)
	}
	task = q.Get(t, id)
	if task.Status != queue.StatusExpired {
		t.Fatalf("queuetest: expire task %s: it is %s, not expired", id, task.Status)
	}
	return task
}

// ExpireLease times out an attempt of task id, as when its worker died
// mid-task: a pending task is claimed first; then the clock moves past the
// lease and the monitor's expiry runs on it. The task is pending again
// after its backoff while retries remain, else failed ("lease expired"). It
// returns the task after the expiry.
func (q *Queue) ExpireLease(t T, id uuid.UUID) *queue.Task {
	t.Helper()
	ctx := context.Background()
	task := q.Get(t, id)
	if task.Status == queue.StatusPending {
		task = q.claim(t, id, "expire the lease of").Task
	}
	if task.Status != queue.StatusRunning || task.LeaseExpiresAt == nil {
		t.Fatalf("queuetest: cannot expire the lease of task %s: it is %s, not running", id, task.Status)
	}
	q.Clock.AdvanceTo(task.LeaseExpiresAt.Add(time.Millisecond))
	after := ""
	for {
		entries, next, err := q.Recovery().ListLeases(ctx, queue.ExpiredLeases, 1000, after)
		if err != nil {
			t.Fatalf("queuetest: list expired leases: %v", err)
		}
		for _, e := range entries {
			if e.ID == id {
				done, err := q.Queue.Recovery().ExpireLease(ctx, e)
				if err != nil {
					t.Fatalf("queuetest: expire the lease of task %s: %v", id, err)
				}
				return done
			}
		}
		if next == "" {
			t.Fatalf("queuetest: the lease of task %s is not among the expired ones at %s", id, q.Now().Format(time.RFC3339))
		}
		after = next
	}
}
