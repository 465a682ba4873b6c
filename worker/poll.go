package worker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store"
)

// Polling
//
// The ready index is keyed "ready/{shard}/{rank ms}~{type}~{priority}~{id}"
// (the rank is available_at moved by the priority, see queue/doc.go): one
// partition per shard, each in rank order. The worker keeps a page of every
// shard it polls (the held view: the entries its last listing of that
// shard found, and where that listing stopped) and claims from it as slots
// free up (each claim in the background, holding its slot until it is won
// or lost; see startClaim). Claiming is oldest first across every shard:
// the pages are merged by rank, priority and task id (compareReady),
// which is the key order within a shard, up to the horizon, the earliest
// rank at which a page was cut short (its shard may hold more after it);
// nothing is claimed while a shard was never listed.
//
// A walk (see walk) lists only the shards that are due (see
// heldView.due), first come first listed, in LISTs of ReadyPageSize
// (1,000) keys, at most 4 a walk: a shard never listed; one whose page the
// worker claimed from and that holds nothing more for it while it has a
// cut (its next entries wait for it); one whose page has a cut and holds
// entries of a type the worker cannot claim now (at its limit or its
// share of a fleet-wide cap) and none for the types it claims; one whose
// page lacks a type the worker claims now; one whose page is older than
// PageHold (10s); and one that stopped in a run of keys the worker cannot
// claim (paged on in a walk made for another reason). A page of the
// second and third kinds is listed on after its cut, for the types the
// worker claims now, when it holds entries of a type the worker cannot
// claim now or was listed for fewer types than the worker serves (the
// keys before the cut would be passed again): so entries of a type at its
// limit hold the horizon for the worker's other types only until that
// listing, as keys of a paused type or of one the worker does not serve
// never do; the entries it kept wait for a slot of their type, and the
// page is listed from its start again once it is PageHold old or that
// type is claimed again. With nothing left to claim and none of
// these, every shard is due: pages holding only other workers' entries
// are listed on after their cut, earliest cut first, the others again. A
// LIST runs on in key order past shards shallower than its page, so an
// idle worker sends one LIST per poll whatever the shard count, and a
// worker polls again at once while shards are due. Over a backlog deeper
// than a page in every shard, the worker lists each shard once to begin
// with, then one LIST per page it claims, and each shard again once its
// page is PageHold old.
//
// Workers reading the same entries split them by task id (see peers.go),
// so each claims its own share oldest first instead of racing for the same
// keys. Another worker's entry that this worker passed a page hold ago,
// while it was ready, is late (see passedRanks), and the worker claims it
// with its own, in rank order: so the share of a worker that does not
// claim it (dead, stalled, saturated, at its type limit, draining,
// failing to list) gets done. A
// worker with nothing of its own up to the horizon helps with the others'
// entries there when they are few (no more than its free slots), newest
// first; more than that are left to their workers (until late) and the
// worker backs off. A claim lost to another worker drops the page of its
// shard, which is listed again before the view is claimed from.
//
// After a poll that claimed something the worker polls again at once
// while it has free slots, then every PollMin for WarmFor (so a task that
// follows a burst is picked up within PollMin), then waits 2xPollMin,
// 4xPollMin, ... up to PollMax (jittered ±20%); a walk that found only
// other workers' work backs off at once, from 10xPollMin.
//
// Order: each worker claims in rank order across all its shards, as of
// the listing of each shard's page, whatever the depth of the backlog
// (among the types it claims now: a backlog of a type at its limit holds
// back its other types only until a walk lists its shard on past it, see
// above; a listing made for fewer types keeps the view's entries of the
// others, so a type at its limit is claimed oldest first across every
// shard as its slots free, not from the shards listed in the moments one
// was free). A
// task that became ready after its shard's page was listed, ranked before
// entries the view holds (a higher-priority one, or one in a shard listed
// to its end), waits until that page is listed again: at most PageHold
// after it was listed, plus one poll wait (at most PollMax, jittered) for
// a worker with a free slot, plus the walks it takes to list the pages
// due before it, one after another, 4 LISTs each (ceil(S/4) for S shards
// all due at once). Meanwhile at most the tasks claimed in that time pass
// it. Across workers a task is overtaken only by tasks other workers
// started while their share was ahead of its worker's.
//
// The bound behind another worker's share: take a ready task and a worker
// W that serves its type, polls its shard and has a free slot. Once W has
// started a task ranked after it (a newer one of its priority) while
// the task was ready, or walked and found only others' entries up to its
// horizon, W claims it, if its own worker has not, the first time W's held
// view holds it after 5/4 PageHold more (passing is counted in eighths of
// a hold, each for what was ready when it began: the eighth that began
// after the task was ready ends within two eighths, and counts a hold
// after that), after the late entries ranked before it (themselves passed
// at most as long before): so at most about 2 x 5/4 PageHold plus a poll
// wait, whatever the depth of the backlog, however unequal the workers,
// and whatever holds its own worker up. The held view holds it by then
// (its shard's page is listed again within PageHold and a poll wait, see
// above). With the defaults: 31 s, plus the claims' own time and the skew
// of the clock lateness is timed by; the fleet simulation holds whole
// fleets to 40 s (worker/sim, OvertakeBound). Only what W passed while it
// was ready is late: were every entry ranked before the highest rank W
// ever passed late once ready a hold, one low-priority task started on an
// idle fleet (ranked a quarter hour on) would make every share late for a
// quarter hour, and every worker would claim the same oldest entries,
// losing most of the races and listing the shards again after each.

// othersWait: after a walk that found only other workers' work, the
// worker waits this many PollMin before it looks again (then twice as
// long, and so on).
const othersWait = 10

type pollResult struct {
	claimed int
	// more: there is more to read right away (next page, rest of a scan
	// pass), so do not sleep.
	more bool
	// empty: a listing from the start found nothing claimable.
	empty bool
	// others: what is left is other workers' work, in hand: back off
	// even while warm.
	others bool
	err    error
}

type scanState struct {
	idx     int               // next shard (index into the scanned list)
	cursors map[string]string // per-shard page cursor
}

func (w *Worker) dispatch(ctx context.Context) {
	wait := w.opts.PollMin
	var lastErr string
	for {
		if w.stopping(ctx) {
			return
		}
		free := w.opts.Concurrency - w.slotsTaken()
		if free <= 0 {
			select {
			case <-ctx.Done():
				return
			case <-w.abort:
				return
			case <-w.taskDone:
			}
			continue
		}
		var r pollResult
		if w.presumedDead() {
			// Tasks claimed now would be taken back at once: wait for a
			// heartbeat to land.
			r.err = fmt.Errorf("worker %s: no heartbeat has reached the store for %s; not claiming until one does", w.opts.ID, w.opts.DeadAfter)
		} else {
			r = w.poll(ctx, free)
		}
		if w.stopping(ctx) {
			return
		}
		_, holding := w.pollShards()
		w.notePoll(r.err, !holding)
		if r.err != nil {
			if msg := r.err.Error(); msg != lastErr {
				w.log.Warn("polling failed (backing off)", "err", r.err)
				lastErr = msg
			}
		} else if lastErr != "" {
			w.log.Info("polling recovered")
			lastErr = ""
		}
		if r.claimed > 0 {
			w.lastWork = time.Now()
			wait = w.opts.PollMin
			continue
		}
		if r.more && r.err == nil {
			continue
		}
		switch {
		case r.err != nil:
		case r.others:
			// Other workers' work is in hand: look again once they had
			// time to get on with it, or to leave a few entries to help
			// with.
			wait = max(wait, othersWait*w.opts.PollMin)
		case time.Since(w.lastWork) < w.opts.WarmFor:
			wait = w.opts.PollMin
		}
		d := w.jitter(wait)
		if tw, ok := w.rateWait(); ok && tw < d {
			d = tw // a token is due before the next poll (rate.go)
		}
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-w.abort:
			t.Stop()
			return
		case <-t.C:
		}
		wait = min(2*wait, w.opts.PollMax)
	}
}

// pollShards returns the shard filter (nil: all) and false when the worker
// must not poll at all (shard leasing on and no shard held).
func (w *Worker) pollShards() ([]string, bool) {
	if w.leaser != nil {
		owned := w.leaser.owned()
		return owned, len(owned) > 0
	}
	if len(w.opts.Shards) > 0 {
		return w.opts.Shards, true
	}
	return nil, true
}

func (w *Worker) poll(ctx context.Context, free int) pollResult {
	shards, ok := w.pollShards()
	if !ok {
		return pollResult{}
	}
	types, ok := w.claimableTypes(ctx)
	if !ok {
		return pollResult{}
	}
	switch w.opts.IndexMode {
	case LogScan:
		return w.scanStep(ctx, shards, types, free)
	case Hybrid:
		if w.scanning {
			r := w.scanStep(ctx, shards, types, free)
			if r.claimed > 0 {
				w.log.Warn("found pending tasks missing from the ready index (run qo repair to rebuild the index of a damaged bucket)", "claimed", r.claimed)
			}
			if !r.more {
				w.scanning = false
				w.lastScan = time.Now()
			}
			return r
		}
		r := w.indexStep(ctx, shards, types, free)
		now := time.Now()
		switch {
		case r.empty:
			if w.emptySince.IsZero() {
				w.emptySince = now
			}
			if now.Sub(w.emptySince) >= w.opts.HybridScanAfter && now.Sub(w.lastScan) >= w.opts.HybridScanAfter {
				w.log.Debug("ready index looks empty; scanning tasks/ for pending tasks")
				w.scanning = true
				w.scan.idx = 0
				r.more = true
			}
		case r.err == nil:
			w.emptySince = time.Time{}
		}
		return r
	default:
		return w.indexStep(ctx, shards, types, free)
	}
}

// heldEntry is a ready entry of the held view.
type heldEntry struct {
	queue.ReadyEntry
	own  bool // it falls to this worker (see peers.go)
	done bool // tried (claimed, lost, or failed)
}

// shardPage is what the held view knows of one shard the worker polls: the
// entries its last listing found, those not tried yet, are in the view.
type shardPage struct {
	listed time.Time // when the LIST that read it was sent (machine clock)
	types  []string  // the types it was listed for
	// cut: the listing stopped inside the shard after entries of the
	// worker's (a shard deeper than a page), at a key of this rank: the
	// shard may hold entries ranked after it. Zero: listed to its end (or
	// see resume).
	cut time.Time
	// resume: the listing stopped inside a run of keys the worker cannot
	// claim (other types, or paused); the next listing of the shard goes
	// on after this key.
	resume string
	// next: the key the listing stopped at when it left a cut.
	next string
	// partial: listed for fewer types than the worker serves (some at
	// their limit or paused): it passed keys of theirs.
	partial bool
	// claimed: the worker started a claim from it (from the entries the
	// listing found: an onward page starts unclaimed).
	claimed bool
	// onward: it was listed on after the cut of the page before it, whose
	// entries it adds to (see due).
	onward bool
}

// heldView is what the walks of the ready index found, claimed from as
// slots free up (dispatch loop only): a page of every shard the worker
// polls, each kept until a walk lists that shard again (see due).
type heldView struct {
	entries []heldEntry // in claim order (see compareReady), every shard's
	pages   map[string]*shardPage
	// horizon: the earliest cut of a page; entries ranked after it wait
	// until that shard is listed on (zero: no horizon).
	horizon time.Time
	// blind: a shard the worker polls was never listed (its first entries
	// are unknown), so nothing is claimed before a walk lists it.
	blind bool
	// help: the view holds nothing of the worker's own, so it helps with
	// the others' entries (see claimHeld).
	help bool
	// peersAt: the list of live workers the entries were split by (its
	// readAt, see peerSet).
	peersAt time.Time
	// passed: what this worker passed a page hold ago or more (see
	// passedRanks); another worker's entry is late if it was ready when
	// its rank was passed. Set at each poll.
	passed []passedBucket
}

// within reports whether the entry may be claimed before the next walk.
func (v *heldView) within(h *heldEntry) bool {
	return !v.blind && (v.horizon.IsZero() || !h.Rank.After(v.horizon))
}

// late reports whether another worker's entry has waited a page hold
// behind tasks this worker started (see passedRanks).
func (v *heldView) late(h *heldEntry) bool {
	r := lateUpTo(v.passed, h.AvailableAt)
	return !r.IsZero() && !h.Rank.After(r)
}

// claimable reports whether the entry is one the view is claimed for.
func (v *heldView) claimable(h *heldEntry) bool {
	return !h.done && v.within(h) && (v.help || h.own || v.late(h))
}

// spent reports whether nothing in the view is left to claim before the
// next walk.
func (v *heldView) spent() bool {
	for i := range v.entries {
		if v.claimable(&v.entries[i]) {
			return false
		}
	}
	return true
}

// empty reports whether the view knows every shard to its end and holds
// nothing.
func (v *heldView) empty() bool {
	if v.blind || len(v.entries) > 0 {
		return false
	}
	for _, p := range v.pages {
		if !p.cut.IsZero() || p.resume != "" {
			return false
		}
	}
	return true
}

// keep drops the pages, and the entries, of shards no longer in wanted
// (sorted): a shard lease given up.
func (v *heldView) keep(wanted []string) {
	dropped := false
	for s := range v.pages {
		if _, ok := slices.BinarySearch(wanted, s); !ok {
			delete(v.pages, s)
			dropped = true
		}
	}
	if dropped {
		v.entries = slices.DeleteFunc(v.entries, func(h heldEntry) bool { return v.pages[h.Shard] == nil })
		v.bound(wanted)
	}
}

// bound sets the horizon and blind from the pages of the wanted shards.
func (v *heldView) bound(wanted []string) {
	v.horizon, v.blind = time.Time{}, false
	for _, s := range wanted {
		switch p := v.pages[s]; {
		case p == nil:
			v.blind = true
		case !p.cut.IsZero() && (v.horizon.IsZero() || p.cut.Before(v.horizon)):
			v.horizon = p.cut
		}
	}
}

// due returns the shards of wanted (sorted) a walk lists, in the order it
// lists them. First those never listed; then, by when they came due, a
// page listed for fewer types than the worker claims now, and a page with
// a cut that holds nothing more for it of the types it claims now (none
// of its own entries, none late) and that it claimed from or that holds
// entries of a type it does not claim now (at its limit) while listed
// for it (the shard's next entries wait for it), both due since they
// were listed (the second listed on after its cut, in onward, when the
// keys before the cut include some it would pass again: entries of a
// type it does not claim now, or keys of types the page was not listed
// for); a page older than hold, due since
// it turned that old; and a page that stopped in a run of keys the worker
// cannot claim, due since it was listed. With spent (nothing in the view
// left to claim) and none of these due, every shard is: those with a cut
// first, earliest cut first (the horizon), then the others, oldest
// listing first; the worker looks for new work, and another worker may
// have claimed what held the horizon. Ties go in shard order, so a LIST
// that runs on from one shard into the next covers the next one due too.
// urgent reports whether one is due for another reason than a run of keys
// the worker cannot claim (which waits for a walk made for another
// reason).
func (v *heldView) due(wanted, types []string, now time.Time, hold time.Duration, spent bool) (shards []string, onward map[string]bool, urgent bool) {
	// left: the shard's page holds entries for the worker (its own or
	// late) of the types it claims now; off: entries of a type it does
	// not claim now (at its limit or cap share).
	left, off, held := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for i := range v.entries {
		if h := &v.entries[i]; !h.done {
			held[h.Shard] = true
			switch {
			case !slices.Contains(types, h.Type):
				off[h.Shard] = true
			case h.own || v.late(h):
				left[h.Shard] = true
			}
		}
	}
	type dueAt struct {
		shard string
		at    time.Time
	}
	var ds []dueAt
	for _, s := range wanted {
		switch p := v.pages[s]; {
		case p == nil:
			ds, urgent = append(ds, dueAt{s, time.Time{}}), true
		case !subset(types, p.types):
			ds, urgent = append(ds, dueAt{s, p.listed}), true
		case !p.cut.IsZero() && !left[s] && (p.claimed || off[s] && !subset(p.types, types)):
			ds, urgent = append(ds, dueAt{s, p.listed}), true
			if p.next != "" && (off[s] || p.partial) {
				// What it holds waits for a slot of its type: list on
				// past the cut for the types the worker claims now.
				if onward == nil {
					onward = map[string]bool{}
				}
				onward[s] = true
			}
		case now.Sub(p.listed) >= hold:
			ds, urgent = append(ds, dueAt{s, p.listed.Add(hold)}), true
		case p.resume != "":
			ds = append(ds, dueAt{s, p.listed})
		}
	}
	if len(ds) == 0 && spent {
		for _, s := range wanted {
			ds = append(ds, dueAt{s, v.pages[s].listed})
			if p := v.pages[s]; !p.cut.IsZero() && p.next != "" && held[s] && !left[s] {
				if onward == nil {
					onward = map[string]bool{}
				}
				onward[s] = true
			}
		}
		cut := func(s string) time.Time { return v.pages[s].cut }
		slices.SortStableFunc(ds, func(a, b dueAt) int {
			switch ca, cb := cut(a.shard), cut(b.shard); {
			case ca.IsZero() != cb.IsZero():
				if ca.IsZero() {
					return 1
				}
				return -1
			case !ca.Equal(cb):
				return ca.Compare(cb)
			}
			return a.at.Compare(b.at)
		})
	} else {
		slices.SortStableFunc(ds, func(a, b dueAt) int { return a.at.Compare(b.at) })
	}
	shards = make([]string, len(ds))
	for i, d := range ds {
		shards[i] = d.shard
	}
	return shards, onward, urgent
}

// subset reports whether every element of a is in b.
func subset(a, b []string) bool {
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}

// wanted is the sorted list of the shards the worker polls (shards, or
// every shard when nil).
func (w *Worker) wanted(shards []string) []string {
	if shards == nil {
		shards = w.q.Shards()
	}
	if slices.IsSorted(shards) {
		return shards
	}
	return slices.Sorted(slices.Values(shards))
}

// compareReady is the order ready entries are claimed in, across shards:
// by rank (the time the key sorts under: available_at moved by the
// priority), then priority, then task id (time-ordered). It is the key
// order within a shard, so sorting the pages of several shards by it
// merges them.
func compareReady(a, b queue.ReadyEntry) int {
	if c := a.Rank.Compare(b.Rank); c != 0 {
		return c
	}
	if c := a.Priority.Level() - b.Priority.Level(); c != 0 {
		return c
	}
	return bytes.Compare(a.ID[:], b.ID[:])
}

// maxWalkLists bounds the LISTs of one walk of the ready index.
const maxWalkLists = 4

// walk lists the shards due (see heldView.due), in that order, up to
// maxWalkLists LISTs of ReadyPageSize keys, and returns what it found and
// the new page of each shard it listed. A LIST begins at the first key of
// the next shard due it has not listed (or after the keys a page could not
// claim, see shardPage.resume) and runs on in key order: every shard it
// passes is listed to its end, and one it stops inside after entries of the
// worker's gets a page with a cut, the rank of the last key listed. A LIST
// that entered that shard after listing others goes on in it, budget
// permitting, so the page holds up to a LIST of it. One that stops inside
// a run of keys the worker cannot claim leaves no cut: the next LIST, or
// the shard's next listing, goes on after them. Were they a horizon, a shard whose first
// page is all other types would hold back every entry of the worker's
// ranked after that page for as long as that backlog lasts; passing them,
// an entry of the worker's behind them is overtaken by at most the
// entries claimed in the walks it takes to reach it.
func (w *Worker) walk(ctx context.Context, shards, types, due []string, onward map[string]bool) ([]queue.ReadyEntry, map[string]*shardPage, error) {
	wanted := w.wanted(shards)
	var entries []queue.ReadyEntry
	pages := map[string]*shardPage{}
	start := "" // the StartAfter of the next LIST ("": the next shard due)
	partial := len(types) < len(w.types)
	for range maxWalkLists {
		if start == "" {
			i := slices.IndexFunc(due, func(s string) bool { return pages[s] == nil })
			if i < 0 {
				break
			}
			start = queue.ReadyShardPrefix(due[i])
			switch p := w.view.pages[due[i]]; {
			case p == nil:
			case p.resume != "":
				start = p.resume
			case onward[due[i]]:
				start = p.next
			}
		}
		began := time.Now()
		es, next, err := w.q.ListReady(ctx, queue.ReadyQuery{
			Shards: shards, Types: types, Limit: w.opts.ReadyPageSize, StartAfter: start,
		})
		if err != nil {
			return nil, nil, err
		}
		entries = append(entries, es...)
		// The shards from the one it began in up to the one it ended in
		// (that one too when it ended at a shard's first key) are listed
		// to their end.
		first, end, in := readyShard(start), "", ""
		if next != "" {
			end = readyShard(next)
			if next != queue.ReadyShardPrefix(end) {
				in = end
			}
		}
		for _, s := range wanted {
			if s >= first && (end == "" || s < end) {
				pages[s] = &shardPage{listed: began, types: types, partial: partial}
			}
		}
		start = ""
		if in == "" {
			continue
		}
		p := &shardPage{listed: began, types: types, partial: partial}
		pages[in] = p
		last, perr := queue.ParseReadyKey(next)
		if perr != nil || !slices.ContainsFunc(es, func(e queue.ReadyEntry) bool { return e.Shard == in }) {
			p.resume = next
			start = next // page on past them
			continue
		}
		p.cut, p.next = last.Rank, next
		if in != first {
			start = next // list on in it
		}
	}
	for s, p := range pages {
		if old := w.view.pages[s]; onward[s] && old != nil && p.resume == "" {
			p.onward, p.listed = true, old.listed
		}
	}
	return entries, pages, nil
}

// readyShard is the shard of a ready-index key or partition prefix ("" for
// "").
func readyShard(key string) string {
	shard, _, _ := strings.Cut(strings.TrimPrefix(key, queue.ReadyPrefix), "/")
	return shard
}

// hold puts what a walk found in the held view: the pages of the shards it
// listed replace their earlier ones (and the view's entries of them), the
// others' stay. The entries are in claim order, each marked as the
// worker's own or another's (see peers.go). A view without an own entry is
// one to help with; with more entries than free slots, its entries count
// as passed (see passedRanks): the worker had room for them and left them
// to their workers.
func (w *Worker) hold(ctx context.Context, entries []queue.ReadyEntry, pages map[string]*shardPage, wanted []string, free int) {
	v := &w.view
	if v.pages == nil {
		v.pages = map[string]*shardPage{}
	}
	v.keep(wanted)
	for s, p := range pages {
		v.pages[s] = p
	}
	// A listing replaces the shard's entries of the types it was made for.
	// Those of a type it was not made for (at its limit, or paused, when
	// it was made) stay: the listing says nothing of them, and dropped,
	// a type at its limit would know only the shards listed in the
	// moments a slot of it was free, and take newer entries there before
	// older ones elsewhere (late ones of other workers' shares too).
	v.entries = slices.DeleteFunc(v.entries, func(h heldEntry) bool {
		p, relisted := pages[h.Shard]
		return h.done || relisted && !p.onward && slices.Contains(p.types, h.Type) || v.pages[h.Shard] == nil
	})
	if w.leaser == nil && len(v.entries)+len(entries) > free && w.peers.due(time.Now()) {
		w.refreshPeers(ctx)
	}
	own := func(e queue.ReadyEntry) bool { return w.leaser != nil || w.owns(e) }
	if !v.peersAt.Equal(w.peers.readAt) {
		// Another list of workers: the kept entries are split again.
		v.peersAt = w.peers.readAt
		for i := range v.entries {
			v.entries[i].own = own(v.entries[i].ReadyEntry)
		}
	}
	// The kept entries are in claim order: sort the new ones and merge.
	slices.SortFunc(entries, compareReady)
	merged := make([]heldEntry, 0, len(v.entries)+len(entries))
	i := 0
	for _, e := range entries {
		for ; i < len(v.entries) && compareReady(v.entries[i].ReadyEntry, e) <= 0; i++ {
			merged = append(merged, v.entries[i])
		}
		merged = append(merged, heldEntry{ReadyEntry: e, own: own(e)})
	}
	v.entries = append(merged, v.entries[i:]...)
	v.bound(wanted)
	// What counts is what may be claimed before the next walk (up to the
	// horizon): own entries ranked after it do not make the others' before
	// it less passed.
	mine, within := false, 0
	for i := range v.entries {
		if v.within(&v.entries[i]) {
			within++
			mine = mine || v.entries[i].own
		}
	}
	// Help only with a few entries (no more than the free slots): with
	// more, their workers are at them, and a helper would mostly meet
	// them.
	v.help = !mine && within <= free
	if !mine && !v.help {
		for i := len(v.entries) - 1; i >= 0; i-- {
			if v.within(&v.entries[i]) {
				w.passed.note(w.clock.Now(), v.entries[i].Rank, w.opts.PageHold)
				break
			}
		}
	}
}

// passedRanks records how far this worker has passed other workers' ready
// tasks, by the queue's clock: the highest rank it started a claim for, and,
// after a walk that found only others' entries (more than it helps with)
// while it had free slots, the highest rank of those. An entry of another
// worker's share that was ready when this worker passed its rank, a page
// hold ago or more, has waited that long behind tasks this worker started
// (or for a free slot it had): it is late, and the worker claims it in
// rank order with its own. An entry that became ready after the pass was
// not passed: a low-priority task started while nothing else waited
// (ranked a quarter hour on) does not make every later entry of others
// ranked before it late, which would set every worker on the same oldest
// entries. The passes are kept in buckets an eighth of a page hold long,
// each opened at the first pass after the last one ended (what was ready
// then was passed by all of its passes) and counted as passed a hold after
// it ends; of those counted, only the ones no later bucket of a higher rank
// covers are kept (see lateUpTo): a few values, whatever the backlog, and
// no entry needs to be remembered from walk to walk (the page of a shard
// is listed again as it is used up or ages, and the entry may be claimed
// by its own worker meanwhile).
type passedRanks struct {
	settled []passedBucket // counted as passed: opened later, ranked lower
	recent  []passedBucket // not yet, oldest first
}

type passedBucket struct {
	start time.Time // when its first pass was (queue clock)
	end   time.Time // when it closed
	rank  time.Time // the highest rank passed in it
}

// maxPassedSteps bounds the buckets kept counted as passed: each one is a
// fall in the rank passed (another priority), so a few are enough; past
// this, the oldest is dropped (its entries wait for a later pass).
const maxPassedSteps = 64

// note records that rank was passed at now.
func (p *passedRanks) note(now, rank time.Time, hold time.Duration) {
	if n := len(p.recent); n > 0 && !now.After(p.recent[n-1].end) {
		if rank.After(p.recent[n-1].rank) {
			p.recent[n-1].rank = rank
		}
		return
	}
	p.recent = append(p.recent, passedBucket{start: now, end: now.Add(hold / 8), rank: rank})
}

// before counts the buckets closed at least hold before now as passed and
// returns them (see lateUpTo): opened later and later, ranked lower and
// lower. The caller may keep the slice until its next call.
func (p *passedRanks) before(now time.Time, hold time.Duration) []passedBucket {
	cut := now.Add(-hold)
	n := 0
	for ; n < len(p.recent) && !p.recent[n].end.After(cut); n++ {
		b := p.recent[n]
		// A bucket opened earlier and ranked no higher makes late only
		// entries this one makes late too.
		for k := len(p.settled); k > 0 && !p.settled[k-1].rank.After(b.rank); k-- {
			p.settled = p.settled[:k-1]
		}
		p.settled = append(p.settled, b)
	}
	p.recent = slices.Delete(p.recent, 0, n)
	if over := len(p.settled) - maxPassedSteps; over > 0 {
		p.settled = slices.Delete(p.settled, 0, over)
	}
	return p.settled
}

// lateUpTo returns the highest rank passed (steps as before returns them)
// while an entry ready at ready was ready; zero if none.
func lateUpTo(steps []passedBucket, ready time.Time) time.Time {
	i, _ := slices.BinarySearchFunc(steps, ready, func(b passedBucket, t time.Time) int { return b.start.Compare(t) })
	if i == len(steps) {
		return time.Time{}
	}
	return steps[i].rank
}

// indexStep claims up to free entries from the held view, walking the
// ready index first when the view is spent or a shard is due (see
// heldView.due).
func (w *Worker) indexStep(ctx context.Context, shards, types []string, free int) pollResult {
	wanted := w.wanted(shards)
	v := &w.view
	v.keep(wanted)
	if lost, own, in := w.lost.take(); lost {
		// Another worker claims from these shards' pages: list them again
		// (nothing is claimed until then); if it was the others' work
		// the worker helped with, back off first. A lost race for its own
		// or late entries is listed again at once: a pause there would
		// leave its free slots idle while the late entries behind the
		// lost one wait.
		if own {
			w.peers.lostOwn(time.Now())
		}
		w.log.Debug("claims lost to another worker; listing their shards again", "shards", len(in), "own", own)
		for s := range in {
			delete(v.pages, s)
		}
		v.entries = slices.DeleteFunc(v.entries, func(h heldEntry) bool { return in[h.Shard] })
		v.bound(wanted)
		if v.help {
			return pollResult{others: true}
		}
	}
	now := w.clock.Now()
	v.passed = w.passed.before(now, w.opts.PageHold)
	walked, listed := false, 0
	spent := v.spent()
	if due, onward, urgent := v.due(wanted, types, time.Now(), w.opts.PageHold, spent); spent || urgent {
		began := time.Now()
		entries, pages, err := w.walk(ctx, shards, types, due, onward)
		if err != nil {
			return pollResult{err: err}
		}
		walked, listed = true, len(entries)
		entries = w.tried.drop(entries, began)
		w.hold(ctx, w.dropPaused(ctx, entries), pages, wanted, free)
		w.log.Debug("walked the ready index", "due", len(due), "listed_shards", len(pages), "entries", listed,
			"held", len(v.entries), "horizon", v.horizon, "blind", v.blind, "help", v.help, "free", free)
	}
	claimed := w.claimHeld(ctx, free)
	switch {
	case v.spent():
		// Used up: while it gave work and slots are free, walk again at
		// once; so too while shards are due (each is listed once before
		// it is due again), but a run of keys the worker cannot claim is
		// paged on at once only after a walk that found entries (one that
		// listed only such keys goes on at the next poll, so another
		// type's backlog is not listed nonstop).
		due, _, urgent := v.due(wanted, types, time.Now(), w.opts.PageHold, false)
		r := pollResult{
			claimed: claimed,
			more:    (claimed > 0 && claimed < free) || (walked && (urgent || len(due) > 0 && listed > 0)),
			empty:   walked && listed == 0 && v.empty(),
		}
		// What the walk found is other workers' work, more than this one
		// could help with: back off.
		r.others = walked && claimed == 0 && !r.more && len(v.entries) > 0
		return r
	}
	return pollResult{claimed: claimed}
}

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
		w.passed.note(now, h.Rank, w.opts.PageHold)
		if p := v.pages[h.Shard]; p != nil {
			p.claimed = true
		}
		own, key, shard := h.own, h.Key, h.Shard
		w.log.Debug("claiming", "task_id", h.ID, "rank", h.Rank, "own", own, "late", !own && v.late(h), "help", v.help)
		w.tried.begin(key)
		w.startClaim(ctx, h.ReadyEntry, func(o claimOutcome) {
			w.tried.end(key)
			if o == claimLost {
				w.lost.note(own, shard)
			}
		})
		started++
	}
	v.entries = slices.DeleteFunc(v.entries, func(h heldEntry) bool { return h.done })
	return started
}

// lostClaims records that claims from the held view were lost to another
// claimer since the dispatch loop last looked, and in which shards.
type lostClaims struct {
	mu       sync.Mutex
	any, own bool
	shards   map[string]bool
}

func (l *lostClaims) note(own bool, shard string) {
	l.mu.Lock()
	l.any = true
	l.own = l.own || own
	if l.shards == nil {
		l.shards = map[string]bool{}
	}
	l.shards[shard] = true
	l.mu.Unlock()
}

// take returns and clears what was recorded.
func (l *lostClaims) take() (lost, own bool, shards map[string]bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	lost, own, shards = l.any, l.own, l.shards
	l.any, l.own, l.shards = false, false, nil
	return lost, own, shards
}

// triedKeys are the ready entries this worker claimed from its held view,
// kept until a walk that began after the claim ended: a walk whose LIST
// was answered before a claim deleted its entry still shows it (and a
// no-op task can even be completed by then), and claiming it again would
// be lost to this worker itself, dropping the view. A task released or
// retried gets a new entry (a new rank), which is not among them. Only
// the held view's claims are kept: the scans of tasks/ wait for their
// claims and never walk, so nothing would ever forget theirs.
type triedKeys struct {
	mu sync.Mutex
	m  map[string]time.Time // ready key -> when its claim ended (zero: in flight)
}

func (k *triedKeys) begin(key string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.m == nil {
		k.m = map[string]time.Time{}
	}
	k.m[key] = time.Time{}
}

func (k *triedKeys) end(key string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.m[key] = time.Now()
}

// drop forgets the claims that ended before a walk began at began (an
// entry of theirs it still shows is one their claim did not remove: a
// failed claim, a failed delete) and removes the entries of the claims
// it still keeps from what the walk found.
func (k *triedKeys) drop(entries []queue.ReadyEntry, began time.Time) []queue.ReadyEntry {
	k.mu.Lock()
	defer k.mu.Unlock()
	for key, ended := range k.m {
		if !ended.IsZero() && ended.Before(began) {
			delete(k.m, key)
		}
	}
	return slices.DeleteFunc(entries, func(e queue.ReadyEntry) bool {
		_, ok := k.m[e.Key]
		return ok
	})
}

// scanStep reads one page of tasks/ in the next shard of the rotation and
// claims pending, available tasks of served types. A pass covers one page
// of every shard; more is true until the pass is complete.
func (w *Worker) scanStep(ctx context.Context, shards, types []string, free int) pollResult {
	if len(shards) == 0 {
		shards = w.q.Shards()
	}
	if w.scan.cursors == nil {
		w.scan.cursors = map[string]string{}
	}
	if w.scan.idx >= len(shards) {
		w.scan.idx = 0
	}
	shard := shards[w.scan.idx]
	// No status filter: List answers pending queries from the ready index,
	// and this scan exists to find what the index lost.
	qry := queue.ListQuery{Shard: shard, Limit: w.opts.LogScanPageSize, MaxScan: w.opts.LogScanPageSize, Cursor: w.scan.cursors[shard]}
	if len(w.types) == 1 {
		qry.Type = w.types[0]
	}
	page, err := w.q.List(ctx, qry)
	if err != nil {
		w.scan.idx++
		return pollResult{err: err, more: w.scan.idx < len(shards)}
	}
	for _, m := range page.Malformed {
		w.log.Warn("skipping malformed task object", "key", m.Key, "err", m.Err)
	}
	now := w.clock.Now()
	entries := make([]queue.ReadyEntry, 0, len(page.Tasks))
	for _, t := range page.Tasks {
		if t == nil || t.Status != queue.StatusPending || t.AvailableAt.After(now) || !slices.Contains(types, t.Type) {
			continue
		}
		entries = append(entries, queue.ReadyEntry{
			Key: queue.ReadyKey(t), ID: t.ID, Shard: t.Shard, Type: t.Type, Priority: t.Priority, AvailableAt: t.AvailableAt,
		})
	}
	entries = w.dropPaused(ctx, entries)
	byPriority(entries)
	claimed, tried := w.claimEntries(ctx, entries, free)
	if tried >= len(entries) {
		w.scan.cursors[shard] = page.Cursor
		w.scan.idx++
	}
	return pollResult{claimed: claimed, more: w.scan.idx < len(shards)}
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
