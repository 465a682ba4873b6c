package queue

import (
	"errors"
	"fmt"

	"github.com/google/uuid"
)

// Sentinel errors. Operations wrap them with the operation and the task id,
// so callers branch with errors.Is.
var (
	// ErrNotInitialized: the bucket has no queue.json; run `qo init`.
	ErrNotInitialized = errors.New("queue not initialized (run `qo init` first)")
	// ErrLayoutOutdated: queue.json says the bucket uses an older key
	// layout; `qo migrate` converts it (see doc.go, "Key layout").
	ErrLayoutOutdated = errors.New("this queue uses an older key layout: stop its workers and run `qo migrate` to convert it (no task is moved or lost)")
	// ErrOlderVersionRunning: Migrate found a live process of an older key
	// layout (a registered worker, or on an unconverted bucket the leading
	// monitor) that would keep writing entries no current process reads.
	// Nothing was converted; stop it, or run Migrate with Force.
	ErrOlderVersionRunning = errors.New("a qo of an older key layout is still working on this queue")
	// ErrNotFound: the task (or worker, or named lease) does not exist. Errors
	// carrying it for a missing object also match store.ErrNotFound.
	ErrNotFound = errors.New("not found")
	// ErrConflict: the object changed under the caller (lost a claim race, a
	// stale index entry, a lease held by someone else, a queue initialised
	// differently). Nothing was written.
	ErrConflict = errors.New("conflict")
	// ErrEntryMismatch: Claim was given a ready entry whose task type or
	// priority is not the task's (a key written by hand or restored from
	// elsewhere, never one qo wrote). The entry is removed and the task is
	// not claimed; errors carrying it also match ErrConflict.
	ErrEntryMismatch = errors.New("ready entry does not match its task")
	// ErrLeaseLost: fencing rejected a worker's write because the task no
	// longer carries the worker's lease_id (it timed out, was requeued or
	// finished elsewhere). Nothing was written.
	ErrLeaseLost = errors.New("lease lost")
	// ErrInvalidTransition: the requested change is not in the transition
	// table, or the resulting task would break a per-status invariant.
	// Returned as a *TransitionError; nothing was written.
	ErrInvalidTransition = errors.New("invalid transition")
	// ErrInvalidInput: a request argument is malformed (bad id, type name,
	// JSON, timeout, cursor...). Nothing was written.
	ErrInvalidInput = errors.New("invalid input")
	// ErrIdempotencyMismatch: a submit reused an idempotency key with a
	// different input than the task it already created.
	ErrIdempotencyMismatch = errors.New("idempotency key reused with different input")
	// ErrSubmitRefused: a submit hook (see OnSubmit) refused the submit;
	// nothing was written. The hook's error is wrapped too.
	ErrSubmitRefused = errors.New("submit refused by a hook")
	// ErrCancelRequested: returned by Extend after a successful extension
	// when an operator has asked to cancel the task. The lease is still
	// valid; the worker should stop the handler and call AckCancel.
	ErrCancelRequested = errors.New("cancel requested")
	// ErrOutcomeUnknown: a task write whose response was lost and whose
	// re-read failed too: it may or may not have landed (see doc.go, "rev,
	// attempt and request_id"). A Claim so left returns an
	// *UnknownClaimError, which ResolveClaim settles.
	ErrOutcomeUnknown = errors.New("outcome unknown")
)

// TransitionError reports a change the transition validator refused. It
// matches ErrInvalidTransition with errors.Is.
type TransitionError struct {
	From   Status // "" for a task that does not exist yet
	Event  string
	To     Status
	Reason string // which rule refused it
}

func (e *TransitionError) Error() string {
	from := string(e.From)
	if from == "" {
		from = "(new)"
	}
	return fmt.Sprintf("invalid transition %s -> %s (event %q): %s", from, e.To, e.Event, e.Reason)
}

// Is makes errors.Is(err, ErrInvalidTransition) true.
func (e *TransitionError) Is(target error) bool { return target == ErrInvalidTransition }

// MalformedError reports an object in the bucket that qo cannot decode: bad
// JSON, an unknown format version, wrong field types, or an id that does not
// match its key. Listings skip and report these; single-object reads return
// them (errors.As).
type MalformedError struct {
	Key string
	Err error
}

func (e *MalformedError) Error() string {
	return fmt.Sprintf("malformed object %s: %v", e.Key, e.Err)
}

func (e *MalformedError) Unwrap() error { return e.Err }

// TaskError names the task an error of Follow or Wait is about (a task
// that does not exist, or cannot be read). Its text is the error's own,
// which names the task too.
type TaskError struct {
	ID  uuid.UUID
	Err error
}

func (e *TaskError) Error() string { return e.Err.Error() }

func (e *TaskError) Unwrap() error { return e.Err }

func invalidInput(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidInput, fmt.Sprintf(format, args...))
}
