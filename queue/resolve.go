package queue

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/google/uuid"

	"github.com/qo-queue/qo/store"
)

// ErrAmbiguousID: a short id names more than one task. Returned as an
// *AmbiguousIDError listing the candidates; nothing was done.
var ErrAmbiguousID = errors.New("ambiguous task id")

// AmbiguousIDError lists the tasks a short id matched.
type AmbiguousIDError struct {
	Short      string
	Candidates []uuid.UUID
}

func (e *AmbiguousIDError) Error() string {
	ids := make([]string, len(e.Candidates))
	for i, id := range e.Candidates {
		ids[i] = id.String()
	}
	return fmt.Sprintf("%q matches %d tasks (%s): give more of the id", e.Short, len(ids), strings.Join(ids, ", "))
}

func (e *AmbiguousIDError) Unwrap() error { return ErrAmbiguousID }

// resolvePages bounds the LISTs of 1,000 keys ResolveID makes in each place
// it looks (a shard's ready, lease and waiting index, the shard's window of
// recently created tasks, the newest dead letters).
const resolvePages = 4

// maxCandidates is how many matches an ambiguous short id lists.
const maxCandidates = 10

// canonicalIDSuffix turns the last hex digits of a task id, in any case and
// with or without dashes, into the end of a canonical id (dashes where the
// full id has them) and returns the digits alone too.
func canonicalIDSuffix(s string) (suffix, hex string, err error) {
	hex = strings.ToLower(strings.ReplaceAll(strings.TrimSpace(s), "-", ""))
	if hex == "" || len(hex) > 32 || strings.Trim(hex, "0123456789abcdef") != "" {
		return "", "", fmt.Errorf("%w: %q is not a task id: want the whole id, or its last (or first) hex digits as lists show them", ErrInvalidInput, s)
	}
	start := 32 - len(hex)
	var b strings.Builder
	for i := start; i < 32; i++ {
		if i > start && (i == 8 || i == 12 || i == 16 || i == 20) {
			b.WriteByte('-')
		}
		b.WriteByte(hex[i-start])
	}
	return b.String(), hex, nil
}

// ResolveID turns what an operator typed into the one task id it names: a
// whole id (returned as is, without a request), or the short form lists
// show (ShortID: the END of a time-ordered id, e.g. "264545bf"), or the
// first digits of an id. An id matching no task is an ErrNotFound, one
// matching several an *AmbiguousIDError listing them.
//
// Its cost never grows with the bucket's history. The end of a v7 id holds
// its shard (ShardOf), so a suffix is looked up in that shard only: its
// ready partitions (one per type), lease and waiting indexes and its tasks created in the last
// DefaultListWindow, plus the newest dead letters (at most resolvePages
// LISTs each, 5 in all for a small queue). A task that ended before the
// window and is not among the newest dead letters is found by its whole
// id, or by its first digits (FindByIDPrefix, 1 LIST per shard), which is
// tried when the suffix matched nothing.
func (q *Queue) ResolveID(ctx context.Context, s string) (uuid.UUID, error) {
	s = strings.TrimSpace(s)
	if id, err := ParseID(s); err == nil {
		return id, nil
	}
	suffix, hex, err := canonicalIDSuffix(s)
	if err != nil {
		return uuid.Nil, err
	}
	var ids []uuid.UUID
	if n := len(q.Shards()[0]); len(hex) >= n {
		ids, err = q.findBySuffix(ctx, hex[len(hex)-n:], suffix)
		if err != nil {
			return uuid.Nil, fmt.Errorf("resolve task id %q: %w", s, err)
		}
	}
	if len(ids) == 0 {
		ids, _, err = q.FindByIDPrefix(ctx, s, maxCandidates)
		if err != nil {
			return uuid.Nil, fmt.Errorf("resolve task id %q: %w", s, err)
		}
	}
	switch len(ids) {
	case 0:
		return uuid.Nil, fmt.Errorf("resolve task id %q: %w: no task of the last %s, live or dead-lettered, ends with it, and none starts with it (give the whole id)",
			s, ErrNotFound, DefaultListWindow)
	case 1:
		return ids[0], nil
	}
	return uuid.Nil, &AmbiguousIDError{Short: s, Candidates: ids}
}

// findBySuffix returns the ids in shard that end with suffix (see
// ResolveID), sorted, at most maxCandidates of them.
func (q *Queue) findBySuffix(ctx context.Context, shard, suffix string) ([]uuid.UUID, error) {
	type place struct {
		prefix, after string
		id            func(key string) (uuid.UUID, bool)
		// ready: the place is the shard's partitions of the ready index,
		// one per type, walked as ListReady walks them.
		ready bool
	}
	fromEntry := func(parse func(string) (uuid.UUID, error)) func(string) (uuid.UUID, bool) {
		return func(key string) (uuid.UUID, bool) {
			id, err := parse(key)
			return id, err == nil
		}
	}
	tasks := TasksPrefix + shard + "/"
	places := []place{
		{ready: true, id: fromEntry(func(k string) (uuid.UUID, error) { e, err := ParseReadyKey(k); return e.ID, err })},
		{prefix: LeaseShardPrefix(shard), id: fromEntry(func(k string) (uuid.UUID, error) { e, err := ParseLeaseKey(k); return e.ID, err })},
		{prefix: WaitingShardPrefix(shard), id: fromEntry(func(k string) (uuid.UUID, error) { _, id, err := ParseWaitingKey(k); return id, err })},
		{prefix: DeadPrefix, id: fromEntry(func(k string) (uuid.UUID, error) { e, err := ParseDeadKey(k); return e.ID, err })},
		{prefix: tasks, after: tasks + idFloor(q.Now().Add(-DefaultListWindow)), id: func(key string) (uuid.UUID, bool) {
			name, ok := strings.CutSuffix(strings.TrimPrefix(key, tasks), ".json")
			id, err := ParseID(name)
			return id, ok && err == nil
		}},
	}
	var (
		mu       sync.Mutex
		found    = map[uuid.UUID]bool{}
		firstErr error
	)
	forEach(len(places), findParallelism, func(i int) {
		p := places[i]
		look := func(key string) {
			if id, ok := p.id(key); ok && strings.HasSuffix(id.String(), suffix) {
				mu.Lock()
				found[id] = true
				mu.Unlock()
			}
		}
		fail := func(err error) {
			mu.Lock()
			firstErr = cmp.Or(firstErr, err)
			mu.Unlock()
		}
		after := p.after
		for range resolvePages {
			if p.ready {
				next, err := q.walkPartitions(ctx, q.readyPartitions(nil, []string{shard}), after, MaxListLimit, func(o store.ObjectInfo) bool {
					look(o.Key)
					return false
				})
				if err != nil {
					fail(err)
				}
				if after = next; after == "" || err != nil {
					return
				}
				continue
			}
			lp, err := q.s.List(ctx, store.ListParams{Prefix: p.prefix, StartAfter: after, Limit: MaxListLimit})
			if err != nil {
				fail(err)
				return
			}
			for _, o := range lp.Objects {
				look(o.Key)
				after = o.Key
			}
			if lp.NextToken == "" || len(lp.Objects) == 0 {
				return
			}
		}
	})
	if firstErr != nil {
		return nil, firstErr
	}
	ids := make([]uuid.UUID, 0, len(found))
	for id := range found {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(x, y uuid.UUID) int { return strings.Compare(x.String(), y.String()) })
	if len(ids) > maxCandidates {
		ids = ids[:maxCandidates]
	}
	return ids, nil
}
