package worker

import (
	"errors"
	"fmt"
	"time"

	"github.com/qo-queue/qo/queue"
)

// Handler results that steer a task. A handler returns nil for success, or
// one of the errors below; any other error counts as retryable.
//
//	nil                 -> completed, the handler's output is stored
//	Retryable(err)      -> retried with the task's backoff (failed once retries are exhausted)
//	any other error     -> same as Retryable
//	Permanent(err)      -> failed now, no more retries
//	Reschedule(d)       -> pending again, available after d; counts as a retry
//	Snooze(d)           -> pending again, available after d; no retry used
//	                       (bounded by queue.MaxSnoozes, then failed)
//	panic               -> recovered, retryable, the panic message is kept as the error

// RetryableError marks a failure worth another attempt.
type RetryableError struct{ Err error }

func (e *RetryableError) Error() string { return "retryable: " + e.Err.Error() }
func (e *RetryableError) Unwrap() error { return e.Err }

// PermanentError marks a failure that no retry can fix (bad input, a
// rejected request): the task fails at once.
type PermanentError struct{ Err error }

func (e *PermanentError) Error() string { return "permanent: " + e.Err.Error() }
func (e *PermanentError) Unwrap() error { return e.Err }

// RescheduleError asks for the task to run again after Delay. It is written
// as a retry (retry_count+1, so MaxRetries bounds how often a task can
// reschedule itself) with available_at = now + Delay instead of the
// backoff.
type RescheduleError struct {
	Delay  time.Duration
	Reason string
}

func (e *RescheduleError) Error() string {
	if e.Reason != "" {
		return fmt.Sprintf("rescheduled in %s: %s", e.Delay, e.Reason)
	}
	return fmt.Sprintf("rescheduled in %s", e.Delay)
}

// Retryable wraps err so the task is retried with backoff.
func Retryable(err error) error {
	if err == nil {
		err = errors.New("handler asked for a retry")
	}
	return &RetryableError{Err: err}
}

// Permanent wraps err so the task fails without further retries.
func Permanent(err error) error {
	if err == nil {
		err = errors.New("handler reported a permanent failure")
	}
	return &PermanentError{Err: err}
}

// Reschedule asks for the task to run again after delay (at least 1 ms).
// It counts as a retry: a task that reschedules itself more than its
// MaxRetries ends failed.
func Reschedule(delay time.Duration) error {
	if delay < time.Millisecond {
		delay = time.Millisecond
	}
	return &RescheduleError{Delay: delay}
}

// SnoozeError asks for the task to run again after Delay without using a
// retry: its snooze_count grows instead, and the task fails once it has
// snoozed queue.MaxSnoozes times (see queue's doc.go, "Snooze").
type SnoozeError struct {
	Delay  time.Duration
	Reason string
}

func (e *SnoozeError) Error() string {
	if e.Reason != "" {
		return fmt.Sprintf("snoozed for %s: %s", e.Delay, e.Reason)
	}
	return fmt.Sprintf("snoozed for %s", e.Delay)
}

// Snooze puts the task back for delay without using a retry (a throttle, a
// resource not ready yet). delay is clamped to 1 ms..queue.MaxSnoozeDelay.
// A task that snoozes more than queue.MaxSnoozes times fails.
func Snooze(delay time.Duration) error {
	return &SnoozeError{Delay: min(max(delay, time.Millisecond), queue.MaxSnoozeDelay)}
}

// IsPermanent reports whether err (or an error it wraps) is permanent.
func IsPermanent(err error) bool {
	var p *PermanentError
	return errors.As(err, &p)
}

// Internal causes for cancelling a handler's context. Handlers see them via
// context.Cause(ctx).
var (
	// ErrLeaseLost: someone else now owns the task (the lease expired and
	// was taken over, or the task was requeued by an operator).
	ErrLeaseLost = errors.New("task lease lost")
	// ErrCancelRequested: an operator asked for the task to be cancelled.
	ErrCancelRequested = errors.New("task cancellation requested")
	// ErrTimedOut: the attempt reached its timeout_seconds; the task is
	// retried (or failed when its retries are exhausted). Handlers see a
	// *TimeoutError, which wraps it.
	ErrTimedOut = errors.New("task timed out")
	// ErrPresumedDead: the worker's heartbeat has not reached the store
	// for its liveness bound (DeadAfter), so the monitor may have given its
	// tasks to other workers; the handlers are stopped and the tasks
	// released where the lease still holds.
	ErrPresumedDead = errors.New("worker heartbeat lost: presumed dead")
	// ErrShuttingDown: the worker is shutting down and the shutdown timeout
	// passed; the task is released for another worker once the handler
	// has returned.
	ErrShuttingDown = errors.New("worker shutting down")
	// errAbort: shutdown without waiting (second signal); exec handlers are
	// killed at once.
	errAbort = fmt.Errorf("%w: aborted", ErrShuttingDown)
)

// TimeoutError is the cause of a handler's cancellation at its task's
// timeout_seconds.
type TimeoutError struct{ After time.Duration }

func (e *TimeoutError) Error() string { return "timed out after " + e.After.String() }
func (e *TimeoutError) Unwrap() error { return ErrTimedOut }
