package monitor

import (
	"context"
	"errors"
	"slices"
	"sort"
	"time"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/queue/registry"
)

func (m *Monitor) checkLeases(ctx context.Context) {
	if !m.IsLeader() {
		return
	}
	if _, err := m.CheckLeases(ctx); err != nil && ctx.Err() == nil {
		m.log.Warn("lease check failed", "err", err)
	}
}

// CheckTimeouts is CheckLeases, returning only how many tasks it changed.
func (m *Monitor) CheckTimeouts(ctx context.Context) (int, error) {
	r, err := m.CheckLeases(ctx)
	return r.Expired + r.Reclaimed, err
}

// LeaseCheck is what one CheckLeases round found and did.
type LeaseCheck struct {
	Leases    int      // lease entries listed (running tasks; this round's part of the index)
	Expired   int      // tasks whose lease ran out, taken back
	Reclaimed int      // tasks whose holder stopped heartbeating, taken back
	Dead      []string // holders whose tasks were taken back, sorted
	// More: the round stopped at its budget (maxLeasePages pages); the
	// next goes on from there.
	More bool
}

// CheckLeases walks the lease index (one LIST per 1,000 running tasks; one
// when nothing runs) and takes back every task whose lease ran out or
// whose holder is dead: requeued with backoff, failed when its retries are
// exhausted, or cancelled when a cancel was requested. A holder is dead
// when its registry entry is older than its DeadAfter plus
// queue.MaxClockSkew by the store's clock (the worker itself stops its
// handlers at three quarters of DeadAfter; the registry is listed only when
// some holder could be dead, see someHolderMayBeDead; an entry is read only
// when it looks dead by Options.DeadAfter), or when it has no entry
// and its lease entry is older than DeadAfter. Leadership is not checked
// here (Run only calls it while leading); calling it from a non-leader is
// safe, just wasteful.
//
// A round lists at most maxLeasePages x 1,000 entries (100,000): the
// whole index, from the first shard, while it holds fewer. A larger index
// is walked in parts: each round goes on where the last one stopped
// (wrapping from the last shard to the first), so every entry is checked
// within ceil(M / 100,000) rounds, M the number of lease entries the
// index holds over those rounds, and a round costs at most
// maxLeasePages + 1 LISTs (one more when it wraps). The position is kept
// in this monitor only: a new leader starts at the first shard.
func (m *Monitor) CheckLeases(ctx context.Context) (LeaseCheck, error) {
	var r LeaseCheck
	now := m.opts.Clock.Now()
	entries, more, err := m.listLeaseRound(ctx)
	if err != nil {
		return r, err
	}
	r.More = more
	var expired, live []queue.LeaseEntry
	for _, e := range entries {
		if e.ExpiresAt.After(now) {
			live = append(live, e)
		} else {
			expired = append(expired, e)
		}
	}
	r.Leases = len(entries)
	for _, e := range expired {
		if ctx.Err() != nil {
			return r, ctx.Err()
		}
		t, err := m.q.Recovery().ExpireLease(ctx, e)
		if m.logTakeBack(e, t, err, "task lease expired", "lease_expired_at", e.ExpiresAt) {
			r.Expired++
		}
	}
	// Only the holders of this round's part of the index are judged; see
	// someHolderMayBeDead for why a part is enough. A dead holder's
	// entries in other parts are taken back when the walk reaches them.
	if !m.someHolderMayBeDead(live, now) {
		return r, nil
	}
	dead, err := m.deadHolders(ctx, live, now)
	if err != nil {
		return r, err
	}
	for _, e := range live {
		beat, ok := dead[e.WorkerID]
		if !ok {
			continue
		}
		if ctx.Err() != nil {
			return r, ctx.Err()
		}
		t, err := m.q.Recovery().ReclaimLease(ctx, e, beat, m.opts.DeadAfter)
		if m.logTakeBack(e, t, err, "worker stopped heartbeating: task taken back", "worker_id", e.WorkerID, "last_heartbeat", beat) {
			r.Reclaimed++
			if !slices.Contains(r.Dead, e.WorkerID) {
				r.Dead = append(r.Dead, e.WorkerID)
			}
		}
	}
	sort.Strings(r.Dead)
	return r, nil
}

// maxLeasePages bounds one lease round: 100 pages of 1,000 entries.
const maxLeasePages = 100

// listLeaseRound lists this round's part of the lease index: the next
// leasePages x leasePageSize entries after the position the last round
// stopped at, wrapping from the end of the index to its start and
// stopping where the round began, or the whole index when it is smaller.
// It moves the position on (back to the start when the round saw every
// entry); more reports that the round stopped at its budget.
func (m *Monitor) listLeaseRound(ctx context.Context) (_ []queue.LeaseEntry, more bool, _ error) {
	size, pages := m.leaseWalk()
	m.mu.Lock()
	start := m.leaseCursor
	m.mu.Unlock()
	var out []queue.LeaseEntry
	pos, wrapped := start, false
	left := size * pages // entries this round may still list
	for {
		if left <= 0 {
			break // the budget is spent: the next round goes on from pos
		}
		ask := min(size, left)
		entries, next, err := m.q.Recovery().ListLeases(ctx, queue.AllLeases, ask, pos)
		if err != nil {
			return nil, false, err // the next round tries the same part again
		}
		if next != "" {
			left -= ask // a full page
		} else {
			left -= len(entries)
		}
		for _, e := range entries {
			if wrapped && e.Key > start {
				next, pos = "", "" // listed at the beginning of this round
				break
			}
			out = append(out, e)
		}
		if next == "" && (start == "" || wrapped) {
			pos = "" // every entry was listed: the next round begins at the start
			break
		}
		if next == "" {
			wrapped, pos = true, "" // the end: go on from the first shard
			continue
		}
		pos = next
		if wrapped && pos >= start {
			pos = ""
			break
		}
	}
	m.mu.Lock()
	m.leaseCursor = pos
	m.mu.Unlock()
	return out, pos != "", nil
}

// leaseWalk returns the page size and the page budget of a lease round.
func (m *Monitor) leaseWalk() (size, pages int) {
	size, pages = 1000, maxLeasePages
	if m.leasePageSize > 0 {
		size = m.leasePageSize
	}
	if m.leasePages > 0 {
		pages = m.leasePages
	}
	return size, pages
}

// logTakeBack logs the outcome of expiring or reclaiming a lease and
// reports whether the task was taken back.
func (m *Monitor) logTakeBack(e queue.LeaseEntry, t *queue.Task, err error, msg string, extra ...any) bool {
	switch {
	case err == nil:
		attrs := append([]any{"task_id", e.ID, "shard", e.Shard}, extra...)
		if t != nil {
			attrs = append(attrs, "task_type", t.Type, "status", t.Status, "retry_count", t.RetryCount, "available_at", t.AvailableAt)
			if o := m.opts.Observer; o != nil {
				o.TimedOut(t.Type)
			}
		}
		m.log.Info(msg, attrs...)
		return true
	case errors.Is(err, queue.ErrConflict), errors.Is(err, queue.ErrNotFound):
		// Finished, released or already handled meanwhile.
		m.log.Debug("lease entry needs no action", "task_id", e.ID, "reason", err)
	default:
		m.log.Warn("taking a task back failed (retried when the lease walk comes back to it)", "task_id", e.ID, "key", e.Key, "err", err)
	}
	return false
}

// someHolderMayBeDead reports whether a holder of the live leases could be
// judged dead now, so that the registry is worth listing. A worker claims
// only while its last heartbeat to land is younger than three quarters of
// its DeadAfter (see worker.stopAfter), and it is dead only once that
// heartbeat is older than its DeadAfter (and Options.DeadAfter, the
// shortest bound in the fleet), so it cannot be dead sooner than a quarter
// of Options.DeadAfter after its newest lease entry was written (both times
// by the store's clock; a claim whose writes took longer than that to land
// moves it by as much). While every holder's newest entry is younger (a
// busy queue of short tasks) the round costs its one LIST of the lease
// index and no more. An entry of unknown age counts as old.
//
// live may be a part of the index (a round of a large one): any entry of a
// holder younger than the quarter rules its death out as well as its
// newest would, and a holder whose entries in the part are all older only
// makes the round list the registry, which then decides.
func (m *Monitor) someHolderMayBeDead(live []queue.LeaseEntry, now time.Time) bool {
	newest := map[string]time.Time{}
	for _, e := range live {
		if t, ok := newest[e.WorkerID]; !ok || e.Modified.After(t) {
			newest[e.WorkerID] = e.Modified
		}
	}
	for _, t := range newest {
		if now.Sub(t) >= m.opts.DeadAfter/4 {
			return true
		}
	}
	return false
}

// deadHolders returns the holders of live leases that are dead, with their
// last heartbeat (zero: no registry entry; ReclaimLease then judges the
// claim's age).
func (m *Monitor) deadHolders(ctx context.Context, live []queue.LeaseEntry, now time.Time) (map[string]time.Time, error) {
	beats, err := registry.Beats(ctx, m.q)
	if err != nil {
		return nil, err
	}
	dead := map[string]time.Time{}
	judged := map[string]bool{}
	for _, e := range live {
		id := e.WorkerID
		if judged[id] {
			continue
		}
		judged[id] = true
		written, registered := beats[id]
		switch {
		case !registered:
			// Deregistered or pruned while holding a lease (a worker
			// registers before it claims).
			dead[id] = time.Time{}
		case !beatDead(written, now, m.opts.DeadAfter):
		default:
			if beat, ok := m.lastBeat(ctx, id, written, now); !ok {
				dead[id] = beat
			}
		}
	}
	return dead, nil
}

// lastBeat reads the registry entry of a worker that looks dead by the
// listing (once per write of the entry) and judges it by the heartbeat time
// it carries and the liveness bound it states. ok is true while it lives,
// or when the entry could not be read (judged again next round).
func (m *Monitor) lastBeat(ctx context.Context, id string, written, now time.Time) (beat time.Time, ok bool) {
	m.mu.Lock()
	c, cached := m.declared[id]
	m.mu.Unlock()
	if !cached || !c.written.Equal(written) {
		c = declaredBound{written: written, beat: written, bound: m.opts.DeadAfter}
		info, err := registry.Get(ctx, m.q, id)
		var bad *queue.MalformedError
		switch {
		case err == nil:
			c.beat, c.bound = info.LastHeartbeat, max(c.bound, info.DeadAfter())
		case errors.As(err, &bad):
			m.log.Warn("malformed worker entry; judging it by its write time and the default liveness bound", "worker_id", id, "err", err)
		case errors.Is(err, queue.ErrNotFound):
			return time.Time{}, false // deregistered since the listing
		default:
			return time.Time{}, true
		}
		m.mu.Lock()
		if len(m.declared) > 10000 {
			clear(m.declared)
		}
		m.declared[id] = c
		m.mu.Unlock()
	}
	return c.beat, !beatDead(c.beat, now, c.bound)
}

type declaredBound struct {
	written time.Time // the entry's write time, from the listing
	beat    time.Time // the heartbeat time it carries
	bound   time.Duration
}
