package queue

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/google/uuid"

	"github.com/qo-queue/qo/store"
)

// findParallelism bounds the LISTs of one FindByIDPrefix in flight.
const findParallelism = 8

// CanonicalIDPrefix turns the first hex digits of a task id, in any case
// and with or without dashes, into the canonical form of ids (lowercase,
// dashes after the 8th, 12th, 16th and 20th digit), and returns the digits
// alone too. Anything else is an ErrInvalidInput.
func CanonicalIDPrefix(s string) (prefix, hex string, err error) {
	hex = strings.ToLower(strings.ReplaceAll(strings.TrimSpace(s), "-", ""))
	if hex == "" || len(hex) > 32 || strings.Trim(hex, "0123456789abcdef") != "" {
		return "", "", fmt.Errorf("%w: %q is not the start of a task id: want its first hex digits (dashes optional)", ErrInvalidInput, s)
	}
	var b strings.Builder
	for i := range len(hex) {
		if i == 8 || i == 12 || i == 16 || i == 20 {
			b.WriteByte('-')
		}
		b.WriteByte(hex[i])
	}
	return b.String(), hex, nil
}

// FindByIDPrefix returns the ids of the tasks whose id starts with prefix
// (see CanonicalIDPrefix), in id order, at most limit of them, and whether
// more matched. Its cost is set by what it returns, never by the bucket's
// history: a full id costs nothing (the id is returned as is; read it to
// know whether it exists); a shorter prefix is 1 LIST per shard of the keys
// tasks/{shard}/{prefix}... (limit + 1 of them: task keys are the ids, so
// the server does the matching), or 1 LIST when the prefix shows a random
// (not time-ordered) id, whose first characters are its shard.
func (q *Queue) FindByIDPrefix(ctx context.Context, prefix string, limit int) ([]uuid.UUID, bool, error) {
	prefix, hex, err := CanonicalIDPrefix(prefix)
	if err != nil {
		return nil, false, err
	}
	if len(hex) == 32 {
		id, err := ParseID(prefix)
		if err != nil {
			return nil, false, err
		}
		return []uuid.UUID{id}, false, nil
	}
	limit = max(limit, 1)
	shards := q.Shards()
	// The 13th digit is the id's version: any but 7 is a random id, whose
	// shard is its first characters (ShardOf).
	if n := len(shards[0]); len(hex) >= 13 && hex[12] != '7' && len(hex) >= n {
		shards = []string{hex[:n]}
	}
	var (
		mu       sync.Mutex
		ids      []uuid.UUID
		firstErr error
	)
	forEach(len(shards), findParallelism, func(i int) {
		dir := TasksPrefix + shards[i] + "/"
		page, err := q.s.List(ctx, store.ListParams{Prefix: dir + prefix, Limit: limit + 1})
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			firstErr = cmp.Or(firstErr, fmt.Errorf("find tasks by id prefix: %w", err))
			return
		}
		for _, o := range page.Objects {
			name, ok := strings.CutSuffix(strings.TrimPrefix(o.Key, dir), ".json")
			if id, err := ParseID(name); ok && err == nil && ShardOf(id, len(shards[i])) == shards[i] {
				ids = append(ids, id)
			}
		}
	})
	if firstErr != nil {
		return nil, false, firstErr
	}
	slices.SortFunc(ids, func(x, y uuid.UUID) int { return strings.Compare(x.String(), y.String()) })
	if len(ids) > limit {
		return ids[:limit], true, nil
	}
	return ids, false, nil
}
