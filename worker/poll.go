package worker

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// Polling
//
// The ready index is keyed "ready/{type}/{shard}/{rank ms}~{priority}~{id}"
// (the rank is available_at moved by the priority, see queue/doc.go): one
// partition per type and shard, each in rank order. The worker keeps a
// page of every partition it polls (the held view: the entries its last
// listing of that partition found, and where that listing stopped) and
// claims from it as slots free up (each claim in the background, holding
// its slot until it is won or lost; see startClaim). Claiming is oldest
// first across every partition: the pages are merged by rank, priority
// and task id (compareReady), which is the key order within a partition,
// up to the horizon, the earliest rank at which a page was cut short (its
// partition may hold more after it); nothing is claimed while a partition
// was never listed. The partitions polled are those of the types the
// worker claims now (not at its limit or its share of a fleet-wide cap,
// not paused) in the shards it polls: a type it cannot claim now is not
// listed, its pages set no horizon, and the entries of it the view holds
// stay there, so when a slot of it frees the worker claims its oldest
// entry across every shard (its pages are listed again once PageHold old).
//
// A walk (see walk) lists only the partitions that are due (see
// heldView.due), first come first listed, in LISTs of ReadyPageSize
// (1,000) keys, at most 4 a walk: a partition never listed; one whose
// page the worker claimed from, or that holds entries it does not claim
// (others' not late yet), and that holds nothing more for it while it has
// a cut (its next entries wait for it: listed on after the cut when it
// holds such entries, the keys before the cut would be passed again); one
// whose page is older than PageHold (10s); and one that stopped in a run
// of keys the worker cannot claim yet (paged on in a walk made for
// another reason). Of these pages, the one whose cut is the horizon is
// listed first: it holds back every claim ranked after it. With nothing
// left to claim and none of these, every partition is due: pages holding
// only other workers' entries are listed on after their cut, earliest cut
// first, the others again. A LIST runs on in key order past partitions
// shallower than its page (and hops past those it was not asked for, a
// deep backlog of another type at a cost of one LIST at most), so an idle
// worker sends one LIST per poll whatever the shard count, and a worker
// polls again at once while partitions are due. Over a backlog deeper
// than a page in every partition, the worker lists each partition once to
// begin with, then one LIST per page it claims, and each partition again
// once its page is PageHold old.
//
// Keys: a partition holds a section per task key,
// "ready/{type}/{shard}/-{key}/...", each in rank order, before its
// entries without a key (see queue/doc.go, "Task keys"). A LIST cut inside
// a key's section goes on past that section in the same walk (where that
// key's entries filled half the LIST or more, up to 16 such LISTs a walk
// beyond the 4), and the page records that key's cut
// (partPage.keyCuts): it holds back that key's entries ranked after it, in
// every partition, and no other key's, nor the entries without a key. So
// a key with a deep backlog costs one LIST per listing of its partition,
// not one per page of its backlog, and the keys after it in the partition
// are listed however deep it is. A page is due again once nothing of its
// own is left of a key it cut, and is then listed on from its first cut.
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
// partition, which is listed again before the view is claimed from.
//
// After a poll that claimed something the worker polls again at once
// while it has free slots, then every PollMin for WarmFor (so a task that
// follows a burst is picked up within PollMin); with limits, the end of a
// task ends the wait too (a slot of a type at its limit may have freed);
// then it waits 2xPollMin,
// 4xPollMin, ... up to PollMax (jittered ±20%); a walk that found only
// other workers' work backs off at once, from 10xPollMin.
//
// Order: each worker claims in rank order across all its partitions, as
// of the listing of each partition's page, whatever the depth of the
// backlog (among the types it claims now: a backlog of a type at its
// limit never holds back its other types). A task that became ready after
// its partition's page was listed, ranked before entries the view holds
// (a higher-priority one, or one in a partition listed to its end), waits
// until that page is listed again: at most PageHold after it was listed,
// plus one poll wait (at most PollMax, jittered) for a worker with a free
// slot, plus the walks it takes to list the pages due before it, one after
// another, 4 LISTs each (ceil(P/4) for P partitions all due at once).
// Meanwhile at most the tasks claimed in that time pass it. Across
// workers a task is overtaken only by tasks other workers started while
// their share was ahead of its worker's.
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
// (its partition's page is listed again within PageHold and a poll wait,
// see above). With the defaults: 31 s, plus the claims' own time and the skew
// of the clock lateness is timed by; the fleet simulation holds whole
// fleets to 40 s (worker/sim, OvertakeBound). Only what W passed while it
// was ready is late: were every entry ranked before the highest rank W
// ever passed late once ready a hold, one low-priority task started on an
// idle fleet (ranked a quarter hour on) would make every share late for a
// quarter hour, and every worker would claim the same oldest entries,
// losing most of the races and listing the shards again after each.
//
// Passing is counted per group of turns (passKey: a type's task key, or
// its entries without one): a claim passes each group up to the rank it
// started, but no further than W's own oldest entry of that group it
// could take now and has not (keys and weighted types take turns, so W
// starts a task ahead of older ones of its own by design, and those of the
// others beside them are not left behind). So the bound above holds for a
// task of a key once W started a newer task of that key, or of a group it
// holds none of its own of; a group with no record (not in W's view when
// it passed) is judged by what W passed in all. Counted over every group
// at once, the slowest group's progress capped the passes of all, and a
// slow worker's share of a key waited for that worker (38 s in a fleet
// simulation seed, against 4 s without keys).

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
		// With limits, a task that ends may free a slot of a type that was
		// at its limit: look again then, not a poll wait later (with short
		// tasks the wait would leave the limit mostly unused).
		var freed <-chan struct{}
		if w.anyLimits() {
			freed = w.taskDone
		}
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-w.abort:
			t.Stop()
			return
		case <-freed:
			t.Stop()
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

// indexStep claims up to free entries from the held view, walking the
// ready index first when the view is spent or a partition is due (see
// heldView.due).
func (w *Worker) indexStep(ctx context.Context, shards, types []string, free int) pollResult {
	served, claim := w.partitions(shards, w.types), w.partitions(shards, types)
	v := &w.view
	v.keep(served, claim)
	v.bound(claim)
	if lost, own, in := w.lost.take(); lost {
		// Another worker claims from these partitions' pages: list them again
		// (nothing is claimed until then); if it was the others' work
		// the worker helped with, back off first. A lost race for its own
		// or late entries is listed again at once: a pause there would
		// leave its free slots idle while the late entries behind the
		// lost one wait.
		if own {
			w.peers.lostOwn(time.Now())
		}
		w.log.Debug("claims lost to another worker; listing their partitions again", "partitions", len(in), "own", own)
		for s := range in {
			delete(v.pages, s)
		}
		v.entries = slices.DeleteFunc(v.entries, func(h heldEntry) bool { return in[h.Partition()] })
		v.bound(claim)
		if v.help {
			return pollResult{others: true}
		}
	}
	now := w.clock.Now()
	v.passed = w.passed.before(now, w.opts.PageHold, v.entries)
	walked, listed := false, 0
	spent := v.spent(types)
	if due, onward, urgent := v.due(claim, time.Now(), w.opts.PageHold, spent); spent || urgent {
		began := time.Now()
		entries, pages, err := w.walk(ctx, shards, types, claim, due, onward)
		if err != nil {
			return pollResult{err: err}
		}
		walked, listed = true, len(entries)
		entries = w.malformed.drop(w.tried.drop(entries, began, time.Now()), w.clock.Now())
		w.hold(ctx, w.dropPaused(ctx, entries), pages, served, claim, types, free)
		w.log.Debug("walked the ready index", "due", len(due), "listed_partitions", len(pages), "entries", listed,
			"held", len(v.entries), "horizon", v.horizon, "key_horizons", len(v.keyHorizon), "blind", v.blind, "help", v.help, "free", free)
	}
	claimed := w.claimHeld(ctx, free)
	switch {
	case v.spent(types):
		// Used up: while it gave work and slots are free, walk again at
		// once; so too while partitions are due (each is listed once before
		// it is due again), but a run of keys the worker cannot claim is
		// paged on at once only after a walk that found entries (one that
		// listed only such keys goes on at the next poll, so a run of
		// entries not available yet is not listed nonstop).
		due, _, urgent := v.due(claim, time.Now(), w.opts.PageHold, false)
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
