package queue

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/google/uuid"
)

// Canonical event names. Each write records the event that produced it in
// the task's last_event field, so every object version names its own cause.
const (
	EventEnqueued        = "enqueued"         // submit created the task
	EventClaimed         = "claimed"          // a worker took a lease
	EventLeaseExtended   = "lease_extended"   // the lease holder pushed lease_expires_at forward
	EventSucceeded       = "succeeded"        // the handler finished; output stored
	EventFailed          = "failed"           // permanent failure or retries exhausted (dead letter)
	EventRetried         = "retried"          // a failed attempt scheduled another one after backoff
	EventTimedOut        = "timed_out"        // the lease expired, or its holder died, without a result (monitor)
	EventRequeued        = "requeued"         // put back without counting a retry (shutdown, operator)
	EventSnoozed         = "snoozed"          // the handler put its task back for a while without using a retry
	EventCancelRequested = "cancel_requested" // an operator asked a running task to stop
	EventCancelled       = "cancelled"        // cancelled (waiting or pending at once; running once the worker or monitor acks)
	EventReplayed        = "replayed"         // an operator re-ran a failed, cancelled or expired task
	EventArchived        = "archived"         // hidden from default listings; history kept
	EventExpired         = "expired"          // not started before expires_at
	EventChildAdded      = "child_added"      // a task submitted to run after this one was recorded on it
	EventParentDone      = "parent_done"      // one parent of a waiting task ended; others have not
	EventReleased        = "released"         // every parent of a waiting task ended: it is pending now
)

// Events lists the canonical events in lifecycle order.
var Events = []string{
	EventEnqueued, EventClaimed, EventLeaseExtended, EventSucceeded, EventFailed, EventRetried,
	EventTimedOut, EventRequeued, EventSnoozed, EventCancelRequested, EventCancelled, EventReplayed, EventArchived, EventExpired,
	EventChildAdded, EventParentDone, EventReleased,
}

// Transition is one allowed change: a task in status From may be written
// with event Event, producing status To. From is "" for the creation.
type Transition struct {
	From  Status `json:"from"`
	Event string `json:"event"`
	To    Status `json:"to"`
	By    string `json:"by"`   // the operations that perform it, comma-separated
	Note  string `json:"note"` // when it applies
}

// transitions is THE table. Anything not listed here is refused before any
// write, by ValidateTransition. doc.go's "Allowed transitions" is a copy for
// people to read, kept equal to this one by TestDocTransitionTableMatchesCode;
// OperatorFrom reads the operator actions off the By column.
var transitions = []Transition{
	{"", EventEnqueued, StatusPending, "Submit", "create-only PUT; available_at may lie in the future"},
	{"", EventEnqueued, StatusWaiting, "Submit", "with parents that have not all ended; no ready entry"},
	{StatusWaiting, EventParentDone, StatusWaiting, "ReleaseChildren", "a parent ended (completed, or on_parent_failure run); others have not"},
	{StatusWaiting, EventReleased, StatusPending, "ReleaseChildren", "every parent ended (completed, or on_parent_failure run); available now"},
	{StatusWaiting, EventCancelled, StatusCancelled, "Cancel, ReleaseChildren", "an operator, or a parent that did not complete (on_parent_failure cancel)"},
	{StatusWaiting, EventFailed, StatusFailed, "ReleaseChildren", "a parent did not complete (on_parent_failure fail)"},
	{StatusWaiting, EventChildAdded, StatusWaiting, "Submit", "a task submitted to run after this one"},
	{StatusPending, EventChildAdded, StatusPending, "Submit", "a task submitted to run after this one"},
	{StatusRunning, EventChildAdded, StatusRunning, "Submit", "a task submitted to run after this one; the holder's next write re-applies over it"},
	{StatusFailed, EventChildAdded, StatusFailed, "Submit", "a task submitted to run after this one, so that replaying this one lets it go on"},
	{StatusCancelled, EventChildAdded, StatusCancelled, "Submit", "a task submitted to run after this one, so that replaying this one lets it go on"},
	{StatusExpired, EventChildAdded, StatusExpired, "Submit", "a task submitted to run after this one, so that replaying this one lets it go on"},
	{StatusPending, EventClaimed, StatusRunning, "Claim", "available_at <= now; new lease_id, attempt+1"},
	{StatusRunning, EventLeaseExtended, StatusRunning, "Extend", "lease holder only"},
	{StatusRunning, EventSucceeded, StatusCompleted, "Complete", "lease holder only"},
	{StatusRunning, EventRetried, StatusPending, "Retry", "lease holder; retries left; available_at = now + backoff"},
	{StatusRunning, EventFailed, StatusFailed, "Fail, Retry, Snooze", "lease holder; permanent error, retries exhausted or snoozes exhausted"},
	{StatusRunning, EventTimedOut, StatusPending, "ExpireLease, ReclaimLease", "lease expired or holder dead; retries left; available_at = now + backoff"},
	{StatusRunning, EventTimedOut, StatusFailed, "ExpireLease, ReclaimLease", "lease expired or holder dead; retries exhausted"},
	{StatusRunning, EventRequeued, StatusPending, "Release, RequeueNow", "available now; no retry counted"},
	{StatusPending, EventRequeued, StatusPending, "RequeueNow", "a task in backoff or delayed becomes available now"},
	{StatusRunning, EventSnoozed, StatusPending, "Snooze", "lease holder; snoozes left; available_at = now + delay; no retry counted"},
	{StatusRunning, EventCancelRequested, StatusRunning, "Cancel", "the worker sees it on its next lease check"},
	{StatusPending, EventCancelled, StatusCancelled, "Cancel", "immediately"},
	{StatusRunning, EventCancelled, StatusCancelled, "AckCancel, Retry, Release, Snooze, ExpireLease, ReclaimLease", "only after cancel_requested"},
	{StatusPending, EventExpired, StatusExpired, "Claim, Sweep", "expires_at <= now; no further attempt starts"},
	{StatusFailed, EventReplayed, StatusPending, "Replay", "retry_count reset; available now"},
	{StatusCancelled, EventReplayed, StatusPending, "Replay", "retry_count reset; available now"},
	{StatusExpired, EventReplayed, StatusPending, "Replay", "expires_at cleared; available now"},
	{StatusFailed, EventReplayed, StatusWaiting, "Replay", "parents that did not complete are waited for again (one was replayed)"},
	{StatusCancelled, EventReplayed, StatusWaiting, "Replay", "parents that did not complete are waited for again (one was replayed)"},
	{StatusCompleted, EventArchived, StatusArchived, "Archive", ""},
	{StatusFailed, EventArchived, StatusArchived, "Archive", ""},
	{StatusCancelled, EventArchived, StatusArchived, "Archive", ""},
	{StatusExpired, EventArchived, StatusArchived, "Archive", ""},
}

// Transitions returns a copy of the allowed-transition table.
func Transitions() []Transition {
	return append([]Transition(nil), transitions...)
}

// Allowed reports whether the table lists (from, event, to).
func Allowed(from Status, event string, to Status) bool {
	for _, tr := range transitions {
		if tr.From == from && tr.Event == event && tr.To == to {
			return true
		}
	}
	return false
}

// operatorBy names the operation the table's By column credits with the
// transitions of each operator action.
var operatorBy = map[string]string{OpCancel: "Cancel", OpReplay: "Replay", OpArchive: "Archive", OpRequeue: "RequeueNow"}

// OperatorFrom lists, in the order of Statuses, the statuses operator
// action op (OpCancel, OpReplay, OpArchive, OpRequeue) applies to: the From
// of every transition the table credits to it. ApplyOperator refuses the
// others; the web UI offers an action on exactly these. Nil for an unknown
// action.
func OperatorFrom(op string) []Status {
	by, ok := operatorBy[op]
	if !ok {
		return nil
	}
	var out []Status
	for _, s := range Statuses {
		if slices.ContainsFunc(transitions, func(tr Transition) bool {
			return tr.From == s && slices.Contains(strings.Split(tr.By, ", "), by)
		}) {
			out = append(out, s)
		}
	}
	return out
}

// ValidateTransition is the one validator run before every task write:
// prev is the version being replaced (nil for a create), next the version
// about to be written (next.LastEvent names the event). It checks the table,
// the per-status invariants of next, the rev/attempt rules and that the
// identity fields never change. A refusal is a *TransitionError.
func ValidateTransition(prev, next *Task) error {
	var from Status
	if prev != nil {
		from = prev.Status
	}
	fail := func(format string, args ...any) error {
		return &TransitionError{From: from, Event: next.LastEvent, To: next.Status, Reason: fmt.Sprintf(format, args...)}
	}
	if !Allowed(from, next.LastEvent, next.Status) {
		return fail("not in the transition table")
	}
	if prev == nil {
		if next.Rev != 1 {
			return fail("a new task starts at rev 1, not %d", next.Rev)
		}
		if next.Attempt != 0 || next.RetryCount != 0 {
			return fail("a new task starts with attempt 0 and retry_count 0")
		}
	} else {
		if next.Rev != prev.Rev+1 {
			return fail("rev must go from %d to %d, not %d", prev.Rev, prev.Rev+1, next.Rev)
		}
		wantAttempt := prev.Attempt
		if next.LastEvent == EventClaimed {
			wantAttempt++
		}
		if next.Attempt != wantAttempt {
			return fail("attempt must be %d, not %d (it grows only on claim)", wantAttempt, next.Attempt)
		}
		if next.RequestID == prev.RequestID {
			return fail("every write needs a fresh request_id")
		}
		if next.ID != prev.ID || next.Type != prev.Type || next.Shard != prev.Shard ||
			!next.CreatedAt.Equal(prev.CreatedAt) || next.IdempotencyKey != prev.IdempotencyKey ||
			string(next.Input) != string(prev.Input) || !sameRef(next.InputRef, prev.InputRef) {
			return fail("id, task_type, shard, created_at, input, input_ref and idempotency_key never change")
		}
		if next.OnParentFailure != prev.OnParentFailure || !slices.EqualFunc(next.Parents, prev.Parents, func(a, b Parent) bool { return a.ID == b.ID }) {
			return fail("parents and on_parent_failure never change (only what each parent's end was)")
		}
		if !maps.Equal(next.InputFrom, prev.InputFrom) || !sameWorkflow(next.Workflow, prev.Workflow) {
			return fail("input_from and workflow never change")
		}
		if !maps.Equal(next.Metadata, prev.Metadata) {
			return fail("metadata never changes")
		}
		if !sameUnique(next.Unique, prev.Unique) {
			return fail("unique never changes")
		}
		if len(next.Children) < len(prev.Children) || !slices.Equal(next.Children[:len(prev.Children)], prev.Children) {
			return fail("children are only ever added")
		}
		if next.UpdatedAt.Before(prev.UpdatedAt) {
			return fail("updated_at went backwards")
		}
		if next.LastEvent == EventArchived && next.ArchivedFrom != prev.Status {
			return fail("archived_from must be the status archived from (%s), not %q", prev.Status, next.ArchivedFrom)
		}
	}
	if err := CheckInvariants(next); err != nil {
		return fail("%v", err)
	}
	return nil
}

// CheckInvariants checks the rules every stored task of its status obeys
// (see doc.go, "Per-status invariants").
func CheckInvariants(t *Task) error {
	if err := checkCommonFields(t); err != nil {
		return err
	}
	return checkStatusFields(t)
}

// checkCommonFields checks the rules of the fields every task obeys,
// whatever its status.
func checkCommonFields(t *Task) error {
	switch {
	case t.Format != FormatVersion:
		return fmt.Errorf("format must be %d", FormatVersion)
	case !t.Status.Valid():
		return fmt.Errorf("unknown status %q", t.Status)
	case t.Rev < 1:
		return fmt.Errorf("rev must be >= 1")
	case t.RequestID == "":
		return fmt.Errorf("request_id is empty")
	case t.TimeoutSeconds < 1:
		return fmt.Errorf("timeout_seconds must be >= 1")
	case t.MaxRetries < 0 || t.RetryCount < 0 || t.RetryCount > t.MaxRetries:
		return fmt.Errorf("need 0 <= retry_count (%d) <= max_retries (%d)", t.RetryCount, t.MaxRetries)
	case t.Attempt < 0:
		return fmt.Errorf("attempt is negative")
	case t.SnoozeCount < 0 || t.SnoozeCount > MaxSnoozes:
		return fmt.Errorf("need 0 <= snooze_count (%d) <= %d", t.SnoozeCount, MaxSnoozes)
	case t.CreatedAt.IsZero() || t.UpdatedAt.Before(t.CreatedAt):
		return fmt.Errorf("need created_at <= updated_at")
	case t.Input != nil && !json.Valid(t.Input):
		return fmt.Errorf("input is not valid JSON")
	case t.Output != nil && !json.Valid(t.Output):
		return fmt.Errorf("output is not valid JSON")
	case !shardMatches(t.ID, t.Shard):
		return fmt.Errorf("shard %q is not the shard of id %s (see ShardOf)", t.Shard, t.ID)
	}
	if err := ValidateType(t.Type); err != nil {
		return err
	}
	if err := t.RetryPolicy.Validate(); err != nil {
		return err
	}
	switch {
	case t.Priority != "" && !t.Priority.Valid(): // "" reads as normal
		return fmt.Errorf("unknown priority %q", t.Priority)
	case t.InputRef != nil && t.Input != nil:
		return fmt.Errorf("input and input_ref are exclusive")
	case t.OutputRef != nil && t.Output != nil:
		return fmt.Errorf("output and output_ref are exclusive")
	case t.OutputRef != nil && t.Status != StatusCompleted && t.Status != StatusArchived:
		return fmt.Errorf("%s: output_ref must be empty", t.Status)
	case !validRef(t.InputRef) || !validRef(t.OutputRef):
		return fmt.Errorf("a data reference needs a data/ key, a size and a sha256")
	}
	if err := checkDeps(t); err != nil {
		return err
	}
	switch t.ArchivedFrom {
	case "":
	case StatusCompleted, StatusFailed, StatusCancelled, StatusExpired:
		if t.Status != StatusArchived {
			return fmt.Errorf("%s: archived_from must be empty (it is set only by Archive)", t.Status)
		}
	default:
		return fmt.Errorf("archived_from %q is not how a task ends", t.ArchivedFrom)
	}
	return nil
}

// checkStatusFields checks the fields a task's status sets or leaves
// empty.
func checkStatusFields(t *Task) error {
	noLease := t.LeaseID == "" && t.LeaseExpiresAt == nil
	switch t.Status {
	case StatusWaiting:
		switch {
		case !noLease || t.WorkerID != "":
			return fmt.Errorf("waiting: worker_id, lease_id and lease_expires_at must be empty")
		case t.CompletedAt != nil || t.Output != nil || t.OutputRef != nil:
			return fmt.Errorf("waiting: completed_at and output must be empty")
		case t.CancelRequested:
			return fmt.Errorf("waiting: cancel_requested must be false")
		case allEnded(t) && !blocked(t):
			return fmt.Errorf("waiting: every parent ended, so the task must be released")
		}
	case StatusPending:
		switch {
		case !noLease || t.WorkerID != "":
			return fmt.Errorf("pending: worker_id, lease_id and lease_expires_at must be empty")
		case t.CompletedAt != nil || t.Output != nil:
			return fmt.Errorf("pending: completed_at and output must be empty")
		case t.CancelRequested:
			return fmt.Errorf("pending: cancel_requested must be false")
		case t.AvailableAt.IsZero():
			return fmt.Errorf("pending: available_at must be set")
		}
	case StatusRunning:
		switch {
		case t.WorkerID == "" || t.LeaseID == "" || t.LeaseExpiresAt == nil:
			return fmt.Errorf("running: worker_id, lease_id and lease_expires_at must be set")
		case t.Attempt < 1:
			return fmt.Errorf("running: attempt must be >= 1")
		case t.CompletedAt != nil || t.Output != nil:
			return fmt.Errorf("running: completed_at and output must be empty")
		case t.CancelRequested != (t.CancelRequestedAt != nil):
			return fmt.Errorf("running: cancel_requested and cancel_requested_at go together")
		}
	case StatusCompleted, StatusFailed, StatusCancelled, StatusExpired, StatusArchived:
		return checkEndedFields(t)
	}
	return nil
}

// checkEndedFields checks the fields of a task that ended: no lease, a
// completion time, and what its way of ending sets.
func checkEndedFields(t *Task) error {
	switch {
	case t.LeaseID != "" || t.LeaseExpiresAt != nil:
		return fmt.Errorf("%s: lease_id and lease_expires_at must be empty", t.Status)
	case t.CompletedAt == nil:
		return fmt.Errorf("%s: completed_at must be set", t.Status)
	}
	switch t.Status {
	case StatusCompleted:
		if t.LastError != "" {
			return fmt.Errorf("completed: last_error must be empty")
		}
	case StatusFailed:
		if t.LastError == "" {
			return fmt.Errorf("failed: last_error must say why")
		}
		if t.Output != nil {
			return fmt.Errorf("failed: output must be empty")
		}
	case StatusExpired:
		if t.ExpiresAt == nil || t.CompletedAt.Before(*t.ExpiresAt) || t.Output != nil {
			return fmt.Errorf("expired: expires_at must be set and passed (completed_at >= expires_at), output empty")
		}
	case StatusCancelled:
		if !t.CancelRequested || t.CancelRequestedAt == nil {
			return fmt.Errorf("cancelled: cancel_requested and cancel_requested_at must be set")
		}
		if t.Output != nil {
			return fmt.Errorf("cancelled: output must be empty")
		}
	}
	return nil
}

func sameUnique(a, b *UniqueWindow) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.WhileActive == b.WhileActive && (a.Until == nil) == (b.Until == nil) && (a.Until == nil || a.Until.Equal(*b.Until))
}

func sameRef(a, b *DataRef) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func validRef(r *DataRef) bool {
	return r == nil || strings.HasPrefix(r.Key, DataPrefix) && r.Bytes >= 0 && len(r.SHA256) == 64
}

// checkDeps checks the dependency fields of any task: parents without
// repeats or self, within MaxParents, with known end states and a valid
// on_parent_failure; children without repeats, within MaxChildren.
func checkDeps(t *Task) error {
	if len(t.Parents) == 0 {
		if t.OnParentFailure != "" {
			return fmt.Errorf("on_parent_failure is set on a task without parents")
		}
	} else if _, err := ParseParentFailure(string(t.OnParentFailure)); err != nil || t.OnParentFailure == "" {
		return fmt.Errorf("on_parent_failure %q: want cancel, fail or run", t.OnParentFailure)
	}
	if len(t.Parents) > MaxParents {
		return fmt.Errorf("%d parents (at most %d)", len(t.Parents), MaxParents)
	}
	if len(t.Children) > MaxChildren {
		return fmt.Errorf("%d children (at most %d)", len(t.Children), MaxChildren)
	}
	seen := map[uuid.UUID]bool{t.ID: true}
	for _, p := range t.Parents {
		switch p.Done {
		case "", StatusCompleted, StatusFailed, StatusCancelled, StatusExpired:
		default:
			return fmt.Errorf("parent %s: %q is not how a task ends", p.ID, p.Done)
		}
		if p.ID == uuid.Nil || seen[p.ID] {
			return fmt.Errorf("parent %s is nil, the task itself or listed twice", p.ID)
		}
		seen[p.ID] = true
	}
	for field, src := range t.InputFrom {
		if !slices.ContainsFunc(t.Parents, func(p Parent) bool { return p.ID == src.Parent }) {
			return fmt.Errorf("input_from %q names %s, which is not a parent", field, src.Parent)
		}
	}
	for field := range t.FromParents {
		if _, ok := t.InputFrom[field]; !ok {
			return fmt.Errorf("from_parents %q is not in input_from", field)
		}
	}
	kids := map[uuid.UUID]bool{}
	for _, c := range t.Children {
		if c == uuid.Nil || c == t.ID || kids[c] {
			return fmt.Errorf("child %s is nil, the task itself or listed twice", c)
		}
		kids[c] = true
	}
	return nil
}
