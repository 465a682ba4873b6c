package queue

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/qo-queue/qo/store"
)

// ReadyEntry is one ready-index entry, decoded from its key alone.
type ReadyEntry struct {
	Key         string
	ID          uuid.UUID
	Shard, Type string
	Priority    Priority
	Rank        time.Time // the time the key sorts under
	AvailableAt time.Time // when the task may run (Rank minus the priority's offset)
	TaskKey     string    // the task's key ("" when none; see doc.go, "Task keys")
	// Modified is when the entry was written (from the listing; zero when
	// not known).
	Modified time.Time
}

// ReadyQuery selects ready entries.
type ReadyQuery struct {
	Shards     []string // nil: all shards; empty non-nil: none
	Types      []string // nil: all types; empty non-nil: none
	Limit      int      // LIST page size; <= 0: 1000
	StartAfter string   // resume after this key (the next value of a previous call)
}

// ListReady returns ready entries with AvailableAt <= now matching the
// filters, from ONE store LIST starting at the cursor (see walkPartitions):
// the index is partitioned by shard ("ready/{shard}/{rank}~..."), each
// partition in rank order, so the walk covers the wanted partitions one
// after the other and, within each, skips everything after the first rank
// later than now + PriorityStep (nothing after it can be available). next
// is the StartAfter of the next call, "" when the walk reached the end.
// Entries of other types, and entries not yet available, are skipped
// without any GET; keys that do not parse are skipped and logged. An idle
// queue therefore costs one LIST per call whatever the shard count; a
// partition holding more than a page of delayed entries costs one more.
// Successive calls walk the wanted partitions in shard order, each oldest
// first, and the walk starts over after the last; a caller that starts
// its walks at a rotating shard (StartAfter = ReadyShardPrefix(shard))
// spreads its attention evenly over deep shards.
func (q *Queue) ListReady(ctx context.Context, qry ReadyQuery) ([]ReadyEntry, string, error) {
	if qry.Shards != nil && len(qry.Shards) == 0 {
		return nil, "", nil
	}
	limit := qry.Limit
	if limit <= 0 {
		limit = 1000
	}
	now := q.Now()
	horizon := now.Add(PriorityStep)
	var out []ReadyEntry
	next, err := q.walkPartitions(ctx, ReadyPrefix, sortedShards(qry.Shards), qry.StartAfter, limit, func(o store.ObjectInfo) bool {
		e, err := ParseReadyKey(o.Key)
		if err != nil {
			q.log.Debug("skipping unparseable ready entry", "key", o.Key, "err", err)
			return false
		}
		if e.Rank.After(horizon) {
			return true // nothing later in this partition is ready
		}
		if !e.AvailableAt.After(now) && contains(qry.Types, e.Type) {
			e.Modified = o.LastModified
			out = append(out, e)
		}
		return false
	})
	if err != nil {
		return nil, "", fmt.Errorf("list ready: %w", err)
	}
	return out, next, nil
}

func contains(set []string, s string) bool {
	if set == nil {
		return true
	}
	for _, v := range set {
		if v == s {
			return true
		}
	}
	return false
}
