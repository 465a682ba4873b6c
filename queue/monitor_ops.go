package queue

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/qo-queue/qo/store"
)

// Recovery holds the operations that recover from crashes and lost
// responses, which the leading monitor runs (see doc.go, "Leases and
// liveness", "Sweeper"): walking the lease index (ListLeases), taking
// back the tasks of expired leases and dead workers (ExpireLease,
// ReclaimLease), sweeping the ready and waiting indexes (Sweep,
// SweepWaiting) and repairing a shard's indexes (Repair). A worker that
// restarts reads its old leases with it too. Applications need none of
// it: the monitor a worker embeds runs them.
type Recovery struct{ q *Queue }

// Recovery returns the queue's recovery operations.
func (q *Queue) Recovery() *Recovery { return &Recovery{q: q} }

// LeaseEntry is one lease-index entry, decoded from its key alone.
type LeaseEntry struct {
	Key       string
	ID        uuid.UUID
	Shard     string
	Type      string
	LeaseID   string
	WorkerID  string // the lease holder
	ExpiresAt time.Time
	// Modified is when the entry was written (from the listing; zero when
	// not known).
	Modified time.Time
}

// LeaseFilter picks the lease entries ListLeases returns.
type LeaseFilter int

const (
	// AllLeases: every lease entry, expired or not. The lease index holds
	// one entry per running task, so a full walk costs ceil(running tasks
	// / limit) LISTs (one when nothing runs), whatever the bucket's
	// history. Each entry names its holder (see ReclaimLease).
	AllLeases LeaseFilter = iota
	// ExpiredLeases: the entries whose expiry is <= now. Within a
	// partition entries are in expiry order, so the walk skips the rest
	// of a partition at its first live lease.
	ExpiredLeases
)

// ListLeases returns the lease entries which picks, from one LIST page of
// at most limit keys (<= 0: 1000) walking the shard partitions of leases/
// (see walkPartitions); next is the startAfter of the next call, "" at
// the end.
func (r *Recovery) ListLeases(ctx context.Context, which LeaseFilter, limit int, startAfter string) ([]LeaseEntry, string, error) {
	q := r.q
	return q.listLeases(ctx, limit, startAfter, which == ExpiredLeases)
}

func (q *Queue) listLeases(ctx context.Context, limit int, startAfter string, expiredOnly bool) ([]LeaseEntry, string, error) {
	if limit <= 0 {
		limit = 1000
	}
	now := q.Now()
	var out []LeaseEntry
	next, err := q.walkPartitions(ctx, q.shardPartitions(LeasesPrefix, nil), startAfter, limit, func(o store.ObjectInfo) bool {
		e, err := ParseLeaseKey(o.Key)
		if err != nil {
			old, ok := parseLayout2LeaseKey(o.Key)
			if !ok {
				q.log.Debug("skipping unparseable lease entry", "key", o.Key, "err", err)
				return false
			}
			// A worker of layout 2 still runs on this queue (see doc.go,
			// "Key layout"): its entry is read as it is, so the task is
			// taken back like any other once the lease or the holder dies.
			e = old
			if _, seen := q.olderHolders.LoadOrStore(e.WorkerID, true); !seen {
				q.log.Warn("lease entry of an older key layout: a qo of an older version works on this queue (stop it)", "key", o.Key, "worker_id", e.WorkerID)
			}
		}
		if expiredOnly && e.ExpiresAt.After(now) {
			return true
		}
		e.Modified = o.LastModified
		out = append(out, e)
		return false
	})
	if err != nil {
		return nil, "", fmt.Errorf("list leases: %w", err)
	}
	return out, next, nil
}

// ReclaimLease ends the attempt of a running task whose lease holder
// stopped heartbeating (the caller judged it dead, see registry.Beats; a zero
// lastBeat means the holder has no registry entry, and the task is then
// taken back only once its claim is older than deadAfter + MaxClockSkew), before the
// lease itself runs out: back to pending after backoff while retries
// remain, failed when exhausted, cancelled when cancellation was requested
// (event timed_out, as for an expired lease; a crash may be the task's own
// doing, so it counts as an attempt). The write is fenced on the entry's
// lease id, so a holder that finished meanwhile wins and the entry is
// ErrConflict; so is a stale entry (deleted once older than IndexGrace).
func (r *Recovery) ReclaimLease(ctx context.Context, e LeaseEntry, lastBeat time.Time, deadAfter time.Duration) (*Task, error) {
	q := r.q
	base, etag, err := q.leasedTask(ctx, e, "reclaim lease")
	if err != nil {
		return nil, err
	}
	if base.Status != StatusRunning || base.LeaseID != e.LeaseID || base.WorkerID != e.WorkerID {
		if LeaseKey(base) != e.Key {
			q.dropStale(ctx, e.Key, e.Modified)
		}
		return nil, fmt.Errorf("reclaim lease of task %s: %w (task is %s under another lease)", e.ID, ErrConflict, base.Status)
	}
	beat := "no registry entry"
	if lastBeat.IsZero() && q.Now().Sub(base.UpdatedAt) <= deadAfter+MaxClockSkew {
		return nil, fmt.Errorf("reclaim lease of task %s: %w (claimed at %s by %s, which has no registry entry yet)", e.ID, ErrConflict, base.UpdatedAt.Format(time.RFC3339Nano), base.WorkerID)
	}
	if !lastBeat.IsZero() {
		beat = "last at " + lastBeat.UTC().Format(time.RFC3339)
	}
	return q.takeBack(ctx, base, etag, e, "reclaim lease", func(t *Task, now time.Time) (string, error) {
		t.LastError = fmt.Sprintf("worker %s stopped heartbeating (%s) while it ran attempt %d", t.WorkerID, beat, t.Attempt)
		return q.retryOrFail(t, now, 0, EventTimedOut, EventTimedOut), nil
	})
}

// leasedTask reads the task of a lease entry for op; a missing task makes
// the entry stale (ErrConflict, the entry removed once old enough).
func (q *Queue) leasedTask(ctx context.Context, e LeaseEntry, op string) (*Task, string, error) {
	base, etag, err := q.getTask(ctx, e.ID)
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			q.dropStale(ctx, e.Key, e.Modified)
			return nil, "", fmt.Errorf("%s of task %s: %w (stale lease entry: no such task)", op, e.ID, ErrConflict)
		}
		return nil, "", fmt.Errorf("%s: %w", op, err)
	}
	return base, etag, nil
}

// takeBack applies the monitor's change to a running task, fenced on the
// lease it saw (losing to the holder is ErrConflict), and removes the
// entry e when it was not the task's own (left over by an extension).
func (q *Queue) takeBack(ctx context.Context, base *Task, etag string, e LeaseEntry, op string, change func(*Task, time.Time) (string, error)) (*Task, error) {
	res, err := q.apply(ctx, base, etag, mutation{op: op, fence: base.LeaseID, fenceErr: ErrConflict, rebase: true, change: change})
	if err != nil {
		return nil, err
	}
	if k := LeaseKey(res.prev); k != e.Key {
		q.dropStale(ctx, e.Key, e.Modified)
	}
	return res.next, nil
}

// ExpireLease ends the attempt of a running task whose lease expired: back
// to pending after backoff (timed_out) while retries remain, failed
// (timed_out) when exhausted, cancelled when cancellation was requested.
// A stale entry (task gone or not running) is deleted; an entry for a lease
// that was extended is moved to the current expiry. Both are ErrConflict,
// as is losing the race against the worker finishing.
func (r *Recovery) ExpireLease(ctx context.Context, e LeaseEntry) (*Task, error) {
	q := r.q
	base, etag, err := q.leasedTask(ctx, e, "expire lease")
	if err != nil {
		return nil, err
	}
	if base.Status != StatusRunning || (e.LeaseID != "" && base.LeaseID != e.LeaseID) {
		q.dropStale(ctx, e.Key, e.Modified)
		return nil, fmt.Errorf("expire lease of task %s: %w (task is %s under another lease; stale entry)", e.ID, ErrConflict, base.Status)
	}
	now := q.Now()
	if !leaseExpired(base, now) {
		if LeaseKey(base) != e.Key {
			q.dropStale(ctx, e.Key, e.Modified) // left over by an extension
		}
		return nil, fmt.Errorf("expire lease of task %s: %w (lease runs until %s)", e.ID, ErrConflict, base.LeaseExpiresAt.Format(time.RFC3339Nano))
	}
	return q.takeBack(ctx, base, etag, e, "expire lease", func(t *Task, now time.Time) (string, error) {
		if !leaseExpired(t, now) {
			return "", fmt.Errorf("%w (lease was extended to %s)", ErrConflict, t.LeaseExpiresAt.Format(time.RFC3339Nano))
		}
		t.LastError = fmt.Sprintf("lease expired: worker %s did not finish attempt %d within %ds", t.WorkerID, t.Attempt, t.TimeoutSeconds)
		return q.retryOrFail(t, now, 0, EventTimedOut, EventTimedOut), nil
	})
}

// leaseExpired reports whether a running task's lease ran out (a missing
// expiry counts as expired: nobody can prove they hold it).
func leaseExpired(t *Task, now time.Time) bool {
	return t.LeaseExpiresAt == nil || !t.LeaseExpiresAt.After(now)
}

// SweepResult counts what one Sweep or Repair page found and repaired.
type SweepResult struct {
	Listed         int              `json:"listed"`          // keys listed
	Scanned        int              `json:"scanned"`         // task objects read
	ReadyRepaired  int              `json:"ready_repaired"`  // missing ready entries written
	LeasesRepaired int              `json:"leases_repaired"` // missing lease entries written
	DeadRepaired   int              `json:"dead_repaired"`   // missing dead-letter entries written
	StaleRemoved   int              `json:"stale_removed"`   // stale entries deleted
	Converted      int              `json:"converted"`       // ready entries of an older key layout rewritten (a process of that layout still writes)
	Expired        int              `json:"expired"`         // pending tasks past expires_at, now expired
	WaitingDecided int              `json:"waiting_decided"` // waiting tasks released, cancelled or failed by the sweep (a parent's end not recorded)
	Registered     int              `json:"registered"`      // waiting tasks whose parents did not know them (a submit stopped half-way)
	Malformed      []MalformedError `json:"-"`               // objects that could not be decoded
	Errors         int              `json:"errors"`          // reads or writes that failed (retried next pass)
}

// Add adds o's counts (and malformed objects) to r.
func (r *SweepResult) Add(o SweepResult) {
	r.Listed += o.Listed
	r.Scanned += o.Scanned
	r.ReadyRepaired += o.ReadyRepaired
	r.LeasesRepaired += o.LeasesRepaired
	r.DeadRepaired += o.DeadRepaired
	r.StaleRemoved += o.StaleRemoved
	r.Converted += o.Converted
	r.Expired += o.Expired
	r.WaitingDecided += o.WaitingDecided
	r.Registered += o.Registered
	r.Errors += o.Errors
	r.Malformed = append(r.Malformed, o.Malformed...)
}

// sweepParallelism bounds concurrent GETs of one sweep or list page.
const sweepParallelism = 8

// Sweep is the monitor's safety net over the ready index, one LIST page of
// "ready/" (all partitions, pageSize keys, <= 0: 1000) per call. Workers
// claim what they can run within seconds, so an entry that is available
// and was written more than idle ago belongs to a task nobody claims (a
// paused type, a type no worker serves) or to nothing at all: only those
// are read (1 GET each). A pending task past its expires_at becomes
// expired; an entry whose task is gone or moved on is deleted (once older
// than IndexGrace). Nothing else is read, so a pass costs one LIST per
// 1,000 ready entries plus one GET per stuck entry, whatever the number of
// finished tasks in the bucket. An entry of an older key layout (written
// by a process of that layout still running beside this one) older than
// idle is converted: its task, when pending, gets its current entry (1 GET
// + 1 PUT + 1 DELETE; see doc.go, "Key layout"). Missing entries are not
// searched for: index entries are written before their task (see doc.go),
// so no single crash or lost response leaves one out; Repair rebuilds them
// after damage.
// cursor is "" for the first page; the returned cursor is "" after the last.
func (r *Recovery) Sweep(ctx context.Context, cursor string, pageSize int, idle time.Duration) (SweepResult, string, error) {
	q := r.q
	now := q.Now()
	return q.sweepPage(ctx, ReadyPrefix, cursor, pageSize, func(o store.ObjectInfo) func() SweepResult {
		e, err := ParseReadyKey(o.Key)
		if err != nil {
			id, old := oldEntry(ReadyPrefix, o.Key)
			if !old {
				q.log.Debug("sweep: unparseable ready entry", "key", o.Key, "err", err)
				return nil
			}
			if idle > 0 && now.Sub(o.LastModified) < idle {
				return nil
			}
			return func() SweepResult { return q.sweepOldEntry(ctx, o.Key, id, o.LastModified) }
		}
		if e.AvailableAt.After(now) || (idle > 0 && now.Sub(o.LastModified) < idle) {
			return nil
		}
		e.Modified = o.LastModified
		return func() SweepResult { return q.sweepEntry(ctx, e) }
	})
}

// sweepPage lists one page under prefix (pageSize keys, <= 0: 1000) and
// runs, sweepParallelism at a time, the check that pick returns for each
// entry (nil: the entry is left alone), adding up the results. The cursor
// returned is "" after the last page.
func (q *Queue) sweepPage(ctx context.Context, prefix, cursor string, pageSize int, pick func(store.ObjectInfo) func() SweepResult) (SweepResult, string, error) {
	var res SweepResult
	if pageSize <= 0 {
		pageSize = 1000
	}
	page, err := q.s.List(ctx, store.ListParams{Prefix: prefix, StartAfter: cursor, Limit: pageSize})
	if err != nil {
		return res, "", fmt.Errorf("sweep %s: %w", prefix, err)
	}
	var checks []func() SweepResult
	for _, o := range page.Objects {
		res.Listed++
		if check := pick(o); check != nil {
			checks = append(checks, check)
		}
	}
	var mu sync.Mutex
	forEach(len(checks), sweepParallelism, func(i int) {
		r := checks[i]()
		mu.Lock()
		res.Add(r)
		mu.Unlock()
	})
	next := ""
	if page.NextToken != "" && len(page.Objects) > 0 {
		next = page.Objects[len(page.Objects)-1].Key
	}
	return res, next, ctx.Err()
}

// sweepOldEntry converts a ready entry of an older key layout, written by a
// process of that layout still running beside this one (see convertEntry):
// the task, when pending, gets its current entry.
func (q *Queue) sweepOldEntry(ctx context.Context, key string, id uuid.UUID, modified time.Time) SweepResult {
	r := SweepResult{Scanned: 1}
	moved, removed, err := q.convertEntry(ctx, ReadyPrefix, key, id, modified)
	var bad *MalformedError
	switch {
	case errors.As(err, &bad):
		r.Malformed = append(r.Malformed, *bad)
	case err != nil:
		q.log.Debug("sweep: older-layout entry not converted", "key", key, "err", err)
		r.Errors++
	case moved:
		r.Converted++
	case removed:
		r.StaleRemoved++
	}
	return r
}

// sweepEntry checks one stuck ready entry against its task.
func (q *Queue) sweepEntry(ctx context.Context, e ReadyEntry) SweepResult {
	t, etag, r, ok := q.sweepRead(ctx, e.ID, e.Key, e.Modified, StatusPending)
	if !ok {
		return r
	}
	if expiredAt(t, q.Now()) {
		if _, err := q.expire(ctx, t, etag); err != nil {
			q.log.Debug("sweep: expire failed", "task", e.ID, "err", err)
			r.Errors++
		} else {
			r.Expired++
		}
	}
	return r
}

// Repair walks one page of a shard's task objects (pageSize keys, <= 0:
// 1000) and writes every missing index entry: the ready entry of a pending
// task, the lease entry of a running one, the dead-letter entry of a
// failed one; pending tasks past their expires_at become expired. It reads
// every task of the page (1 LIST + 1 GET per task + 1 GET per entry
// checked + 1 PUT per repair), so a pass costs in proportion to the
// bucket's history: it is for `qo repair` after damage (objects deleted by
// hand, a restored backup) and for Migrate, never for a background loop.
// cursor is "" for the first page; the returned cursor is "" after the last.
func (r *Recovery) Repair(ctx context.Context, shard string, pageSize int, cursor string) (SweepResult, string, error) {
	q := r.q
	var res SweepResult
	if !q.ValidShard(shard) {
		return res, "", fmt.Errorf("repair: %w", invalidInput("shard %q is not one of this queue's %d shards", shard, len(q.shards)))
	}
	if pageSize <= 0 {
		pageSize = 1000
	}
	prefix := TasksPrefix + shard + "/"
	if cursor != "" && !strings.HasPrefix(cursor, prefix) {
		return res, "", fmt.Errorf("repair: %w", invalidInput("cursor %q does not belong to shard %s", cursor, shard))
	}
	page, err := q.s.List(ctx, store.ListParams{Prefix: prefix, StartAfter: cursor, Limit: pageSize})
	if err != nil {
		return res, "", fmt.Errorf("repair shard %s: %w", shard, err)
	}
	var mu sync.Mutex
	forEach(len(page.Objects), sweepParallelism, func(i int) {
		r := q.repairOne(ctx, page.Objects[i].Key)
		mu.Lock()
		res.Add(r)
		mu.Unlock()
	})
	res.Listed = len(page.Objects)
	next := ""
	if page.NextToken != "" && len(page.Objects) > 0 {
		next = page.Objects[len(page.Objects)-1].Key
	}
	return res, next, ctx.Err()
}

func (q *Queue) repairOne(ctx context.Context, key string) SweepResult {
	r := SweepResult{Scanned: 1}
	obj, err := q.getLimited(ctx, key, maxTaskObject)
	if errors.Is(err, store.ErrNotFound) {
		return r
	}
	if m := (*MalformedError)(nil); errors.As(err, &m) {
		r.Malformed = append(r.Malformed, *m) // over its bound
		return r
	}
	if err != nil {
		q.log.Debug("repair: read failed", "key", key, "err", err)
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
			q.log.Debug("repair: expire failed", "key", key, "err", err)
			r.Errors++
		} else {
			r.Expired++
		}
		return r
	}
	for _, want := range IndexKeys(t) {
		_, err = q.getLimited(ctx, want, maxSmallObject)
		switch {
		case err == nil:
			continue
		case !errors.Is(err, store.ErrNotFound):
			q.log.Debug("repair: index read failed", "key", want, "err", err)
			r.Errors++
			continue
		}
		if _, err := q.s.Put(ctx, want, nil, store.Condition{}); err != nil {
			q.log.Debug("repair: index write failed", "key", want, "err", err)
			r.Errors++
			continue
		}
		switch t.Status {
		case StatusPending:
			r.ReadyRepaired++
		case StatusRunning:
			r.LeasesRepaired++
		case StatusFailed:
			r.DeadRepaired++
		}
	}
	return r
}

// SweepWaiting is the safety net of dependencies (see doc.go,
// "Dependencies"), one LIST page of "waiting/" (all shards, pageSize keys,
// <= 0: 1000) per call. Each waiting task whose entry is older than idle
// is read with its parents that have not ended (1 GET each): a parent that
// ended without telling it (its writer died between the parent's write and
// the child's) is recorded now, which releases, cancels or fails the task;
// a parent that does not list it (its submit died half-way) is told. A
// pass costs one LIST per 1,000 waiting tasks plus their reads, whatever
// the number of finished tasks. cursor is "" for the first page; the
// returned cursor is "" after the last.
func (r *Recovery) SweepWaiting(ctx context.Context, cursor string, pageSize int, idle time.Duration) (SweepResult, string, error) {
	q := r.q
	now := q.Now()
	return q.sweepPage(ctx, WaitingPrefix, cursor, pageSize, func(o store.ObjectInfo) func() SweepResult {
		_, id, err := ParseWaitingKey(o.Key)
		if err != nil {
			q.log.Debug("sweep: unparseable waiting entry", "key", o.Key, "err", err)
			return nil
		}
		if idle > 0 && now.Sub(o.LastModified) < idle {
			return nil
		}
		return func() SweepResult { return q.sweepWaitingEntry(ctx, o.Key, id, o.LastModified) }
	})
}

// sweepRead reads the task of the index entry key (written at modified)
// for a sweep. ok is false when the entry needs nothing more: its object
// is malformed (reported), gone or no longer in status with this entry
// (the entry removed once stale), or unreadable (an error counted); r says
// what was done.
func (q *Queue) sweepRead(ctx context.Context, id uuid.UUID, key string, modified time.Time, status Status) (t *Task, etag string, r SweepResult, ok bool) {
	r = SweepResult{Scanned: 1}
	t, etag, err := q.getTask(ctx, id)
	var m *MalformedError
	switch {
	case errors.As(err, &m):
		r.Malformed = append(r.Malformed, *m)
		return nil, "", r, false
	case err != nil && !errors.Is(err, ErrNotFound):
		q.log.Debug("sweep: read failed", "task", id, "err", err)
		r.Errors++
		return nil, "", r, false
	case err != nil:
		if q.dropStale(ctx, key, modified) {
			r.StaleRemoved++
		}
		return nil, "", r, false
	case t.Status != status || !slices.Contains(IndexKeys(t), key):
		if q.dropForeign(ctx, key, t, q.staleEntry(modified)) {
			r.StaleRemoved++
		}
		return nil, "", r, false
	}
	return t, etag, r, true
}

// sweepWaitingEntry checks one waiting entry against its task and parents.
func (q *Queue) sweepWaitingEntry(ctx context.Context, key string, id uuid.UUID, modified time.Time) SweepResult {
	t, _, r, ok := q.sweepRead(ctx, id, key, modified, StatusWaiting)
	if !ok {
		return r
	}
	next, told, err := q.register(ctx, t)
	switch {
	case errors.Is(err, ErrNotFound) && q.Now().Sub(t.CreatedAt) > OrphanAfter:
		if done, cerr := q.cancelOrphan(ctx, t); cerr != nil {
			q.log.Debug("sweep: orphaned waiting task not cancelled", "task", id, "err", cerr)
			r.Errors++
		} else {
			next = done
		}
	case err != nil:
		q.log.Debug("sweep: waiting task not repaired", "task", id, "err", err)
		r.Errors++
	}
	if told > 0 {
		r.Registered++
	}
	if next != nil && next.Status != StatusWaiting {
		r.WaitingDecided++
	}
	return r
}

// OrphanAfter is how long a waiting task whose parent does not exist is
// left for the submit that made it to finish (a workflow's submit writes
// children before parents, and its repeat with the same idempotency key
// creates what is missing) before the sweeper cancels it.
const OrphanAfter = time.Hour

// cancelOrphan cancels waiting task t, naming a parent that does not
// exist (1 GET per parent that has not ended, then the cancel).
func (q *Queue) cancelOrphan(ctx context.Context, t *Task) (*Task, error) {
	var missing uuid.UUID
	for _, p := range t.Parents {
		if p.Done != "" {
			continue
		}
		if _, _, err := q.getTask(ctx, p.ID); errors.Is(err, ErrNotFound) {
			missing = p.ID
			break
		}
	}
	if missing == uuid.Nil {
		return t, nil // the parent exists now
	}
	reason := fmt.Sprintf("parent %s does not exist (its submit stopped half-way and was not repeated within %s)", missing, OrphanAfter)
	return q.Cancel(ctx, t.ID, reason)
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
