package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
)

// Parent is one task a task runs after (see doc.go, "Dependencies").
type Parent struct {
	ID uuid.UUID `json:"id"`
	// Done is "" until the parent's end is recorded on the child, then the
	// status it ended in: completed, failed, cancelled or expired.
	Done Status `json:"done,omitempty"`
}

// ParentFailure says what a waiting task does when a parent ends without
// completing (failed, cancelled, expired).
type ParentFailure string

// The choices of ParentFailure.
const (
	ParentFailureCancel ParentFailure = "cancel" // the child is cancelled, naming the parent (default)
	ParentFailureFail   ParentFailure = "fail"   // the child fails (a dead letter), naming the parent
	ParentFailureRun    ParentFailure = "run"    // the child runs once every parent has ended, however
)

// ParentFailures lists the choices.
var ParentFailures = []ParentFailure{ParentFailureCancel, ParentFailureFail, ParentFailureRun}

// ParseParentFailure parses a choice; "" is the default, cancel.
func ParseParentFailure(s string) (ParentFailure, error) {
	if s == "" {
		return ParentFailureCancel, nil
	}
	for _, p := range ParentFailures {
		if string(p) == s {
			return p, nil
		}
	}
	return "", invalidInput("on parent failure %q: want cancel, fail or run", s)
}

// Limits of the dependency graph: a parent's object grows by one id per
// child (37 bytes), a child's by one entry per parent, and every write of
// either carries the whole list.
const (
	MaxParents  = 1000
	MaxChildren = 10000
)

// edgeParallelism bounds the reads and writes of one task's parents or
// children in flight at once.
const edgeParallelism = 16

// ended returns the status a task ended in, for its children: its own
// when completed, failed, cancelled or expired; for an archived task the
// one it was archived from (see archivedStatus). ok is false while the
// task may still run.
func ended(t *Task) (Status, bool) {
	switch t.Status {
	case StatusCompleted, StatusFailed, StatusCancelled, StatusExpired:
		return t.Status, true
	case StatusArchived:
		return archivedStatus(t), true
	}
	return "", false
}

// archivedStatus is the status archived task t ended in: its
// archived_from, or for an object archived before that field existed
// what the fields archiving kept suggest (an expiry and no attempt:
// expired; last_error without an output or a cancel request: failed; a
// cancel request without an output: cancelled; else completed). That
// guess is wrong for a task that completed with a null output while a
// cancel request was pending: resolveArchived reads the history instead.
func archivedStatus(t *Task) Status {
	if t.ArchivedFrom != "" {
		return t.ArchivedFrom
	}
	noOutput := t.Output == nil && t.OutputRef == nil
	switch {
	case t.ExpiresAt != nil && t.Attempt == 0 && noOutput:
		return StatusExpired
	case t.LastError != "" && noOutput && !t.CancelRequested:
		return StatusFailed
	case t.CancelRequested && noOutput:
		return StatusCancelled
	}
	return StatusCompleted
}

// resolveArchived returns t, or, for a task archived before archived_from
// existed, a copy of it with archived_from taken from its history: the
// version it was archived from (1 LIST-VERSIONS and a GET per version back
// to it, 2 unless versions were lost). Without that version (versioning
// off, or expired by retention) t is returned and its fields decide (see
// archivedStatus). What a parent ended in, and Wait's outcome, come from
// here.
func (q *Queue) resolveArchived(ctx context.Context, t *Task) *Task {
	if t == nil || t.Status != StatusArchived || t.ArchivedFrom != "" {
		return t
	}
	from := q.archivedFrom(ctx, t)
	if from == nil {
		return t
	}
	c := t.Clone()
	c.ArchivedFrom = from.Status
	return c
}

// checkParents validates a submit's parent list: ids, no repeats, the
// limit. The parents' existence is checked by reading them (readParents).
func checkParents(after []uuid.UUID) error {
	if len(after) > MaxParents {
		return invalidInput("%d parents (at most %d): fan in through intermediate tasks", len(after), MaxParents)
	}
	seen := make(map[uuid.UUID]bool, len(after))
	for _, id := range after {
		if id == uuid.Nil {
			return invalidInput("the nil UUID is not a parent task id")
		}
		if seen[id] {
			return invalidInput("parent %s is listed twice", id)
		}
		seen[id] = true
	}
	return nil
}

// readParents reads every parent (one GET each, in parallel) and returns
// the child's parent list with the outcome of those already ended. An
// unknown id is ErrInvalidInput: the parent must exist in this queue.
func (q *Queue) readParents(ctx context.Context, after []uuid.UUID) ([]Parent, error) {
	out := make([]Parent, len(after))
	errs := make([]error, len(after))
	forEach(len(after), edgeParallelism, func(i int) {
		p, _, err := q.getTask(ctx, after[i])
		switch {
		case errors.Is(err, ErrNotFound):
			errs[i] = invalidInput("parent %s: no such task in this queue (a parent must be submitted first, to the same bucket)", after[i])
		case err != nil:
			errs[i] = fmt.Errorf("read parent %s: %w", after[i], err)
		default:
			out[i].ID = p.ID
			if st, ok := ended(q.resolveArchived(ctx, p)); ok {
				out[i].Done = st
			}
		}
	})
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

// resolveWaiting decides what a waiting task becomes now that its parent
// list says what it says: cancelled or failed when a parent ended without
// completing (unless on_parent_failure is run), pending (released) when
// every parent has ended, else still waiting. recorded says whether the
// change recorded a parent's end (a parent_done write when nothing else
// happens).
func resolveWaiting(t *Task, now time.Time, recorded bool) string {
	if blocked(t) {
		reason := parentsReason(t)
		if t.OnParentFailure == ParentFailureFail {
			return failWaiting(t, now, reason)
		}
		toCancelled(t, now)
		t.CancelReason = reason
		return EventCancelled
	}
	if allEnded(t) {
		t.Status = StatusPending
		if t.AvailableAt.Before(now) {
			t.AvailableAt = now
		}
		return EventReleased
	}
	if recorded {
		return EventParentDone
	}
	return ""
}

// failWaiting makes waiting task t a dead letter for reason (a parent that
// did not complete, or a value it cannot take from one).
func failWaiting(t *Task, now time.Time, reason string) string {
	t.Status = StatusFailed
	t.CompletedAt = timePtr(now)
	t.LastError = reason
	return EventFailed
}

// maxNamedParents bounds the parents a reason names (a task may have
// MaxParents).
const maxNamedParents = 10

// parentsReason is the cancel reason or last error of a child that ended
// because parents did not complete: every one recorded so ("parent ID
// failed", "parents ID1 failed, ID2 cancelled"), the first maxNamedParents
// of them and how many more. It is computed from the child's parent list
// alone, so rewait recognises it.
func parentsReason(t *Task) string {
	bad := badParents(t)
	if len(bad) == 1 {
		return fmt.Sprintf("parent %s %s", bad[0].ID, bad[0].Done)
	}
	var b strings.Builder
	b.WriteString("parents ")
	for i, p := range bad {
		if i == maxNamedParents {
			fmt.Fprintf(&b, " and %d more", len(bad)-i)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %s", p.ID, p.Done)
	}
	return b.String()
}

// badParents lists the parents of t recorded as ended without completing.
func badParents(t *Task) []Parent {
	var out []Parent
	for _, p := range t.Parents {
		if endedBadly(p.Done) {
			out = append(out, p)
		}
	}
	return out
}

// endedBadly reports whether a parent's recorded end is one that did not
// complete (failed, cancelled, expired).
func endedBadly(done Status) bool { return done != "" && done != StatusCompleted }

// endedByParents reports whether t (cancelled or failed) ended because
// parents did not complete: its reason is the one resolveWaiting gave it,
// naming every parent recorded so, or, written before reasons named them
// all, the first of them.
func endedByParents(t *Task) bool {
	if t.OnParentFailure == ParentFailureRun {
		return false
	}
	bad := badParents(t)
	if len(bad) == 0 {
		return false
	}
	reason := t.CancelReason
	if t.Status == StatusFailed {
		reason = t.LastError
	}
	return reason == parentsReason(t) || reason == fmt.Sprintf("parent %s %s", bad[0].ID, bad[0].Done)
}

// record writes the ends of some parents (ends holds each parent as read
// when it had ended) on a waiting child, with the values the child takes
// from their outputs (input_from), then resolves it (see resolveWaiting):
// the one write that releases, cancels or fails it, or notes a parent's
// end. Nothing happens to a child that is no longer waiting or already
// knows these ends. base, when not nil, is the child as just read (with
// its etag), which saves reading it again.
func (q *Queue) record(ctx context.Context, child uuid.UUID, base *Task, etag string, ends map[uuid.UUID]*Task) (*Task, error) {
	outputs := map[uuid.UUID]json.RawMessage{} // offloaded outputs, read once across rebases
	res, err := q.operateEdgeFrom(ctx, child, base, etag, "release", func(t *Task, now time.Time) (string, error) {
		if t.Status != StatusWaiting {
			return "", nil
		}
		recorded := false
		problem := ""
		for i := range t.Parents {
			p, ok := ends[t.Parents[i].ID]
			if !ok || t.Parents[i].Done != "" {
				continue
			}
			st, _ := ended(p)
			t.Parents[i].Done = st
			recorded = true
			if st != StatusCompleted {
				continue
			}
			bad, err := q.takeFrom(ctx, t, p, outputs)
			if err != nil {
				return "", err
			}
			if problem == "" {
				problem = bad
			}
		}
		if problem != "" {
			return failWaiting(t, now, problem), nil
		}
		return resolveWaiting(t, now, recorded), nil
	})
	if err != nil {
		return nil, err
	}
	return res.next, nil
}

// register tells each parent of a waiting child that has not ended about
// the child (a child_added write on the parent, so that whoever ends the
// parent releases the child), then records the parents found ended. It is
// what Submit does after creating a waiting task, what a repeated submit
// with the same idempotency key and the sweeper redo when a submit
// stopped half-way, and what Replay does for a task that waits again.
// Every step is idempotent. told counts the parents that learned of the
// child.
func (q *Queue) register(ctx context.Context, child *Task) (_ *Task, told int, _ error) {
	if child.Status != StatusWaiting {
		return child, 0, nil
	}
	var mu sync.Mutex
	ends := map[uuid.UUID]*Task{}
	// A parent that ended without completing learns of the child too
	// (unless the child runs anyway): replaying it lets the child go on.
	replayable := child.OnParentFailure != ParentFailureRun
	var open []uuid.UUID
	for _, p := range child.Parents {
		if p.Done == "" || (replayable && endedBadly(p.Done)) {
			open = append(open, p.ID)
		}
	}
	// Ends other parents left as edge objects (1 LIST): those parents
	// are not read again. One that ended badly is still told of the
	// child when a replay of it would bring the child back.
	var edgeEnds map[uuid.UUID]Status
	var edgeKeys []string
	if len(open) > 1 && hasEdges(child) {
		es, err := q.listEdges(ctx, child.ID)
		if err != nil {
			return child, 0, fmt.Errorf("register task %s: %w", child.ID, err)
		}
		edgeEnds, edgeKeys = es.unrecorded(child), es.keys
		open = slices.DeleteFunc(open, func(id uuid.UUID) bool {
			st, ok := edgeEnds[id]
			return ok && !(replayable && endedBadly(st))
		})
	}
	errs := make([]error, len(open))
	forEach(len(open), edgeParallelism, func(i int) {
		res, err := q.operateEdge(ctx, open[i], "add child", func(t *Task, now time.Time) (string, error) {
			st, done := ended(t)
			if done {
				mu.Lock()
				ends[t.ID] = t.Clone()
				mu.Unlock()
				if !replayable || st == StatusCompleted || t.Status == StatusArchived {
					return "", nil // never replayed: nothing to tell it
				}
			}
			if slices.Contains(t.Children, child.ID) {
				return "", nil
			}
			if done && len(t.Children) >= MaxChildren {
				return "", nil // its end decides the child now; a replay of it cannot bring it back
			}
			if len(t.Children) >= MaxChildren {
				return "", invalidInput("task %s already has %d children (at most %d)", t.ID, len(t.Children), MaxChildren)
			}
			t.Children = append(t.Children, child.ID)
			return EventChildAdded, nil
		})
		if err != nil {
			errs[i] = fmt.Errorf("register task %s as a child of %s: %w", child.ID, open[i], err)
			return
		}
		if res.next != res.prev { // a child_added write landed (not a no-op)
			mu.Lock()
			told++
			mu.Unlock()
		}
	})
	if err := errors.Join(errs...); err != nil {
		return child, told, err
	}
	for id, p := range ends {
		ends[id] = q.resolveArchived(ctx, p)
	}
	if len(edgeEnds) > 0 {
		for id := range ends {
			delete(edgeEnds, id)
		}
		more, err := q.endTasks(ctx, child, edgeEnds, nil)
		if err != nil {
			return child, told, fmt.Errorf("register task %s: %w", child.ID, err)
		}
		for id, p := range more {
			ends[id] = p
		}
	}
	if len(ends) == 0 && !allEnded(child) {
		return child, told, nil
	}
	next, err := q.recordEnds(ctx, child.ID, nil, "", ends)
	if err == nil && next != nil && next.Status != StatusWaiting {
		q.dropEdges(ctx, edgeKeys) // recorded on the child now
	}
	return next, told, err
}

// operateEdge is operate for the writes an edge makes on the task at its
// other end: a parent's end recorded on a child, a child_added write on a
// parent. Many of them may write one task at once (the parents of a
// fan-in ending together, children submitted together after one parent),
// more than maxRebases of them; each rebase that loses lost to another of
// them that landed, so the write starts over rather than leave its edge
// to the sweeper, until ctx ends.
func (q *Queue) operateEdge(ctx context.Context, id uuid.UUID, op string, change func(next *Task, now time.Time) (string, error)) (applied, error) {
	return q.operateEdgeFrom(ctx, id, nil, "", op, change)
}

// operateEdgeFrom is operateEdge starting from base (with its etag) when
// not nil.
func (q *Queue) operateEdgeFrom(ctx context.Context, id uuid.UUID, base *Task, etag, op string, change func(next *Task, now time.Time) (string, error)) (applied, error) {
	if base != nil {
		res, err := q.apply(ctx, base, etag, mutation{op: op, rebase: true, change: change})
		if !errors.Is(err, ErrConflict) || ctx.Err() != nil {
			return res, err
		}
	}
	for {
		res, err := q.operate(ctx, id, op, change)
		if !errors.Is(err, ErrConflict) || ctx.Err() != nil {
			return res, err
		}
	}
}

// blocked reports whether a parent decides t's fate: one ended without
// completing, and t's on_parent_failure does not let it run anyway.
func blocked(t *Task) bool {
	return t.OnParentFailure != ParentFailureRun && slices.ContainsFunc(t.Parents, func(p Parent) bool { return endedBadly(p.Done) })
}

// allEnded reports whether every parent of t has ended (true without
// parents).
func allEnded(t *Task) bool { return t.ParentsLeft() == 0 }

// ParentsLeft counts the parents of t whose end is not recorded yet.
func (t *Task) ParentsLeft() int {
	n := 0
	for _, p := range t.Parents {
		if p.Done == "" {
			n++
		}
	}
	return n
}

// WaitingFor says what a waiting task waits for, e.g. "2 of 3 parents".
func (t *Task) WaitingFor() string {
	return fmt.Sprintf("%d of %d parents", t.ParentsLeft(), len(t.Parents))
}

// afterLanded does what a landed write of a task owes to its children:
// when the task has just ended, its end is told to each child (see
// endOnChild, which may release it); when it was replayed, the children
// that ended because of it wait for it again. A task with more than
// backgroundChildren children tells them in the background, so that its
// write returns in the time of one write whatever its fan-out. Failures
// are logged, not returned: the write itself succeeded, and the sweeper's
// pass over waiting tasks (SweepWaiting) finishes what is left.
func (q *Queue) afterLanded(ctx context.Context, prev, next *Task) {
	if prev == nil || next == nil || len(next.Children) == 0 || prev == next {
		return
	}
	_, done := ended(next)
	_, wasDone := ended(prev)
	var fn func(context.Context, uuid.UUID) error
	switch {
	case done && !wasDone:
		parent := q.resolveArchived(ctx, next)
		fn = func(ctx context.Context, child uuid.UUID) error { return q.endOnChild(ctx, parent, child) }
	case next.LastEvent == EventReplayed:
		fn = func(ctx context.Context, child uuid.UUID) error { return q.rewait(ctx, child, next.ID) }
	default:
		return
	}
	if len(next.Children) <= backgroundChildren {
		q.tellChildren(ctx, next, fn)
		return
	}
	ctx = context.WithoutCancel(ctx)
	q.bg.run(func() { q.tellChildren(ctx, next, fn) })
}

// tellChildren runs fn for every child of parent, edgeParallelism at a
// time, for at most tellTimeout.
func (q *Queue) tellChildren(ctx context.Context, parent *Task, fn func(context.Context, uuid.UUID) error) {
	// Not the caller's context alone: a worker that finished its handler
	// should not leave children waiting because its own deadline passed.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), tellTimeout(len(parent.Children)))
	defer cancel()
	forEach(len(parent.Children), edgeParallelism, func(i int) {
		if err := fn(ctx, parent.Children[i]); err != nil {
			q.log.Warn("a child of a finished task was not updated (the sweeper will)", "parent", parent.ID, "child", parent.Children[i], "err", err)
		}
	})
}

// rewait puts a child that ended because parents did not complete (its
// reason names them: see endedByParents) back to waiting, now that parent,
// one of them, was replayed. While another parent recorded as ended badly
// still is (read: 1 GET each), the child is left as it is: that parent's
// replay brings it back. Otherwise every parent not recorded as completed
// is waited for again and the child registers anew (see register), which
// records the parents that ended meanwhile and decides at once if one
// ended badly again. A child that ended for another reason is left alone.
func (q *Queue) rewait(ctx context.Context, child, parent uuid.UUID) error {
	base, etag, err := q.getTask(ctx, child)
	if err != nil {
		return fmt.Errorf("wait again: %w", err)
	}
	if !endedBy(base, parent) {
		return nil
	}
	for _, p := range badParents(base) {
		if p.ID == parent {
			continue
		}
		pt, _, err := q.getTask(ctx, p.ID)
		if errors.Is(err, ErrNotFound) {
			return nil // gone (retention): it never completes now
		}
		if err != nil {
			return fmt.Errorf("wait again: read parent %s: %w", p.ID, err)
		}
		if st, ok := ended(q.resolveArchived(ctx, pt)); ok && st != StatusCompleted {
			return nil // still blocks it
		}
	}
	res, err := q.apply(ctx, base, etag, mutation{op: "wait again", rebase: true, change: func(t *Task, now time.Time) (string, error) {
		if !endedBy(t, parent) {
			return "", nil
		}
		for i := range t.Parents {
			if endedBadly(t.Parents[i].Done) {
				t.Parents[i].Done = ""
			}
		}
		toWaiting(t)
		return EventReplayed, nil
	}})
	if err != nil {
		return err
	}
	if res.next == res.prev || res.next.Status != StatusWaiting {
		return nil
	}
	_, _, err = q.register(ctx, res.next)
	return err
}

// endedBy reports whether t is a child that parents (parent among them)
// cancelled or failed.
func endedBy(t *Task, parent uuid.UUID) bool {
	if t.Status != StatusCancelled && t.Status != StatusFailed {
		return false
	}
	i := slices.IndexFunc(t.Parents, func(p Parent) bool { return p.ID == parent })
	return i >= 0 && endedBadly(t.Parents[i].Done) && endedByParents(t)
}

// toWaiting makes t a waiting task again (a replay of a task whose parents
// have not all ended).
func toWaiting(t *Task) {
	t.Status = StatusWaiting
	clearRun(t)
	t.LastError = ""
	t.RetryCount, t.SnoozeCount = 0, 0
}
