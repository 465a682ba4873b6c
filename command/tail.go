package command

// qo tail: follow task events.
//
// --json prints one JSON object per line (stable; new fields may be added,
// none removed):
//
//	{"at": "...", "event": "claimed", "task_type": "...", "id": "...",
//	 "status": "running", "attempt": 1, "worker_id": "...", "rev": 2,
//	 "error": "..." (failed, retried, timed_out only),
//	 "missed": N (writes tail knows it did not see, when > 0)}

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/urfave/cli/v2"

	"github.com/qo-queue/qo/internal/termsafe"
	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store"
)

const defaultTailInterval = time.Second

func tailCommand() *cli.Command {
	return &cli.Command{
		Name:      "tail",
		Usage:     "follow task events as they happen",
		UsageText: "qo tail [ID... | -] [--interval D] [--json] [--new-only] [--until-done] [--count N]",
		Description: `Prints one line per task event until interrupted (Ctrl+C exits 0):

  TIME EVENT TYPE ID attempt=N worker=W [error="..."] [missed=N]

TIME is the time of the write (UTC), EVENT one of enqueued, claimed,
lease_extended, succeeded, failed, retried, timed_out, requeued,
cancel_requested, cancelled, replayed, archived. --json prints one object per
line: {"at", "event", "task_type", "id", "status", "attempt", "worker_id",
"rev", "error" (failed, retried, timed_out), "missed" (when > 0)}.

With task ids: prints each task's history so far (unless --new-only), then
polls each task with one GET per --interval and prints every new version.
When several writes happened between two polls, the task's history (one
LIST-VERSIONS and a GET per version) fills the gap, so no event is lost on a
versioned bucket. --until-done exits once every task is terminal.

Without ids: follows the whole queue through its index objects. Each poll
LISTs ready/ and leases/ (one request per 1000 pending or running tasks, so an
idle queue costs 2 LISTs per --interval) and GETs only the tasks whose index
entries changed: new ready entries (enqueued, retried, requeued, replayed),
new or moved lease entries (claimed, lease_extended) and vanished ones
(succeeded, failed, cancelled, timed_out). Limits: events between two polls
are coalesced into the task's latest one (missed=N says how many were
skipped when tail knows); a task enqueued and finished between two polls is
not seen; cancel requests of running tasks show when the worker confirms;
archiving changes no index and is not shown. Follow ids for a complete log.

Examples:
  qo tail
  qo tail 0b6f4c2e-8d1a-4f7e-9c3b-2a5d6e7f8a9b --until-done
  qo tail --json --interval 5s | jq -c 'select(.event == "failed")'`,
		Flags: []cli.Flag{
			&cli.DurationFlag{Name: "interval", Value: defaultTailInterval, EnvVars: []string{"QO_TAIL_INTERVAL"},
				Usage: "wait `DURATION` between polls"},
			&cli.BoolFlag{Name: "new-only", Usage: "with ids: skip the events that happened before tail started"},
			&cli.BoolFlag{Name: "until-done", Usage: "with ids: exit once every task is completed, failed, cancelled or archived"},
			&cli.IntFlag{Name: "count", Aliases: []string{"n"}, Usage: "exit after printing `N` events (0: no limit)"},
			&cli.BoolFlag{Name: "json", Usage: "print one JSON object per event and line (shape above)"},
		},
		Action: runTail,
	}
}

// tailEvent is one printed event.
type tailEvent struct {
	At       time.Time    `json:"at"`
	Event    string       `json:"event"`
	Type     string       `json:"task_type"`
	ID       uuid.UUID    `json:"id"`
	Status   queue.Status `json:"status"`
	Attempt  int          `json:"attempt"`
	WorkerID string       `json:"worker_id"`
	Rev      int64        `json:"rev"`
	Error    string       `json:"error,omitempty"`
	Missed   int64        `json:"missed,omitempty"`
}

// eventOf is the event that wrote version t. prev is the version before it
// when known: a write that ends a lease names the worker that held it.
func eventOf(t, prev *queue.Task) tailEvent {
	ev := tailEvent{At: t.UpdatedAt, Event: t.LastEvent, Type: t.Type, ID: t.ID, Status: t.Status,
		Attempt: t.Attempt, WorkerID: t.WorkerID, Rev: t.Rev}
	if ev.Event == "" {
		ev.Event = "unknown"
	}
	if ev.WorkerID == "" && prev != nil && prev.Status == queue.StatusRunning {
		ev.WorkerID = prev.WorkerID
	}
	switch ev.Event {
	case queue.EventFailed, queue.EventRetried, queue.EventTimedOut:
		ev.Error = t.LastError
	}
	return ev
}

// tailPrinter writes events and counts them against --count.
type tailPrinter struct {
	w       io.Writer
	json    bool
	limit   int
	printed int
}

// print writes the events in time order and reports whether --count is
// reached.
func (p *tailPrinter) print(evs []tailEvent) (bool, error) {
	sort.SliceStable(evs, func(i, j int) bool {
		if !evs[i].At.Equal(evs[j].At) {
			return evs[i].At.Before(evs[j].At)
		}
		return evs[i].Rev < evs[j].Rev
	})
	for _, ev := range evs {
		if p.limit > 0 && p.printed >= p.limit {
			return true, nil
		}
		var err error
		if p.json {
			var b []byte
			b, err = json.Marshal(ev)
			if err == nil {
				_, err = fmt.Fprintf(p.w, "%s\n", b)
			}
		} else {
			_, err = fmt.Fprintln(p.w, humanEvent(ev))
		}
		if err != nil {
			return false, err
		}
		p.printed++
	}
	return p.limit > 0 && p.printed >= p.limit, nil
}

func humanEvent(ev tailEvent) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %-16s %s %s attempt=%d worker=%s", ev.At.UTC().Format("2006-01-02T15:04:05.000Z"),
		termsafe.Line(ev.Event), termsafe.Line(dash(ev.Type)), ev.ID, ev.Attempt, termsafe.Line(dash(ev.WorkerID)))
	if ev.Error != "" {
		// strconv.Quote escapes every control character itself.
		b.WriteString(" error=" + strconv.Quote(foldSpace(ev.Error)))
	}
	if ev.Missed > 0 {
		fmt.Fprintf(&b, " missed=%d", ev.Missed)
	}
	return b.String()
}

func runTail(c *cli.Context) error {
	args, err := positionalArgs(c)
	if err != nil {
		return err
	}
	ids, err := taskIDs(args)
	if err != nil {
		return err
	}
	interval, err := durationFlag(c, "interval", minPollInterval)
	if err != nil {
		return err
	}
	if c.Int("count") < 0 {
		return usageError("--count %d is negative (0: no limit)", c.Int("count"))
	}
	if len(ids) == 0 && len(args) > 0 {
		return usageError("no task ids on stdin (usage: %s)", c.Command.UsageText)
	}
	if len(ids) == 0 {
		for _, f := range []string{"new-only", "until-done"} {
			if c.Bool(f) {
				return usageError("--%s needs task ids (the whole queue is always followed from now on)", f)
			}
		}
	}
	q, err := openQueue(c)
	if err != nil {
		return err
	}
	p := &tailPrinter{w: c.App.Writer, json: c.Bool("json"), limit: c.Int("count")}
	warn := &warner{w: c.App.ErrWriter}
	if len(ids) > 0 {
		err = tailTasks(c.Context, q, ids, interval, p, warn, c.Bool("new-only"), c.Bool("until-done"))
	} else {
		err = tailQueue(c.Context, q, interval, p, warn, c.App.ErrWriter)
	}
	if c.Context.Err() != nil {
		return nil // interrupted: the normal way to stop following
	}
	return err
}

// warner prints a transient error once, not on every poll.
type warner struct {
	w    io.Writer
	last string
}

func (w *warner) warn(err error) {
	if err == nil {
		w.last = ""
		return
	}
	if msg := err.Error(); msg != w.last {
		w.last = msg
		fmt.Fprintf(w.w, "qo: warning: %s (retrying)\n", oneLine(msg))
	}
}

// sleepCtx waits d or until ctx ends (false).
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

// --- following tasks by id ---------------------------------------------------------

type followedTask struct {
	id   uuid.UUID
	last *queue.Task // the latest version printed (or seen at start)
	gone bool        // the object was deleted
}

func tailTasks(ctx context.Context, q *queue.Queue, ids []uuid.UUID, interval time.Duration,
	p *tailPrinter, warn *warner, newOnly, untilDone bool) error {
	tasks := make([]*followedTask, len(ids))
	var start []tailEvent
	for i, id := range ids {
		ft := &followedTask{id: id}
		tasks[i] = ft
		if newOnly {
			t, err := q.Get(ctx, id)
			if err != nil {
				return taskError(id, err)
			}
			ft.last = t
			continue
		}
		events, err := q.History(ctx, id)
		if err != nil {
			return taskError(id, err)
		}
		var prev *queue.Task
		for _, e := range events {
			if e.Task == nil {
				continue // delete markers and unreadable versions: qo history shows them
			}
			start = append(start, eventOf(e.Task, prev))
			prev = e.Task
		}
		if prev == nil {
			t, err := q.Get(ctx, id)
			if err != nil {
				return taskError(id, err)
			}
			prev = t
		}
		ft.last = prev
	}
	if done, err := p.print(start); done || err != nil {
		return err
	}
	for {
		if untilDone && allTerminal(tasks) {
			return nil
		}
		if !sleepCtx(ctx, interval) {
			return nil
		}
		evs, err := pollTasks(ctx, q, tasks)
		warn.warn(err)
		if done, err := p.print(evs); done || err != nil {
			return err
		}
	}
}

func allTerminal(tasks []*followedTask) bool {
	for _, ft := range tasks {
		if !ft.gone && !ft.last.Status.Terminal() {
			return false
		}
	}
	return true
}

// pollTasks GETs every followed task and returns the events since the last
// poll. err is the first read error (the task is retried next round).
func pollTasks(ctx context.Context, q *queue.Queue, tasks []*followedTask) ([]tailEvent, error) {
	var open []*followedTask
	for _, ft := range tasks {
		if !ft.gone {
			open = append(open, ft)
		}
	}
	got := make([]*queue.Task, len(open))
	errs := make([]error, len(open))
	forEachLimit(len(open), pollConcurrency, func(i int) {
		got[i], errs[i] = q.Get(ctx, open[i].id)
	})
	var evs []tailEvent
	var firstErr error
	for i, ft := range open {
		t, err := got[i], errs[i]
		switch {
		case errors.Is(err, queue.ErrNotFound):
			ft.gone = true
			evs = append(evs, tailEvent{At: q.Now(), Event: queue.EventDeleted, Type: ft.last.Type, ID: ft.id,
				Status: ft.last.Status, Attempt: ft.last.Attempt, Rev: ft.last.Rev})
			continue
		case err != nil:
			if firstErr == nil {
				firstErr = err
			}
			continue
		case t.Rev == ft.last.Rev:
			continue
		case t.Rev == ft.last.Rev+1:
			evs = append(evs, eventOf(t, ft.last))
		default:
			gap, err := historySince(ctx, q, ft.last, t)
			if err != nil && firstErr == nil {
				firstErr = err
			}
			evs = append(evs, gap...)
		}
		ft.last = t
	}
	return evs, firstErr
}

// historySince returns the events after version prev up to version cur,
// from the task's history. Versions the history lacks (versioning off, or
// expired) are counted in the last event's missed field.
func historySince(ctx context.Context, q *queue.Queue, prev, cur *queue.Task) ([]tailEvent, error) {
	var evs []tailEvent
	events, err := q.History(ctx, cur.ID)
	before := prev
	if err == nil {
		for _, e := range events {
			if e.Task == nil || e.Rev <= prev.Rev || e.Rev > cur.Rev {
				continue
			}
			ev := eventOf(e.Task, before)
			ev.Missed = e.Rev - before.Rev - 1
			evs = append(evs, ev)
			before = e.Task
		}
	}
	if before.Rev < cur.Rev {
		ev := eventOf(cur, nil)
		if before.Rev+1 == cur.Rev {
			ev = eventOf(cur, before)
		}
		ev.Missed = cur.Rev - before.Rev - 1
		evs = append(evs, ev)
	}
	return evs, err
}

// --- following the whole queue ---------------------------------------------------------

// seenTask is what tail remembers of a task it reported.
type seenTask struct {
	rev    int64
	status queue.Status
	worker string
}

// queueFollower diffs the ready and lease indexes between polls and GETs the
// tasks whose entries changed. Memory is bounded by the pending and running
// tasks: a task is forgotten once it has no index entry.
type queueFollower struct {
	q      *queue.Queue
	start  time.Time
	ready  map[uuid.UUID]string
	leases map[uuid.UUID]string
	seen   map[uuid.UUID]seenTask
	primed bool
}

// tailQueue follows the whole queue. Once the first poll has recorded the
// current state it says so on note.
func tailQueue(ctx context.Context, q *queue.Queue, interval time.Duration, p *tailPrinter, warn *warner, note io.Writer) error {
	f := &queueFollower{q: q, start: q.Now().Add(-queue.MaxClockSkew), seen: map[uuid.UUID]seenTask{}}
	for {
		primed := f.primed
		evs, err := f.poll(ctx)
		if ctx.Err() != nil {
			return nil
		}
		warn.warn(err)
		if !primed && f.primed {
			fmt.Fprintf(note, "qo: following every task from now on (%d pending, %d running); Ctrl+C stops\n", len(f.ready), len(f.leases))
		}
		if done, err := p.print(evs); done || err != nil {
			return err
		}
		if !sleepCtx(ctx, interval) {
			return nil
		}
	}
}

// poll lists both indexes and returns the events they reveal. The first
// poll only records the current state.
func (f *queueFollower) poll(ctx context.Context) ([]tailEvent, error) {
	ready, err := listIndexIDs(ctx, f.q.Store(), queue.ReadyPrefix, func(k string) (uuid.UUID, error) {
		e, err := queue.ParseReadyKey(k)
		return e.ID, err
	})
	if err != nil {
		return nil, err
	}
	leases, err := listIndexIDs(ctx, f.q.Store(), queue.LeasesPrefix, func(k string) (uuid.UUID, error) {
		e, err := queue.ParseLeaseKey(k)
		return e.ID, err
	})
	if err != nil {
		return nil, err
	}
	if !f.primed {
		f.ready, f.leases, f.primed = ready, leases, true
		return nil, nil
	}
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
			cand[id] = true // enqueued, retried, requeued, replayed
		}
	}
	for id := range f.ready {
		_, stillReady := ready[id]
		_, running := leases[id]
		if !stillReady && !running {
			cand[id] = true // cancelled, or claimed and finished between polls
		}
	}
	ids := make([]uuid.UUID, 0, len(cand))
	for id := range cand {
		ids = append(ids, id)
	}
	got := make([]*queue.Task, len(ids))
	errs := make([]error, len(ids))
	forEachLimit(len(ids), pollConcurrency, func(i int) {
		got[i], errs[i] = f.q.Get(ctx, ids[i])
	})
	var evs []tailEvent
	var firstErr error
	for i, id := range ids {
		t, err := got[i], errs[i]
		if errors.Is(err, queue.ErrNotFound) {
			continue // an index entry of a task that does not exist
		}
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		s, known := f.seen[id]
		switch {
		case known && t.Rev <= s.rev:
			continue // already reported
		case !known && t.UpdatedAt.Before(f.start):
			// A change from before tail started (e.g. a leftover index
			// entry): remember it, print nothing.
			f.seen[id] = seenTask{rev: t.Rev, status: t.Status, worker: t.WorkerID}
			continue
		}
		var prev *queue.Task
		if known {
			prev = &queue.Task{Status: s.status, WorkerID: s.worker}
		}
		ev := eventOf(t, prev)
		switch {
		case known:
			ev.Missed = t.Rev - s.rev - 1
		case !t.CreatedAt.Before(f.start):
			ev.Missed = t.Rev - 1
		}
		evs = append(evs, ev)
		f.seen[id] = seenTask{rev: t.Rev, status: t.Status, worker: t.WorkerID}
	}
	f.ready, f.leases = ready, leases
	// Entries are written before their task: an entry whose task has not
	// caught up yet is looked at again on the next poll.
	for i, id := range ids {
		if t := got[i]; t != nil {
			if k, ok := leases[id]; ok && queue.LeaseKey(t) != k {
				delete(f.leases, id)
			}
			if k, ok := ready[id]; ok && queue.ReadyKey(t) != k {
				delete(f.ready, id)
			}
		}
	}
	// Forget tasks without index entries once they are terminal, or after a
	// round in which nothing about them changed (a running task whose lease
	// entry is not written yet is kept, so its claim is not printed twice).
	for id, s := range f.seen {
		_, r := ready[id]
		_, l := leases[id]
		if !r && !l && (s.status.Terminal() || !cand[id]) {
			delete(f.seen, id)
		}
	}
	return evs, firstErr
}

// listIndexIDs lists every key under prefix (all pages) and maps task id to
// key. Keys that do not parse are skipped; for an id with several entries
// the last key wins.
func listIndexIDs(ctx context.Context, s store.Store, prefix string, parse func(string) (uuid.UUID, error)) (map[uuid.UUID]string, error) {
	out := map[uuid.UUID]string{}
	token := ""
	for {
		page, err := s.List(ctx, store.ListParams{Prefix: prefix, Token: token})
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
