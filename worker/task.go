package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/qo-queue/qo/queue"
)

// Running a task
//
// A lease is never extended. The claim sets lease_expires_at to claim +
// timeout_seconds + queue.LeaseGrace, and while the handler runs the worker
// (see supervise):
//
//   - cancels the handler's context at claim + timeout_seconds with a
//     *TimeoutError (an exec handler gets SIGTERM, then SIGKILL after its
//     kill grace) and writes a retry, or a failure once retries are
//     exhausted, whose last_error reads "timed out after 2s";
//   - re-reads the task every LeaseCheckInterval once the handler has run
//     that long (one GET, no write) and cancels the handler when an
//     operator asked for a cancel (ErrCancelRequested: the cancel is
//     acknowledged once the handler returns) or the lease is gone
//     (ErrLeaseLost: nothing is written);
//   - cancels every handler when its own heartbeat has not reached the
//     store for DeadAfter (ErrPresumedDead: the monitor may have handed
//     the tasks to others; each is released where the lease still holds);
//   - cancels the handlers left at shutdown once ShutdownTimeout passed
//     (ErrShuttingDown: the task is released once the handler returned).
//
// Whatever the cause, the outcome is written only after the handler has
// returned (an exec handler: after its process was reaped), so no other
// worker can start the task while this attempt still runs.
//
// Liveness comes from the heartbeat, not from the lease: the monitor takes
// back the tasks of a worker whose registry entry is older than DeadAfter.
// Every write presents the lease (lease_id fencing plus If-Match), so a
// worker that lost its lease cannot overwrite the task's newer state.

// maxLastError bounds the error text stored in a task.
const maxLastError = 8 << 10

type runningTask struct {
	id      uuid.UUID
	typ     string
	key     string          // the task's key ("" when none)
	ctx     context.Context // the handler's context
	cancel  context.CancelCauseFunc
	expires time.Time // the lease's expiry (a lease is never extended)
	// claimBegan is when the claim was sent; outcome is how the attempt
	// ended, once it is written (for Options.AttemptHook, like written).
	claimBegan time.Time
	outcome    Outcome
	written    *queue.Task // the version the outcome's write made

	mu      writeLock // guards lease and settled; held across each write
	lease   *queue.Lease
	settled bool // the outcome was written (or given up)

	prog taskProgress     // the handler's latest progress report
	now  func() time.Time // the worker's clock
}

var errSettled = errors.New("task outcome already settled")

// writeLock is a running task's lock. It is held across a write's requests
// and the backoff between its tries, so it is a channel rather than a
// sync.Mutex: a goroutine waiting for it is blocked like any other wait of
// the worker, which the fleet simulation (worker/sim, in simulated time)
// can tell from one that runs. The zero value is an unlocked lock.
type writeLock struct {
	once sync.Once
	ch   chan struct{}
}

func (l *writeLock) c() chan struct{} {
	l.once.Do(func() { l.ch = make(chan struct{}, 1) })
	return l.ch
}

func (l *writeLock) Lock()   { l.c() <- struct{}{} }
func (l *writeLock) Unlock() { <-l.c() }

// ctxCause returns why the handler's context was cancelled (nil while it
// is not).
func (rt *runningTask) ctxCause() error {
	if rt.ctx == nil || rt.ctx.Err() == nil {
		return nil
	}
	return context.Cause(rt.ctx)
}

// start runs the task of a won claim; the claim was counted under the
// type and key of its ready entry, claimedAs.
func (w *Worker) start(l *queue.Lease, claimedAs queue.ReadyEntry, claimBegan time.Time) {
	ctx, cancel := context.WithCancelCause(w.handlerBase)
	rt := &runningTask{id: l.Task.ID, typ: l.Task.Type, key: l.Task.TaskKey, lease: l, cancel: cancel, now: w.clock.Now, claimBegan: claimBegan}
	rt.prog.attempt = l.Task.Attempt
	ctx = context.WithValue(ctx, runningTaskKey{}, rt)
	rt.ctx = ctx
	if l.Task.LeaseExpiresAt != nil {
		rt.expires = *l.Task.LeaseExpiresAt
	}
	w.mu.Lock()
	w.running[rt.id] = rt
	// The claim's slot is the task's now, in one step: a count of the
	// slots taken never sees both or neither.
	w.unclaim(claimedAs.Type)
	w.unclaimKey(claimedAs.Type, claimedAs.TaskKey)
	w.mu.Unlock()
	w.tasks.Add(1)
	go w.runTask(ctx, rt)
}

// slotFreed wakes the dispatch loop if it waits for a free slot.
func (w *Worker) slotFreed() {
	select {
	case w.taskDone <- struct{}{}:
	default:
	}
}

func (w *Worker) runTask(ctx context.Context, rt *runningTask) {
	defer func() {
		rt.cancel(nil)
		w.mu.Lock()
		delete(w.running, rt.id)
		w.mu.Unlock()
		w.slotFreed()
		w.tasks.Done()
	}()
	rt.mu.Lock()
	task := rt.lease.Task.Clone()
	rt.mu.Unlock()
	log := w.log.With("task_id", task.ID, "task_type", task.Type, "attempt", task.Attempt)
	log.Debug("task claimed")

	h := w.wrapped[task.Type]
	if hook := w.opts.AttemptHook; hook != nil {
		// The hook sees the attempt from its claim to its recorded end;
		// its context carries what it keeps (a span) to the handler.
		ctx = hook.Claimed(ctx, task.Clone(), rt.claimBegan)
		var herr error
		defer func() {
			rt.mu.Lock()
			last := rt.lease.Task
			if rt.written != nil {
				last = rt.written
			}
			last, outcome := last.Clone(), rt.outcome
			rt.mu.Unlock()
			hook.Finished(ctx, last, outcome, herr)
		}()
		if h != nil {
			next := h
			h = func(ctx context.Context, t *queue.Task) (json.RawMessage, error) {
				out, err := hook.Run(ctx, t, next)
				herr = err
				return out, err
			}
		}
	}
	if h == nil {
		// ListReady filters by type, so this means a bug or a hand-edited
		// index: fail loudly rather than retry forever.
		w.finish(ctx, rt, log, nil, Permanent(fmt.Errorf("worker %s has no handler for task type %q (serves %v)", w.opts.ID, task.Type, w.types)), 0)
		return
	}
	stop := w.supervise(rt, task, log)
	if task.InputRef != nil || len(task.InputFrom) > 0 {
		// An input too large for the task object lives under data/, and
		// values taken from parents' outputs are fields of it: the handler
		// gets it all in Input like any other.
		in, err := w.q.HandlerInput(ctx, task)
		if err != nil {
			var m *queue.MalformedError
			if errors.As(err, &m) || errors.Is(err, queue.ErrNotFound) {
				err = Permanent(err) // retrying cannot bring it back
			}
			stop()
			w.finish(ctx, rt, log, nil, err, 0)
			return
		}
		task.Input = in
	}
	began := time.Now()
	out, err := h(ctx, task)
	took := time.Since(began)
	stop()
	w.finish(ctx, rt, log, out, err, took)
}

// finished tells the observer how an attempt ended and keeps the outcome
// for Options.AttemptHook.
func (w *Worker) finished(rt *runningTask, outcome Outcome, took time.Duration) {
	rt.mu.Lock()
	rt.outcome = outcome
	rt.mu.Unlock()
	w.observer().Finished(rt.typ, outcome, took)
}

func statusOf(t *queue.Task) queue.Status {
	if t == nil {
		return ""
	}
	return t.Status
}

func (w *Worker) logWriteErr(log *slog.Logger, op string, err error) {
	switch {
	case errors.Is(err, errSettled):
	case errors.Is(err, queue.ErrLeaseLost), errors.Is(err, queue.ErrConflict):
		log.Warn("could not "+op+": the lease was lost meanwhile; the result is discarded", "err", err)
	default:
		log.Error("could not "+op+"; the task is released once the store answers again", "err", err)
	}
}

// write settles the task once: it runs fn under the task's lock, retrying
// transient store errors a few times. Later calls return errSettled.
func (w *Worker) write(rt *runningTask, log *slog.Logger, op string, fn func(context.Context, *queue.Lease) (*queue.Task, error)) (*queue.Task, error) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.settled {
		return nil, errSettled
	}
	rt.settled = true
	backoff := 200 * time.Millisecond
	for attempt := 1; ; attempt++ {
		ctx, cancel := context.WithTimeout(w.handlerBase, 30*time.Second)
		t, err := fn(ctx, rt.lease)
		cancel()
		if err == nil && t != nil {
			rt.written = t
		}
		if err == nil || !transient(err) {
			return t, err
		}
		if attempt >= 3 {
			// The task may still run under this lease: release it once
			// the store answers again (see unknownclaim.go).
			w.releaseLater(rt.lease)
			return t, err
		}
		log.Warn(op+" failed, retrying", "attempt", attempt, "err", err)
		time.Sleep(backoff)
		backoff *= 2
	}
}

// transient reports whether a write error may succeed when repeated.
func transient(err error) bool {
	for _, definite := range []error{queue.ErrLeaseLost, queue.ErrConflict, queue.ErrInvalidTransition,
		queue.ErrNotFound, queue.ErrInvalidInput, context.Canceled} {
		if errors.Is(err, definite) {
			return false
		}
	}
	return true
}

// release puts a running task back to pending, available now, without
// counting a retry. A no-op when the outcome was already written.
func (w *Worker) release(rt *runningTask, reason string) {
	log := w.log.With("task_id", rt.id)
	t, err := w.write(rt, log, "release", func(ctx context.Context, l *queue.Lease) (*queue.Task, error) {
		return w.q.Release(ctx, l, reason)
	})
	switch {
	case err == nil:
		log.Info("task released", "status", statusOf(t))
	default:
		w.logWriteErr(log, "release", err)
	}
}

// supervise cancels the handler at its timeout and re-reads the task every
// LeaseCheckInterval (see "Running a task" above), until stop is called.
func (w *Worker) supervise(rt *runningTask, task *queue.Task, log *slog.Logger) (stop func()) {
	timeout := task.Timeout()
	if timeout <= 0 {
		timeout = time.Second
	}
	rt.mu.Lock()
	deadline := attemptDeadline(rt.lease, w.clock.Now().Add(timeout))
	rt.mu.Unlock()
	every := w.opts.LeaseCheckInterval
	stopCh := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		nextCheck := w.clock.Now().Add(every)
		for {
			now := w.clock.Now()
			if !now.Before(deadline) {
				rt.cancel(&TimeoutError{After: timeout})
				return
			}
			// Timers run on the machine's clock while deadlines are on the
			// queue's: wake at least every supervisePoll to look again.
			wait := min(deadline.Sub(now), nextCheck.Sub(now), supervisePoll)
			t := time.NewTimer(max(wait, time.Millisecond))
			select {
			case <-stopCh:
				t.Stop()
				return
			case <-t.C:
			}
			if w.clock.Now().Before(nextCheck) {
				continue
			}
			rt.mu.Lock()
			if rt.settled {
				rt.mu.Unlock()
				return
			}
			ctx, cancel := context.WithTimeout(w.handlerBase, max(every, 5*time.Second))
			err := w.q.CheckLease(ctx, rt.lease)
			cancel()
			rt.mu.Unlock()
			nextCheck = w.clock.Now().Add(every)
			w.observer().LeaseChecked(rt.typ, err == nil || errors.Is(err, queue.ErrCancelRequested) || errors.Is(err, queue.ErrLeaseLost))
			switch {
			case err == nil:
			case errors.Is(err, queue.ErrCancelRequested):
				rt.cancel(ErrCancelRequested)
				// Keep watching the deadline while the handler winds down.
				nextCheck = deadline
			case errors.Is(err, queue.ErrLeaseLost):
				rt.cancel(ErrLeaseLost)
				return
			default:
				log.Warn("re-reading the running task failed; trying again", "err", err)
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			close(stopCh)
			<-done
		})
	}
}

// supervisePoll bounds how long supervise sleeps between looks at the
// queue's clock.
const supervisePoll = 250 * time.Millisecond

// attemptDeadline is when the attempt of l times out: its claim time plus
// timeout_seconds, i.e. the lease's expiry less queue.LeaseGrace.
func attemptDeadline(l *queue.Lease, fallback time.Time) time.Time {
	if l != nil && l.Task != nil && l.Task.LeaseExpiresAt != nil {
		return l.Task.LeaseExpiresAt.Add(-queue.LeaseGrace)
	}
	return fallback
}
