package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store"
)

// checker holds the bucket and the handlers' journal against the
// invariants (see doc.go).
type checker struct {
	f          *fleet
	violations []Violation
	seen       map[string]bool             // kind and task reported once
	ended      map[uuid.UUID]time.Duration // tasks seen in a final status, and when
	specs      map[uuid.UUID]TaskSpec      // each task's input
	status     map[uuid.UUID]queue.Status  // last status seen
	last       map[uuid.UUID]*queue.Task   // last version seen
	etag       map[uuid.UUID]string        // its ETag
	firstSeen  map[uuid.UUID]time.Duration // when the check first saw the task
	keys       map[string]bool             // index keys at the last check
	pending    map[uuid.UUID]time.Duration // when each task first became pending (final)
	started    map[uuid.UUID]time.Duration // when its first handler run started (final)
	depth      []depthAt                   // ready entries at each check
	maxRunning map[string]int              // most handlers of a capped type at a check
	prio       map[uuid.UUID]int           // each task's priority level, for the order check (final)
}

// depthAt is how many ready entries the index held at a check.
type depthAt struct {
	at time.Duration
	n  int
}

// deepest is the most ready entries seen at the checks within [from, to].
func (c *checker) deepest(from, to time.Duration) int {
	n := 0
	for _, d := range c.depth {
		if d.at >= from && d.at <= to {
			n = max(n, d.n)
		}
	}
	return n
}

func (c *checker) violate(kind, task, detail string) {
	if c.seen[kind+task] {
		return
	}
	c.seen[kind+task] = true
	c.violations = append(c.violations, Violation{At: c.f.now(), Kind: kind, Task: task, Detail: detail})
}

func (c *checker) name(id uuid.UUID) string {
	if s, ok := c.specs[id]; ok {
		return fmt.Sprintf("#%d %s", s.N, queue.ShortID(id))
	}
	return id.String()
}

// indexKeys lists every ready, lease, waiting and dead-letter key.
func (c *checker) indexKeys(ctx context.Context) map[string]bool {
	keys := map[string]bool{}
	for _, prefix := range []string{queue.ReadyPrefix, queue.LeasesPrefix, queue.WaitingPrefix, queue.DeadPrefix} {
		tok := ""
		for {
			page, err := c.f.mem.List(ctx, store.ListParams{Prefix: prefix, Token: tok})
			if err != nil {
				c.violate("check", "", err.Error())
				return keys
			}
			for _, o := range page.Objects {
				keys[o.Key] = true
			}
			if tok = page.NextToken; tok == "" {
				break
			}
		}
	}
	return keys
}

// check looks at one instant (every goroutine of the run is blocked):
// every task a submit returned exists, a pending task has its ready entry,
// a running one its lease entry (so the lease check finds it), a waiting
// one its waiting entry and a failed one its dead-letter entry.
func (c *checker) check(ctx context.Context) {
	if c.specs == nil {
		c.specs, c.status, c.last, c.firstSeen = map[uuid.UUID]TaskSpec{}, map[uuid.UUID]queue.Status{}, map[uuid.UUID]*queue.Task{}, map[uuid.UUID]time.Duration{}
		c.etag = map[uuid.UUID]string{}
	}
	c.keys = c.indexKeys(ctx)
	ready := 0
	for k := range c.keys {
		if strings.HasPrefix(k, queue.ReadyPrefix) {
			ready++
		}
	}
	c.depth = append(c.depth, depthAt{c.f.now(), ready})
	c.caps()
	c.f.mu.Lock()
	ids := make([]uuid.UUID, 0, len(c.f.tasks))
	for id := range c.f.tasks {
		if _, done := c.ended[id]; !done {
			ids = append(ids, id)
		}
	}
	c.f.mu.Unlock()
	faultsOver := c.f.now() > c.f.sc.FaultsEnd
	for _, id := range ids {
		// A task unchanged since the last check (same ETag) is not decoded
		// again: most tasks wait or run through many checks.
		tkey := c.f.inspect.TaskKey(id)
		obj, err := c.f.mem.Get(ctx, tkey)
		switch {
		case errors.Is(err, store.ErrNotFound):
			c.violate("lost", id.String(), "a task its submit returned is not in the bucket")
			continue
		case err != nil:
			c.violate("unreadable", id.String(), err.Error())
			continue
		}
		t := c.last[id]
		if t == nil || obj.ETag != c.etag[id] {
			if t, err = queue.DecodeTask(tkey, obj.Body); err != nil {
				c.violate("unreadable", id.String(), err.Error())
				continue
			}
			c.etag[id] = obj.ETag
		}
		if _, ok := c.specs[id]; !ok {
			var s TaskSpec
			_ = json.Unmarshal(t.Input, &s)
			c.specs[id] = s
			c.firstSeen[id] = c.f.now()
		}
		c.status[id], c.last[id] = t.Status, t
		var key, what string
		switch t.Status {
		case queue.StatusPending:
			key, what = queue.ReadyKey(t), "pending task has no ready entry"
		case queue.StatusRunning:
			key, what = queue.LeaseKey(t), "running task has no lease entry: the lease check cannot find it"
		case queue.StatusWaiting:
			key, what = queue.WaitingKey(t), "waiting task has no waiting entry"
		case queue.StatusFailed:
			key, what = queue.DeadKey(t), "failed task has no dead-letter entry"
		}
		if key != "" && !c.keys[key] {
			c.violate("unindexed", c.name(id), fmt.Sprintf("%s (rev %d, %s; wants %s)", what, t.Rev, t.LastEvent, key))
		}
		// Replays happen only while the faults run: after that a task
		// in a final status stays there.
		if t.Status.Terminal() && (faultsOver || t.Status == queue.StatusCompleted || t.Status == queue.StatusArchived) {
			c.ended[id] = c.f.now()
		}
	}
}

// caps checks the fleet-wide concurrency caps at this instant: the
// handlers running each capped type, as the handlers themselves recorded
// it (not qo's counters), are at most its cap.
func (c *checker) caps() {
	running := c.f.journal.running()
	if c.maxRunning == nil {
		c.maxRunning = map[string]int{}
	}
	for _, l := range c.f.sc.Limits {
		c.maxRunning[l.Type] = max(c.maxRunning[l.Type], running[l.Type])
		if l.Concurrency > 0 && running[l.Type] > l.Concurrency {
			c.violate("over cap", l.Type+"@"+c.f.now().String(), fmt.Sprintf("%d handlers of type %s running at once, over its fleet-wide cap of %d", running[l.Type], l.Type, l.Concurrency))
		}
	}
}

// RateWindows are the windows the rate bound is checked over.
var RateWindows = []time.Duration{10 * time.Second, time.Minute}

// rates checks the fleet-wide rate limits once the run stopped, from the
// handlers the journal shows, each at the time its claim sent its first
// request, right after taking its token: in any window of length T
// (RateWindows) at most rate*T/per + burst + one per worker process
// serving the type in the window starts (queue/doc.go, "Fleet-wide rate
// limits", which counts a start when its token is taken). The handlers'
// own start times follow by a claim's requests, so they jitter by a
// claim's latency: in a slow window (seconds a request) the claims of a
// steady rate end together when it ends, and their handlers start in a
// bunch (seed 1597: 25 handlers in 10 s against a bound of 23, the
// claims' tokens within it). It returns how close each limited type came
// to its limits (Report.Limited).
func (c *checker) rates() map[string]string {
	all := c.f.journal.all()
	seen := map[string]string{}
	for _, l := range c.f.sc.Limits {
		var parts []string
		if l.Concurrency > 0 {
			parts = append(parts, fmt.Sprintf("cap %d/%d", c.maxRunning[l.Type], l.Concurrency))
		}
		if l.Rate > 0 {
			parts = append(parts, c.rate(l, all)...)
		}
		seen[l.Type] = strings.Join(parts, "; ")
	}
	return seen
}

// rate checks the rate limit l over every window and returns, for each
// window length, the most starts in one against its bound.
func (c *checker) rate(l FleetLimit, all []run) []string {
	var starts []time.Duration
	for _, r := range all {
		if r.typ == l.Type {
			starts = append(starts, r.claimed)
		}
	}
	slices.Sort(starts)
	burst := l.Burst
	if burst == 0 {
		burst = queue.DefaultBurst(l.Rate, l.Per)
	}
	var seen []string
	for _, T := range RateWindows {
		base := l.Rate*int(T/l.Per) + burst
		j, most, mostBound, reported := 0, 0, base, false
		for i := range starts {
			for j < len(starts) && starts[j] < starts[i]+T {
				j++
			}
			n := j - i
			if n <= most && n <= base {
				continue // within the bound whatever the processes
			}
			procs := c.f.procsServing(l.Type, starts[i], starts[i]+T)
			if n > most {
				most, mostBound = n, base+procs
			}
			if n > base+procs && !reported { // the first window over it
				reported = true
				c.violate("over rate", fmt.Sprintf("%s/%s@%s", l.Type, T, starts[i]), fmt.Sprintf("%d handlers of type %s started in the %s from %s, over the bound %d (%d/%s, burst %d, %d worker processes)", n, l.Type, T, starts[i], base+procs, l.Rate, l.Per, burst, procs))
			}
		}
		seen = append(seen, fmt.Sprintf("%s %d/%d", T, most, mostBound))
	}
	return seen
}

func (c *checker) allEnded() bool {
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	return len(c.ended) >= len(c.f.tasks)
}

// stuck reports every task that did not end within the drain bound.
func (c *checker) stuck() {
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	for id := range c.f.tasks {
		if _, ok := c.ended[id]; ok {
			continue
		}
		detail := "did not end within the drain bound"
		if t := c.last[id]; t != nil {
			detail = fmt.Sprintf("%s: %s, rev %d, %s, attempt %d, worker %q, available %s", detail, t.Status, t.Rev, t.LastEvent, t.Attempt, t.WorkerID, t.AvailableAt.Sub(c.f.start))
		}
		c.violate("not finished", c.name(id), detail)
	}
}

// final checks each task's whole history once the run stopped: it
// completed at most once, its result was never overwritten and came from
// a handler run that finished; and no two runs of a task overlapped.
func (c *checker) final(ctx context.Context) {
	runs := map[uuid.UUID][]run{}
	for _, r := range c.f.journal.all() {
		runs[r.task] = append(runs[r.task], r)
	}
	c.f.mu.Lock()
	ids := slices.Collect(func(yield func(uuid.UUID) bool) {
		for id := range c.f.tasks {
			if !yield(id) {
				return
			}
		}
	})
	c.f.mu.Unlock()
	c.pending, c.started = map[uuid.UUID]time.Duration{}, map[uuid.UUID]time.Duration{}
	for _, id := range ids {
		evs, err := c.f.inspect.History(ctx, id)
		if err != nil {
			c.violate("lost", c.name(id), err.Error())
			continue
		}
		succeeded := 0
		var result json.RawMessage
		for _, ev := range evs {
			if ev.Err != nil {
				c.violate("malformed", c.name(id), ev.Err.Error())
				continue
			}
			if ev.Task == nil {
				c.violate("deleted", c.name(id), "a version of the task is a delete marker")
				continue
			}
			if _, ok := c.pending[id]; !ok && ev.Status == queue.StatusPending {
				c.pending[id] = ev.At.Sub(c.f.start)
			}
			if ev.Name == queue.EventSucceeded {
				succeeded++
				result = ev.Task.Output
				var out struct{ Lease string }
				_ = json.Unmarshal(result, &out)
				if !slices.ContainsFunc(runs[id], func(r run) bool { return r.lease == out.Lease && r.how == "done" }) {
					c.violate("foreign result", c.name(id), "the result names lease "+out.Lease+", which no finished handler run held")
				}
			} else if result != nil && ev.Task.Output != nil && !bytes.Equal(ev.Task.Output, result) {
				c.violate("overwritten", c.name(id), fmt.Sprintf("rev %d (%s) changed the result", ev.Rev, ev.Name))
			}
		}
		if succeeded > 1 {
			c.violate("completed twice", c.name(id), fmt.Sprintf("%d succeeded events", succeeded))
		}
		rs := runs[id]
		slices.SortFunc(rs, func(a, b run) int { return int(a.start - b.start) })
		for i := 1; i < len(rs); i++ {
			if prev := rs[i-1]; prev.end > rs[i].start {
				c.violate("two at once", c.name(id), fmt.Sprintf("run on %s (lease %s) %s-%s overlaps run on %s from %s",
					prev.worker, prev.lease, prev.start, prev.end, rs[i].worker, rs[i].start))
			}
		}
		if len(rs) > 0 {
			c.started[id] = rs[0].start
		}
	}
}

// overtake checks the order promise once the faults stopped: no task
// waits more than OvertakeBound, while some worker that serves its type
// could have started it (a slot free, see capacity.go, and not handed
// over to a task ranked before it) and no task of its type and a higher
// priority is ready and waiting (priority order gives those the slot),
// to start behind a newer task of its type, priority and task key (newer:
// it became pending later) that started before it, whatever the depth of
// the ready index (keys take turns, so the order holds within a key, and
// among the tasks without one). It returns the longest wait
// while the index held no more than one walk reads (maxWalk entries) and
// the longest while it was deeper, for the report.
func (c *checker) overtake(maxWalk int) (shallow, deep time.Duration, longest string) {
	from := c.f.sc.FaultsEnd + Settle
	runs := c.f.journal.all()
	procSlots := c.f.procSlots(runs)
	type item struct {
		id             uuid.UUID
		typ, prio      string // type, and type/priority
		pending, start time.Duration
	}
	groups := map[string][]item{}
	// higher: for each type and priority, when a task of that type and a
	// higher priority was ready and not started yet; a slot is not free
	// for a task while one ranked before it waits for one.
	higher := map[string][]span{}
	c.f.mu.Lock()
	for id, s := range c.f.tasks {
		p, ok1 := c.pending[id]
		st, ok2 := c.started[id]
		if ok1 {
			end := forever
			if ok2 {
				end = st
			}
			for _, lower := range queue.Priorities[s.priority.Level()+1:] {
				k := s.typ + "/" + string(lower)
				higher[k] = append(higher[k], span{p, end})
			}
		}
		if !ok1 || !ok2 || st < from {
			continue
		}
		// Keys take turns: the order is promised within a key (and among
		// the tasks without one), not across keys.
		k := s.typ + "/" + string(s.priority)
		g := k + "/" + s.key
		groups[g] = append(groups[g], item{id, s.typ, k, p, st})
	}
	c.f.mu.Unlock()
	rated := map[string]bool{}
	for _, l := range c.f.sc.Limits {
		rated[l.Type] = l.Rate > 0
	}
	for _, items := range groups {
		k := items[0].prio
		if rated[items[0].typ] {
			// A rate-limited type is not held to the order promise: the
			// rate is split in token buckets over the workers, and one
			// with a page of older tasks and no token leaves them while
			// another with tokens starts newer ones (see doc.go).
			continue
		}
		typ := items[0].typ
		blocked := normalize(append(c.f.blocked(runs, typ), higher[k]...))
		slots := usable(procSlots[typ], func(run) bool { return false }, blocked)
		// Newest first, carrying the earliest start of the newer ones.
		slices.SortFunc(items, func(a, b item) int { return int(b.pending - a.pending) })
		earliest := time.Duration(-1)
		for i := 0; i < len(items); {
			// Tasks pending at the same instant are not newer than each
			// other: judge them all, then count their starts.
			j := i
			for j < len(items) && items[j].pending == items[i].pending {
				j++
			}
			for _, it := range items[i:j] {
				if earliest >= 0 && it.start > earliest {
					// How long it waited behind the newer task while
					// some worker that serves its type had a slot free.
					wait := within(slots, earliest, it.start)
					if wait > 0 {
						// Not the hand-overs of slots to tasks ranked
						// before it.
						wait = within(usable(overlapping(procSlots[typ], earliest, it.start), c.rankedBefore(it.id), blocked), earliest, it.start)
					}
					if wait > max(shallow, deep) {
						longest = fmt.Sprintf("%s waited %s (pending at %s, started at %s, a newer one at %s)", c.name(it.id), wait, it.pending, it.start, earliest)
					}
					if c.deepest(max(it.pending, from), it.start) > maxWalk {
						deep = max(deep, wait)
					} else {
						shallow = max(shallow, wait)
					}
					if wait > OvertakeBound {
						c.violate("overtaken", c.name(it.id), fmt.Sprintf("waited %s with a slot free for its type after a newer task of its type and priority started (%s in all; pending at %s, started at %s)", wait, it.start-earliest, it.pending, it.start))
					}
				}
			}
			for _, it := range items[i:j] {
				if earliest < 0 || it.start < earliest {
					earliest = it.start
				}
			}
			i = j
		}
	}
	return shallow, deep, longest
}

// rankedBefore reports whether a run started a task ranked before task id
// (of any type: a worker claims its types in rank order): its first run,
// of a higher priority, or of the same and pending earlier. A retry's
// rank is not known here: it is not counted as ranked before.
func (c *checker) rankedBefore(id uuid.UUID) func(run) bool {
	c.f.mu.Lock()
	if c.prio == nil {
		c.prio = map[uuid.UUID]int{}
		for tid, s := range c.f.tasks {
			c.prio[tid] = s.priority.Level()
		}
	}
	c.f.mu.Unlock()
	mine, pending := c.prio[id], c.pending[id]
	return func(r run) bool {
		p, ok1 := c.prio[r.task]
		at, ok2 := c.pending[r.task]
		if !ok1 || !ok2 || c.started[r.task] != r.start {
			return false
		}
		return p < mine || p == mine && at < pending
	}
}

// overlapping returns the spans of ss that meet [from, to].
func overlapping(ss []slotSpan, from, to time.Duration) []slotSpan {
	var out []slotSpan
	for _, s := range ss {
		if s.from <= to && s.to >= from {
			out = append(out, s)
		}
	}
	return out
}
