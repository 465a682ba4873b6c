package monitor

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/queue/schedule"
	"github.com/qo-queue/qo/queue/sweepstate"
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
	sweepState *sweepstate.State
	// kick asks the work loop for an immediate check (on becoming leader).
	kick chan struct{}
	// sweepKick asks the sweep loop for a round (on becoming leader).
	sweepKick chan struct{}
	// schedKick wakes the schedule loop (on becoming leader).
	schedKick chan struct{}
	sched     *schedule.Scheduler
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
		sched:     schedule.NewScheduler(q),
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
