package worker

import (
	"context"
	"errors"
	"fmt"
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
// count, and waits PollMin, 2xPollMin, ... up to PollMax between polls
// (jittered ±20%); any claimed task resets the wait. Under a backlog a
// shard's turn ends with the first page that gave work, so every shard's
// oldest work comes in turn instead of one busy shard's whole backlog
// first.
//
// Fairness: the page's entries are tried high priority first, and in
// random order within a level, so racing workers spread over the page
// instead of fighting over its first key. The worker keeps a cursor: while
// a page still has untried entries the next poll reads the same page
// again (until the shard has had a page's worth of claims); once every
// entry was tried the cursor moves on (to the next shard when the page
// gave work, to the shard's next page when it did not), and wraps to the
// first shard when the walk reaches its end. Each shard's entries
// therefore come in rank order (FIFO by available_at within a priority),
// shards take turns, and every page is reached, whatever its shard or type.

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
			wait = w.opts.PollMin
			continue
		}
		if r.more && r.err == nil {
			continue
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
	start := w.cursor
	entries, next, err := w.q.ListReady(ctx, queue.ReadyQuery{
		Shards: shards, Types: types, Limit: w.opts.ReadyPageSize, StartAfter: start,
	})
	if err != nil {
		return pollResult{err: err}
	}
	listed := len(entries)
	entries = w.dropPaused(ctx, entries)
	w.shuffle(len(entries), func(i, j int) { entries[i], entries[j] = entries[j], entries[i] })
	byPriority(entries)
	claimed, tried := w.claimEntries(ctx, entries, free)
	if tried < len(entries) {
		// Out of free slots: the rest of this page next time, unless this
		// shard has had a page's worth of claims in a row (its head keeps
		// refilling as claimed entries go): then the next shard's turn.
		w.turnClaims += claimed
		if claimed > 0 && w.turnClaims >= w.opts.ReadyPageSize {
			w.turnClaims = 0
			w.cursor = nextPartition(queue.ReadyShardPrefix(entries[tried-1].Shard), shards, w.q.Shards())
		}
		return pollResult{claimed: claimed}
	}
	w.turnClaims = 0
	if claimed > 0 && next != "" {
		// A page that gave work ends this shard's turn: the walk goes on
		// at the next shard, and this one's remaining work (now at its
		// head) comes on the next walk. So one busy shard cannot keep
		// the others waiting. A page with nothing claimable pages on
		// within the shard instead, so entries the worker cannot take
		// (a paused type) never hide the ones behind them.
		next = nextPartition(next, shards, w.q.Shards())
	}
	w.cursor = next
	return pollResult{
		claimed: claimed,
		more:    next != "",
		empty:   start == "" && next == "" && listed == 0,
	}
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
	w.shuffle(len(entries), func(i, j int) { entries[i], entries[j] = entries[j], entries[i] })
	byPriority(entries)
	claimed, tried := w.claimEntries(ctx, entries, free)
	if tried >= len(entries) {
		w.scan.cursors[shard] = page.Cursor
		w.scan.idx++
	}
	return pollResult{claimed: claimed, more: w.scan.idx < len(shards)}
}

// claimEntries claims entries in order until free tasks were claimed. It
// returns how many were claimed and how many entries were tried.
func (w *Worker) claimEntries(ctx context.Context, entries []queue.ReadyEntry, free int) (claimed, tried int) {
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
		// until its lease expires.
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
		default:
			w.log.Warn("claim failed", "task_id", e.ID, "key", e.Key, "err", err)
		}
	}
	return claimed, tried
}
