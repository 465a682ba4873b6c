package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/qo-queue/qo/queue"
)

// Running a task
//
// While a handler runs, its lease is extended every timeout/3 (q.Extend
// sets lease_expires_at = now + timeout). The task's timeout is therefore a
// liveness lease, not a cap on run time: a healthy worker keeps a slow
// handler's lease alive, and a dead or partitioned worker's lease lapses
// within one timeout. The handler's context is cancelled, with a cause, when
//
//   - the lease deadline (as extended) passes without a successful renewal
//     (ErrLeaseExpired): the task may already be running elsewhere;
//   - a renewal finds the lease lost (ErrLeaseLost): nothing is written;
//   - a renewal finds a cancel request (ErrCancelRequested): the task is
//     acknowledged as cancelled once the handler returns (or completed, if
//     the handler still returned success);
//   - the worker shuts down and the shutdown timeout passed
//     (ErrShuttingDown): the task is released.
//
// Every write presents the lease (lease_id fencing plus If-Match), so a
// worker that lost its lease cannot overwrite the task's newer state.

// maxLastError bounds the error text stored in a task.
const maxLastError = 8 << 10

type runningTask struct {
	id     uuid.UUID
	typ    string
	ctx    context.Context // the handler's context
	cancel context.CancelCauseFunc

	mu      sync.Mutex // guards lease and settled; held across each write
	lease   *queue.Lease
	settled bool // the outcome was written (or given up)
}

var errSettled = errors.New("task outcome already settled")

// ctxCause returns why the handler's context was cancelled (nil while it
// is not).
func (rt *runningTask) ctxCause() error {
	if rt.ctx == nil || rt.ctx.Err() == nil {
		return nil
	}
	return context.Cause(rt.ctx)
}

func (w *Worker) start(l *queue.Lease) {
	ctx, cancel := context.WithCancelCause(w.handlerBase)
	rt := &runningTask{id: l.Task.ID, typ: l.Task.Type, ctx: ctx, lease: l, cancel: cancel}
	w.mu.Lock()
	w.running[rt.id] = rt
	w.mu.Unlock()
	w.tasks.Add(1)
	go w.runTask(ctx, rt)
}

func (w *Worker) runTask(ctx context.Context, rt *runningTask) {
	defer func() {
		rt.cancel(nil)
		w.mu.Lock()
		delete(w.running, rt.id)
		w.mu.Unlock()
		select {
		case w.taskDone <- struct{}{}:
		default:
		}
		w.tasks.Done()
	}()
	rt.mu.Lock()
	task := rt.lease.Task.Clone()
	rt.mu.Unlock()
	log := w.log.With("task_id", task.ID, "task_type", task.Type, "attempt", task.Attempt)
	log.Debug("task claimed")

	h := w.handlers[task.Type]
	if h == nil {
		// ListReady filters by type, so this means a bug or a hand-edited
		// index: fail loudly rather than retry forever.
		w.finish(ctx, rt, log, nil, Permanent(fmt.Errorf("worker %s has no handler for task type %q (serves %v)", w.opts.ID, task.Type, w.types)), 0)
		return
	}
	stop := w.keepLease(rt, task, log)
	if task.InputRef != nil {
		// An input too large for the task object lives under data/: the
		// handler gets it in Input like any other.
		in, err := w.q.LoadInput(ctx, task)
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
	out, err := callHandler(ctx, h, task)
	took := time.Since(began)
	stop()
	w.finish(ctx, rt, log, out, err, took)
}

// panicError is a recovered handler panic; it is retryable.
type panicError struct {
	value any
	stack []byte
}

func (e *panicError) Error() string { return fmt.Sprintf("handler panicked: %v", e.value) }

func callHandler(ctx context.Context, h HandlerFunc, t *queue.Task) (out json.RawMessage, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, &panicError{value: r, stack: debug.Stack()}
		}
	}()
	return h(ctx, t)
}

// finish writes the task's outcome from the handler result and the reason
// its context was cancelled (if it was).
func (w *Worker) finish(ctx context.Context, rt *runningTask, log *slog.Logger, out json.RawMessage, herr error, took time.Duration) {
	if herr == nil && len(out) > 0 && !json.Valid(out) {
		herr = Permanent(fmt.Errorf("handler returned invalid JSON output (starts with %q)", preview(out, 80)))
		out = nil
	}
	if herr == nil && !utf8.Valid(out) {
		herr = Permanent(fmt.Errorf("handler returned output that is not valid UTF-8 (starts with %q)", preview(out, 80)))
		out = nil
	}
	var pe *panicError
	if errors.As(herr, &pe) {
		log.Error("handler panicked", "panic", fmt.Sprint(pe.value), "stack", string(pe.stack))
	}
	cause := context.Cause(ctx)
	if ctx.Err() == nil {
		cause = nil
	}
	switch {
	case errors.Is(cause, ErrLeaseLost):
		rt.mu.Lock()
		rt.settled = true
		rt.mu.Unlock()
		log.Warn("lease lost while the handler ran; its result is discarded (the task belongs to someone else now)", "took", took.String())
		w.observer().Finished(rt.typ, OutcomeLost, took)
		return
	case errors.Is(cause, ErrShuttingDown):
		w.release(rt, "worker "+w.opts.ID+" shut down before the task finished")
		w.observer().Finished(rt.typ, OutcomeReleased, took)
		return
	case errors.Is(cause, ErrCancelRequested):
		if herr == nil {
			t, err := w.write(rt, log, "complete", func(ctx context.Context, l *queue.Lease) (*queue.Task, error) {
				return w.q.Complete(ctx, l, out)
			})
			if err == nil {
				w.countFinish(1, 0)
				log.Info("task completed (a cancel was requested but the handler had finished)", "took", took.String(), "status", statusOf(t))
				w.observer().Finished(rt.typ, OutcomeCompleted, took)
				return
			}
			if !errors.Is(err, queue.ErrInvalidTransition) {
				w.logWriteErr(log, "complete", err)
				return
			}
			rt.mu.Lock()
			rt.settled = false
			rt.mu.Unlock()
		}
		t, err := w.write(rt, log, "acknowledge cancel", func(ctx context.Context, l *queue.Lease) (*queue.Task, error) {
			return w.q.AckCancel(ctx, l)
		})
		if err != nil {
			w.logWriteErr(log, "acknowledge cancel", err)
			return
		}
		log.Info("task cancelled", "took", took.String(), "status", statusOf(t))
		w.observer().Finished(rt.typ, OutcomeCancelled, took)
		return
	case errors.Is(cause, ErrLeaseExpired) && herr != nil:
		// The handler most likely stopped because of the cancellation.
		// (When it still succeeded, completing is tried below: fencing
		// refuses it if someone else took the task meanwhile.)
		herr = Retryable(fmt.Errorf("timed out: %w", cause))
	}

	if herr == nil {
		t, err := w.write(rt, log, "complete", func(ctx context.Context, l *queue.Lease) (*queue.Task, error) {
			return w.q.Complete(ctx, l, out)
		})
		if err != nil {
			w.logWriteErr(log, "complete", err)
			return
		}
		w.countFinish(1, 0)
		log.Info("task completed", "took", took.String(), "status", statusOf(t))
		w.observer().Finished(rt.typ, OutcomeCompleted, took)
		return
	}

	msg := herr.Error()
	if len(msg) > maxLastError {
		msg = "..." + msg[len(msg)-maxLastError:]
	}
	var (
		rs  *RescheduleError
		t   *queue.Task
		err error
		op  string
	)
	switch {
	case errors.As(herr, &rs):
		op = "reschedule"
		t, err = w.write(rt, log, op, func(ctx context.Context, l *queue.Lease) (*queue.Task, error) {
			return w.q.Retry(ctx, l, msg, rs.Delay)
		})
	case IsPermanent(herr):
		op = "fail"
		t, err = w.write(rt, log, op, func(ctx context.Context, l *queue.Lease) (*queue.Task, error) {
			return w.q.Fail(ctx, l, msg)
		})
	default:
		op = "retry"
		t, err = w.write(rt, log, op, func(ctx context.Context, l *queue.Lease) (*queue.Task, error) {
			return w.q.Retry(ctx, l, msg, 0)
		})
	}
	if err != nil {
		w.logWriteErr(log, op, err)
		return
	}
	if op != "reschedule" {
		w.countFinish(0, 1)
	}
	switch {
	case op == "reschedule":
		w.observer().Finished(rt.typ, OutcomeRescheduled, took)
	case t != nil && t.Status == queue.StatusFailed:
		w.observer().Finished(rt.typ, OutcomeFailed, took)
	default:
		w.observer().Finished(rt.typ, OutcomeRetried, took)
	}
	attrs := []any{"took", took.String(), "err", msg, "status", statusOf(t)}
	if t != nil && t.Status == queue.StatusPending {
		attrs = append(attrs, "retry_count", t.RetryCount, "available_at", t.AvailableAt)
	}
	if op == "reschedule" {
		log.Info("task rescheduled", attrs...)
	} else {
		log.Warn("task attempt failed", attrs...)
	}
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
		log.Error("could not "+op+"; the task comes back when its lease expires", "err", err)
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
		if err == nil || attempt >= 3 || !transient(err) {
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

// keepLease extends the lease every timeout/3 until stop is called, and
// cancels the handler (see the package comment above for the causes).
func (w *Worker) keepLease(rt *runningTask, task *queue.Task, log *slog.Logger) (stop func()) {
	timeout := task.Timeout()
	if timeout <= 0 {
		timeout = time.Second
	}
	every := max(timeout/3, 50*time.Millisecond)
	callTimeout := max(every, 5*time.Second)
	stopCh := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		rt.mu.Lock()
		deadline := leaseDeadline(rt.lease, w.clock.Now().Add(timeout))
		rt.mu.Unlock()
		lastRenew := time.Now()
		for {
			now := w.clock.Now()
			if !now.Before(deadline) {
				rt.cancel(fmt.Errorf("%w: the lease ran out at %s", ErrLeaseExpired, deadline.Format(time.RFC3339Nano)))
				return
			}
			wait := min(every-time.Since(lastRenew), deadline.Sub(now))
			wait = max(wait, 10*time.Millisecond)
			t := time.NewTimer(wait)
			select {
			case <-stopCh:
				t.Stop()
				return
			case <-t.C:
			}
			if !w.clock.Now().Before(deadline) || time.Since(lastRenew) < every {
				continue
			}
			lastRenew = time.Now()
			rt.mu.Lock()
			if rt.settled {
				rt.mu.Unlock()
				return
			}
			ctx, cancel := context.WithTimeout(w.handlerBase, callTimeout)
			err := w.q.Extend(ctx, rt.lease)
			cancel()
			deadline = leaseDeadline(rt.lease, deadline)
			rt.mu.Unlock()
			w.observer().LeaseRenewed(rt.typ, err == nil || errors.Is(err, queue.ErrCancelRequested))
			switch {
			case err == nil:
			case errors.Is(err, queue.ErrCancelRequested):
				// Keep extending while the handler winds down, so the
				// acknowledgement finds the lease valid.
				rt.cancel(ErrCancelRequested)
			case errors.Is(err, queue.ErrLeaseLost):
				rt.cancel(ErrLeaseLost)
				return
			default:
				log.Warn("lease renewal failed; retrying until the lease runs out", "err", err, "lease_expires_at", deadline)
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

func leaseDeadline(l *queue.Lease, fallback time.Time) time.Time {
	if l != nil && l.Task != nil && l.Task.LeaseExpiresAt != nil {
		return *l.Task.LeaseExpiresAt
	}
	return fallback
}
