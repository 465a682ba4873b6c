package queue

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/qo-queue/qo/store"
)

// IndexKeys lists the index entries a version of a task needs (see doc.go,
// "Index entries are written first"): its waiting entry when waiting, its
// ready entry when pending, its lease entry when running, its dead letter
// when failed, none otherwise.
func IndexKeys(t *Task) []string {
	if t == nil {
		return nil
	}
	var k string
	switch t.Status {
	case StatusWaiting:
		k = WaitingKey(t)
	case StatusPending:
		k = ReadyKey(t)
	case StatusRunning:
		k = LeaseKey(t)
	case StatusFailed:
		k = DeadKey(t)
	}
	if k == "" {
		return nil
	}
	return []string{k}
}

// IndexChanges returns the index entries a change from prev to next
// writes before the task (next needs them, prev lacks them) and deletes
// after it (only prev needed them): the rule every client follows (see
// doc.go, "Index entries are written first").
func IndexChanges(prev, next *Task) (put, del []string) { return indexDiff(prev, next) }

// indexDiff returns the entries next needs that prev lacks, and the ones
// only prev needs.
func indexDiff(prev, next *Task) (added, removed []string) {
	had, want := IndexKeys(prev), IndexKeys(next)
	for _, k := range want {
		if !slices.Contains(had, k) {
			added = append(added, k)
		}
	}
	for _, k := range had {
		if !slices.Contains(want, k) {
			removed = append(removed, k)
		}
	}
	return added, removed
}

// putEntries writes index entries; the first failure is returned.
func (q *Queue) putEntries(ctx context.Context, keys []string) error {
	for _, k := range keys {
		if _, err := q.s.Put(ctx, k, nil, store.Condition{}); err != nil {
			return fmt.Errorf("write index entry %s: %w", k, err)
		}
	}
	return nil
}

// landed finishes the index work of a task write that landed: entries
// written long before the task (see IndexGrace) are written again, and the
// entries of the replaced version are removed.
func (q *Queue) landed(ctx context.Context, added, removed []string, entriesAt time.Time) {
	if q.Now().Sub(entriesAt) > IndexGrace/2 {
		for _, k := range added {
			q.putIndex(ctx, k)
		}
	}
	for _, k := range removed {
		q.deleteIndex(ctx, k)
	}
}

// dropEntries deletes entries this call wrote for a version that certainly
// did not land, except those the current version (cur, may be nil) needs.
func (q *Queue) dropEntries(ctx context.Context, written []string, cur *Task) {
	keep := IndexKeys(cur)
	for _, k := range written {
		if !slices.Contains(keep, k) {
			q.deleteIndex(ctx, k)
		}
	}
}

// staleEntry reports whether an index entry a reader found not to match
// its task may be deleted: only once it is older than IndexGrace (modified
// is when it was written, from the listing; zero when unknown: kept).
func (q *Queue) staleEntry(modified time.Time) bool {
	return !modified.IsZero() && q.Now().Sub(modified) > IndexGrace
}

// putIndex writes an index entry again (best effort: the entry was
// already written once, before the task).
func (q *Queue) putIndex(ctx context.Context, key string) {
	if key == "" {
		return
	}
	if _, err := q.s.Put(ctx, key, nil, store.Condition{}); err != nil {
		q.log.Debug("index put failed (repaired by sweep)", "key", key, "err", err)
	}
}

// deleteIndex removes an index entry; best-effort: a leftover entry is
// detected as stale and removed by its next reader.
func (q *Queue) deleteIndex(ctx context.Context, key string) {
	if key == "" {
		return
	}
	if err := q.s.Delete(ctx, key, store.Condition{}); err != nil {
		q.log.Debug("index delete failed (stale entry cleaned later)", "key", key, "err", err)
	}
}
