// Package monitor recovers work that workers could not finish and keeps
// the indexes honest. One monitor is the leader at a time; the others
// stand by.
//
// # Leadership
//
// The leader holds the named lease queue.MonitorLeaderKey: acquired with a
// create-only PUT (or an If-Match take-over once expired), renewed with
// If-Match every LeaderTTL/3, released on shutdown. Lease times come from
// the queue's clock (the store's authoritative time). A standby retries the
// acquisition on the same cadence and takes over within about LeaderTTL
// after a leader dies (at once after a clean shutdown, which releases the
// lease).
//
// Leadership saves requests; it is not needed for correctness: every task
// change the monitor makes is a compare-and-swap that re-checks the task,
// so two monitors that both believe they lead (for at most one TTL after a
// partition) cannot corrupt anything.
//
// # Work done by the leader
//
//   - Leases, every LeaseCheckInterval (5s): walk the lease index (one
//     entry per running task, so one LIST when nothing runs) and take
//     back every task whose lease ran out (timeout_seconds plus
//     queue.LeaseGrace after its claim) or whose holder is dead: its
//     registry entry, rewritten at every heartbeat, is older than its
//     liveness bound (queue.DefaultDeadAfter, 20s) plus queue.MaxClockSkew
//     (the worker stops its handlers at three quarters of the bound, so
//     the attempts never overlap). The task is requeued
//     with backoff, failed when its retries are exhausted, or cancelled
//     when a cancel was requested; every change is fenced on the lease id,
//     so a holder that finishes meanwhile wins. A SIGKILLed worker's
//     tasks are pending again within DeadAfter + MaxClockSkew +
//     LeaseCheckInterval of its last heartbeat. A round lists at most
//     100,000 entries; a larger index is walked in parts, each round
//     going on where the last stopped, so every lease entry is checked
//     within ceil(entries / 100,000) rounds (entries: those the index
//     holds meanwhile), and LeaseCheckInterval in the bound above counts
//     that many times. The position is not kept in the bucket: a new
//     leader starts again at the first shard.
//   - Worker health, every CheckInterval: judge heartbeats (see Judge: the
//     same rule as the lease walk's, so a worker logged dead is one whose
//     tasks are taken back),
//     log workers that turn stale or dead, optionally delete registrations
//     dead for longer than PruneDeadAfter.
//   - Sweep, in a loop of its own (so it never delays the timeout check),
//     every SweepInterval: one page of the ready index (see queue.Sweep:
//     it reads only entries nobody claimed for SweepIdle, so it costs the
//     same with 0 or with millions of finished tasks), the cursor and the
//     pass times kept in the bucket (queue.SweepState) so a new leader
//     resumes the pass; pending tasks past their expires_at become
//     expired and stale entries are removed. Index entries are written
//     before their task, so no single fault leaves one missing; the sweep
//     is the safety net for what nobody claims. A full pass takes
//     ceil(ready entries / SweepPageSize) rounds. Each round also reads one
//     page of the waiting index (queue.SweepWaiting): a parent's end that
//     its writer died before recording on a child is recorded within one
//     SweepInterval (the bound docs/reliability.md states).
//   - Schedules: re-read schedules/ every ScheduleRefresh (1 LIST, plus a
//     GET per changed schedule) and wake at the next due time to submit it
//     (see queue.Scheduler; each due time submits one task however many
//     monitors run).
package monitor

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store"
)

// Defaults.
const (
	DefaultCheckInterval      = 30 * time.Second
	DefaultLeaseCheckInterval = 5 * time.Second
	DefaultSweepInterval      = 5 * time.Minute
	DefaultSweepPageSize      = 1000
	// DefaultSweepIdle is how long an available ready entry must have gone
	// unclaimed before the sweeper reads its task.
	DefaultSweepIdle       = time.Minute
	DefaultScheduleRefresh = 30 * time.Second
)

// Options configure a Monitor. Zero values take the defaults.
type Options struct {
	// ID names this monitor as the leader-lease holder (default:
	// "monitor-{hostname}-{random}"). Must be unique per running monitor.
	ID string
	// CheckInterval is how often the leader judges worker health for the
	// logs and prunes dead registrations (default 30s).
	CheckInterval time.Duration
	// LeaseCheckInterval is how often the leader walks the lease index to
	// take back the tasks of expired leases and of dead workers (default
	// 5s; see CheckLeases).
	LeaseCheckInterval time.Duration
	// DeadAfter is the shortest liveness bound the fleet's workers state:
	// a lease holder whose registry entry is older than this, and than
	// its own stated bound, is dead (default queue.DefaultDeadAfter).
	DeadAfter time.Duration
	// SweepInterval is how often the index sweeper runs (default 5m;
	// negative disables the sweeper).
	SweepInterval time.Duration
	// SweepPageSize bounds the ready entries one sweep round lists
	// (default 1000).
	SweepPageSize int
	// SweepIdle: the sweeper reads the task of an available ready entry
	// only once the entry is this old (default 1m): workers claim what
	// they can run long before.
	SweepIdle time.Duration
	// LeaderTTL is the leader lease's time to live (default 3 x
	// LeaseCheckInterval, clamped to [5s, 90s]: 15s, so a standby takes
	// over within about 20s of a leader's crash). Renewed every
	// LeaderTTL/3.
	LeaderTTL time.Duration
	// ScheduleRefresh is how often the leader re-reads the cron schedules
	// (default 30s; negative: this monitor runs no schedules). Due times
	// themselves are met to within a second or so.
	ScheduleRefresh time.Duration
	// PruneDeadAfter deletes registrations of workers whose last heartbeat
	// is older than this (0: never). A worker killed without a chance to
	// deregister otherwise stays listed as dead.
	PruneDeadAfter time.Duration
	// Clock is the time source (default: the queue's clock).
	Clock store.Clock
	// Logger receives the monitor's logs (default slog.Default()).
	Logger *slog.Logger
	// Observer, when set, is told about leadership changes and expired
	// leases (for metrics).
	Observer Observer
}

// Observer is told what a monitor does. Its methods must be quick and safe
// for concurrent use.
type Observer interface {
	// Leadership: this monitor became (true) or stopped being (false) the leader.
	Leadership(leader bool)
	// TimedOut: a task's lease expired and the monitor took it back.
	TimedOut(taskType string)
	// ScheduleRun: a schedule's due time was handled; outcome is
	// "submitted", "duplicate" (another monitor submitted it), "skipped"
	// (missed, policy skip or expired) or "failed" (retried next pass).
	ScheduleRun(schedule, outcome string)
}

func (o Options) withDefaults(q *queue.Queue) Options {
	if o.ID == "" {
		o.ID = DefaultID("monitor")
	}
	if o.CheckInterval <= 0 {
		o.CheckInterval = DefaultCheckInterval
	}
	if o.LeaseCheckInterval <= 0 {
		o.LeaseCheckInterval = DefaultLeaseCheckInterval
	}
	if o.DeadAfter <= 0 {
		o.DeadAfter = queue.DefaultDeadAfter
	}
	if o.SweepInterval == 0 {
		o.SweepInterval = DefaultSweepInterval
	}
	if o.SweepPageSize <= 0 {
		o.SweepPageSize = DefaultSweepPageSize
	}
	if o.SweepIdle <= 0 {
		o.SweepIdle = DefaultSweepIdle
	}
	if o.ScheduleRefresh == 0 {
		o.ScheduleRefresh = DefaultScheduleRefresh
	}
	if o.LeaderTTL <= 0 {
		o.LeaderTTL = min(max(3*o.LeaseCheckInterval, 5*time.Second), 90*time.Second)
	}
	if o.Clock == nil {
		o.Clock = store.ClockFunc(q.Now)
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}

// DefaultID returns "{prefix}-{hostname}-{6 random hex}".
func DefaultID(prefix string) string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "host"
	}
	var b [3]byte
	_, _ = rand.Read(b[:])
	return prefix + "-" + sanitizeID(host) + "-" + hex.EncodeToString(b[:])
}

func sanitizeID(s string) string {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_', c == '.':
			out = append(out, c)
		default:
			out = append(out, '-')
		}
	}
	return string(out)
}

// Monitor is a timeout monitor, worker-health checker and index sweeper.
type Monitor struct {
	q    *queue.Queue
	opts Options
	log  *slog.Logger

	mu     sync.Mutex
	leader *queue.NamedLease
	health []WorkerHealth
	states map[string]State // last logged state per worker
	// sweepState is the sweeper's position, loaded from the bucket when
	// this monitor becomes leader (nil: not loaded).
	sweepState *queue.SweepState
	// kick asks the work loop for an immediate check (on becoming leader).
	kick chan struct{}
	// sweepKick asks the sweep loop for a round (on becoming leader).
	sweepKick chan struct{}
	// schedKick wakes the schedule loop (on becoming leader).
	schedKick chan struct{}
	sched     *queue.Scheduler
	// declared caches the liveness bounds workers state, by heartbeat.
	declared map[string]declaredBound
	// schedReadAt is when the schedules were last re-read (wall time).
	schedReadAt time.Time
	// leaseCursor is where the next lease round begins ("": the first
	// shard); see CheckLeases.
	leaseCursor string
	// leasePageSize and leasePages, when set, replace the lease round's
	// page size (1,000) and page budget (maxLeasePages): tests walk a
	// small index in parts.
	leasePageSize, leasePages int
	// rollup is the throughput rollup's open hours (see RollUp).
	rollup *rollup
}

// New returns a monitor for q.
func New(q *queue.Queue, opts Options) *Monitor {
	opts = opts.withDefaults(q)
	return &Monitor{
		q:         q,
		opts:      opts,
		log:       opts.Logger.With("component", "monitor", "monitor_id", opts.ID),
		states:    map[string]State{},
		declared:  map[string]declaredBound{},
		kick:      make(chan struct{}, 1),
		sweepKick: make(chan struct{}, 1),

		schedKick: make(chan struct{}, 1),
		sched:     q.NewScheduler(),
	}
}

// ID returns the monitor's leader-lease holder name.
func (m *Monitor) ID() string { return m.opts.ID }

// Options returns the effective options (defaults filled in).
func (m *Monitor) Options() Options { return m.opts }

// IsLeader reports whether this monitor holds an unexpired leader lease.
func (m *Monitor) IsLeader() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.leader != nil && m.opts.Clock.Now().Before(m.leader.ExpiresAt)
}

// WorkerHealth returns the result of the last worker-health check.
func (m *Monitor) WorkerHealth() []WorkerHealth {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]WorkerHealth(nil), m.health...)
}

// Run elects, works while leading, and stands by otherwise, until ctx is
// cancelled; then it releases the leader lease and returns nil.
func (m *Monitor) Run(ctx context.Context) error {
	m.log.Info("monitor started",
		"check_interval", m.opts.CheckInterval.String(), "sweep_interval", m.opts.SweepInterval.String(),
		"dead_after", m.opts.DeadAfter.String(), "leader_ttl", m.opts.LeaderTTL.String())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		m.leadLoop(ctx)
	}()
	if m.opts.ScheduleRefresh > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m.scheduleLoop(ctx)
		}()
	}
	if m.opts.SweepInterval > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m.sweepLoop(ctx)
		}()
	}
	m.workLoop(ctx)
	wg.Wait()

	bg, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	m.resign(bg)
	m.log.Info("monitor stopped")
	return nil
}

func (m *Monitor) leadLoop(ctx context.Context) {
	every := m.opts.LeaderTTL / 3
	for {
		m.Elect(ctx)
		t := time.NewTimer(every)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// Elect runs one leadership step: renew the lease when leading, else try to
// acquire it. It reports whether this monitor leads afterwards.
func (m *Monitor) Elect(ctx context.Context) bool {
	m.mu.Lock()
	held := m.leader
	m.mu.Unlock()

	if held != nil {
		renewed := *held // RenewLease updates its argument; IsLeader reads m.leader
		err := m.q.RenewLease(ctx, &renewed, m.opts.LeaderTTL)
		switch {
		case err == nil:
			m.mu.Lock()
			if m.leader == held {
				m.leader = &renewed
			}
			m.mu.Unlock()
			return true
		case errors.Is(err, queue.ErrLeaseLost):
			m.log.Warn("lost monitor leadership")
			m.setLeader(nil)
		default:
			if ctx.Err() != nil {
				return m.IsLeader()
			}
			// Keep believing until the lease's own expiry: a renewal may
			// succeed on the next try.
			m.log.Warn("renewing monitor leadership failed", "err", err)
			if !m.IsLeader() {
				m.setLeader(nil)
			}
			return m.IsLeader()
		}
	}

	l, err := m.q.AcquireLease(ctx, queue.MonitorLeaderKey, m.opts.ID, m.opts.LeaderTTL)
	switch {
	case err == nil:
		m.setLeader(l)
		m.log.Info("monitor is now the leader", "lease_expires_at", l.ExpiresAt)
		m.mu.Lock()
		m.sweepState = nil // read the shared position again
		m.leaseCursor = "" // the lease walk starts at the first shard
		m.mu.Unlock()
		for _, k := range []chan struct{}{m.kick, m.schedKick, m.sweepKick} {
			select {
			case k <- struct{}{}:
			default:
			}
		}
		return true
	case errors.Is(err, queue.ErrConflict):
		return false
	default:
		if ctx.Err() == nil {
			m.log.Warn("acquiring monitor leadership failed", "err", err)
		}
		return false
	}
}

func (m *Monitor) setLeader(l *queue.NamedLease) {
	m.mu.Lock()
	was := m.leader != nil
	m.leader = l
	m.mu.Unlock()
	if o := m.opts.Observer; o != nil && was != (l != nil) {
		o.Leadership(l != nil)
	}
}

// resign releases the leader lease so a standby takes over at once.
func (m *Monitor) resign(ctx context.Context) {
	m.mu.Lock()
	l := m.leader
	m.leader = nil
	m.mu.Unlock()
	if l == nil {
		return
	}
	if o := m.opts.Observer; o != nil {
		o.Leadership(false)
	}
	if err := m.q.ReleaseLease(ctx, l); err != nil && !errors.Is(err, queue.ErrLeaseLost) {
		m.log.Warn("releasing monitor leadership failed", "err", err)
		return
	}
	m.log.Info("released monitor leadership")
}

func (m *Monitor) workLoop(ctx context.Context) {
	leases := time.NewTicker(m.opts.LeaseCheckInterval)
	defer leases.Stop()
	health := time.NewTicker(m.opts.CheckInterval)
	defer health.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-m.kick:
			m.checkLeases(ctx) // a new leader checks at once
			m.checkWorkers(ctx)
		case <-leases.C:
			m.checkLeases(ctx)
		case <-health.C:
			m.checkWorkers(ctx)
		}
	}
}

// sweepLoop runs a sweep round every SweepInterval while this monitor
// leads, and one at once on becoming leader (the position is shared, so a
// leader that changes often still makes progress).
func (m *Monitor) sweepLoop(ctx context.Context) {
	t := time.NewTicker(m.opts.SweepInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-m.sweepKick:
		case <-t.C:
		}
		if !m.IsLeader() {
			continue
		}
		if err := m.SweepRound(ctx); err != nil && ctx.Err() == nil {
			m.log.Warn("sweep round failed", "err", err)
		}
	}
}

func (m *Monitor) checkLeases(ctx context.Context) {
	if !m.IsLeader() {
		return
	}
	if _, err := m.CheckLeases(ctx); err != nil && ctx.Err() == nil {
		m.log.Warn("lease check failed", "err", err)
	}
}

func (m *Monitor) checkWorkers(ctx context.Context) {
	if !m.IsLeader() {
		return
	}
	if _, err := m.CheckWorkers(ctx); err != nil && ctx.Err() == nil {
		m.log.Warn("worker health check failed", "err", err)
	}
}

// scheduleLoop runs the cron schedules while this monitor leads: it wakes
// at the next due time, or after ScheduleRefresh to re-read them.
func (m *Monitor) scheduleLoop(ctx context.Context) {
	for {
		wait := m.opts.ScheduleRefresh
		if m.IsLeader() {
			if _, err := m.RunSchedules(ctx); err != nil && ctx.Err() == nil {
				m.log.Warn("running schedules failed", "err", err)
			}
			if next := m.sched.NextDue(); !next.IsZero() {
				wait = min(wait, max(next.Sub(m.opts.Clock.Now()), 100*time.Millisecond))
			}
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-m.schedKick:
			t.Stop()
			m.schedReadAt = time.Time{}
		case <-t.C:
		}
	}
}

// RunSchedules re-reads the schedules when ScheduleRefresh has passed since
// the last read, then submits what is due (see queue.Scheduler.RunDue) and
// logs it. Not safe for concurrent use; Run calls it from one goroutine.
func (m *Monitor) RunSchedules(ctx context.Context) ([]queue.ScheduleRun, error) {
	if m.schedReadAt.IsZero() || time.Since(m.schedReadAt) >= m.opts.ScheduleRefresh {
		malformed, err := m.sched.Refresh(ctx)
		if err != nil {
			return nil, err
		}
		m.schedReadAt = time.Now()
		for _, bad := range malformed {
			m.log.Warn("skipping malformed schedule", "key", bad.Key, "err", bad.Err)
		}
	}
	runs := m.sched.RunDue(ctx)
	for _, r := range runs {
		attrs := []any{"schedule", r.Schedule, "due", r.Due}
		outcome := "submitted"
		switch {
		case r.Err != nil:
			outcome = "failed"
			m.log.Warn("schedule run failed (retried on the next pass)", append(attrs, "err", r.Err)...)
		case r.TaskID == uuid.Nil:
			outcome = "skipped"
			m.log.Warn("schedule skipped a missed run (policy skip, or its expiry passed)", append(attrs, "skipped", r.Skipped)...)
		case !r.Created:
			outcome = "duplicate"
			m.log.Debug("schedule run was submitted by another monitor", append(attrs, "task_id", r.TaskID)...)
		default:
			if r.Late {
				attrs = append(attrs, "late", true)
			}
			if r.Skipped > 0 {
				attrs = append(attrs, "skipped", r.Skipped)
			}
			m.log.Info("schedule submitted a task", append(attrs, "task_id", r.TaskID)...)
		}
		if o := m.opts.Observer; o != nil {
			o.ScheduleRun(r.Schedule, outcome)
		}
	}
	return runs, nil
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
		t, err := m.q.ExpireLease(ctx, e)
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
		t, err := m.q.ReclaimLease(ctx, e, beat, m.opts.DeadAfter)
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
		entries, next, err := m.q.ListLeases(ctx, ask, pos)
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
	beats, err := m.q.WorkerBeats(ctx)
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
		info, err := m.q.GetWorker(ctx, id)
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

// CheckWorkers reads the worker registry, judges each heartbeat, logs
// workers whose state changed, prunes long-dead registrations when
// PruneDeadAfter is set, and folds the workers' finishes into the
// throughput rollup (RollUp).
func (m *Monitor) CheckWorkers(ctx context.Context) ([]WorkerHealth, error) {
	workers, err := m.q.ListWorkers(ctx)
	if err != nil {
		return nil, fmt.Errorf("list workers: %w", err)
	}
	now := m.opts.Clock.Now()
	health := Health(workers, now)
	seen := make(map[string]bool, len(health))
	for _, h := range health {
		id := h.Worker.ID
		seen[id] = true
		m.mu.Lock()
		prev, known := m.states[id]
		m.states[id] = h.State
		m.mu.Unlock()
		if h.State != Active && (!known || prev != h.State) {
			m.log.Warn("worker heartbeat is "+string(h.State), "worker_id", id,
				"last_heartbeat", h.Worker.LastHeartbeat, "age", h.Age.Round(time.Second).String(),
				"current_tasks", len(h.Worker.CurrentTasks), "host", h.Worker.Host)
		} else if h.State == Active && known && prev != Active {
			m.log.Info("worker heartbeat is active again", "worker_id", id)
		}
		if m.opts.PruneDeadAfter > 0 && h.State == Dead && h.Age > m.opts.PruneDeadAfter {
			if err := m.q.DeleteWorker(ctx, id); err != nil {
				m.log.Warn("pruning dead worker failed", "worker_id", id, "err", err)
			} else {
				m.log.Info("pruned dead worker registration", "worker_id", id, "age", h.Age.Round(time.Second).String())
			}
		}
	}
	m.mu.Lock()
	for id := range m.states {
		if !seen[id] {
			delete(m.states, id)
		}
	}
	m.health = health
	m.mu.Unlock()
	if err := m.RollUp(ctx, workers, now); err != nil {
		return health, fmt.Errorf("throughput rollup: %w", err)
	}
	return health, nil
}

// SweepRound sweeps one page of the ready index (see queue.Sweep) and one
// of the waiting index (queue.SweepWaiting) from the positions kept in the
// bucket, and saves the new positions. Cost: 2 LIST + 1 GET per entry
// nobody claimed for SweepIdle + the reads of each waiting task and of its
// parents that have not ended + 1 PUT for the position
// (+ 1 GET to load it on the first round of a leadership).
func (m *Monitor) SweepRound(ctx context.Context) error {
	if !m.IsLeader() {
		return nil
	}
	m.mu.Lock()
	st := m.sweepState
	m.mu.Unlock()
	if st == nil {
		loaded, err := m.q.LoadSweepState(ctx)
		if err != nil {
			return err
		}
		st = &loaded
	}
	now := m.opts.Clock.Now()
	if st.Cursor == "" {
		st.PassStartedAt = now
	}
	res, next, err := m.q.Sweep(ctx, st.Cursor, m.opts.SweepPageSize, m.opts.SweepIdle)
	if err != nil {
		return err
	}
	// And one page of waiting tasks: a parent's end that no child heard
	// of (its writer died in between) is recorded within a round.
	wres, wnext, err := m.q.SweepWaiting(ctx, st.WaitingCursor, m.opts.SweepPageSize, m.opts.SweepIdle)
	if err != nil {
		return err
	}
	res.Add(wres)
	st.WaitingCursor = wnext
	m.logSweep(res)
	st.Cursor = next
	if next == "" {
		st.LastPassAt = now
	}
	st.LastRoundAt, st.Holder = now, m.opts.ID
	if err := m.q.SaveSweepState(ctx, *st); err != nil {
		return err
	}
	m.mu.Lock()
	m.sweepState = st
	m.mu.Unlock()
	return nil
}

func (m *Monitor) logSweep(res queue.SweepResult) {
	for _, bad := range res.Malformed {
		m.log.Warn("sweep: skipping malformed task object", "key", bad.Key, "err", bad.Err)
	}
	attrs := []any{"listed", res.Listed, "scanned", res.Scanned, "stale_removed", res.StaleRemoved,
		"expired", res.Expired, "waiting_decided", res.WaitingDecided, "registered", res.Registered, "errors", res.Errors}
	if res.Converted > 0 {
		m.log.Warn("sweep converted ready entries of an older key layout: a qo of an older version still works on this queue (stop it)", append(attrs, "converted", res.Converted)...)
		return
	}
	if res.StaleRemoved > 0 || res.Expired > 0 || res.WaitingDecided > 0 || res.Registered > 0 || res.Errors > 0 {
		m.log.Info("sweep repaired the indexes or waiting tasks", attrs...)
		return
	}
	m.log.Debug("swept a ready index page", attrs...)
}
