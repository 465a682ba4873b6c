// Claims: from the held view in claim order, or from a scan's listing;
// each in the background, holding its slot until it is won or lost.

package worker

import (
	"context"
	"errors"
	"hash/fnv"
	"slices"
	"sync"
	"time"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store"
)

// claimHeld starts claims from the held view, up to free: the worker's
// own (and late) entries within the horizon, oldest first; or, in a view
// without any, the others' entries newest first, starting at the worker's
// stable offset, so that a helper meets an entry's own worker once (where
// the one coming from the oldest and the one coming from the newest meet)
// and helpers begin apart. It does not wait for them: a claim holds its
// slot from the moment it starts, and one lost to another worker is
// reported to the next poll (see lostClaims), which drops the view.
func (w *Worker) claimHeld(ctx context.Context, free int) (started int) {
	v := &w.view
	if len(v.entries) == 0 {
		return 0
	}
	w.refreshControl(ctx, min(controlFresh, w.opts.ControlRefresh))
	var perType map[string]int
	if w.anyLimits() {
		perType = w.runningByType()
	}
	now := w.clock.Now()
	order := make([]int, 0, len(v.entries))
	for i := range v.entries {
		if v.claimable(&v.entries[i]) {
			order = append(order, i)
		}
	}
	if !v.help {
		w.turns.keep(v.entries)
		order = append(order, v.keyTurns(order)...)
		order = fairOrder(v.entries, order, &w.turns) // keys take turns (see keys.go)
	}
	if v.help {
		slices.Reverse(order)
		if n := len(order); n > 1 {
			k := int(w.offset() % uint32(n))
			order = append(order[k:], order[:k]...)
		}
	}
	// With weights (see weights.go) the types take turns; a type at its
	// limit takes no part.
	next := w.weightedOrder(v.entries, order)
	full := func(typ string) bool { return w.atLimit(typ, perType) }
	pass := w.passer(now, full)
	for started < free && !w.stopping(ctx) {
		i, ok := next.next(full)
		if !ok {
			break
		}
		h := &v.entries[i]
		if w.control.ctl.IsPaused(h.Type) {
			h.done = true
			continue
		}
		if w.atLimit(h.Type, perType) {
			continue // this type is full; a later poll takes it
		}
		if !w.keyReadyNow(h.Type, h.TaskKey) {
			continue // this key is at its per-key cap or rate; a later poll takes it
		}
		h.done = true
		if h.TaskKey != "" || len(w.turns.last) > 0 {
			w.turns.took(h.Type, h.TaskKey)
		}
		if perType != nil {
			perType[h.Type]++
		}
		pass(h)
		if p := v.pages[h.Partition()]; p != nil {
			p.claimed = true
		}
		own, key, part := h.own, h.Key, h.Partition()
		w.log.Debug("claiming", "task_id", h.ID, "rank", h.Rank, "own", own, "late", !own && v.late(h), "help", v.help)
		w.tried.begin(key)
		w.startClaim(ctx, h.ReadyEntry, func(o claimOutcome) {
			w.tried.end(key, o == claimLost, time.Now(), w.opts.PageHold)
			if o == claimLost {
				w.lost.note(own, part)
			}
		})
		started++
	}
	v.entries = slices.DeleteFunc(v.entries, func(h heldEntry) bool { return h.done })
	return started
}

// passer returns what records the passes of a claim (see passedRanks),
// for each group of entries the view holds (passKey: a task key of a
// type, or a type's entries without a key): the claim's rank, but no
// further than the worker's oldest own entry of that group it could take
// now and has not (the view is in rank order). Keys and weighted types
// take turns, so a task is started ahead of older ones of the worker's own
// by design; the others' entries beside those are not left behind by it,
// and counting them passed would set every worker racing for them a page
// hold later. A group it holds none of its own of is passed up to the
// claim's rank, as are groups not in the view (anyGroup).
func (w *Worker) passer(now time.Time, full func(typ string) bool) func(h *heldEntry) {
	v := &w.view
	own := map[typeKey][]int{} // group -> the view's own entries, in order
	groups := map[typeKey]bool{}
	for i := range v.entries {
		if o := &v.entries[i]; !o.done {
			k := passKey(o.ReadyEntry)
			groups[k] = true
			if o.own {
				own[k] = append(own[k], i)
			}
		}
	}
	oldestOwn := func(k typeKey) (time.Time, bool) {
		for ; len(own[k]) > 0; own[k] = own[k][1:] {
			o := &v.entries[own[k][0]]
			if !o.done && v.within(o) && !w.control.ctl.IsPaused(o.Type) && !full(o.Type) && w.keyReadyNow(o.Type, o.TaskKey) {
				return o.Rank, true
			}
		}
		return time.Time{}, false
	}
	return func(h *heldEntry) {
		w.passed.note(anyGroup, now, h.Rank, w.opts.PageHold)
		for k := range groups {
			r := h.Rank
			if o, ok := oldestOwn(k); ok && o.Before(r) {
				r = o
			}
			w.passed.note(k, now, r, w.opts.PageHold)
		}
	}
}

// lostClaims records that claims from the held view were lost to another
// claimer since the dispatch loop last looked, and in which partitions
// of the ready index.
type lostClaims struct {
	mu       sync.Mutex
	any, own bool
	parts    map[string]bool
}

func (l *lostClaims) note(own bool, part string) {
	l.mu.Lock()
	l.any = true
	l.own = l.own || own
	if l.parts == nil {
		l.parts = map[string]bool{}
	}
	l.parts[part] = true
	l.mu.Unlock()
}

// take returns and clears what was recorded.
func (l *lostClaims) take() (lost, own bool, parts map[string]bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	lost, own, parts = l.any, l.own, l.parts
	l.any, l.own, l.parts = false, false, nil
	return lost, own, parts
}

// triedKeys are the ready entries this worker claimed from its held view,
// kept until a walk that began after the claim ended: a walk whose LIST
// was answered before a claim deleted its entry still shows it (and a
// no-op task can even be completed by then), and claiming it again would
// be lost to this worker itself, dropping the view. A task released or
// retried gets a new entry (a new rank), which is not among them. Only
// the held view's claims are kept: the scans of tasks/ wait for their
// claims and never walk, so nothing would ever forget theirs.
//
// An entry whose claims keep being lost is a leftover (its task moved on
// and the delete of the entry failed; claims remove it once it is
// IndexGrace old) or the first write of a task not yet pending (see
// queue/doc.go, "The index rule"). Tried again after each walk, it cost a
// LIST and a GET per request latency, for up to a minute; a claim lost on
// the same entry again waits lostBackoff before it is tried once more,
// doubling up to PageHold, so a leftover costs a few dozen requests and a
// task whose write was slow waits at most about as long again.
type triedKeys struct {
	mu sync.Mutex
	m  map[string]triedKey
}

// triedKey is a ready entry claimed from.
type triedKey struct {
	ended time.Time // when its last claim ended (zero: in flight)
	lost  int       // claims of it lost in a row
	until time.Time // not tried again before
}

const (
	// lostBackoff is the wait before an entry is tried again after its
	// second lost claim; it doubles with each further one.
	lostBackoff = 100 * time.Millisecond
	// maxTried bounds the entries kept for their lost claims.
	maxTried = 10_000
)

func (k *triedKeys) begin(key string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.m == nil {
		k.m = map[string]triedKey{}
	}
	t := k.m[key]
	t.ended = time.Time{}
	k.m[key] = t
}

// end records the end of a claim of key, lost or not, at now; after a
// lost claim of an entry lost before, the entry waits before it is tried
// again (at most most).
func (k *triedKeys) end(key string, lost bool, now time.Time, most time.Duration) {
	k.mu.Lock()
	defer k.mu.Unlock()
	t := k.m[key]
	t.ended = now
	if !lost {
		t.lost, t.until = 0, time.Time{}
		k.m[key] = t
		return
	}
	t.lost++
	if t.lost > 1 {
		t.until = now.Add(min(lostBackoff<<min(t.lost-2, 16), most))
	}
	k.m[key] = t
}

// drop forgets the claims that ended before a walk began at began (an
// entry of theirs it still shows is one their claim did not remove: a
// failed claim, a failed delete), but for those waiting out a backoff
// at now, and removes the entries of the claims it still keeps from what
// the walk found. An entry's count of lost claims is kept while the walks
// still show it.
func (k *triedKeys) drop(entries []queue.ReadyEntry, began, now time.Time) []queue.ReadyEntry {
	k.mu.Lock()
	defer k.mu.Unlock()
	shown := make(map[string]bool, len(entries))
	for _, e := range entries {
		shown[e.Key] = true
	}
	hidden := func(t triedKey) bool {
		return t.ended.IsZero() || !t.ended.Before(began) || now.Before(t.until)
	}
	for key, t := range k.m {
		if !hidden(t) && (t.lost == 0 || !shown[key] || len(k.m) > maxTried) {
			delete(k.m, key)
		}
	}
	return slices.DeleteFunc(entries, func(e queue.ReadyEntry) bool {
		t, ok := k.m[e.Key]
		return ok && hidden(t)
	})
}

// skippedKeys are the ready entries whose task object was malformed when
// a claim read it: the worker leaves them alone for malformedRetry and
// warns once, rather than reading the object at every walk that lists
// the entry (a GET and a warning per poll, for ever). Bounded: past
// maxSkipped keys, the earliest to be retried goes.
type skippedKeys struct {
	mu sync.Mutex
	m  map[string]time.Time // ready key -> when to try it again
}

const (
	// malformedRetry is how long a malformed task's entry is left alone.
	malformedRetry = 10 * time.Minute
	maxSkipped     = 10_000
)

// skip leaves key alone until until; it reports whether the key was not
// skipped already (the caller warns then).
func (k *skippedKeys) skip(key string, until time.Time) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.m == nil {
		k.m = map[string]time.Time{}
	}
	_, known := k.m[key]
	if !known && len(k.m) >= maxSkipped {
		var first string
		for key, at := range k.m {
			if first == "" || at.Before(k.m[first]) {
				first = key
			}
		}
		delete(k.m, first)
	}
	k.m[key] = until
	return !known
}

// drop removes the skipped entries from what a walk found at now, and
// forgets those due to be tried again (they are kept in what it found).
func (k *skippedKeys) drop(entries []queue.ReadyEntry, now time.Time) []queue.ReadyEntry {
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.m) == 0 {
		return entries
	}
	return slices.DeleteFunc(entries, func(e queue.ReadyEntry) bool {
		until, ok := k.m[e.Key]
		if ok && !now.Before(until) {
			delete(k.m, e.Key)
			return false
		}
		return ok
	})
}

// claimEntries claims entries in order, as many at once as slots are free,
// until free tasks were claimed or a claim was lost to another claimer
// (every further try would likely cost a GET for nothing). It returns how
// many were claimed and how many entries were tried.
func (w *Worker) claimEntries(ctx context.Context, entries []queue.ReadyEntry, free int) (claimed, tried int) {
	var perType map[string]int
	if w.anyLimits() {
		perType = w.runningByType()
	}
	for tried < len(entries) && claimed < free && !w.stopping(ctx) {
		var batch []queue.ReadyEntry
		for ; tried < len(entries) && claimed+len(batch) < free; tried++ {
			e := entries[tried]
			if w.atLimit(e.Type, perType) || !w.keyReadyNow(e.Type, e.TaskKey) {
				continue // this type (or key) is full; another poll takes it
			}
			if perType != nil {
				perType[e.Type]++
			}
			batch = append(batch, e)
		}
		won, lost := w.claimBatch(ctx, batch, perType)
		claimed += won
		if lost {
			return claimed, tried
		}
	}
	return claimed, tried
}

type claimOutcome int

const (
	claimFailed claimOutcome = iota // an error (logged); the entry stays
	claimWon                        // the task runs
	claimLost                       // another claimer won, or the entry is stale
)

// claimBatch claims the entries at once, one request chain each, and
// waits for them. It returns how many were won and whether one was lost
// to another claimer; perType (when not nil, counting these claims
// already) gets back the ones not won.
func (w *Worker) claimBatch(ctx context.Context, entries []queue.ReadyEntry, perType map[string]int) (won int, lost bool) {
	out := make([]claimOutcome, len(entries))
	var wg sync.WaitGroup
	for i, e := range entries {
		wg.Add(1)
		w.startClaim(ctx, e, func(o claimOutcome) {
			out[i] = o
			wg.Done()
		})
	}
	wg.Wait()
	for i, outcome := range out {
		if outcome == claimWon {
			won++
			continue
		}
		if perType != nil {
			perType[entries[i].Type]--
		}
		lost = lost || outcome == claimLost
	}
	return won, lost
}

// startClaim claims the task of e in the background; the claim holds a
// slot until it is won (the task then holds it) or not. A claim is four
// requests in a row (see queue.Claim): a worker whose claims waited for
// each other, or for the slowest of a batch, would keep its slots filled
// at the pace of one claim's latency rather than the store's. done, when
// not nil, gets the outcome.
func (w *Worker) startClaim(ctx context.Context, e queue.ReadyEntry, done func(claimOutcome)) {
	w.mu.Lock()
	if !w.capAdmits(e.Type) || !w.keyAdmits(e.Type, e.TaskKey) || !w.keyRateAdmits(e.Type, e.TaskKey) || !w.rateAdmits(e.Type) {
		// The type's share of its fleet-wide cap shrank since the poll
		// looked (see caps.go): the entry stays for a later poll.
		w.mu.Unlock()
		if done != nil {
			done(claimFailed)
		}
		return
	}
	w.claiming[e.Type]++
	w.claimKey(e.Type, e.TaskKey)
	w.mu.Unlock()
	w.claims.Add(1)
	go func() {
		defer w.claims.Done()
		o := w.claimOne(ctx, e) // a won claim hands its slot to its task (see start)
		if o != claimWon {
			w.mu.Lock()
			w.unclaimRated(e.Type)
			w.unclaimKey(e.Type, e.TaskKey)
			w.mu.Unlock()
			w.slotFreed()
		}
		if done != nil {
			done(o)
		}
	}()
}

// unclaim gives back the slot of a claim of typ (w.mu held).
func (w *Worker) unclaim(typ string) {
	if w.claiming[typ]--; w.claiming[typ] <= 0 {
		delete(w.claiming, typ)
	}
}

// claimOne claims the task of one entry and starts it.
func (w *Worker) claimOne(ctx context.Context, e queue.ReadyEntry) claimOutcome {
	// The claim runs to completion even if shutdown starts meanwhile: a
	// claim whose answer we never saw would leave the task running until
	// its holder is found dead.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	began := time.Now()
	l, err := w.q.Claim(cctx, e, w.opts.ID)
	cancel()
	switch {
	case err == nil:
		if l.Task.TaskKey != e.TaskKey && !w.keyFitsNow(l.Task.Type, l.Task.TaskKey) {
			w.releaseMiskeyed(ctx, l, e)
			return claimLost
		}
		w.observer().Claimed(e.Type)
		w.start(l, e, began)
		return claimWon
	case errors.Is(err, queue.ErrConflict), errors.Is(err, queue.ErrNotFound):
		w.observer().ClaimConflict(e.Type)
		if errors.Is(err, store.ErrTornRead) {
			// Not an ordinary lost race: reads kept pairing a body with
			// another version's ETag. The entry is tried again at the
			// next walk; an operator should hear if it keeps happening.
			w.log.Warn("claim skipped: the storage server returned the task's body with another version's ETag (a torn read); qo doctor checks the server", "task_id", e.ID, "err", err)
			return claimLost
		}
		w.log.Debug("ready entry not claimable", "task_id", e.ID, "reason", err)
		return claimLost
	case errors.As(err, new(*queue.MalformedError)):
		if w.malformed.skip(e.Key, w.clock.Now().Add(malformedRetry)) {
			w.log.Warn("skipping a ready task whose object is malformed; its entry is left alone for a while and tried again (fix or delete the object: qo repair lists malformed objects)",
				"task_id", e.ID, "retry_in", malformedRetry, "err", err)
		}
		return claimFailed
	default:
		w.log.Warn("claim failed", "task_id", e.ID, "key", e.Key, "err", err)
		if u := (*queue.UnknownClaimError)(nil); errors.As(err, &u) {
			w.resolveLater(u.Claim) // it may have landed: see unknownclaim.go
		}
		return claimFailed
	}
}

// offset is the worker's stable offset (a hash of its id): where it
// starts among the entries it helps with.
func (w *Worker) offset() uint32 {
	h := fnv.New32a()
	_, _ = h.Write([]byte(w.opts.ID))
	return h.Sum32()
}
