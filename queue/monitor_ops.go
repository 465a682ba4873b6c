package queue

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/qo-queue/qo/store"
)

// LeaseEntry is one lease-index entry, decoded from its key alone.
type LeaseEntry struct {
	Key       string
	ID        uuid.UUID
	Shard     string
	Type      string
	LeaseID   string
	ExpiresAt time.Time
	// Modified is when the entry was written (from the listing; zero when
	// not known).
	Modified time.Time
}

// ListExpired returns lease entries whose expiry is <= now, oldest first,
// from one LIST page of at most limit keys (<= 0: 1000). next is the
// startAfter of the next call, "" when no expired entry follows.
func (q *Queue) ListExpired(ctx context.Context, limit int, startAfter string) ([]LeaseEntry, string, error) {
	if limit <= 0 {
		limit = 1000
	}
	page, err := q.s.List(ctx, store.ListParams{Prefix: LeasesPrefix, StartAfter: startAfter, Limit: limit})
	if err != nil {
		return nil, "", fmt.Errorf("list expired leases: %w", err)
	}
	now := q.Now()
	var out []LeaseEntry
	for _, o := range page.Objects {
		e, err := ParseLeaseKey(o.Key)
		if err != nil {
			q.log.Debug("skipping unparseable lease entry", "key", o.Key, "err", err)
			continue
		}
		if e.ExpiresAt.After(now) {
			return out, "", nil
		}
		out = append(out, e)
	}
	next := ""
	if page.NextToken != "" && len(page.Objects) > 0 {
		next = page.Objects[len(page.Objects)-1].Key
	}
	return out, next, nil
}

// ExpireLease ends the attempt of a running task whose lease expired: back
// to pending after backoff (timed_out) while retries remain, failed
// (timed_out) when exhausted, cancelled when cancellation was requested.
// A stale entry (task gone or not running) is deleted; an entry for a lease
// that was extended is moved to the current expiry. Both are ErrConflict,
// as is losing the race against the worker finishing.
func (q *Queue) ExpireLease(ctx context.Context, e LeaseEntry) (*Task, error) {
	base, etag, err := q.getTask(ctx, e.ID)
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			q.deleteIndex(ctx, e.Key)
			return nil, fmt.Errorf("expire lease of task %s: %w (stale lease entry: no such task)", e.ID, ErrConflict)
		}
		return nil, fmt.Errorf("expire lease: %w", err)
	}
	if base.Status != StatusRunning {
		q.deleteIndex(ctx, e.Key)
		return nil, fmt.Errorf("expire lease of task %s: %w (task is %s; stale entry removed)", e.ID, ErrConflict, base.Status)
	}
	now := q.Now()
	if !leaseExpired(base, now) {
		if k := LeaseKey(base); k != e.Key {
			q.putIndex(ctx, k)
			q.deleteIndex(ctx, e.Key)
		}
		return nil, fmt.Errorf("expire lease of task %s: %w (lease runs until %s)", e.ID, ErrConflict, base.LeaseExpiresAt.Format(time.RFC3339Nano))
	}
	res, err := q.apply(ctx, base, etag, mutation{
		op: "expire lease", fence: base.LeaseID, fenceErr: ErrConflict, rebase: true,
		change: func(t *Task, now time.Time) (string, error) {
			if !leaseExpired(t, now) {
				return "", fmt.Errorf("%w (lease was extended to %s)", ErrConflict, t.LeaseExpiresAt.Format(time.RFC3339Nano))
			}
			t.LastError = fmt.Sprintf("lease expired: worker %s did not finish attempt %d within %ds", t.WorkerID, t.Attempt, t.TimeoutSeconds)
			return q.retryOrFail(t, now, 0, EventTimedOut, EventTimedOut), nil
		},
	})
	if err != nil {
		return nil, err
	}
	if res.next.Status == StatusPending {
		q.putIndex(ctx, ReadyKey(res.next))
	}
	q.deleteIndex(ctx, e.Key)
	if k := LeaseKey(res.prev); k != e.Key {
		q.deleteIndex(ctx, k)
	}
	return res.next, nil
}

// leaseExpired reports whether a running task's lease ran out (a missing
// expiry counts as expired: nobody can prove they hold it).
func leaseExpired(t *Task, now time.Time) bool {
	return t.LeaseExpiresAt == nil || !t.LeaseExpiresAt.After(now)
}

// SweepResult counts what one Sweep page found and repaired.
type SweepResult struct {
	Scanned        int              `json:"scanned"`         // task objects read
	ReadyRepaired  int              `json:"ready_repaired"`  // missing ready entries written
	LeasesRepaired int              `json:"leases_repaired"` // missing lease entries written
	Expired        int              `json:"expired"`         // pending tasks past expires_at, now expired
	Malformed      []MalformedError `json:"-"`               // objects that could not be decoded
	Errors         int              `json:"errors"`          // reads that failed (retried next pass)
}

// sweepParallelism bounds concurrent GETs of one sweep or list page.
const sweepParallelism = 8

// Sweep repairs the indexes of one page of a shard: for every pending task
// the ready entry at its available_at must exist, for every running task
// the lease entry at its lease_expires_at; missing ones are written. A
// pending task past its expires_at is expired instead. Cost:
// 1 LIST + 1 GET per task + 1 GET per pending or running task (the entry
// check) + 1 PUT per repair. Stale entries are not searched for here: the
// readers (Claim, ExpireLease, List) remove them when they meet them.
// cursor is "" for the first page; the returned cursor is "" after the last.
func (q *Queue) Sweep(ctx context.Context, shard string, pageSize int, cursor string) (SweepResult, string, error) {
	var res SweepResult
	if !q.ValidShard(shard) {
		return res, "", fmt.Errorf("sweep: %w", invalidInput("shard %q is not one of this queue's %d shards", shard, len(q.shards)))
	}
	if pageSize <= 0 {
		pageSize = 1000
	}
	prefix := TasksPrefix + shard + "/"
	if cursor != "" && (len(cursor) <= len(prefix) || cursor[:len(prefix)] != prefix) {
		return res, "", fmt.Errorf("sweep: %w", invalidInput("cursor %q does not belong to shard %s", cursor, shard))
	}
	page, err := q.s.List(ctx, store.ListParams{Prefix: prefix, StartAfter: cursor, Limit: pageSize})
	if err != nil {
		return res, "", fmt.Errorf("sweep shard %s: %w", shard, err)
	}
	var mu sync.Mutex
	forEach(len(page.Objects), sweepParallelism, func(i int) {
		key := page.Objects[i].Key
		r := q.sweepOne(ctx, key)
		mu.Lock()
		defer mu.Unlock()
		res.Scanned++
		res.ReadyRepaired += r.ReadyRepaired
		res.LeasesRepaired += r.LeasesRepaired
		res.Expired += r.Expired
		res.Errors += r.Errors
		res.Malformed = append(res.Malformed, r.Malformed...)
	})
	next := ""
	if page.NextToken != "" && len(page.Objects) > 0 {
		next = page.Objects[len(page.Objects)-1].Key
	}
	return res, next, ctx.Err()
}

func (q *Queue) sweepOne(ctx context.Context, key string) SweepResult {
	var r SweepResult
	obj, err := q.s.Get(ctx, key)
	if errors.Is(err, store.ErrNotFound) {
		return r
	}
	if err != nil {
		q.log.Debug("sweep: read failed", "key", key, "err", err)
		r.Errors++
		return r
	}
	t, err := DecodeTask(key, obj.Body)
	if err != nil {
		var m *MalformedError
		if errors.As(err, &m) {
			r.Malformed = append(r.Malformed, *m)
		} else {
			r.Errors++
		}
		return r
	}
	if expiredAt(t, q.Now()) {
		if _, err := q.expire(ctx, t, obj.ETag); err != nil {
			q.log.Debug("sweep: expire failed", "key", key, "err", err)
			r.Errors++
		} else {
			r.Expired++
		}
		return r
	}
	var want string
	switch t.Status {
	case StatusPending:
		want = ReadyKey(t)
	case StatusRunning:
		want = LeaseKey(t)
	default:
		return r
	}
	_, err = q.s.Get(ctx, want)
	switch {
	case err == nil:
		return r
	case !errors.Is(err, store.ErrNotFound):
		q.log.Debug("sweep: index read failed", "key", want, "err", err)
		r.Errors++
		return r
	}
	if _, err := q.s.Put(ctx, want, nil, store.Condition{}); err != nil {
		q.log.Debug("sweep: index repair failed", "key", want, "err", err)
		r.Errors++
		return r
	}
	if t.Status == StatusPending {
		r.ReadyRepaired++
	} else {
		r.LeasesRepaired++
	}
	return r
}

// forEach runs fn(0..n-1) with at most par calls in flight.
func forEach(n, par int, fn func(i int)) {
	if n == 0 {
		return
	}
	if par > n {
		par = n
	}
	var wg sync.WaitGroup
	idx := make(chan int)
	for w := 0; w < par; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range idx {
				fn(i)
			}
		}()
	}
	for i := 0; i < n; i++ {
		idx <- i
	}
	close(idx)
	wg.Wait()
}
