package worker

import (
	"golang.org/x/time/rate"

	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand"
	"os"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/qo-queue/qo/monitor"
	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/queue/registry"
	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/store/doctor"
)

// HandlerFunc runs one task. It returns the task's output (valid JSON, or
// nil for none) or an error that steers the task (see Retryable, Permanent,
// Reschedule). ctx is cancelled, with a cause from this package
// (context.Cause), when the lease is lost, a cancel is requested, the lease
// expires without renewal, or the worker shuts down past its timeout.
// Handlers must be safe to run more than once for the same task
// (at-least-once execution).
type HandlerFunc func(ctx context.Context, t *queue.Task) (json.RawMessage, error)

// Worker claims tasks from a queue and runs their handlers.
type Worker struct {
	q        *queue.Queue
	opts     Options
	log      *slog.Logger
	clock    store.Clock
	handlers map[string]HandlerFunc
	// middleware wraps every handler (see Use); wrapped holds the
	// handlers with it, built by prepare.
	middleware []Middleware
	wrapped    map[string]HandlerFunc
	types      []string
	typeSet    map[string]bool
	weights    *typeWeights // Options.Weights' chooser; nil without weights
	host       string

	started   atomic.Bool
	startedAt time.Time

	mu       sync.Mutex
	running  map[uuid.UUID]*runningTask
	claiming map[string]int // claims in flight, by task type (they hold a slot)
	// claimingKeys counts the claims in flight of keyed tasks by type and
	// key (see keys.go).
	claimingKeys map[typeKey]int
	turns        keyTurns // when each key last had its turn (dispatch loop)
	// keyBuckets are the token buckets of the per-key rates, by type and
	// key (see keys.go; guarded by mu).
	keyBuckets map[typeKey]*rate.Limiter
	lost       lostClaims  // claims of the held view lost since the last poll
	tried      triedKeys   // ready entries claimed from, until a walk cannot show them
	malformed  skippedKeys // ready entries of malformed task objects, skipped a while
	caps       capState    // shares of the fleet-wide caps (see caps.go)

	claims sync.WaitGroup // claims in flight

	resolving   sync.WaitGroup // claims whose outcome is unknown (see unknownclaim.go)
	resolveNow  chan struct{}  // closed at shutdown: try them once more, now
	resolveStop sync.Once
	rnd         *rand.Rand

	tasks    sync.WaitGroup
	taskDone chan struct{}      // a slot freed up
	hbNow    chan struct{}      // publish a heartbeat soon
	lastBeat atomic.Int64       // queue-clock unix ns when the last heartbeat that landed was sent
	hbMu     sync.Mutex         // one heartbeat at a time
	capPeers map[string]capPeer // registry entries read for the caps (under hbMu)

	state  atomic.Int32 // stateNew, stateRegistered, stateDraining, stateStopped (see Ready)
	health health

	abortOnce sync.Once
	abort     chan struct{}

	completed atomic.Int64
	failed    atomic.Int64
	recent    queue.MinuteCounter // finishes by minute, for the heartbeat

	handlerBase context.Context

	leaser *shardLeaser
	mon    *monitor.Monitor

	// Poll state, owned by the dispatch loop.
	control    controlState
	view       heldView    // what the last walk found (see claimHeld)
	passed     keyedPasses // how far it passed the ready tasks, per key (see passedRanks)
	peers      peerSet     // the other live workers (see peers.go)
	lastWork   time.Time   // when a poll last claimed something (machine clock)
	scan       scanState
	scanning   bool
	emptySince time.Time
	lastScan   time.Time
}

// New returns a worker for q. Register handlers with Handle before Run.
func New(q *queue.Queue, opts Options) *Worker {
	opts = opts.withDefaults()
	clock := opts.Clock
	if clock == nil {
		clock = store.ClockFunc(q.Now)
	}
	if opts.Monitor.Clock == nil {
		opts.Monitor.Clock = clock
	}
	host, _ := os.Hostname()
	w := &Worker{
		q:        q,
		opts:     opts,
		log:      opts.Logger.With("worker_id", opts.ID),
		clock:    clock,
		handlers: map[string]HandlerFunc{},
		host:     host,
		running:  map[uuid.UUID]*runningTask{},
		claiming: map[string]int{},
		rnd:      rand.New(rand.NewSource(time.Now().UnixNano())),
		taskDone: make(chan struct{}, 1),
		hbNow:    make(chan struct{}, 1),
		abort:    make(chan struct{}),

		resolveNow: make(chan struct{}),
	}
	if !opts.NoMonitor {
		w.mon = monitor.New(q, opts.Monitor)
	}
	return w
}

// ID returns the worker's id.
func (w *Worker) ID() string { return w.opts.ID }

// Options returns the effective options (defaults filled in).
func (w *Worker) Options() Options { return w.opts }

// Handle registers h for tasks of type typ, replacing any earlier handler
// for it. Call it before Run; it panics afterwards or on an invalid type.
func (w *Worker) Handle(typ string, h HandlerFunc) {
	if w.started.Load() {
		panic("worker: Handle called after Run")
	}
	if err := queue.ValidateType(typ); err != nil {
		panic("worker: " + err.Error())
	}
	if h == nil {
		panic("worker: nil handler for type " + typ)
	}
	w.handlers[typ] = h
}

// Types returns the types this worker serves (after Run started: the
// effective list).
func (w *Worker) Types() []string {
	if w.types != nil {
		return append([]string(nil), w.types...)
	}
	out := make([]string, 0, len(w.handlers))
	for t := range w.handlers {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}

// Abort ends a shutdown without waiting out ShutdownTimeout: running
// handlers are cancelled at once (exec handlers killed with SIGKILL, also
// those already in their kill grace) and each task is released as soon as
// its handler has returned. A handler that has not returned shortly after
// (a Go handler that ignores its context) keeps its task: Run returns
// without releasing it and without deregistering, so the monitor takes it
// back once the worker's heartbeat is older than DeadAfter; such a handler
// must not outlive the process for long (see docs/reliability.md). If
// Run's context was not cancelled yet, Abort also starts the shutdown.
// Safe to call more than once, from any goroutine.
func (w *Worker) Abort() { w.abortOnce.Do(func() { close(w.abort) }) }

// Validate checks the options and handlers without starting anything: the
// errors Run would return before registering.
func (w *Worker) Validate() error { return w.prepare() }

func (w *Worker) prepare() error {
	if err := w.opts.validate(); err != nil {
		return err
	}
	if len(w.handlers) == 0 {
		return errors.New("worker: no handlers registered (register one with Handle, --exec TYPE=COMMAND, or --builtins)")
	}
	types := w.opts.Types
	if len(types) == 0 {
		types = w.Types()
	}
	w.typeSet = map[string]bool{}
	for _, t := range types {
		if _, ok := w.handlers[t]; !ok {
			return fmt.Errorf("worker: type %q has no handler (registered: %v)", t, w.Types())
		}
		w.typeSet[t] = true
	}
	w.types = make([]string, 0, len(w.typeSet))
	w.wrapped = make(map[string]HandlerFunc, len(w.typeSet))
	for t := range w.typeSet {
		w.types = append(w.types, t)
		// The outer Recover catches panics of the middleware itself.
		w.wrapped[t] = Recover()(w.chain(w.handlers[t]))
	}
	sort.Strings(w.types)
	for t, n := range w.opts.Limits {
		if !w.typeSet[t] {
			return fmt.Errorf("worker: a limit is set for type %q, which this worker does not serve (serves %v)", t, w.types)
		}
		if n < 1 {
			return fmt.Errorf("worker: the limit for type %q is %d; it must be at least 1 (pause the type to stop it: qo pause %s)", t, n, t)
		}
	}
	for t, n := range w.opts.Weights {
		if !w.typeSet[t] {
			return fmt.Errorf("worker: a weight is set for type %q, which this worker does not serve (serves %v)", t, w.types)
		}
		if n < 1 {
			return fmt.Errorf("worker: the weight of type %q is %d; it must be at least 1", t, n)
		}
	}
	w.weights = newTypeWeights(w.opts.Weights)
	if len(w.opts.Shards) > 0 {
		all := w.q.Shards()
		for _, s := range w.opts.Shards {
			if !slices.Contains(all, s) {
				return fmt.Errorf("worker: unknown shard %q: this queue has %d shards named %s..%s", s, len(all), all[0], all[len(all)-1])
			}
		}
	}
	return nil
}

// Run probes the server's conditional writes (doctor.Probe: 3 PUTs to
// queue.ProbeKey; an error wrapping doctor.ErrUnsafe when the server
// ignores them), registers the worker, claims and runs tasks until ctx is
// cancelled, then shuts down gracefully: it stops claiming, waits up to
// ShutdownTimeout for running handlers, stops those still running and
// releases each one's task once its handler has returned (available again
// at once, no retry counted; see drain), releases its shard leases,
// deregisters and returns nil, also when ctx ends while it is still
// registering. It returns an error only when the worker cannot start (bad
// options, no handlers, an unsafe server, registration failed).
func (w *Worker) Run(ctx context.Context) error {
	if !w.started.CompareAndSwap(false, true) {
		return errors.New("worker: Run called more than once")
	}
	defer w.state.Store(stateStopped)
	if err := w.prepare(); err != nil {
		return err
	}
	// Before any handler runs: a handler must not read the worker's
	// credentials from /proc/$PPID/environ (Linux; see protectProcess).
	if !w.opts.Dumpable {
		if err := protectProcess(); err != nil {
			return err
		}
	}
	bg := context.WithoutCancel(ctx)
	w.handlerBase = withHandlerEnv(bg, handlerEnv{abort: w.abort, killGrace: w.opts.KillGrace})
	w.startedAt = w.clock.Now()
	if w.opts.ShardLeasing.Enabled {
		w.leaser = newShardLeaser(w)
	}

	lo, started, err := w.register(ctx, bg)
	if !started {
		return err // nil when stopped while starting
	}
	w.state.Store(stateRegistered)
	stopWatch := w.watchShutdown(ctx)
	defer stopWatch()
	w.log.Info("worker started", append(storeAttrs(w.q.Store()), "types", w.types, "concurrency", w.opts.Concurrency,
		"shards", w.describeShards(), "index_mode", w.opts.IndexMode,
		"shard_leasing", w.opts.ShardLeasing.Enabled, "monitor", !w.opts.NoMonitor)...)

	auxCtx, stopAux := context.WithCancel(bg)
	var aux sync.WaitGroup
	aux.Add(2)
	go func() {
		defer aux.Done()
		w.heartbeatLoop(auxCtx)
	}()
	go func() {
		defer aux.Done()
		w.watchdogLoop(auxCtx)
	}()
	if w.leaser != nil {
		aux.Add(1)
		go func() {
			defer aux.Done()
			w.leaser.run(auxCtx)
		}()
	}
	if lo != nil {
		aux.Add(1)
		go func() {
			defer aux.Done()
			w.recoverLeftover(auxCtx, lo)
		}()
	}
	monCtx, stopMon := context.WithCancel(bg)
	var mon sync.WaitGroup
	if w.mon != nil {
		mon.Add(1)
		go func() {
			defer mon.Done()
			_ = w.mon.Run(monCtx)
		}()
	}

	w.dispatch(ctx)

	w.setDraining()
	w.claims.Wait() // a claim in flight starts its task, which drain waits for
	keepEntry := w.drain()
	// The children of tasks it ended that are still being told in the
	// background get ShutdownTimeout more; the sweeper tells the rest.
	settleCtx, cancelSettle := context.WithTimeout(bg, w.opts.ShutdownTimeout)
	if err := w.q.Settle(settleCtx); err != nil {
		w.log.Warn("stopped before every child of the tasks it ended was told (the sweeper will)", "err", err)
	}
	cancelSettle()
	// After drain: a task whose release failed there is tried once more.
	w.stopResolving()
	stopMon()
	mon.Wait()
	stopAux()
	aux.Wait()
	if w.leaser != nil {
		w.leaser.releaseAll(bg)
	}
	if !keepEntry {
		w.deregister(bg)
	}
	w.log.Info("worker stopped", "tasks_completed", w.completed.Load(), "tasks_failed", w.failed.Load())
	return nil
}

// register makes the worker's start, before it claims anything: the
// server probe, the lookup of tasks an earlier process of this id left
// running (returned for recoverLeftover) and the registration. started is
// false when the worker must not run: err says why, or is nil when ctx
// ended meanwhile.
func (w *Worker) register(ctx, bg context.Context) (_ *leftover, started bool, _ error) {
	// A server that ignores conditional writes would run tasks twice:
	// refuse it before claiming anything (queue/doc.go, "Server probes").
	probeCtx, cancelProbe := context.WithTimeout(ctx, 30*time.Second)
	err := doctor.Probe(probeCtx, w.q.Store(), queue.ProbeKey)
	cancelProbe()
	if err != nil {
		if ctx.Err() != nil {
			return nil, false, nil // stopped while starting: nothing was written but the probe
		}
		return nil, false, fmt.Errorf("worker %s: %w", w.opts.ID, err)
	}

	// Before registering, while the entry is still the earlier process's:
	// tasks it left running under this id are taken back once registered
	// (Run starts recoverLeftover).
	// Starting without knowing would leave them running until their
	// leases expire: a lookup that keeps failing stops the start, as a
	// registration that keeps failing does.
	loCtx, cancelLo := context.WithTimeout(ctx, 30*time.Second)
	lo, err := w.findLeftoverRetrying(loCtx)
	cancelLo()
	if err != nil {
		if ctx.Err() != nil {
			return nil, false, nil // stopped while starting: nothing was written but the probe
		}
		return nil, false, fmt.Errorf("worker %s: look for tasks an earlier process of this id left running: %w", w.opts.ID, err)
	}

	regCtx, cancelReg := context.WithTimeout(ctx, 30*time.Second)
	sent := w.clock.Now()
	err = registry.Put(regCtx, w.q, w.info())
	cancelReg()
	w.lastBeat.Store(sent.UnixNano())
	if err != nil {
		if ctx.Err() != nil {
			// Stopped while registering: nothing was claimed. The entry's
			// write may have landed all the same; remove it.
			w.deregister(bg)
			return nil, false, nil
		}
		return nil, false, fmt.Errorf("worker %s: register in the worker registry: %w", w.opts.ID, err)
	}
	return lo, true, nil
}

// Monitor returns the embedded monitor (nil with NoMonitor).
func (w *Worker) Monitor() *monitor.Monitor { return w.mon }

func (w *Worker) describeShards() any {
	if w.opts.ShardLeasing.Enabled {
		return "leased"
	}
	if len(w.opts.Shards) == 0 {
		return "all"
	}
	return w.opts.Shards
}

// stopping reports whether claiming must stop.
func (w *Worker) stopping(ctx context.Context) bool {
	if ctx.Err() != nil {
		return true
	}
	select {
	case <-w.abort:
		return true
	default:
		return false
	}
}

func (w *Worker) runningCount() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.running)
}

// slotsTaken counts the slots of running tasks and of claims in flight.
func (w *Worker) slotsTaken() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := len(w.running)
	for _, c := range w.claiming {
		n += c
	}
	return n
}

func (w *Worker) snapshotRunning() []*runningTask {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]*runningTask, 0, len(w.running))
	for _, rt := range w.running {
		out = append(out, rt)
	}
	return out
}

func (w *Worker) jitter(d time.Duration) time.Duration {
	w.mu.Lock()
	f := 0.8 + 0.4*w.rnd.Float64()
	w.mu.Unlock()
	return time.Duration(float64(d) * f)
}

func (w *Worker) shuffle(n int, swap func(i, j int)) {
	w.mu.Lock()
	w.rnd.Shuffle(n, swap)
	w.mu.Unlock()
}

// storeAttrs names the queue's bucket and endpoint for the start line, so
// a deployment pointed at the wrong place says where it looks: "bucket"
// and "endpoint" when the store tells them (s3store does), else "store",
// its description.
func storeAttrs(s store.Store) []any {
	var attrs []any
	if b, ok := s.(interface{ Bucket() string }); ok {
		attrs = append(attrs, "bucket", b.Bucket())
	}
	if e, ok := s.(interface{ Endpoint() string }); ok {
		attrs = append(attrs, "endpoint", e.Endpoint())
	}
	if attrs == nil {
		if d, ok := s.(fmt.Stringer); ok {
			attrs = append(attrs, "store", d.String())
		}
	}
	return attrs
}
