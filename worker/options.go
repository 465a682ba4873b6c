package worker

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"runtime"
	"time"

	"github.com/qo-queue/qo/monitor"
	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store"
)

// IndexMode selects how a worker discovers claimable tasks.
type IndexMode string

// Index modes.
const (
	// IndexOnly lists the ready index only: the default. The queue writes
	// a task's ready entry before the task, so no crash or lost response
	// hides a pending task from it (see queue/doc.go).
	IndexOnly IndexMode = "index-only"
	// Hybrid lists the ready index, and when it has looked empty for
	// HybridScanAfter, scans one page of recently created tasks per shard
	// for pending tasks whose entry was removed from outside (at most once
	// per HybridScanAfter while it stays empty). It costs reads of recent
	// task objects while idle; `qo repair` is the cheaper fix for a
	// damaged bucket.
	Hybrid IndexMode = "hybrid"
	// LogScan ignores the ready index and pages through the tasks created
	// in the last day, shard by shard (expensive: every page reads the
	// task objects). For diagnosis only.
	LogScan IndexMode = "log-scan"
)

// ParseIndexMode validates an index mode name ("" means IndexOnly).
func ParseIndexMode(s string) (IndexMode, error) {
	switch IndexMode(s) {
	case "":
		return IndexOnly, nil
	case IndexOnly, Hybrid, LogScan:
		return IndexMode(s), nil
	}
	return "", fmt.Errorf("invalid index mode %q: want index-only, hybrid or log-scan", s)
}

// Defaults.
const (
	DefaultPollMin            = 100 * time.Millisecond
	DefaultControlRefresh     = 5 * time.Second
	DefaultPollMax            = 5 * time.Second
	DefaultWarmFor            = 2 * time.Second
	DefaultPageHold           = 10 * time.Second
	DefaultShutdownTimeout    = 30 * time.Second
	DefaultHeartbeatInterval  = 10 * time.Second
	DefaultLeaseCheckInterval = 10 * time.Second
	DefaultReadyPageSize      = 1000
	DefaultLogScanPageSize    = 50
	DefaultHybridScanAfter    = time.Minute
	DefaultHandlerGrace       = DefaultKillGrace + 2*time.Second
)

// retryWriteAllowance is the part of queue.LeaseGrace kept for the write
// that ends a timed-out attempt (a retry or a failure), after the handler
// has exited.
const retryWriteAllowance = 3 * time.Second

// ErrKillGrace: the kill grace is longer than the margins that keep two
// attempts of a task apart allow (see MaxKillGrace).
var ErrKillGrace = errors.New("kill grace too long")

// MaxKillGrace is the longest kill grace (Options.KillGrace) a worker with
// the liveness bound deadAfter accepts: the time a stopped handler may take
// to exit must fit both margins before the monitor may run its task
// elsewhere (see queue/doc.go, "Leases and liveness"), so that two attempts
// never overlap. byLiveness reports which margin is the smaller:
//
//   - liveness: a worker whose heartbeat has not landed stops its handlers
//     at three quarters of deadAfter, and the monitor may take the tasks
//     back at deadAfter (plus queue.MaxClockSkew, by a clock up to as much
//     ahead): the last quarter of the bound;
//   - timeout: a worker stops a handler at its task's timeout, and the
//     monitor may expire the lease queue.LeaseGrace later (by a clock up to
//     queue.MaxClockSkew ahead), by when the retry must be written too:
//     LeaseGrace less MaxClockSkew less 3s for the write, 10s.
func MaxKillGrace(deadAfter time.Duration) (max time.Duration, byLiveness bool) {
	timeout := queue.LeaseGrace - queue.MaxClockSkew - retryWriteAllowance
	if liveness := deadAfter / 4; liveness < timeout {
		return liveness, true
	}
	return timeout, false
}

// checkKillGrace refuses a kill grace above MaxKillGrace, naming the bound
// and the fix (killFlag and deadFlag name the options in the message).
func checkKillGrace(killGrace, deadAfter time.Duration, killFlag, deadFlag string) error {
	most, byLiveness := MaxKillGrace(deadAfter)
	if killGrace <= most {
		return nil
	}
	ceiling, _ := MaxKillGrace(time.Duration(math.MaxInt64))
	var fix string
	switch {
	case byLiveness && killGrace <= ceiling:
		fix = fmt.Sprintf("lower %s to at most %s or raise %s to at least %s", killFlag, most, deadFlag, 4*killGrace)
	case byLiveness:
		fix = fmt.Sprintf("lower %s to at most %s (at most %s with %s %s or more)", killFlag, most, ceiling, deadFlag, 4*ceiling)
	default:
		fix = fmt.Sprintf("lower %s to at most %s", killFlag, most)
	}
	if byLiveness {
		return fmt.Errorf("%w: %s %s is more than %s, the most %s %s allows: a handler stopped because the worker's heartbeat stopped landing must have exited within the last quarter of %s, before the monitor may run its task elsewhere; %s",
			ErrKillGrace, killFlag, killGrace, most, deadFlag, deadAfter, deadFlag, fix)
	}
	return fmt.Errorf("%w: %s %s is more than %s, the most any %s allows: a handler stopped at its task's timeout must have exited, and its retry been written, before the monitor may expire the lease %s later (less %s of clock skew and %s for the write); %s",
		ErrKillGrace, killFlag, killGrace, most, deadFlag, queue.LeaseGrace, queue.MaxClockSkew, retryWriteAllowance, fix)
}

// CheckKillGrace is checkKillGrace for command-line flags: it names
// --kill-grace and --dead-after.
func CheckKillGrace(killGrace, deadAfter time.Duration) error {
	if deadAfter <= 0 {
		deadAfter = queue.DefaultDeadAfter
	}
	if killGrace <= 0 {
		killGrace = DefaultKillGrace
	}
	return checkKillGrace(killGrace, deadAfter, "--kill-grace", "--dead-after")
}

// ShardLeasing configures exclusive shard ownership (see doc.go).
type ShardLeasing struct {
	// Enabled turns shard leasing on: the worker polls only the shards it
	// holds a lease on.
	Enabled bool
	// ShardsPerWorker caps how many shards one worker holds (0: no cap,
	// the balanced share ceil(shards / live workers) applies).
	ShardsPerWorker int
	// TTL is the shard lease's time to live (default 30s).
	TTL time.Duration
	// RenewInterval is how often leases are renewed and the balance
	// re-evaluated (default 10s; must be below TTL).
	RenewInterval time.Duration
	// LiveAfter: a worker counts towards the balance while its heartbeat
	// is younger than this (default max(TTL, 3 x HeartbeatInterval)).
	LiveAfter time.Duration
}

// Shard leasing defaults.
const (
	DefaultShardLeaseTTL   = 30 * time.Second
	DefaultShardLeaseRenew = 10 * time.Second
)

// Bounds of DefaultConcurrency.
const (
	MinDefaultConcurrency = 4
	MaxDefaultConcurrency = 32
)

// DefaultConcurrency is a concurrency that suits the machine or container
// the worker runs in: the CPUs the process may use (runtime.GOMAXPROCS,
// which follows a container's CPU limit), at least MinDefaultConcurrency
// (handlers mostly wait on I/O, so a one-CPU container still runs several)
// and at most MaxDefaultConcurrency.
func DefaultConcurrency() int {
	return min(max(runtime.GOMAXPROCS(0), MinDefaultConcurrency), MaxDefaultConcurrency)
}

// Options configure a Worker. Zero values take the defaults.
type Options struct {
	// Dumpable leaves the process dumpable. By default Run makes it
	// non-dumpable on Linux (prctl PR_SET_DUMPABLE 0), process-wide, so
	// that a handler running as the same user cannot read the worker's
	// environment and memory (/proc/$PPID/environ, /proc/$PPID/mem,
	// ptrace), which hold the bucket's credentials. It also stops core
	// dumps and debuggers attaching without CAP_SYS_PTRACE: set Dumpable
	// to debug a worker.
	Dumpable bool
	// ID names the worker in the registry and in task records (default
	// "{hostname}-{6 random hex}"). Letters, digits, '_', '.', ':' and '-'.
	ID string
	// Shards restricts the worker to these shards (nil: all).
	Shards []string
	// Concurrency is how many tasks run at once (default 1;
	// DefaultConcurrency() sizes it to the CPUs, as qo run-worker does).
	Concurrency int
	// Types are the task types served (default: every registered type).
	// Each needs a handler.
	Types []string
	// Limits caps how many tasks of a type run at once in this worker; a
	// type not listed is bounded by Concurrency only.
	Limits map[string]int
	// Weights share the worker's slots between the types it serves while
	// tasks of several are ready: with {"a": 6, "b": 3, "c": 1} it claims
	// about 6 of a and 3 of b for each of c (not strict priority: a type
	// with no ready task gives its share to the others). A served type not
	// named weighs 1; nil claims in the ready index's order alone. See
	// weights.go for the bounds.
	Weights map[string]int
	// ControlRefresh is how often a worker with a paused type re-reads the
	// queue's pause switches (control.json) to notice a resume (default
	// 5s). Before claiming, it never relies on a copy older than a second
	// (or than ControlRefresh, when that is shorter).
	ControlRefresh time.Duration
	// IndexMode selects task discovery (default IndexOnly).
	IndexMode IndexMode
	// PollMin and PollMax bound the adaptive idle backoff: after an empty
	// poll the wait doubles from PollMin up to PollMax; any work resets it
	// (defaults 100ms and 5s).
	PollMin, PollMax time.Duration
	// WarmFor: after a poll that claimed something, the worker keeps
	// polling every PollMin this long before it backs off (default 2s).
	WarmFor time.Duration
	// PageHold: what a walk of the ready index found is claimed from,
	// without listing again, for at most this long (default 10s): a task
	// that becomes ready meanwhile, whatever its priority, is seen by the
	// worker it falls to at most this much later.
	PageHold time.Duration
	// ReadyPageSize is the page size of one ready-index LIST (default
	// 1000, the most S3 returns; a LIST costs the same whatever its size).
	ReadyPageSize int
	// LogScanPageSize is the page size of one tasks/ scan (default 50).
	LogScanPageSize int
	// HybridScanAfter: in Hybrid mode, how long the ready index must look
	// empty before a scan of tasks/ (default 1m).
	HybridScanAfter time.Duration
	// ShutdownTimeout is how long Run waits for running handlers after its
	// context is cancelled before releasing their tasks (default 30s).
	ShutdownTimeout time.Duration
	// KillGrace is how long a stopped handler may take to exit: an exec
	// handler's time between SIGTERM and SIGKILL (ExecOptions.KillGrace:
	// give both the same value). It must fit the margins that keep two
	// attempts of a task apart: at most MaxKillGrace(DeadAfter), a quarter
	// of DeadAfter and no more than 10s (default DefaultKillGrace, 5s, or
	// that maximum when it is less). An exec handler whose ExecOptions
	// leave KillGrace zero uses this one.
	KillGrace time.Duration
	// HandlerGrace is how long Run waits, at shutdown, for the handlers it
	// stopped to return before it reports them (default KillGrace + 2s, so
	// exec children are reaped by then). Each task is released once its
	// handler has returned, never before: a handler that ignores its
	// context keeps its task (see Run).
	HandlerGrace time.Duration
	// HeartbeatInterval is the registry heartbeat period (default 10s; at
	// most half of DeadAfter).
	HeartbeatInterval time.Duration
	// DeadAfter is the worker's liveness bound, stated in its registry
	// entry (default queue.DefaultDeadAfter, 20s): once its last heartbeat
	// is older (plus queue.MaxClockSkew), the monitor takes its tasks back.
	// The worker itself stops their handlers and releases what it still
	// holds earlier, at three quarters of the bound.
	DeadAfter time.Duration
	// LeaseCheckInterval: a handler that runs longer than this has its
	// task re-read (one GET) this often, to notice a cancel request or a
	// lost lease (default 10s).
	LeaseCheckInterval time.Duration
	// NoMonitor disables the embedded monitor.
	NoMonitor bool
	// Monitor configures the embedded monitor (its ID defaults to the
	// worker's ID with a "-monitor" suffix; Clock and Logger default to
	// the worker's).
	Monitor monitor.Options
	// ShardLeasing configures shard leasing (off by default).
	ShardLeasing ShardLeasing
	// Clock is the time source for lease deadlines (default: the queue's
	// clock, i.e. the store's authoritative time).
	Clock store.Clock
	// Logger receives the worker's logs (default slog.Default()).
	Logger *slog.Logger
	// Version is reported in the registry.
	Version string
	// Observer, when set, is told about claims, outcomes and lease
	// checks (for metrics).
	Observer Observer
	// AttemptHook, when set, follows each attempt with its task (tracing:
	// see package qotel).
	AttemptHook AttemptHook
}

func (o Options) withDefaults() Options {
	if o.ID == "" {
		o.ID = DefaultID()
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 1
	}
	if o.IndexMode == "" {
		o.IndexMode = IndexOnly
	}
	if o.ControlRefresh <= 0 {
		o.ControlRefresh = DefaultControlRefresh
	}
	if o.PollMin <= 0 {
		o.PollMin = DefaultPollMin
	}
	if o.PollMax <= 0 {
		o.PollMax = DefaultPollMax
	}
	if o.PollMax < o.PollMin {
		o.PollMax = o.PollMin
	}
	if o.PageHold <= 0 {
		o.PageHold = DefaultPageHold
	}
	if o.WarmFor <= 0 {
		o.WarmFor = DefaultWarmFor
	}
	if o.ReadyPageSize <= 0 {
		o.ReadyPageSize = DefaultReadyPageSize
	}
	if o.LogScanPageSize <= 0 {
		o.LogScanPageSize = DefaultLogScanPageSize
	}
	if o.HybridScanAfter <= 0 {
		o.HybridScanAfter = DefaultHybridScanAfter
	}
	if o.ShutdownTimeout <= 0 {
		o.ShutdownTimeout = DefaultShutdownTimeout
	}
	if o.DeadAfter <= 0 {
		o.DeadAfter = queue.DefaultDeadAfter
	}
	if o.KillGrace <= 0 {
		most, _ := MaxKillGrace(o.DeadAfter)
		o.KillGrace = min(DefaultKillGrace, most)
	}
	if o.HandlerGrace <= 0 {
		o.HandlerGrace = o.KillGrace + DefaultHandlerGrace - DefaultKillGrace
	}
	if o.HeartbeatInterval <= 0 {
		o.HeartbeatInterval = min(DefaultHeartbeatInterval, o.DeadAfter/2)
	}
	if o.LeaseCheckInterval <= 0 {
		o.LeaseCheckInterval = DefaultLeaseCheckInterval
	}
	sl := &o.ShardLeasing
	if sl.TTL <= 0 {
		sl.TTL = DefaultShardLeaseTTL
	}
	if sl.RenewInterval <= 0 {
		sl.RenewInterval = min(DefaultShardLeaseRenew, sl.TTL/3)
	}
	if sl.LiveAfter <= 0 {
		sl.LiveAfter = max(sl.TTL, 3*o.HeartbeatInterval)
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Monitor.ID == "" {
		o.Monitor.ID = o.ID + "-monitor"
		if len(o.Monitor.ID) > 128 {
			o.Monitor.ID = monitor.DefaultID("monitor")
		}
	}
	if o.Monitor.Logger == nil {
		o.Monitor.Logger = o.Logger
	}
	if o.Monitor.Clock == nil {
		o.Monitor.Clock = o.Clock
	}
	if o.Monitor.DeadAfter <= 0 {
		o.Monitor.DeadAfter = o.DeadAfter
	}
	return o
}

func (o Options) validate() error {
	if err := queue.ValidateWorkerID(o.ID); err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	if o.ShardLeasing.Enabled && o.ShardLeasing.RenewInterval >= o.ShardLeasing.TTL {
		return fmt.Errorf("shard leasing: renew interval %s must be shorter than the lease TTL %s", o.ShardLeasing.RenewInterval, o.ShardLeasing.TTL)
	}
	if 2*o.HeartbeatInterval > o.DeadAfter {
		return fmt.Errorf("worker: heartbeat interval %s is more than half the liveness bound %s: one late heartbeat would get the worker's tasks taken back (raise the dead-after bound or shorten the interval)", o.HeartbeatInterval, o.DeadAfter)
	}
	if err := checkKillGrace(o.KillGrace, o.DeadAfter, "KillGrace", "DeadAfter"); err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	if o.ShardLeasing.ShardsPerWorker < 0 {
		return fmt.Errorf("shard leasing: shards per worker must be >= 0, got %d", o.ShardLeasing.ShardsPerWorker)
	}
	return nil
}

// DefaultID returns "{hostname}-{6 random hex}".
func DefaultID() string {
	id := monitor.DefaultID("w")
	return id[len("w-"):]
}
