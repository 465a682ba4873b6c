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

// Partition is the ready partition the entry lies in (see ReadyPartition).
func (e ReadyEntry) Partition() string { return ReadyPartition(e.Type, e.Shard) }

// ReadyQuery selects ready entries.
type ReadyQuery struct {
	Shards     []string // nil: all shards; empty non-nil: none
	Types      []string // nil: all types; empty non-nil: none
	Limit      int      // LIST page size; <= 0: 1000
	StartAfter string   // resume after this key (the next value of a previous call)
}

// ListReady returns ready entries with AvailableAt <= now matching the
// filters, from ONE store LIST starting at the cursor (see walkPartitions).
// The index is partitioned by type and shard
// ("ready/{type}/{shard}/{rank}~...", see ReadyPartition), each partition
// in rank order within each of its sections (one per task key, then the
// entries without a key; see ReadyKey); the query wants the partitions
// Types x Shards, and the walk covers them one after the other in key
// order (type, then shard), within each section skipping everything after
// the first rank later than now + PriorityStep (nothing after it can be
// available).
//
// next is the StartAfter of the next call, "" when the walk reached the
// end: either the last key listed, inside a wanted partition the walk has
// not finished, or the prefix of the next partition to list
// (ReadyPartitionPrefix; when Types is nil, of type and typeEnd "~" for
// the next type after the last one listed): every wanted partition before
// it in key order was listed to its end or to its horizon. A LIST that
// runs into partitions not wanted (another type's deep backlog, a shard
// not asked for) skips their keys and, when the page ends in one, the
// next LIST begins past it; past ALL of that type when the type is not
// wanted. So a deep backlog of another type costs at most one LIST per
// walk, and none when the LIST's prefix excludes it: the Prefix is the one
// partition wanted, or "ready/{type}/" when every wanted partition is of
// one type. With Types nil the walk does not know the types: it begins at
// the first key of ready/, and the first LIST into each type can end among
// that type's shards not wanted; a caller that knows its types passes
// them.
//
// Entries not yet available are skipped without any GET; keys that do not
// parse are skipped and logged. An idle queue therefore costs one LIST
// per call whatever the partition count; a section holding more than a
// page of delayed entries (the entries without a key of a partition, or
// one task key's) costs one more. Successive calls walk the
// wanted partitions in key order, each oldest first; a caller that starts
// its walks at a rotating partition (StartAfter =
// ReadyPartitionPrefix(partition)) spreads its attention evenly over deep
// ones.
func (q *Queue) ListReady(ctx context.Context, qry ReadyQuery) ([]ReadyEntry, string, error) {
	limit := qry.Limit
	if limit <= 0 {
		limit = 1000
	}
	now := q.Now()
	horizon := now.Add(PriorityStep)
	var out []ReadyEntry
	next, err := q.walkPartitions(ctx, q.readyPartitions(qry.Types, qry.Shards), qry.StartAfter, limit, func(o store.ObjectInfo) bool {
		e, err := ParseReadyKey(o.Key)
		if err != nil {
			q.log.Debug("skipping unparseable ready entry", "key", o.Key, "err", err)
			return false
		}
		if e.Rank.After(horizon) {
			return true // nothing later in this section is ready
		}
		if !e.AvailableAt.After(now) {
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
