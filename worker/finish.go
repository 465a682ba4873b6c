package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"
	"unicode/utf8"

	"github.com/qo-queue/qo/queue"
)

// Finishing an attempt
//
// decide turns how an attempt ended (the handler's output and error, and
// why its context was cancelled, if it was) into a transition: what to
// write, with what. It reads nothing and writes nothing. apply makes the
// transition's one write (through write, fenced on the lease), then
// counts, logs and reports the outcome. The retry budget is not decided
// here: the queue's Retry and Snooze fail the task once its retries (or
// snoozes) are used up, and outcomeOf reads that from the written task.

// action is the write a transition makes.
type action int

const (
	// actLost writes nothing: the lease is someone else's now.
	actLost action = iota
	// actRelease puts the task back, available now, no retry counted.
	actRelease
	// actComplete records the output.
	actComplete
	// actCompleteCancelled: a cancel was requested but the handler
	// succeeded: complete, or acknowledge the cancel when the task can no
	// longer complete.
	actCompleteCancelled
	// actAckCancel acknowledges an operator's cancel.
	actAckCancel
	// actReschedule is a retry after the handler's own delay.
	actReschedule
	// actSnooze puts the task back for a while without using a retry.
	actSnooze
	// actFail fails the task for good.
	actFail
	// actRetry retries with backoff (or fails once retries are exhausted).
	actRetry
)

// op names the write in logs.
func (a action) op() string {
	switch a {
	case actLost:
		return "discard"
	case actRelease:
		return "release"
	case actComplete, actCompleteCancelled:
		return "complete"
	case actAckCancel:
		return "acknowledge cancel"
	case actReschedule:
		return "reschedule"
	case actSnooze:
		return "snooze"
	case actFail:
		return "fail"
	default:
		return "retry"
	}
}

// transition is what decide chose for an attempt.
type transition struct {
	act    action
	output json.RawMessage // actComplete, actCompleteCancelled
	// lastError is the error text stored on the task (bounded by
	// maxLastError) for reschedule, snooze, fail and retry.
	lastError string
	delay     time.Duration // actReschedule, actSnooze
	// reason: the snooze's reason, or why the task is released.
	reason string
}

// decide is the outcome of an attempt as a transition: out and herr are
// what the handler returned, cause why its context was cancelled (nil when
// it was not), maxOutput the queue's limit on an output, workerID names
// the worker in a release's reason. It does no I/O.
func decide(out json.RawMessage, herr, cause error, maxOutput int64, workerID string) transition {
	out, herr = checkOutput(out, herr, maxOutput)
	switch {
	case errors.Is(cause, ErrLeaseLost):
		return transition{act: actLost}
	case errors.Is(cause, ErrShuttingDown):
		return transition{act: actRelease, reason: "worker " + workerID + " shut down before the task finished"}
	case errors.Is(cause, ErrCancelRequested):
		if herr == nil {
			return transition{act: actCompleteCancelled, output: out}
		}
		return transition{act: actAckCancel}
	case errors.Is(cause, ErrPresumedDead):
		return transition{act: actRelease, reason: "worker " + workerID + " lost its heartbeat while the task ran"}
	case errors.Is(cause, ErrTimedOut):
		// The attempt ended at its timeout, whatever the handler returned
		// after it.
		herr = cause
	}
	if herr == nil {
		return transition{act: actComplete, output: out}
	}
	msg := herr.Error()
	if len(msg) > maxLastError {
		msg = "..." + msg[len(msg)-maxLastError:]
	}
	var (
		rs *RescheduleError
		sz *SnoozeError
	)
	switch {
	case errors.As(herr, &rs):
		return transition{act: actReschedule, lastError: msg, delay: rs.Delay}
	case errors.As(herr, &sz):
		return transition{act: actSnooze, lastError: msg, delay: sz.Delay, reason: sz.Reason}
	case IsPermanent(herr):
		return transition{act: actFail, lastError: msg}
	default:
		return transition{act: actRetry, lastError: msg}
	}
}

// checkOutput turns an output the queue would refuse (not JSON, over
// maxOutput bytes, not UTF-8) of a handler that succeeded into a permanent
// error naming the problem: retrying would not change it.
func checkOutput(out json.RawMessage, herr error, maxOutput int64) (json.RawMessage, error) {
	switch {
	case herr != nil:
		return out, herr
	case len(out) > 0 && !json.Valid(out):
		return nil, Permanent(fmt.Errorf("handler returned invalid JSON output (starts with %q)", preview(out, 80)))
	case int64(len(out)) > maxOutput:
		return nil, Permanent(fmt.Errorf("handler returned %d bytes of output, over the queue's limit of %d bytes on an output (write large results elsewhere, e.g. the bucket, and return a reference; or raise the limit with qo init --max-payload-bytes N)", len(out), maxOutput))
	case !utf8.Valid(out):
		return nil, Permanent(fmt.Errorf("handler returned output that is not valid UTF-8 (starts with %q)", preview(out, 80)))
	}
	return out, nil
}

// outcomeOf is the outcome of a transition whose write returned t, and
// whether it counts as a failed attempt.
func outcomeOf(act action, t *queue.Task) (_ Outcome, failed bool) {
	pending := t != nil && t.Status == queue.StatusPending
	switch {
	case act == actLost:
		return OutcomeLost, false
	case act == actRelease:
		return OutcomeReleased, false
	case act == actComplete, act == actCompleteCancelled:
		return OutcomeCompleted, false
	case act == actAckCancel:
		return OutcomeCancelled, false
	case act == actReschedule:
		return OutcomeRescheduled, false
	case act == actSnooze && pending:
		return OutcomeSnoozed, false
	case t != nil && t.Status == queue.StatusFailed:
		return OutcomeFailed, true
	default:
		return OutcomeRetried, true
	}
}

// finish writes the task's outcome from the handler result and the reason
// its context was cancelled (if it was).
func (w *Worker) finish(ctx context.Context, rt *runningTask, log *slog.Logger, out json.RawMessage, herr error, took time.Duration) {
	var pe *PanicError
	if errors.As(herr, &pe) {
		log.Error("handler panicked", "panic", fmt.Sprint(pe.Value), "stack", string(pe.Stack))
	}
	var cause error
	if ctx.Err() != nil {
		cause = context.Cause(ctx)
	}
	w.apply(rt, log, decide(out, herr, cause, w.q.Config().EffectiveMaxPayloadBytes(), w.opts.ID), took)
}

// apply makes tr's write, then counts, logs and reports the outcome.
func (w *Worker) apply(rt *runningTask, log *slog.Logger, tr transition, took time.Duration) {
	switch tr.act {
	case actLost:
		rt.mu.Lock()
		rt.settled = true
		rt.mu.Unlock()
		log.Warn("lease lost while the handler ran; its result is discarded (the task belongs to someone else now)", "took", took.String())
		w.finished(rt, OutcomeLost, took)
		return
	case actRelease:
		w.release(rt, tr.reason)
		w.finished(rt, OutcomeReleased, took)
		return
	case actCompleteCancelled:
		t, err := w.write(rt, log, tr.act.op(), w.queueWrite(tr))
		if err == nil {
			w.countFinish(1, 0)
			log.Info("task completed (a cancel was requested but the handler had finished)", "took", took.String(), "status", statusOf(t))
			w.finished(rt, OutcomeCompleted, took)
			return
		}
		if !errors.Is(err, queue.ErrInvalidTransition) {
			w.logWriteErr(log, tr.act.op(), err)
			return
		}
		rt.mu.Lock()
		rt.settled = false
		rt.mu.Unlock()
		tr = transition{act: actAckCancel}
	}
	t, err := w.write(rt, log, tr.act.op(), w.queueWrite(tr))
	if err != nil {
		w.logWriteErr(log, tr.act.op(), err)
		return
	}
	outcome, failed := outcomeOf(tr.act, t)
	switch {
	case tr.act == actComplete:
		w.countFinish(1, 0)
	case failed:
		w.countFinish(0, 1)
	}
	if tr.act == actComplete || tr.act == actAckCancel {
		logOutcome(log, tr, outcome, t, took)
		w.finished(rt, outcome, took)
		return
	}
	w.finished(rt, outcome, took)
	logOutcome(log, tr, outcome, t, took)
}

// queueWrite is the queue call that makes tr's write under a lease.
func (w *Worker) queueWrite(tr transition) func(context.Context, *queue.Lease) (*queue.Task, error) {
	return func(ctx context.Context, l *queue.Lease) (*queue.Task, error) {
		switch tr.act {
		case actRelease:
			return w.q.Release(ctx, l, tr.reason)
		case actComplete, actCompleteCancelled:
			return w.q.Complete(ctx, l, tr.output)
		case actAckCancel:
			return w.q.AckCancel(ctx, l)
		case actReschedule:
			return w.q.Retry(ctx, l, tr.lastError, tr.delay)
		case actSnooze:
			return w.q.Snooze(ctx, l, tr.delay, tr.reason)
		case actFail:
			return w.q.Fail(ctx, l, tr.lastError)
		case actRetry:
			return w.q.Retry(ctx, l, tr.lastError, 0)
		}
		return nil, fmt.Errorf("worker: no write for action %d", tr.act)
	}
}

// logOutcome logs a written transition.
func logOutcome(log *slog.Logger, tr transition, outcome Outcome, t *queue.Task, took time.Duration) {
	switch tr.act {
	case actComplete:
		log.Info("task completed", "took", took.String(), "status", statusOf(t))
		return
	case actAckCancel:
		log.Info("task cancelled", "took", took.String(), "status", statusOf(t))
		return
	}
	attrs := []any{"took", took.String(), "err", tr.lastError, "status", statusOf(t)}
	if t != nil && t.Status == queue.StatusPending {
		attrs = append(attrs, "retry_count", t.RetryCount, "available_at", t.AvailableAt)
	}
	if outcome == OutcomeSnoozed {
		attrs = append(attrs, "snooze_count", t.SnoozeCount)
	}
	switch {
	case tr.act == actReschedule:
		log.Info("task rescheduled", attrs...)
	case outcome == OutcomeSnoozed:
		log.Info("task snoozed", attrs...)
	default:
		log.Warn("task attempt failed", attrs...)
	}
}
