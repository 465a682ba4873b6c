package worker

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"time"

	"github.com/qo-queue/qo/queue"
)

// Polling
//
// The ready index is keyed "ready/{shard}/{rank ms}/{type}/{priority}/{id}"
// (the rank is available_at moved by the priority, see queue/doc.go): one
// partition per shard, each in time order. A walk (queue.ListReady) goes
// through the worker's shards' partitions with one LIST per page, skipping
// what is not due and entries of types it cannot run without reading them.
// An idle worker therefore sends one LIST per poll whatever the shard
// count. After a poll that claimed something the worker polls again at
// once while it has free slots, then every PollMin for WarmFor (so a task
// that follows a burst is picked up within PollMin), then waits 2xPollMin,
// 4xPollMin, ... up to PollMax (jittered ±20%).
//
// Claiming: a page's entries are tried high priority first and, within a
// priority, in key order (oldest rank first) starting at the worker's
// stable offset (a hash of its id) and wrapping around, so workers that
// read the same page begin at different entries instead of racing for its
// first key. When the page has more claimable entries than free slots,
// the rest is held and claimed from as slots free up, without listing
// again, for PageHold (2s); then it is listed afresh. A claim lost to
// another worker means that worker is on the same page: the walk skips
// ahead by a stable, per-worker number of shards, so workers part ways.
// A page that gave work ends its shard's turn (the walk goes on at the
// next shard), so every shard's oldest work comes in turn instead of one
// busy shard's whole backlog first; while work is being found each walk
// starts at the worker's home shard, then wraps to the first.
//
// Order: within a shard and a priority a task is overtaken only by tasks
// of the same page (at most ReadyPageSize - 1); across shards, shards take
// turns, so under a backlog a task can be overtaken by the work of every
// other shard's turn (qo bench reports how far). Every page is reached,
// whatever its shard or type: a page with nothing claimable pages on
// within its shard.

type pollResult struct {
	claimed int
	// more: there is more to read right away (next page, rest of a scan
	// pass), so do not sleep.
	more bool
	// empty: a listing from the start found nothing claimable.
	empty bool
	err   error
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
		free := w.opts.Concurrency - w.runningCount()
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
		if r.err == nil && time.Since(w.lastWork) < w.opts.WarmFor {
			wait = w.opts.PollMin
		}
		t := time.NewTimer(w.jitter(wait))
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

// indexStep reads one ready-index page and claims up to free entries,
// higher priorities first.
func (w *Worker) indexStep(ctx context.Context, shards, types []string, free int) pollResult {
	if r, ok := w.claimHeld(ctx, free); ok {
		return r
	}
	start, fromHome := w.walkStart(shards)
	entries, next, err := w.q.ListReady(ctx, queue.ReadyQuery{
		Shards: shards, Types: types, Limit: w.opts.ReadyPageSize, StartAfter: start,
	})
	if err != nil {
		return pollResult{err: err}
	}
	if next == "" {
		// The walk reached the end; one that began at the home shard goes
		// on at the first shard.
		w.wrap = fromHome
	}
	listed := len(entries)
	entries = w.dropPaused(ctx, entries)
	byPriority(entries)
	w.spread(entries)
	claimed, tried, lost := w.claimEntries(ctx, entries, free)
	if lost > 0 {
		// Another worker works this page: leave it to it.
		w.cursor = w.moveOn(entries[0].Shard, next, shards)
		return pollResult{claimed: claimed, more: claimed < free}
	}
	if claimed > 0 && next != "" {
		// A page that gave work ends this shard's turn: the walk goes on
		// at the next shard, and this one's remaining work (now at its
		// head) comes on the next walk. So one busy shard cannot keep
		// the others waiting. A page with nothing claimable pages on
		// within the shard instead, so entries the worker cannot take
		// (a paused type) never hide the ones behind them.
		next = nextPartition(next, shards, w.q.Shards())
	}
	if tried < len(entries) {
		// Out of free slots: the rest of the page is held and claimed as
		// slots free up, without listing again (see claimHeld); the walk
		// goes on once it is used up.
		w.held, w.heldAt, w.heldNext = entries[tried:], time.Now(), next
		w.cursor = start
		return pollResult{claimed: claimed}
	}
	w.cursor = next
	return pollResult{
		claimed: claimed,
		more:    next != "" || (fromHome && next == "" && claimed > 0),
		empty:   start == "" && next == "" && listed == 0,
	}
}

// claimHeld claims from the rest of the last page while it is younger than
// PageHold; ok is false when there is nothing (fresh) to claim from, and
// the caller lists.
func (w *Worker) claimHeld(ctx context.Context, free int) (pollResult, bool) {
	if len(w.held) == 0 {
		return pollResult{}, false
	}
	if time.Since(w.heldAt) >= w.opts.PageHold {
		w.held = nil // stale: list the page again (w.cursor is its start)
		return pollResult{}, false
	}
	entries := w.dropPaused(ctx, w.held)
	claimed, tried, lost := w.claimEntries(ctx, entries, free)
	w.held = entries[tried:]
	if lost > 0 && len(entries) > 0 {
		// Another worker works this page: leave it to it.
		w.held = nil
		w.cursor = w.moveOn(entries[0].Shard, w.heldNext, nil)
	}
	if len(w.held) == 0 && lost == 0 {
		w.cursor = w.heldNext
	}
	if claimed == 0 {
		// Everything tried was taken by others (or is over a limit): the
		// page is being worked elsewhere; list afresh.
		w.held = nil
		return pollResult{}, false
	}
	return pollResult{claimed: claimed, more: claimed < free && len(w.held) > 0}, true
}

// moveOn is the cursor after a page of shard was found contended: the walk
// skips ahead by a stable, per-worker number of shards (so workers that
// met on one partition part ways), or goes on at next when there are too
// few shards to skip.
func (w *Worker) moveOn(shard, next string, shards []string) string {
	if shards == nil {
		shards = w.q.Shards()
	}
	sorted := slices.Clone(shards)
	slices.Sort(sorted)
	i := slices.Index(sorted, shard)
	if i < 0 || len(sorted) < 3 {
		return next
	}
	j := i + 1 + int(w.offset()%uint32(len(sorted)-1))
	if j >= len(sorted) {
		return "" // the walk starts over
	}
	return queue.ReadyShardPrefix(sorted[j])
}

// walkStart returns where the next ready-index listing starts, and whether
// that is a new walk from the worker's home shard: the cursor when a walk
// is under way; else, while work is being found (WarmFor after the last
// claim), the home shard, unless the previous walk began there (then the
// first shard, so the shards before home are walked too); else the first
// shard (an idle poll covers every shard in one LIST).
func (w *Worker) walkStart(shards []string) (string, bool) {
	if w.cursor != "" {
		return w.cursor, false
	}
	if w.wrap || time.Since(w.lastWork) >= w.opts.WarmFor {
		w.wrap = false
		return "", false
	}
	if shards == nil {
		shards = w.q.Shards()
	}
	if len(shards) < 2 {
		return "", false
	}
	sorted := slices.Clone(shards)
	slices.Sort(sorted)
	i := int(w.offset() % uint32(len(sorted)))
	if i == 0 {
		return "", false
	}
	return queue.ReadyShardPrefix(sorted[i]), true
}

// nextPartition is the StartAfter of the first wanted shard's ready
// partition after the one that key is in ("" when there is none).
func nextPartition(key string, wanted, all []string) string {
	shard, _, _ := strings.Cut(strings.TrimPrefix(key, queue.ReadyPrefix), "/")
	if wanted == nil {
		wanted = all
	}
	best := ""
	for _, s := range wanted {
		if s > shard && (best == "" || s < best) {
			best = s
		}
	}
	if best == "" {
		return ""
	}
	return queue.ReadyShardPrefix(best)
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
	claimed, tried, _ := w.claimEntries(ctx, entries, free)
	if tried >= len(entries) {
		w.scan.cursors[shard] = page.Cursor
		w.scan.idx++
	}
	return pollResult{claimed: claimed, more: w.scan.idx < len(shards)}
}

// spread rotates the entries of the page's highest priority level by the
// worker's stable offset (a function of its id), so that workers reading
// the same page begin at different entries instead of racing for its
// first key; the page keeps its key order from there, wrapping around.
func (w *Worker) spread(entries []queue.ReadyEntry) {
	n := 1
	for n < len(entries) && entries[n].Priority.Level() == entries[0].Priority.Level() {
		n++
	}
	if n < 2 {
		return
	}
	k := int(w.offset() % uint32(n))
	top := entries[:n]
	rotated := append(slices.Clone(top[k:]), top[:k]...)
	copy(top, rotated)
}

// maxLostPerPoll: claims lost in one poll before the worker gives the page
// up (see indexStep and claimHeld).
const maxLostPerPoll = 1

// claimEntries claims entries in order until free tasks were claimed. It
// returns how many were claimed, how many entries were tried and how many
// of those were lost to another claimer (or gone).
func (w *Worker) claimEntries(ctx context.Context, entries []queue.ReadyEntry, free int) (claimed, tried, lost int) {
	var perType map[string]int
	if len(w.opts.Limits) > 0 {
		perType = w.runningByType()
	}
	for _, e := range entries {
		if claimed >= free || w.stopping(ctx) {
			break
		}
		tried++
		if w.atLimit(e.Type, perType) {
			continue // this type is full; another poll takes it
		}
		// The claim runs to completion even if shutdown starts meanwhile:
		// a claim whose answer we never saw would leave the task running
		// until its holder is found dead.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		l, err := w.q.Claim(cctx, e, w.opts.ID)
		cancel()
		switch {
		case err == nil:
			w.observer().Claimed(e.Type)
			w.start(l)
			claimed++
			if perType != nil {
				perType[e.Type]++
			}
		case errors.Is(err, queue.ErrConflict), errors.Is(err, queue.ErrNotFound):
			w.observer().ClaimConflict(e.Type)
			w.log.Debug("ready entry not claimable", "task_id", e.ID, "reason", err)
			lost++
			if lost >= maxLostPerPoll {
				// Another worker is on this page: every further try here
				// would likely cost a GET for nothing.
				return claimed, tried, lost
			}
		default:
			w.log.Warn("claim failed", "task_id", e.ID, "key", e.Key, "err", err)
		}
	}
	return claimed, tried, lost
}

// offset is the worker's stable offset (a hash of its id): its home shard
// and where it starts within a page.
func (w *Worker) offset() uint32 {
	h := fnv.New32a()
	_, _ = h.Write([]byte(w.opts.ID))
	return h.Sum32()
}
