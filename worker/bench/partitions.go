package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"time"

	"github.com/qo-queue/qo/monitor"
	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/queue/namedlease"
	"github.com/qo-queue/qo/queue/registry"
	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/store/memstore"
)

// AWS S3's documented request rates per partitioned prefix.
const (
	S3WritesPerPrefix = 3500 // PUT/COPY/POST/DELETE per second
	S3ReadsPerPrefix  = 5500 // GET/HEAD (and LIST) per second
)

// SimConfig is a partition simulation: a synthetic workload driven through
// the real queue code over the in-memory store, in simulated time.
type SimConfig struct {
	Rate       int           // tasks submitted per second (default 20,000)
	Seconds    int           // simulated seconds (default 2)
	ShardChars int           // 1 (16 shards) or 2 (256 shards; default)
	Workers    int           // workers, each owning an even share of the shards (default 64)
	Step       time.Duration // shortest simulated time between polls (default 10ms)
	FailEvery  int           // every n-th task fails for good (default 100: 1%)
	// IdleSeconds, when positive, is an idle phase simulated before the
	// load: no task is submitted, and the fleet's requests (polling,
	// heartbeats, shard leasing, the embedded monitors) are counted and
	// priced per month (SimReport.Idle).
	IdleSeconds int
	// Prices price the idle phase (default AWS S3 Standard's list prices).
	Prices store.Prices
}

func (c *SimConfig) defaults() {
	if c.Rate <= 0 {
		c.Rate = 20000
	}
	if c.Seconds <= 0 {
		c.Seconds = 2
	}
	if c.ShardChars != 1 {
		c.ShardChars = 2
	}
	if c.Workers <= 0 {
		c.Workers = 64
	}
	if c.Step <= 0 {
		c.Step = 10 * time.Millisecond
	}
	if c.FailEvery <= 0 {
		c.FailEvery = 100
	}
	if c.Prices == (store.Prices{}) {
		c.Prices = store.AWSStandardPrices
	}
}

// PrefixLoad is the busiest second of one key prefix that S3 could
// partition on its own.
type PrefixLoad struct {
	Prefix        string `json:"prefix"`
	PeakWrites    int    `json:"peak_writes_per_second"`
	PeakReads     int    `json:"peak_reads_per_second"`
	TotalRequests int    `json:"total_requests"`
}

// SimReport is what a simulation found.
type SimReport struct {
	Config          SimConfig    `json:"config"`
	Tasks           int          `json:"tasks_submitted"`
	Completed       int          `json:"tasks_finished"`
	Prefixes        int          `json:"prefixes"`
	RequestsPerTask float64      `json:"requests_per_task"`
	BusiestWrites   PrefixLoad   `json:"busiest_by_writes"`
	BusiestReads    PrefixLoad   `json:"busiest_by_reads"`
	Top             []PrefixLoad `json:"top_prefixes"`
	WritesOK        bool         `json:"writes_within_limit"`
	ReadsOK         bool         `json:"reads_within_limit"`
	// Idle is the idle phase (nil without one).
	Idle *SimIdle `json:"idle,omitempty"`
}

// SimIdle is what an idle fleet sent during the idle phase.
type SimIdle struct {
	Seconds int `json:"seconds"`
	Workers int `json:"workers"`
	// RequestsPerSecond is the whole fleet's, by kind.
	RequestsPerSecond map[store.Op]float64 `json:"requests_per_second"`
	// ByPrefix is the fleet's requests per second by the first key
	// element (workers/, shard-leases/, ready/, monitor/, ...).
	ByPrefix      map[string]float64 `json:"requests_per_second_by_prefix"`
	CostPerMonth  float64            `json:"fleet_cost_per_month"`
	BusiestPrefix PrefixLoad         `json:"busiest_prefix"`
}

// The simulated worker's periods, as the real worker's defaults.
const (
	simHeartbeat  = 10 * time.Second // worker.DefaultHeartbeatInterval
	simLeaseRound = 10 * time.Second // shard leasing's renew interval
	simLeaseTTL   = 30 * time.Second // shard leasing's lease TTL
	simAcquireMax = 40 * time.Second // the longest acquisition backoff: 4 renew intervals
	simPollMax    = 5 * time.Second  // worker.DefaultPollMax
)

// simWorker is a worker as the simulation drives it, with shard leasing
// and an embedded monitor, as deployed: it heartbeats, runs a leasing
// round (renew its leases, list the registry, and list the shard leases
// while it is below its target), takes part in the monitor election, and
// walks the ready partitions of the shards it holds with queue.ListReady
// (one LIST per poll, as the real worker; a worker holding no shard sends
// none), claims what it found and finishes it at once. An empty poll
// doubles its poll interval up to simPollMax; one that found work brings
// it back to the step.
type simWorker struct {
	id     string
	shards []string
	leases []*queue.NamedLease
	cursor string
	mon    *monitor.Monitor

	nextBeat, nextRound, nextElect, nextAcquire, nextPoll time.Time
	pollEvery                                             time.Duration
}

// simLeader is the leader's periodic work, due at the fleet level.
type simLeader struct {
	nextLeases, nextHealth, nextSchedules, nextSweep time.Time
}

// partitionSim is one simulated fleet: the queue over a counted in-memory
// store in simulated time, its workers with the shards they hold, the
// leader's schedule and the report being filled in.
type partitionSim struct {
	cfg     SimConfig
	clock   *simClock
	s       *simStore
	q       *queue.Queue
	workers []*simWorker
	start   time.Time
	target  int // the shards a worker leases up to
	lead    *simLeader
	r       SimReport
}

// SimulatePartitions drives cfg.Rate tasks per second for cfg.Seconds of
// simulated time through the queue's real Submit, ListReady, Claim,
// Complete and Fail over the in-memory store, with workers each holding an
// even share of the shards by shard lease (one shard each, and none for
// those beyond the shard count, when workers outnumber shards), and every
// worker's background requests (see simWorker) and the leader monitor's
// duties (its lease check every 5 s, worker health and schedules every
// 30 s, a sweep round every 5 minutes), and reports the busiest key
// prefix's request rates against S3's per-prefix limits. With
// cfg.IdleSeconds, an idle phase before the load prices what the fleet
// sends with nothing to do. Nothing waits on the wall clock.
func SimulatePartitions(ctx context.Context, cfg SimConfig) (SimReport, error) {
	cfg.defaults()
	p, err := newPartitionSim(ctx, cfg)
	if err != nil {
		return SimReport{}, err
	}
	if cfg.IdleSeconds > 0 {
		if err := p.runIdle(ctx); err != nil {
			return p.r, err
		}
		p.r.Idle = p.s.idle(cfg)
	}
	if err := p.runLoad(ctx); err != nil {
		return p.r, err
	}
	p.r.summarize(p.s)
	return p.r, nil
}

// newPartitionSim sets up the fleet: a queue of cfg.ShardChars, the
// workers with their periods spread over their intervals, the shards
// dealt out among them as leases, and their registry records.
func newPartitionSim(ctx context.Context, cfg SimConfig) (*partitionSim, error) {
	clock := &simClock{t: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
	mem := memstore.New(memstore.WithClock(clock))
	s := &simStore{Store: mem, clock: clock}
	s.reset()
	if _, err := queue.Init(ctx, mem, cfg.ShardChars); err != nil {
		return nil, err
	}
	rnd := rand.New(rand.NewSource(1))
	q, err := queue.Open(ctx, s, queue.Options{Clock: clock, Rand: rnd, NewID: queue.SequentialIDs("partition-sim"), Logger: quiet})
	if err != nil {
		return nil, err
	}
	shards := q.Shards()
	workers := make([]*simWorker, cfg.Workers)
	start := clock.Now()
	n := time.Duration(cfg.Workers)
	for i := range workers {
		id := fmt.Sprintf("sim-%04d", i)
		// Each worker's periods start at its own offset, as jitter and
		// start times spread them.
		off := time.Duration(i)
		workers[i] = &simWorker{
			id:        id,
			mon:       monitor.New(q, monitor.Options{ID: "mon-" + id, Clock: clock, Logger: quiet}),
			nextBeat:  start.Add(off * simHeartbeat / n),
			nextRound: start.Add(off * simLeaseRound / n),
			nextElect: start.Add(off * 5 * time.Second / n),
			// Acquisition backoffs too are spread by jitter.
			nextAcquire: start.Add(off * simAcquireMax / n),
			pollEvery:   cfg.Step,
		}
	}
	for i, sh := range shards {
		w := workers[i%len(workers)]
		l, err := namedlease.Acquire(ctx, q, queue.ShardLeaseKey(sh), w.id, simLeaseTTL)
		if err != nil {
			return nil, err
		}
		w.shards, w.leases = append(w.shards, sh), append(w.leases, l)
	}
	for _, w := range workers {
		if err := registry.Put(ctx, q, &queue.WorkerInfo{ID: w.id, LastHeartbeat: clock.Now(), Shards: w.shards, Concurrency: 64}); err != nil {
			return nil, err
		}
	}
	return &partitionSim{
		cfg: cfg, clock: clock, s: s, q: q, workers: workers, start: start,
		target: (len(shards) + len(workers) - 1) / len(workers),
		lead:   &simLeader{nextLeases: start, nextHealth: start, nextSchedules: start, nextSweep: start},
		r:      SimReport{Config: cfg},
	}, nil
}

// runIdle is the idle phase: cfg.IdleSeconds of workers finding nothing,
// each polling at the ceiling at its own time.
func (p *partitionSim) runIdle(ctx context.Context) error {
	n := time.Duration(len(p.workers))
	for i, w := range p.workers {
		w.pollEvery, w.nextPoll = simPollMax, p.start.Add(time.Duration(i)*simPollMax/n)
	}
	p.s.reset()
	steps := int(time.Duration(p.cfg.IdleSeconds) * time.Second / p.cfg.Step)
	for step := 0; step < steps; step++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := p.background(ctx); err != nil {
			return err
		}
		if err := p.poll(ctx); err != nil {
			return err
		}
		p.clock.advance(p.cfg.Step)
	}
	return nil
}

// runLoad is the load phase: cfg.Seconds of cfg.Rate submissions per
// second, measured in its steady state: every holder polls at the step
// (an idle worker's first poll after its backoff finds work and brings it
// back there).
func (p *partitionSim) runLoad(ctx context.Context) error {
	for _, w := range p.workers {
		w.pollEvery, w.nextPoll = p.cfg.Step, p.clock.Now()
	}
	p.s.reset()
	steps := int(time.Duration(p.cfg.Seconds) * time.Second / p.cfg.Step)
	perStep := float64(p.cfg.Rate) * p.cfg.Step.Seconds()
	owed := 0.0
	for step := 0; step < steps; step++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := p.background(ctx); err != nil {
			return err
		}
		for owed += perStep; owed >= 1; owed-- {
			if _, _, err := p.q.Submit(ctx, queue.SubmitRequest{Type: "sim", Input: json.RawMessage(`{}`)}); err != nil {
				return err
			}
			p.r.Tasks++
		}
		if err := p.poll(ctx); err != nil {
			return err
		}
		p.clock.advance(p.cfg.Step)
	}
	return nil
}

// background runs every worker's periodic requests and the leader's
// duties that are due.
func (p *partitionSim) background(ctx context.Context) error {
	now := p.clock.Now()
	var leader *simWorker
	for _, w := range p.workers {
		if err := p.workerPeriodics(ctx, w, now); err != nil {
			return err
		}
		if leader == nil && w.mon.IsLeader() {
			leader = w
		}
	}
	if leader == nil {
		return nil
	}
	return p.leaderDuties(ctx, leader.mon, now)
}

// workerPeriodics runs what is due of w's heartbeat, leasing round and
// monitor election.
func (p *partitionSim) workerPeriodics(ctx context.Context, w *simWorker, now time.Time) error {
	q := p.q
	if !now.Before(w.nextBeat) {
		if err := registry.Put(ctx, q, &queue.WorkerInfo{ID: w.id, LastHeartbeat: now, Shards: w.shards, Concurrency: 64}); err != nil {
			return err
		}
		w.nextBeat = w.nextBeat.Add(simHeartbeat)
	}
	if !now.Before(w.nextRound) {
		for _, l := range w.leases {
			if err := namedlease.Renew(ctx, q, l, simLeaseTTL); err != nil {
				return err
			}
		}
		if _, err := registry.Beats(ctx, q); err != nil {
			return err
		}
		if len(w.leases) < p.target && !now.Before(w.nextAcquire) {
			// Nothing is stale in a steady fleet: the listing
			// finds no shard to try, and the backoff grows to
			// its longest.
			if _, err := namedlease.ShardWrites(ctx, q); err != nil {
				return err
			}
			w.nextAcquire = now.Add(simAcquireMax)
		}
		w.nextRound = w.nextRound.Add(simLeaseRound)
	}
	if !now.Before(w.nextElect) {
		w.mon.Elect(ctx)
		w.nextElect = w.nextElect.Add(5 * time.Second)
	}
	return nil
}

// leaderDuties runs the monitor duties that are due on the leader m:
// the lease check, the worker health check, the schedules and the sweep.
func (p *partitionSim) leaderDuties(ctx context.Context, m *monitor.Monitor, now time.Time) error {
	lead := p.lead
	if !now.Before(lead.nextLeases) {
		if _, err := m.CheckLeases(ctx); err != nil {
			return err
		}
		lead.nextLeases = lead.nextLeases.Add(monitor.DefaultLeaseCheckInterval)
	}
	if !now.Before(lead.nextHealth) {
		if _, err := m.CheckWorkers(ctx); err != nil {
			return err
		}
		lead.nextHealth = lead.nextHealth.Add(monitor.DefaultCheckInterval)
	}
	if !now.Before(lead.nextSchedules) {
		if _, err := m.RunSchedules(ctx); err != nil {
			return err
		}
		lead.nextSchedules = lead.nextSchedules.Add(monitor.DefaultScheduleRefresh)
	}
	if !now.Before(lead.nextSweep) {
		if err := m.SweepRound(ctx); err != nil {
			return err
		}
		lead.nextSweep = lead.nextSweep.Add(monitor.DefaultSweepInterval)
	}
	return nil
}

// poll runs the workers' polls that are due: one ListReady over the
// shards a worker holds, then a claim and an immediate finish of every
// entry found (every cfg.FailEvery-th fails).
func (p *partitionSim) poll(ctx context.Context) error {
	now := p.clock.Now()
	for _, w := range p.workers {
		if len(w.shards) == 0 || now.Before(w.nextPoll) {
			continue
		}
		entries, next, err := p.q.ListReady(ctx, queue.ReadyQuery{Shards: w.shards, Types: []string{"sim"}, StartAfter: w.cursor, Limit: 100})
		if err != nil {
			return err
		}
		w.cursor = next
		if len(entries) > 0 {
			w.pollEvery = p.cfg.Step
		} else {
			w.pollEvery = min(2*w.pollEvery, simPollMax)
		}
		w.nextPoll = now.Add(w.pollEvery)
		for _, e := range entries {
			l, err := p.q.Claim(ctx, e, w.id)
			if err != nil {
				continue // a stale entry or a lost race: the real worker moves on too
			}
			if p.r.Completed%p.cfg.FailEvery == p.cfg.FailEvery-1 {
				_, err = p.q.Fail(ctx, l, "simulated failure")
			} else {
				_, err = p.q.Complete(ctx, l, nil)
			}
			if err != nil {
				return err
			}
			p.r.Completed++
		}
	}
	return nil
}
