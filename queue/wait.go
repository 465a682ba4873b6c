package queue

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
)

// Defaults of WaitOptions.
const (
	DefaultWaitInterval    = 500 * time.Millisecond
	DefaultWaitMaxInterval = 5 * time.Second
)

// waitParallelism bounds the GETs in flight while Wait polls many tasks.
const waitParallelism = 16

// ErrWaitTimeout: Wait's Timeout ran out before every task ended.
var ErrWaitTimeout = errors.New("wait timed out")

// Outcome is how a waited-for task ended.
type Outcome string

// Outcomes. An archived task counts as the status it was archived from.
const (
	OutcomeCompleted  Outcome = "completed"
	OutcomeFailed     Outcome = "failed"
	OutcomeCancelled  Outcome = "cancelled"
	OutcomeExpired    Outcome = "expired"
	OutcomeUnfinished Outcome = "unfinished" // waiting, pending or running
)

// Bad reports outcomes other than completed and unfinished: the task ended
// without its work done.
func (o Outcome) Bad() bool {
	return o == OutcomeFailed || o == OutcomeCancelled || o == OutcomeExpired
}

// WaitOptions tune Wait.
type WaitOptions struct {
	// Interval is the time between two rounds while tasks change
	// (DefaultWaitInterval when 0). Rounds stretch by half each time
	// nothing changed, up to MaxInterval (DefaultWaitMaxInterval when 0,
	// at least Interval); any change brings them back to Interval.
	Interval    time.Duration
	MaxInterval time.Duration
	// Timeout, when positive, gives up after this long: Wait returns
	// ErrWaitTimeout. The last round is read at the timeout.
	Timeout time.Duration
	// FailFast returns after the first round in which some task ended with
	// a bad outcome, with the other tasks as they were.
	FailFast bool
	// OnDone, when set, is called with each task as it ends (in the order
	// of the ids within a round), from the goroutine that called Wait.
	OnDone func(WaitResult)
}

// WaitResult is one waited-for task.
type WaitResult struct {
	ID      uuid.UUID
	Outcome Outcome
	// Task is the latest version read (nil until one was): once the task
	// ended, with an offloaded output loaded in (WithPayloads; the stored
	// version, output_ref and all, when that fails).
	Task *Task
}

// Wait polls the tasks until every one has ended (completed, failed,
// cancelled, expired or archived), and returns one result per id, in the
// order of ids (a repeated id is read once). Each round GETs every task
// that has not ended, at most 16 at once: the cost is bounded by the tasks
// waited for, never by the bucket's history. An archived task's outcome
// comes from its history (see OutcomeOf).
//
// The error is nil when every task ended, whatever its outcome (or, with
// FailFast, when one ended badly); ErrWaitTimeout when opt.Timeout ran out;
// ctx's error when it ended; a *TaskError when a task cannot be read
// (ErrNotFound when it does not exist). The results say where each task
// stood in every case.
func (q *Queue) Wait(ctx context.Context, ids []uuid.UUID, opt WaitOptions) ([]WaitResult, error) {
	interval := opt.Interval
	if interval <= 0 {
		interval = DefaultWaitInterval
	}
	maxInterval := opt.MaxInterval
	if maxInterval <= 0 {
		maxInterval = DefaultWaitMaxInterval
	}
	maxInterval = max(maxInterval, interval)
	var deadline time.Time
	if opt.Timeout > 0 {
		deadline = time.Now().Add(opt.Timeout)
	}

	byID := map[uuid.UUID]*WaitResult{}
	var items []*WaitResult // distinct, in order
	for _, id := range ids {
		if byID[id] == nil {
			r := &WaitResult{ID: id, Outcome: OutcomeUnfinished}
			byID[id] = r
			items = append(items, r)
		}
	}
	results := func() []WaitResult {
		out := make([]WaitResult, len(ids))
		for i, id := range ids {
			out[i] = *byID[id]
		}
		return out
	}

	period := interval
	for {
		done, activity, err := q.waitRound(ctx, items)
		if err != nil {
			return results(), err
		}
		open, bad := 0, false
		for _, r := range items {
			if r.Outcome == OutcomeUnfinished {
				open++
			}
			bad = bad || r.Outcome.Bad()
		}
		if opt.OnDone != nil {
			for _, r := range done {
				opt.OnDone(*r)
			}
		}
		if open == 0 || (opt.FailFast && bad) {
			return results(), nil
		}
		now := time.Now()
		if !deadline.IsZero() && !now.Before(deadline) {
			return results(), fmt.Errorf("wait: %d of %d tasks unfinished after %s: %w", open, len(items), opt.Timeout, ErrWaitTimeout)
		}
		if activity {
			period = interval
		} else {
			period = min(period*3/2, maxInterval)
		}
		sleep := period
		if !deadline.IsZero() {
			sleep = min(sleep, deadline.Sub(now))
		}
		if !sleepCtx(ctx, sleep) {
			return results(), fmt.Errorf("wait: %w", ctx.Err())
		}
	}
}

// waitRound GETs every unfinished task. It returns the tasks that ended, in
// order, and whether any task was written since the previous round.
func (q *Queue) waitRound(ctx context.Context, items []*WaitResult) (done []*WaitResult, activity bool, err error) {
	var open []*WaitResult
	for _, r := range items {
		if r.Outcome == OutcomeUnfinished {
			open = append(open, r)
		}
	}
	tasks := make([]*Task, len(open))
	errs := make([]error, len(open))
	forEach(len(open), waitParallelism, func(i int) {
		tasks[i], errs[i] = q.Get(ctx, open[i].ID)
	})
	for i, err := range errs {
		if err != nil {
			return nil, false, fmt.Errorf("wait: %w", &TaskError{ID: open[i].ID, Err: err}) // the round counts for nothing
		}
	}
	for i, r := range open {
		if r.Task != nil && r.Task.Rev != tasks[i].Rev {
			activity = true
		}
		r.Task = tasks[i]
		if o := q.OutcomeOf(ctx, r.Task); o != OutcomeUnfinished {
			r.Outcome = o
			if full, err := q.WithPayloads(ctx, r.Task); err == nil {
				r.Task = full
			}
			done = append(done, r)
		}
	}
	return done, activity || len(done) > 0, nil
}

// OutcomeOf tells how t ended: OutcomeUnfinished while it is waiting,
// pending or running. An archived task counts as the status it was
// archived from: its archived_from, or for an object archived before that
// field existed, its history (1 LIST-VERSIONS and a GET per version from
// the newest back to that status, 2 GETs unless versions were lost; see
// resolveArchived).
func (q *Queue) OutcomeOf(ctx context.Context, t *Task) Outcome {
	st, ok := ended(q.resolveArchived(ctx, t))
	if !ok {
		return OutcomeUnfinished
	}
	switch st {
	case StatusFailed:
		return OutcomeFailed
	case StatusCancelled:
		return OutcomeCancelled
	case StatusExpired:
		return OutcomeExpired
	}
	return OutcomeCompleted
}

// archivedFrom returns the version an archived task was archived from: the
// newest version before t that ended, or nil when the history lacks it or
// cannot be read.
func (q *Queue) archivedFrom(ctx context.Context, t *Task) *Task {
	key := q.TaskKey(t.ID)
	versions, err := q.s.ListVersions(ctx, key)
	if err != nil {
		return nil
	}
	for _, v := range newestFirst(versions) {
		if v.DeleteMarker || v.VersionID == "" {
			continue
		}
		obj, err := q.getVersionLimited(ctx, key, v.VersionID, maxTaskObject)
		if err != nil {
			continue
		}
		old, err := DecodeTask(key, obj.Body)
		if err != nil || old.Rev >= t.Rev {
			continue
		}
		if old.Status.Terminal() && old.Status != StatusArchived {
			return old
		}
	}
	return nil
}

// TaskIDs returns the task of every step, in the record's order: what
// waiting for the workflow waits for.
func (w *Workflow) TaskIDs() []uuid.UUID {
	ids := make([]uuid.UUID, len(w.Steps))
	for i, s := range w.Steps {
		ids[i] = s.TaskID
	}
	return ids
}
