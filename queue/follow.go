package queue

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/qo-queue/qo/store"
)

// DefaultFollowInterval is the time between two polls of Follow.
const DefaultFollowInterval = time.Second

// followParallelism bounds the GETs in flight while a poll reads tasks.
const followParallelism = 16

// ErrStopFollowing, returned by Follow's callback, ends Follow without an
// error.
var ErrStopFollowing = errors.New("stop following")

// FollowOptions say what Follow follows and how often it looks.
type FollowOptions struct {
	// IDs are the tasks to follow. Without any, Follow follows the whole
	// queue, from now on.
	IDs []uuid.UUID
	// NewOnly (with IDs) skips what happened before the first poll;
	// otherwise the first poll reports each task's history so far.
	NewOnly bool
	// UntilDone (with IDs) returns once every task is terminal or deleted.
	UntilDone bool
	// Interval is the time between polls (DefaultFollowInterval when 0).
	Interval time.Duration
	// OnStart, when set, is called once the first poll of the whole queue
	// has recorded it, with the pending and running tasks it found (its
	// ready and lease entries).
	OnStart func(pending, running int)
	// OnPoll, when set, is called after every poll that may fail and be
	// retried (every poll of the whole queue, every poll of tasks after the
	// first) with its error: nil when every read succeeded. What a failed
	// read missed is reported by the next poll that succeeds.
	OnPoll func(err error)
}

// Follow polls the tasks of opt.IDs, or the whole queue, every
// opt.Interval and calls fn with each event, in time order within a poll,
// until ctx ends (Follow returns nil), fn returns an error (Follow returns
// it, or nil for ErrStopFollowing) or, with UntilDone, every task ended.
// The first poll of tasks fails Follow when a task cannot be read (a
// *TaskError; ErrNotFound when it does not exist); later polls are retried
// (see OnPoll).
//
// Following tasks: the first poll reads each task's history (1 LIST-VERSIONS
// + 1 GET per version; with NewOnly 1 GET), then every poll GETs each task
// that has not ended and reports every version written since. When several
// writes happened between two polls, the task's history fills the gap, so
// no event is lost on a versioned bucket; without versioning the gap is
// counted in the event's Missed. A task whose object vanished is reported
// once as EventDeleted.
//
// Following the whole queue: each poll LISTs ready/ and leases/ (1 LIST per
// 1,000 pending or running tasks: an idle queue costs 2 LISTs a poll,
// whatever the number of finished tasks) and GETs only the tasks whose index
// entries changed since the previous poll: new ready entries (enqueued,
// retried, requeued, replayed, released), new or moved lease entries
// (claimed, lease_extended) and vanished ones (succeeded, failed, cancelled,
// timed_out, expired). The first poll only records the indexes. Limits:
// writes between two polls are coalesced into the task's latest event
// (Missed says how many were skipped, when known); a task submitted and
// finished between two polls is not seen; nor are writes that change no
// index entry (a cancel request of a running task shows when the worker
// acknowledges it, archiving and the writes of waiting tasks not at all).
// Follow tasks for a complete account. Memory is bounded by the pending and
// running tasks.
func (q *Queue) Follow(ctx context.Context, opt FollowOptions, fn func(Event) error) error {
	f := q.NewFollower(opt)
	interval := opt.Interval
	if interval <= 0 {
		interval = DefaultFollowInterval
	}
	byID := len(opt.IDs) > 0
	for first := true; ; first = false {
		if !first {
			if byID && opt.UntilDone && f.Done() {
				return nil
			}
			if !sleepCtx(ctx, interval) {
				return nil
			}
		}
		started := f.started
		evs, err := f.Poll(ctx)
		if ctx.Err() != nil {
			return nil
		}
		switch {
		case byID && first:
			if err != nil {
				return err
			}
		case opt.OnPoll != nil:
			opt.OnPoll(err)
		}
		if !byID && !started && f.started && opt.OnStart != nil {
			opt.OnStart(f.Counts())
		}
		for _, ev := range evs {
			if err := fn(ev); err != nil {
				if errors.Is(err, ErrStopFollowing) {
					return nil
				}
				return err
			}
		}
	}
}

// Follower is Follow one poll at a time, for callers that keep their own
// pace (a console refreshing its screen). It is not safe for concurrent
// use.
type Follower struct {
	q       *Queue
	opt     FollowOptions
	started bool

	// following tasks
	tasks []*followedTask

	// following the whole queue
	start  time.Time
	ready  map[uuid.UUID]string // task id -> ready key
	leases map[uuid.UUID]string // task id -> lease key
	seen   map[uuid.UUID]seenTask
	// unwritten: entries whose task was not found, by when it first was
	// not: read again at every poll until IndexGrace old (see
	// awaitUnwritten).
	unwritten map[uuid.UUID]time.Time
}

type followedTask struct {
	id   uuid.UUID
	last *Task // the latest version reported (or read at the start)
	gone bool  // the object was deleted
}

// seenTask is what a whole-queue follower remembers of a task it reported.
type seenTask struct {
	rev             int64
	status          Status
	worker          string
	retryCount      int
	cancelRequested bool
}

func seenOf(t *Task) seenTask {
	return seenTask{rev: t.Rev, status: t.Status, worker: t.WorkerID, retryCount: t.RetryCount, cancelRequested: t.CancelRequested}
}

// task is the remembered part of the version, enough to name the next event.
func (s seenTask) task() *Task {
	return &Task{Rev: s.rev, Status: s.status, WorkerID: s.worker, RetryCount: s.retryCount, CancelRequested: s.cancelRequested}
}

// NewFollower returns a follower of opt.IDs, or of the whole queue from now
// on. Only IDs and NewOnly matter to it; Follow reads the rest.
func (q *Queue) NewFollower(opt FollowOptions) *Follower {
	f := &Follower{q: q, opt: opt}
	seen := map[uuid.UUID]bool{}
	for _, id := range opt.IDs {
		if !seen[id] {
			seen[id] = true
			f.tasks = append(f.tasks, &followedTask{id: id})
		}
	}
	if len(f.tasks) == 0 {
		f.start = q.Now().Add(-MaxClockSkew)
		f.seen = map[uuid.UUID]seenTask{}
	}
	return f
}

// Poll returns the events since the previous poll, in time order (see
// Follow for what each poll reads). A follower of tasks reports their
// history on its first poll (nothing with NewOnly), and fails it when a
// task cannot be read (a *TaskError): the next Poll starts again. A
// follower of the queue reports nothing on its first poll, which records
// the indexes. Later, a read that fails is retried by the next poll, and
// err is its error.
func (f *Follower) Poll(ctx context.Context) ([]Event, error) {
	var evs []Event
	var err error
	switch {
	case f.tasks == nil:
		evs, err = f.pollQueue(ctx)
	case !f.started:
		evs, err = f.startTasks(ctx)
	default:
		evs, err = f.pollTasks(ctx)
	}
	slices.SortStableFunc(evs, func(a, b Event) int {
		if c := a.At.Compare(b.At); c != 0 {
			return c
		}
		return cmp.Compare(a.Rev, b.Rev)
	})
	return evs, err
}

// Done reports whether every followed task is terminal or deleted (always
// false for a follower of the whole queue).
func (f *Follower) Done() bool {
	if !f.started || f.tasks == nil {
		return false
	}
	for _, ft := range f.tasks {
		if !ft.gone && !ft.last.Status.Terminal() {
			return false
		}
	}
	return true
}

// Counts returns the pending and running tasks (ready and lease entries) the
// latest poll of the whole queue found.
func (f *Follower) Counts() (pending, running int) { return len(f.ready), len(f.leases) }

// --- following tasks -------------------------------------------------------------

func (f *Follower) startTasks(ctx context.Context) ([]Event, error) {
	var evs []Event
	last := make([]*Task, len(f.tasks))
	for i, ft := range f.tasks {
		if !f.opt.NewOnly {
			events, err := f.q.History(ctx, ft.id)
			if err != nil {
				return nil, &TaskError{ID: ft.id, Err: err}
			}
			for _, e := range events {
				if e.Task == nil {
					continue // delete markers and unreadable versions: History shows them
				}
				evs = append(evs, e)
				last[i] = e.Task
			}
		}
		if last[i] == nil {
			t, err := f.q.Get(ctx, ft.id)
			if err != nil {
				return nil, &TaskError{ID: ft.id, Err: err}
			}
			last[i] = t
		}
	}
	for i, ft := range f.tasks {
		ft.last = last[i]
	}
	f.started = true
	return evs, nil
}

// pollTasks GETs every followed task that has not ended and returns the
// events since the last poll. err is the first read error (that task is
// read again next time).
func (f *Follower) pollTasks(ctx context.Context) ([]Event, error) {
	var open []*followedTask
	for _, ft := range f.tasks {
		if !ft.gone {
			open = append(open, ft)
		}
	}
	got := make([]*Task, len(open))
	errs := make([]error, len(open))
	forEach(len(open), followParallelism, func(i int) {
		got[i], errs[i] = f.q.Get(ctx, open[i].id)
	})
	var evs []Event
	var firstErr error
	for i, ft := range open {
		t, err := got[i], errs[i]
		switch {
		case errors.Is(err, ErrNotFound):
			ft.gone = true
			evs = append(evs, Event{Name: EventDeleted, At: f.q.Now(), TaskID: ft.id, Type: ft.last.Type,
				Status: ft.last.Status, Attempt: ft.last.Attempt, Rev: ft.last.Rev})
			continue
		case err != nil:
			firstErr = firstOf(firstErr, err)
			continue
		case t.Rev == ft.last.Rev:
			continue
		case t.Rev == ft.last.Rev+1:
			evs = append(evs, eventAfter(ft.last, t))
		default:
			gap, err := f.q.eventsSince(ctx, ft.last, t)
			firstErr = firstOf(firstErr, err)
			evs = append(evs, gap...)
		}
		ft.last = t
	}
	return evs, firstErr
}

// firstOf keeps the first error.
func firstOf(first, err error) error {
	if first != nil {
		return first
	}
	return err
}

// eventsSince returns the events after version prev up to version cur,
// from the task's history. Versions the history lacks (versioning off, or
// expired) are counted in the next event's Missed.
func (q *Queue) eventsSince(ctx context.Context, prev, cur *Task) ([]Event, error) {
	var evs []Event
	events, err := q.History(ctx, cur.ID)
	before := prev
	if err == nil {
		for _, e := range events {
			if e.Task == nil || e.Rev <= prev.Rev || e.Rev > cur.Rev {
				continue
			}
			if e.Rev != before.Rev+1 {
				e = eventAfter(before, e.Task)
			}
			evs = append(evs, e)
			before = e.Task
		}
	}
	if before.Rev < cur.Rev {
		evs = append(evs, eventAfter(before, cur))
	}
	return evs, err
}

// eventAfter is the event of version t when the last version reported was
// prev (nil: none). When versions lie between them, they are counted in
// Missed, and nothing is inferred across them: the name is t's last_event
// (EventUnknown without one) and the worker t's own.
func eventAfter(prev, t *Task) Event {
	var prevRev int64
	if prev != nil {
		prevRev = prev.Rev
	}
	if t.Rev == prevRev+1 {
		return eventOf(prev, t)
	}
	ev := eventOf(nil, t)
	if !slices.Contains(Events, t.LastEvent) {
		ev.Name = EventUnknown
	}
	ev.Missed = max(t.Rev-prevRev-1, 0)
	return ev
}

// --- following the whole queue ---------------------------------------------------

// pollQueue lists both indexes and returns the events they reveal. The
// first poll only records them.
func (f *Follower) pollQueue(ctx context.Context) ([]Event, error) {
	ready, leases, err := f.listIndexes(ctx)
	if err != nil {
		return nil, err
	}
	if !f.started {
		f.ready, f.leases, f.started = ready, leases, true
		return nil, nil
	}
	cand := f.changed(ready, leases)
	ids := make([]uuid.UUID, 0, len(cand))
	for id := range cand {
		ids = append(ids, id)
	}
	got := make([]*Task, len(ids))
	errs := make([]error, len(ids))
	forEach(len(ids), followParallelism, func(i int) {
		got[i], errs[i] = f.q.Get(ctx, ids[i])
	})
	var evs []Event
	var firstErr error
	for i, id := range ids {
		t, err := got[i], errs[i]
		if errors.Is(err, ErrNotFound) {
			continue // an index entry of a task not written yet, or that does not exist
		}
		if err != nil {
			firstErr = firstOf(firstErr, err)
			continue
		}
		if ev, ok := f.eventOf(id, t); ok {
			evs = append(evs, ev)
		}
	}
	f.ready, f.leases = ready, leases
	f.awaitTasks(ids, got)
	f.awaitUnwritten(ids, errs)
	f.forget(cand)
	return evs, firstErr
}

// listIndexes lists the ready and the lease index, each as task id ->
// key.
func (f *Follower) listIndexes(ctx context.Context) (ready, leases map[uuid.UUID]string, err error) {
	ready, err = f.q.indexIDs(ctx, ReadyPrefix, func(k string) (uuid.UUID, error) {
		e, err := ParseReadyKey(k)
		return e.ID, err
	})
	if err != nil {
		return nil, nil, err
	}
	leases, err = f.q.indexIDs(ctx, LeasesPrefix, func(k string) (uuid.UUID, error) {
		e, err := ParseLeaseKey(k)
		return e.ID, err
	})
	if err != nil {
		return nil, nil, err
	}
	return ready, leases, nil
}

// changed returns the tasks whose index entries differ between the last
// poll's listing and this one's (ready, leases): the tasks to read.
func (f *Follower) changed(ready, leases map[uuid.UUID]string) map[uuid.UUID]bool {
	cand := map[uuid.UUID]bool{}
	for id, k := range leases {
		if f.leases[id] != k {
			cand[id] = true // claimed, or the lease moved (extended)
		}
	}
	for id := range f.leases {
		if _, ok := leases[id]; !ok {
			cand[id] = true // the lease ended: succeeded, failed, retried, ...
		}
	}
	for id, k := range ready {
		if f.ready[id] != k {
			cand[id] = true // enqueued, retried, requeued, replayed, released
		}
	}
	for id := range f.ready {
		_, stillReady := ready[id]
		_, running := leases[id]
		if !stillReady && !running {
			cand[id] = true // cancelled or expired, or claimed and finished between polls
		}
	}
	return cand
}

// eventOf returns the event task t (read as id) reveals, if it changed
// since it was last reported and after following started, and remembers
// it as seen.
func (f *Follower) eventOf(id uuid.UUID, t *Task) (Event, bool) {
	s, known := f.seen[id]
	switch {
	case known && t.Rev <= s.rev:
		return Event{}, false // already reported
	case !known && t.UpdatedAt.Before(f.start):
		// A change from before following started (a leftover index
		// entry, say): remember it, report nothing.
		f.seen[id] = seenOf(t)
		return Event{}, false
	}
	var ev Event
	switch {
	case known:
		ev = eventAfter(s.task(), t)
	case !t.CreatedAt.Before(f.start):
		ev = eventAfter(nil, t) // created since: every earlier write was missed
	default:
		ev = eventAfter(nil, t)
		ev.Missed = 0 // how many writes it had before following started is not known
	}
	f.seen[id] = seenOf(t)
	return ev, true
}

// awaitTasks drops from the recorded listing the entries of the tasks
// read (ids, got) that do not match their task yet. Entries are written
// before their task: an entry whose task has not caught up yet is looked
// at again by the next poll.
func (f *Follower) awaitTasks(ids []uuid.UUID, got []*Task) {
	for i, id := range ids {
		if t := got[i]; t != nil {
			if k, ok := f.leases[id]; ok && LeaseKey(t) != k {
				delete(f.leases, id)
			}
			if k, ok := f.ready[id]; ok && ReadyKey(t) != k {
				delete(f.ready, id)
			}
		}
	}
}

// awaitUnwritten keeps reading the tasks of entries listed before their
// task was written (index entries are written first, see doc.go): their
// entries are not recorded as known, so the next poll reads them again,
// until the task is found or IndexGrace has passed since it first was not
// (an entry whose task does not exist, which readers drop as stale), so a
// submit the listing met halfway is reported, not missed.
func (f *Follower) awaitUnwritten(ids []uuid.UUID, errs []error) {
	now := f.q.Now()
	for i, id := range ids {
		if !errors.Is(errs[i], ErrNotFound) {
			delete(f.unwritten, id)
			continue
		}
		first, ok := f.unwritten[id]
		if !ok {
			if f.unwritten == nil {
				f.unwritten = map[uuid.UUID]time.Time{}
			}
			f.unwritten[id], first = now, now
		}
		if now.Sub(first) < IndexGrace {
			delete(f.ready, id)
			delete(f.leases, id)
		}
	}
	for id, first := range f.unwritten {
		if now.Sub(first) > 2*IndexGrace {
			delete(f.unwritten, id) // given up on a poll ago or more
		}
	}
}

// forget forgets the tasks without index entries once they are terminal,
// or after a poll in which nothing about them changed (not in cand; a
// running task whose lease entry is not written yet is kept, so its claim
// is not reported twice).
func (f *Follower) forget(cand map[uuid.UUID]bool) {
	for id, s := range f.seen {
		_, r := f.ready[id]
		_, l := f.leases[id]
		if !r && !l && (s.status.Terminal() || !cand[id]) {
			delete(f.seen, id)
		}
	}
}

// indexIDs lists every key under prefix (every page) and maps task id to
// key. Keys that do not parse are skipped; of an id with several entries
// the last key wins.
func (q *Queue) indexIDs(ctx context.Context, prefix string, parse func(string) (uuid.UUID, error)) (map[uuid.UUID]string, error) {
	out := map[uuid.UUID]string{}
	token := ""
	for {
		page, err := q.s.List(ctx, store.ListParams{Prefix: prefix, Token: token})
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", prefix, err)
		}
		for _, o := range page.Objects {
			if id, err := parse(o.Key); err == nil {
				out[id] = o.Key
			}
		}
		if page.NextToken == "" {
			return out, nil
		}
		token = page.NextToken
	}
}

// sleepCtx waits d, or until ctx ends (false).
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
