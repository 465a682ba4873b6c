package queue

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
)

// Cancel cancels a task: a waiting or pending task becomes cancelled at
// once (a waiting task's children then follow their on_parent_failure); a running
// task gets cancel_requested (its worker sees it on the next Extend, stops
// and acks; if the worker is gone, the lease expiry cancels it). Cancelling
// a task whose cancellation is already requested writes nothing. Terminal
// tasks: ErrInvalidTransition.
func (q *Queue) Cancel(ctx context.Context, id uuid.UUID, reason string) (*Task, error) {
	res, err := q.operate(ctx, id, "cancel", operatorChange(OpCancel, reason, ActorFrom(ctx)))
	if err != nil {
		return nil, err
	}
	return res.next, nil
}

// Replay re-runs a failed, cancelled or expired task: pending, available
// now, retry_count reset to 0, cancellation cleared, an expiry that has
// passed cleared (last_error is kept until the next attempt ends). attempt
// keeps counting. A task with parents that did not all complete waits for
// them again instead (see doc.go, "Dependencies"): one that is still
// failed, cancelled or expired decides at once, by on_parent_failure.
func (q *Queue) Replay(ctx context.Context, id uuid.UUID) (*Task, error) {
	res, err := q.operate(ctx, id, "replay", operatorChange(OpReplay, "", ActorFrom(ctx)))
	if err != nil {
		return nil, err
	}
	if res.next.Status == StatusWaiting {
		// Its parents are read again: one still failed cancels it again
		// at once, ended ones are recorded, running ones learn of it.
		next, _, err := q.register(ctx, res.next)
		return next, err
	}
	return res.next, nil
}

// Archive hides a completed, failed, cancelled or expired task from
// default listings. Its object and history stay.
func (q *Queue) Archive(ctx context.Context, id uuid.UUID) (*Task, error) {
	res, err := q.operate(ctx, id, "archive", operatorChange(OpArchive, "", ActorFrom(ctx)))
	if err != nil {
		return nil, err
	}
	return res.next, nil
}

// RequeueNow makes a task runnable now without counting a retry: a running
// task loses its lease (its worker's next write is fenced off with
// ErrLeaseLost) and goes back to pending; a pending task waiting for
// available_at (backoff or delay) becomes available now. A pending task
// that is already available is left alone (no write).
func (q *Queue) RequeueNow(ctx context.Context, id uuid.UUID) (*Task, error) {
	res, err := q.operate(ctx, id, "requeue", operatorChange(OpRequeue, "", ActorFrom(ctx)))
	if err != nil {
		return nil, err
	}
	return res.next, nil
}

// Operator actions, as ApplyOperator names them.
const (
	OpCancel  = "cancel"
	OpReplay  = "replay"
	OpArchive = "archive"
	OpRequeue = "requeue"
)

// operatorRefusal is what an operator action names when the task's
// status does not allow it: the transition it would have made and the
// past participle of its verb.
var operatorRefusal = map[string]struct {
	event string
	to    Status
	done  string
}{
	OpCancel:  {EventCancelled, StatusCancelled, "cancelled"},
	OpReplay:  {EventReplayed, StatusPending, "replayed"},
	OpArchive: {EventArchived, StatusArchived, "archived"},
	OpRequeue: {EventRequeued, StatusPending, "requeued"},
}

// operatorChange is the whole change an operator action makes to a task
// (see the methods above): it refuses a task whose status the action does
// not apply to (the table's, OperatorFrom), applies operatorEffect, and
// records the actor when the task changed. Every client that acts on tasks
// (this package, the web UI) applies exactly these rules; ApplyOperator
// exposes them.
func operatorChange(op, reason, actor string) func(t *Task, now time.Time) (string, error) {
	change := operatorEffect(op, reason)
	r, known := operatorRefusal[op]
	return func(t *Task, now time.Time) (string, error) {
		if known {
			from := OperatorFrom(op)
			if !slices.Contains(from, t.Status) {
				return "", &TransitionError{From: t.Status, Event: r.event, To: r.to, Reason: fmt.Sprintf("only %s tasks can be %s", joinOr(from), r.done)}
			}
		}
		event, err := change(t, now)
		if event != "" {
			t.Actor = actor
		}
		return event, err
	}
}

// joinOr lists statuses as a sentence does: "a, b or c".
func joinOr(ss []Status) string {
	if len(ss) < 2 {
		return joinNames(ss)
	}
	return joinNames(ss[:len(ss)-1]) + " or " + string(ss[len(ss)-1])
}

// operatorEffect is what action op does to a task whose status it applies
// to, unchecked: operatorChange checks the status first.
func operatorEffect(op, reason string) func(t *Task, now time.Time) (string, error) {
	switch op {
	case OpCancel:
		return func(t *Task, now time.Time) (string, error) {
			if t.Status == StatusRunning {
				if t.CancelRequested {
					return "", nil
				}
				t.CancelRequested = true
				t.CancelRequestedAt = timePtr(now)
				t.CancelReason = reason
				return EventCancelRequested, nil
			}
			toCancelled(t, now) // waiting or pending
			t.CancelReason = reason
			return EventCancelled, nil
		}
	case OpReplay:
		return func(t *Task, now time.Time) (string, error) {
			if t.ExpiresAt != nil && !t.ExpiresAt.After(now) {
				t.ExpiresAt = nil
			}
			t.RetryCount, t.SnoozeCount = 0, 0
			// A task with parents waits again for those that did not
			// complete (they may have been replayed since).
			for i := range t.Parents {
				if t.Parents[i].Done != StatusCompleted {
					t.Parents[i].Done = ""
				}
			}
			if !allEnded(t) {
				toWaiting(t)
				return EventReplayed, nil
			}
			toPending(t, now)
			return EventReplayed, nil
		}
	case OpArchive:
		return func(t *Task, now time.Time) (string, error) {
			t.ArchivedFrom = t.Status
			t.Status = StatusArchived
			return EventArchived, nil
		}
	case OpRequeue:
		return func(t *Task, now time.Time) (string, error) {
			if t.Status == StatusPending && !t.AvailableAt.After(now) {
				return "", nil
			}
			toPending(t, now)
			return EventRequeued, nil
		}
	}
	return func(*Task, time.Time) (string, error) {
		return "", invalidInput("unknown operator action %q", op)
	}
}

// ApplyOperator computes, without writing anything, the version an
// operator action op (OpCancel, OpReplay, OpArchive, OpRequeue) makes of
// base at time now: the change, actor, rev+1, requestID, last_event,
// updated_at (never moving back), and the transition validator. A nil task with a nil
// error means the action changes nothing. The web UI implements the same
// function in JavaScript and is tested against this one on shared cases.
func ApplyOperator(base *Task, op, reason, actor string, now time.Time, requestID string) (*Task, error) {
	next := base.Clone()
	next.Actor = ""
	event, err := operatorChange(op, reason, actor)(next, now)
	if err != nil || event == "" {
		return nil, err
	}
	if err := stamp(base, next, event, now, requestID); err != nil {
		return nil, err
	}
	return next, nil
}
