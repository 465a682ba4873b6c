package schedule

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/qo-queue/qo/queue"
)

// Run reports what a scheduler pass did for one schedule.
type Run struct {
	Schedule string    `json:"schedule"`
	Due      time.Time `json:"due"`
	TaskID   uuid.UUID `json:"task_id"` // uuid.Nil when nothing was submitted
	Created  bool      `json:"created"` // false: another scheduler had submitted it
	Late     bool      `json:"late"`    // handled more than Grace after Due
	Skipped  int       `json:"skipped"` // due times passed over
	Err      error     `json:"-"`
}

// Scheduler submits the tasks of due schedules. Any number of schedulers
// may run against one queue: the idempotency key of each run (schedule
// name + due time) makes every due time submit exactly one task, and the
// schedule object is compared-and-swapped. Not safe for concurrent use.
type Scheduler struct {
	q     Queue
	cache map[string]*Schedule
}

// NewScheduler returns a scheduler for q.
func NewScheduler(q Queue) *Scheduler { return &Scheduler{q: q, cache: map[string]*Schedule{}} }

// Refresh re-reads the schedules (1 LIST, plus a GET per schedule that
// changed since the last refresh).
func (sc *Scheduler) Refresh(ctx context.Context) ([]queue.MalformedError, error) {
	all, malformed, err := list(ctx, sc.q, sc.cache)
	if err != nil {
		return nil, err
	}
	sc.cache = make(map[string]*Schedule, len(all))
	for _, s := range all {
		sc.cache[queue.ScheduleKey(s.Name)] = s
	}
	return malformed, nil
}

// NextDue is the earliest due time of the cached schedules (zero: none).
func (sc *Scheduler) NextDue() time.Time {
	var next time.Time
	for _, s := range sc.cache {
		if d := s.NextDue(); !d.IsZero() && (next.IsZero() || d.Before(next)) {
			next = d
		}
	}
	return next
}

// RunDue handles every cached schedule with a due time <= now: it submits
// the latest due time's task (or skips it: see MissedPolicy) and records it
// in the schedule. Earlier due times of the same pass are counted as
// skipped. It costs nothing when nothing is due, and 1 GET + 2 PUT (task
// create, schedule update) plus the ready entry per due time.
func (sc *Scheduler) RunDue(ctx context.Context) []Run {
	var runs []Run
	keys := make([]string, 0, len(sc.cache))
	for k := range sc.cache {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		s := sc.cache[k]
		if !s.Enabled || s.Deleted {
			continue
		}
		if _, count := s.latestDue(sc.q.Now()); count == 0 {
			continue
		}
		// Something is due by the cached copy: decide on a fresh one, so a
		// schedule disabled, edited or deleted since the last refresh is
		// honoured (1 GET per due time).
		fresh, err := get(ctx, sc.q, s.Name)
		if err != nil {
			if errors.Is(err, queue.ErrNotFound) {
				delete(sc.cache, k)
				continue
			}
			runs = append(runs, Run{Schedule: s.Name, Err: err})
			continue
		}
		sc.cache[k] = fresh
		if !fresh.Enabled || fresh.Deleted {
			continue
		}
		now := sc.q.Now()
		due, count := fresh.latestDue(now)
		if count == 0 {
			continue
		}
		runs = append(runs, sc.runOne(ctx, fresh, due, count, now))
	}
	return runs
}

// latestDue walks the due times in (baseline, now] and returns the last
// one and how many there were.
func (s *Schedule) latestDue(now time.Time) (time.Time, int) {
	var latest time.Time
	n := 0
	for d := s.Next(s.baseline()); !d.IsZero() && !d.After(now) && n < maxDueScan; d = s.Next(d) {
		latest = d
		n++
	}
	return latest, n
}

func (sc *Scheduler) runOne(ctx context.Context, s *Schedule, due time.Time, count int, now time.Time) Run {
	run := Run{Schedule: s.Name, Due: due, Late: now.Sub(due) > Grace, Skipped: count - 1}
	expired := s.Task.ExpiresAfterSeconds > 0 && !due.Add(time.Duration(s.Task.ExpiresAfterSeconds)*time.Second).After(now)
	submit := !(run.Late && s.Missed == MissedSkip) && !expired
	if !submit {
		run.Skipped = count
	} else {
		t, created, err := submitRun(ctx, sc.q, s, RunKey(s.Name, due), now, due)
		if err != nil {
			run.Err = err
			return run // LastDue stays: the next pass tries again
		}
		run.TaskID, run.Created = t.ID, created
	}
	updated, err := update(ctx, sc.q, "record run of", s.Name, func(cur *Schedule, now time.Time) (bool, error) {
		if cur.LastDue != nil && !cur.LastDue.Before(due) {
			return false, nil // another scheduler recorded it
		}
		cur.LastDue = timePtr(due)
		cur.Skipped += int64(run.Skipped)
		if submit {
			cur.LastTaskID, cur.LastSubmittedAt = run.TaskID.String(), timePtr(now)
		}
		return true, nil
	})
	if err != nil {
		run.Err = err
		return run
	}
	sc.cache[queue.ScheduleKey(s.Name)] = updated
	return run
}
