// The fallback scans of IndexMode (LogScan, and Hybrid while the ready
// index looks empty): list and claim at once.

package worker

import (
	"context"
	"slices"

	"github.com/qo-queue/qo/queue"
)

type scanState struct {
	idx     int               // next shard (index into the scanned list)
	cursors map[string]string // per-shard page cursor
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
