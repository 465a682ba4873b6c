package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/qo-queue/qo/store"
)

// Lease is what a worker holds while it runs a task: the version it wrote
// (Task), that version's ETag (the If-Match of the next write, so finishing
// needs no GET) and the lease-index key to remove when done.
//
// A Lease also remembers the request id of an operation whose outcome
// stayed unknown (the response and the re-read were both lost): calling
// the same operation again on the same Lease reuses it, so the repeat
// recognises the earlier write if it landed and returns that version
// instead of reporting the lease lost.
type Lease struct {
	Task     *Task
	ETag     string
	LeaseKey string

	pendingOp, pendingID string // the operation in flight and its request id
}

// LeaseGrace is how long a lease outlives its attempt's timeout. The
// worker stops the handler at the timeout (an exec handler gets SIGTERM,
// then SIGKILL after its kill grace) and writes the retry within this
// grace; the monitor expires the lease only after it, so a timed-out
// attempt is normally ended by its own worker, with its own error.
const LeaseGrace = 15 * time.Second

// Claim takes the task of a ready entry for workerID: GET the task, check it
// is pending and available, PUT the lease entry, CAS PUT the task running
// (new lease_id, attempt+1, lease_expires_at = now + timeout + LeaseGrace),
// DELETE the ready entry. Losing the race, or a stale entry (task gone,
// not pending, not yet available), is ErrConflict; stale entries older than
// IndexGrace are deleted. An entry whose type or priority is not the
// task's is refused with ErrEntryMismatch (also ErrConflict) and deleted
// at once, after writing the task's own entry while it is pending; the
// task is never claimed through it. The task object alone decides when it
// is available: an entry ranked earlier than the task's available_at does
// not make it claimable sooner. When the task PUT's outcome stays unknown
// (its response and the re-read were both lost) the error is an
// *UnknownClaimError (it matches ErrOutcomeUnknown): the task may be
// running under this claim, so the caller settles it with ResolveClaim
// (see doc.go, "Leases and liveness").
func (q *Queue) Claim(ctx context.Context, e ReadyEntry, workerID string) (*Lease, error) {
	if err := ValidateWorkerID(workerID); err != nil {
		return nil, fmt.Errorf("claim: %w", err)
	}
	base, etag, err := q.getTask(ctx, e.ID)
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			q.dropStale(ctx, e.Key, e.Modified)
			return nil, fmt.Errorf("claim task %s: %w (stale ready entry: no such task)", e.ID, ErrConflict)
		}
		return nil, fmt.Errorf("claim: %w", err)
	}
	now := q.Now()
	if typ, prio := entryNames(e); (typ != "" && typ != base.Type) || (prio != "" && prio != base.Priority) {
		// Never a key qo wrote for this task (its type and priority never
		// change): written by hand or restored from elsewhere. Claiming
		// it would run the task past its type's pause and the worker's
		// limits.
		q.dropForeign(ctx, e.Key, base, true)
		return nil, fmt.Errorf("claim task %s: %w: %w (the entry names type %q, priority %s; the task is of type %q, priority %s; the entry was removed)",
			e.ID, ErrEntryMismatch, ErrConflict, typ, orNone(string(prio)), base.Type, base.Priority)
	}
	if e.Key != "" && (base.Status != StatusPending || ReadyKey(base) != e.Key) {
		// A leftover entry (the task moved on or has a newer entry).
		q.dropForeign(ctx, e.Key, base, q.staleEntry(e.Modified))
	}
	if base.Status != StatusPending {
		return nil, fmt.Errorf("claim task %s: %w (task is %s)", e.ID, ErrConflict, base.Status)
	}
	if base.AvailableAt.After(now) {
		return nil, fmt.Errorf("claim task %s: %w (not available until %s)", e.ID, ErrConflict, base.AvailableAt.Format(time.RFC3339Nano))
	}
	if expiredAt(base, now) {
		if _, err := q.expire(ctx, base, etag); err != nil {
			return nil, fmt.Errorf("claim task %s: %w", e.ID, err)
		}
		return nil, fmt.Errorf("claim task %s: %w (it expired at %s before it could start)", e.ID, ErrConflict, base.ExpiresAt.Format(time.RFC3339))
	}
	leaseID := uuid.NewString()
	res, err := q.apply(ctx, base, etag, mutation{
		op: "claim",
		change: func(t *Task, now time.Time) (string, error) {
			t.Status = StatusRunning
			t.WorkerID = workerID
			t.LeaseID = leaseID
			t.Attempt++
			t.LeaseExpiresAt = timePtr(now.Add(t.Timeout() + LeaseGrace))
			return EventClaimed, nil
		},
	})
	if err != nil {
		if errors.Is(err, ErrOutcomeUnknown) {
			return nil, &UnknownClaimError{Claim: UnknownClaim{TaskID: base.ID, LeaseID: leaseID}, Err: err}
		}
		return nil, err
	}
	return &Lease{Task: res.next, ETag: res.etag, LeaseKey: LeaseKey(res.next)}, nil
}

// entryNames returns the task type and priority a ready entry names: its
// key's when it has one, else its fields ("" where the caller left one
// out).
func entryNames(e ReadyEntry) (string, Priority) {
	if e.Key != "" {
		if k, err := ParseReadyKey(e.Key); err == nil {
			return k.Type, k.Priority
		}
	}
	return e.Type, e.Priority
}

// dropForeign deletes ready entry key, which names task t (as just read)
// but is not its entry, when now is true. While t is pending its own entry
// is written first (1 PUT): the foreign key may have been its only one (an
// entry written by hand, a partial restore), and a pending task always
// keeps a ready entry. If that write fails the foreign key stays.
func (q *Queue) dropForeign(ctx context.Context, key string, t *Task, now bool) bool {
	if key == "" || !now || (t != nil && t.Status == StatusPending && key == ReadyKey(t)) {
		return false
	}
	if t != nil && t.Status == StatusPending {
		if err := q.putEntries(ctx, []string{ReadyKey(t)}); err != nil {
			q.log.Debug("ready entry not rewritten; the foreign entry stays", "task", t.ID, "key", key, "err", err)
			return false
		}
	}
	q.deleteIndex(ctx, key)
	return true
}

// UnknownClaim is a claim whose outcome stayed unknown: the task it was
// for and the lease_id it wrote, which the task carries if it landed.
type UnknownClaim struct {
	TaskID  uuid.UUID
	LeaseID string
}

// UnknownClaimError is Claim's error when its task PUT's outcome stayed
// unknown. It matches ErrOutcomeUnknown (and the store's error) with
// errors.Is.
type UnknownClaimError struct {
	Claim UnknownClaim
	Err   error
}

func (e *UnknownClaimError) Error() string {
	return fmt.Sprintf("claim task %s: %v", e.Claim.TaskID, e.Err)
}

func (e *UnknownClaimError) Unwrap() error { return e.Err }

// ResolveClaim settles a claim whose outcome stayed unknown (one GET of
// the task): if the claim landed, the task is running under its lease_id
// and the Lease is returned, to run the task or Release it; if it did not,
// ErrConflict (the task is in another state or under another lease, or
// gone). Any other error leaves the outcome unknown: call it again later.
func (q *Queue) ResolveClaim(ctx context.Context, c UnknownClaim) (*Lease, error) {
	cur, etag, err := q.getTask(ctx, c.TaskID)
	if errors.Is(err, ErrNotFound) {
		return nil, fmt.Errorf("resolve claim of task %s: %w (the task is gone)", c.TaskID, ErrConflict)
	}
	if err != nil {
		return nil, fmt.Errorf("resolve claim of task %s: %w", c.TaskID, err)
	}
	if cur.Status != StatusRunning || cur.LeaseID != c.LeaseID {
		return nil, fmt.Errorf("resolve claim of task %s: %w (the claim did not land: the task is %s, lease %q)", c.TaskID, ErrConflict, cur.Status, cur.LeaseID)
	}
	return &Lease{Task: cur, ETag: etag, LeaseKey: LeaseKey(cur)}, nil
}

// dropStale deletes an index entry a reader found stale, once it is older
// than IndexGrace (see staleEntry), and reports whether it did.
func (q *Queue) dropStale(ctx context.Context, key string, modified time.Time) bool {
	if key == "" || !q.staleEntry(modified) {
		return false
	}
	q.deleteIndex(ctx, key)
	return true
}

// expiredAt reports whether a pending task has passed its expires_at.
func expiredAt(t *Task, now time.Time) bool {
	return t.Status == StatusPending && t.ExpiresAt != nil && !t.ExpiresAt.After(now)
}

// expire turns a pending task past its expires_at into expired (its ready
// entry goes with it). A task that is no longer pending and expired is left
// alone (the returned task is then the current version, unchanged).
func (q *Queue) expire(ctx context.Context, base *Task, etag string) (*Task, error) {
	res, err := q.apply(ctx, base, etag, mutation{op: "expire", rebase: true, change: func(t *Task, now time.Time) (string, error) {
		if !expiredAt(t, now) {
			return "", nil
		}
		t.Status = StatusExpired
		t.CompletedAt = timePtr(now)
		return EventExpired, nil
	}})
	if err != nil {
		return nil, err
	}
	return res.next, nil
}

// mutation fences a worker's change on its lease and re-applies it over
// concurrent writes that kept the lease (an operator's cancel request).
func (l *Lease) mutation(op string, change func(*Task, time.Time) (string, error)) mutation {
	if l.pendingOp != op {
		l.pendingOp, l.pendingID = op, newRequestID()
	}
	return mutation{op: op, fence: l.Task.LeaseID, fenceErr: ErrLeaseLost, rebase: true, change: change, requestID: l.pendingID}
}

// settled forgets the request id of an operation that completed.
func (l *Lease) settled() { l.pendingOp, l.pendingID = "", "" }

func checkLease(op string, l *Lease) error {
	if l == nil || l.Task == nil || l.Task.LeaseID == "" {
		return fmt.Errorf("%s: %w: no lease", op, ErrInvalidInput)
	}
	return nil
}

// Extend pushes the lease forward to now + timeout + LeaseGrace (one CAS
// PUT, plus moving the lease-index entry) and updates l. qo's worker never
// extends (its handlers stop at the timeout, and liveness comes from its
// heartbeat); Extend is for callers that hold leases themselves. ErrLeaseLost when the lease
// is gone. When an operator has requested cancellation the extension is
// still written and ErrCancelRequested is returned: stop, then AckCancel.
func (q *Queue) Extend(ctx context.Context, l *Lease) error {
	if err := checkLease("extend", l); err != nil {
		return err
	}
	res, err := q.apply(ctx, l.Task, l.ETag, l.mutation("extend", func(t *Task, now time.Time) (string, error) {
		t.LeaseExpiresAt = timePtr(now.Add(t.Timeout() + LeaseGrace))
		return EventLeaseExtended, nil
	}))
	if err != nil {
		return err
	}
	next := res.next
	l.Task, l.ETag, l.LeaseKey = next, res.etag, LeaseKey(next)
	l.settled()
	if next.CancelRequested {
		return fmt.Errorf("extend task %s: %w (reason: %s)", next.ID, ErrCancelRequested, orNone(next.CancelReason))
	}
	return nil
}

// CheckLease reads the task (one GET, no write) and reports whether l still
// holds it: ErrLeaseLost when the task moved on or another lease took it,
// ErrCancelRequested when an operator asked it to stop (then AckCancel
// once the handler returned). l takes the version read, so the next write
// needs no re-read. qo's worker calls it while a handler runs (see
// worker.Options.LeaseCheckInterval): a lease is never extended.
func (q *Queue) CheckLease(ctx context.Context, l *Lease) error {
	if err := checkLease("check lease", l); err != nil {
		return err
	}
	cur, etag, err := q.getTask(ctx, l.Task.ID)
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			return fmt.Errorf("check lease of task %s: %w (the task is gone)", l.Task.ID, ErrLeaseLost)
		}
		return fmt.Errorf("check lease: %w", err)
	}
	if cur.Status != StatusRunning || cur.LeaseID != l.Task.LeaseID {
		return fmt.Errorf("check lease of task %s: %w (task is %s, lease %s)", cur.ID, ErrLeaseLost, cur.Status, orNone(cur.LeaseID))
	}
	l.Task, l.ETag = cur, etag
	if cur.CancelRequested {
		return fmt.Errorf("check lease of task %s: %w (reason: %s)", cur.ID, ErrCancelRequested, orNone(cur.CancelReason))
	}
	return nil
}

func orNone(s string) string {
	if s == "" {
		return "none given"
	}
	return s
}

// finish applies a lease-ending change (apply moves the indexes).
func (q *Queue) finish(ctx context.Context, l *Lease, op string, change func(*Task, time.Time) (string, error)) (*Task, error) {
	if err := checkLease(op, l); err != nil {
		return nil, err
	}
	res, err := q.apply(ctx, l.Task, l.ETag, l.mutation(op, change))
	if err != nil {
		return nil, err
	}
	l.Task, l.ETag, l.LeaseKey = res.next, res.etag, ""
	l.settled()
	return res.next, nil
}

// Complete records success: one CAS PUT over the ETag of the claim or last
// extension (no GET), then the lease-index DELETE. A concurrent change that
// kept the lease (a cancel request) is re-read and the completion re-applied.
func (q *Queue) Complete(ctx context.Context, l *Lease, output json.RawMessage) (*Task, error) {
	if !isJSONNull(output) && !json.Valid(output) {
		return nil, fmt.Errorf("complete: %w", invalidInput("output is not valid JSON"))
	}
	if int64(len(output)) > q.cfg.EffectiveMaxPayloadBytes() {
		return nil, fmt.Errorf("complete: %w", q.payloadTooLarge("output", len(output)))
	}
	var ref *DataRef
	if !isJSONNull(output) && q.offload(len(output)) {
		if err := checkLease("complete", l); err != nil {
			return nil, err
		}
		// The reference pins the version written (on a versioned bucket), so
		// a late write by a worker that lost its lease cannot replace this
		// output; elsewhere the digest reports such a write.
		var err error
		// Tagged as finished: it belongs to a completed task (or, when the
		// completion is refused, to nobody), so it expires with the task.
		ref, err = q.writeData(ctx, OutputKey(l.Task.Shard, l.Task.ID, l.Task.LeaseID), output, store.Condition{}, q.retentionTags(&Task{Status: StatusCompleted}))
		if err != nil {
			return nil, fmt.Errorf("complete task %s: store output: %w", l.Task.ID, err)
		}
	}
	done, err := q.finish(ctx, l, "complete", func(t *Task, now time.Time) (string, error) {
		t.Status = StatusCompleted
		t.Output, t.OutputRef = nil, nil
		switch {
		case ref != nil:
			r := *ref
			t.OutputRef = &r
		case !isJSONNull(output):
			t.Output = append(json.RawMessage(nil), output...)
		}
		t.CompletedAt = timePtr(now)
		t.LastError = ""
		endLease(t)
		return EventSucceeded, nil
	})
	if ref != nil && (errors.Is(err, ErrLeaseLost) || errors.Is(err, ErrConflict) || errors.Is(err, ErrNotFound)) {
		// Certainly not this attempt's completion: its output belongs to
		// nobody (an unknown outcome keeps it, the task may point at it).
		if derr := q.s.Delete(ctx, ref.Key, store.Condition{}); derr != nil {
			q.log.Warn("could not remove the output of an attempt that lost its lease (retention expires it)", "key", ref.Key, "err", derr)
		}
	}
	return done, err
}

func endLease(t *Task) {
	t.LeaseID = ""
	t.LeaseExpiresAt = nil
}

// toPending clears everything a pending task must not carry.
func toPending(t *Task, availableAt time.Time) {
	t.Status = StatusPending
	t.AvailableAt = availableAt
	clearRun(t)
}

// clearRun empties what a task carries of its last run before it waits or
// runs again: holder, lease, end, output and cancellation.
func clearRun(t *Task) {
	t.WorkerID = ""
	endLease(t)
	t.CompletedAt = nil
	t.Output, t.OutputRef = nil, nil
	t.CancelRequested = false
	t.CancelRequestedAt = nil
	t.CancelReason = ""
}

func toCancelled(t *Task, now time.Time) {
	t.Status = StatusCancelled
	endLease(t)
	t.CompletedAt = timePtr(now)
	t.Output, t.OutputRef = nil, nil
	if !t.CancelRequested {
		t.CancelRequested = true
		t.CancelRequestedAt = timePtr(now)
	}
}

// Retry records a failed attempt. With retries left the task goes back to
// pending with available_at = now + backoff (or now + delay when delay > 0)
// and retry_count+1; otherwise it fails (dead letter). lastErr is kept in
// last_error. A task whose cancellation was requested is cancelled instead.
func (q *Queue) Retry(ctx context.Context, l *Lease, lastErr string, delay time.Duration) (*Task, error) {
	if delay < 0 {
		return nil, fmt.Errorf("retry: %w", invalidInput("negative delay %s", delay))
	}
	return q.finish(ctx, l, "retry", func(t *Task, now time.Time) (string, error) {
		t.LastError = errorText(lastErr)
		return q.retryOrFail(t, now, delay, EventRetried, EventFailed), nil
	})
}

// retryOrFail moves a running task to pending-after-backoff, failed
// (retries exhausted) or cancelled (cancel requested).
func (q *Queue) retryOrFail(t *Task, now time.Time, delay time.Duration, retryEvent, failEvent string) string {
	if t.CancelRequested {
		toCancelled(t, now)
		return EventCancelled
	}
	if t.RetryCount >= t.MaxRetries {
		t.Status = StatusFailed
		t.CompletedAt = timePtr(now)
		t.Output, t.OutputRef = nil, nil
		endLease(t)
		return failEvent
	}
	t.RetryCount++
	if delay <= 0 {
		delay = q.backoff(t.RetryPolicy, t.RetryCount)
	}
	toPending(t, now.Add(delay).Truncate(time.Millisecond))
	return retryEvent
}

func errorText(s string) string {
	if strings.TrimSpace(s) == "" {
		return "(no error message)"
	}
	return s
}

// Fail records a permanent failure: the task goes to failed (dead letter)
// without further retries.
func (q *Queue) Fail(ctx context.Context, l *Lease, lastErr string) (*Task, error) {
	return q.finish(ctx, l, "fail", func(t *Task, now time.Time) (string, error) {
		t.Status = StatusFailed
		t.LastError = errorText(lastErr)
		t.CompletedAt = timePtr(now)
		t.Output, t.OutputRef = nil, nil
		endLease(t)
		return EventFailed, nil
	})
}

// Snooze bounds (see doc.go, "Snooze").
const (
	// MaxSnoozes is how often a task may snooze; the snooze after that
	// fails it (ErrSnoozeLimit in last_error). Replay resets the count.
	MaxSnoozes = 100
	// MaxSnoozeDelay is the longest single snooze; longer ones are refused.
	MaxSnoozeDelay = 24 * time.Hour
)

// ErrSnoozeLimit is the error a task fails with when its handler snoozes it
// more than MaxSnoozes times.
var ErrSnoozeLimit = fmt.Errorf("snoozed %d times, the most a task may (it fails instead of waiting for ever; replay it to start again)", MaxSnoozes)

// Snooze puts a running task back to pending, available after delay,
// without counting a retry: its handler asked to run later (a throttle, a
// resource not ready). snooze_count grows by one; a task that has snoozed
// MaxSnoozes times fails with ErrSnoozeLimit instead, and one whose
// cancellation was requested is cancelled. reason, when given, is kept in
// last_error. delay must be within 0..MaxSnoozeDelay.
func (q *Queue) Snooze(ctx context.Context, l *Lease, delay time.Duration, reason string) (*Task, error) {
	if delay < 0 || delay > MaxSnoozeDelay {
		return nil, fmt.Errorf("snooze: %w", invalidInput("delay %s is outside 0..%s", delay, MaxSnoozeDelay))
	}
	return q.finish(ctx, l, "snooze", func(t *Task, now time.Time) (string, error) {
		if t.CancelRequested {
			toCancelled(t, now)
			return EventCancelled, nil
		}
		if t.SnoozeCount >= MaxSnoozes {
			t.Status = StatusFailed
			t.LastError = ErrSnoozeLimit.Error()
			t.CompletedAt = timePtr(now)
			t.Output, t.OutputRef = nil, nil
			endLease(t)
			return EventFailed, nil
		}
		t.SnoozeCount++
		if reason != "" {
			t.LastError = "snoozed: " + reason
		}
		toPending(t, now.Add(delay).Truncate(time.Millisecond))
		return EventSnoozed, nil
	})
}

// Release gives the task back without counting a retry (graceful shutdown):
// pending, available now. reason, when given, is kept in last_error. A task
// whose cancellation was requested is cancelled instead.
func (q *Queue) Release(ctx context.Context, l *Lease, reason string) (*Task, error) {
	return q.finish(ctx, l, "release", func(t *Task, now time.Time) (string, error) {
		if t.CancelRequested {
			toCancelled(t, now)
			return EventCancelled, nil
		}
		if reason != "" {
			t.LastError = "released: " + reason
		}
		toPending(t, now)
		return EventRequeued, nil
	})
}

// AckCancel confirms a requested cancellation: running -> cancelled.
// Without a cancel request it is an ErrInvalidTransition.
func (q *Queue) AckCancel(ctx context.Context, l *Lease) (*Task, error) {
	return q.finish(ctx, l, "ack cancel", func(t *Task, now time.Time) (string, error) {
		if !t.CancelRequested {
			return "", &TransitionError{From: t.Status, Event: EventCancelled, To: StatusCancelled, Reason: "no cancellation was requested"}
		}
		toCancelled(t, now)
		return EventCancelled, nil
	})
}
