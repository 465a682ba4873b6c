package queue

import (
	"context"
	"slices"
	"strings"

	"github.com/qo-queue/qo/store"
)

// walkPartitions reads ONE LIST page of an index partitioned by shard
// ("{root}{shard}/..."), for the wanted shards (sorted; nil: all), starting
// after start ("" begins at the first wanted partition). visit sees each
// key of a wanted partition in key order; when it returns true the rest of
// that partition is skipped (the index is time-ordered within a partition,
// so a visitor stops at the first entry that is not due yet). next is the
// start of the following call, "" when the walk reached the end.
//
// One page covers as many partitions as it holds keys for, so an index
// with few entries costs one LIST however many shards the queue has.
func (q *Queue) walkPartitions(ctx context.Context, root string, wanted []string, start string, limit int, visit func(o store.ObjectInfo) (stop bool)) (string, error) {
	if wanted == nil {
		wanted = q.shards
	}
	if len(wanted) == 0 {
		return "", nil
	}
	// after is the StartAfter that begins the first wanted partition after
	// shard ("" when there is none).
	after := func(shard string) string {
		i, _ := slices.BinarySearch(wanted, shard)
		for ; i < len(wanted); i++ {
			if wanted[i] > shard {
				return root + wanted[i] + "/"
			}
		}
		return ""
	}
	if start == "" {
		start = root + wanted[0] + "/"
	}
	prefix := root
	if len(wanted) == 1 {
		prefix = root + wanted[0] + "/"
	}
	page, err := q.s.List(ctx, store.ListParams{Prefix: prefix, StartAfter: start, Limit: limit})
	if err != nil {
		return "", err
	}
	done := map[string]bool{}
	lastShard := ""
	for _, o := range page.Objects {
		shard, _, _ := strings.Cut(strings.TrimPrefix(o.Key, root), "/")
		lastShard = shard
		if done[shard] {
			continue
		}
		if _, ok := slices.BinarySearch(wanted, shard); !ok {
			done[shard] = true
			continue
		}
		if visit(o) {
			done[shard] = true
		}
	}
	if page.NextToken == "" || len(page.Objects) == 0 {
		return "", nil
	}
	if done[lastShard] {
		return after(lastShard), nil
	}
	return page.Objects[len(page.Objects)-1].Key, nil
}

// sortedShards returns a sorted copy of a shard filter (nil stays nil).
func sortedShards(shards []string) []string {
	if shards == nil {
		return nil
	}
	out := slices.Clone(shards)
	slices.Sort(out)
	return slices.Compact(out)
}
