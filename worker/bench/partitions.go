package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
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

// partitionOf is the key prefix S3 could split a request's key on: the
// first path element, plus the second where it spreads the keys (a shard,
// or the first characters of a hash).
func partitionOf(key string) string {
	root, rest, found := strings.Cut(key, "/")
	if !found {
		return key // queue.json, control.json
	}
	switch root + "/" {
	case queue.TasksPrefix, queue.ReadyPrefix, queue.LeasesPrefix, queue.DataPrefix, queue.IdempotencyPrefix:
		if sub, _, ok := strings.Cut(rest, "/"); ok && sub != "" {
			return root + "/" + sub + "/"
		}
	}
	return root + "/"
}

// simStore counts each request against the partition it lands on, per
// simulated second. A LIST lands where it starts reading (its StartAfter,
// else its prefix).
type simStore struct {
	store.Store
	clock *simClock
	mu    sync.Mutex
	// counts[second][prefix] = {writes, reads}
	counts map[int64]map[string]*[2]int
	total  int
	ops    map[store.Op]int
	roots  map[string]int // requests by first key element
}

// reset forgets what was counted.
func (s *simStore) reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.counts, s.total = map[int64]map[string]*[2]int{}, 0
	s.ops, s.roots = map[store.Op]int{}, map[string]int{}
}

func (s *simStore) op(op store.Op, key string) {
	root, _, _ := strings.Cut(key, "/")
	s.mu.Lock()
	s.ops[op]++
	s.roots[root+"/"]++
	s.mu.Unlock()
}

func (s *simStore) count(key string, write bool) {
	sec := s.clock.Now().Unix()
	s.mu.Lock()
	defer s.mu.Unlock()
	bySec := s.counts[sec]
	if bySec == nil {
		bySec = map[string]*[2]int{}
		s.counts[sec] = bySec
	}
	p := partitionOf(key)
	c := bySec[p]
	if c == nil {
		c = &[2]int{}
		bySec[p] = c
	}
	if write {
		c[0]++
	} else {
		c[1]++
	}
	s.total++
}

func (s *simStore) Get(ctx context.Context, key string) (*store.Object, error) {
	s.op(store.OpGet, key)
	s.count(key, false)
	return s.Store.Get(ctx, key)
}

func (s *simStore) GetVersion(ctx context.Context, key, version string) (*store.Object, error) {
	s.op(store.OpGet, key)
	s.count(key, false)
	return s.Store.GetVersion(ctx, key, version)
}

func (s *simStore) Put(ctx context.Context, key string, body []byte, cond store.Condition) (store.PutResult, error) {
	s.op(store.OpPut, key)
	s.count(key, true)
	return s.Store.Put(ctx, key, body, cond)
}

func (s *simStore) Delete(ctx context.Context, key string, cond store.Condition) error {
	s.op(store.OpDelete, key)
	s.count(key, true)
	return s.Store.Delete(ctx, key, cond)
}

func (s *simStore) List(ctx context.Context, p store.ListParams) (store.ListPage, error) {
	at := p.Prefix
	if p.StartAfter != "" {
		at = p.StartAfter
	}
	s.op(store.OpList, p.Prefix)
	s.count(at, false)
	return s.Store.List(ctx, p)
}

func (s *simStore) ListVersions(ctx context.Context, key string) ([]store.Version, error) {
	s.op(store.OpListVersions, key)
	s.count(key, false)
	return s.Store.ListVersions(ctx, key)
}

// simClock is simulated time, moved by the simulation only.
type simClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *simClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *simClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
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
	clock := &simClock{t: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
	mem := memstore.New(memstore.WithClock(clock))
	s := &simStore{Store: mem, clock: clock}
	s.reset()
	if _, err := queue.Init(ctx, mem, cfg.ShardChars); err != nil {
		return SimReport{}, err
	}
	rnd := rand.New(rand.NewSource(1))
	q, err := queue.Open(ctx, s, queue.Options{Clock: clock, Rand: rnd, NewID: queue.SequentialIDs("partition-sim"), Logger: quiet})
	if err != nil {
		return SimReport{}, err
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
			return SimReport{}, err
		}
		w.shards, w.leases = append(w.shards, sh), append(w.leases, l)
	}
	target := (len(shards) + len(workers) - 1) / len(workers)
	for _, w := range workers {
		if err := registry.Put(ctx, q, &queue.WorkerInfo{ID: w.id, LastHeartbeat: clock.Now(), Shards: w.shards, Concurrency: 64}); err != nil {
			return SimReport{}, err
		}
	}
	lead := &simLeader{nextLeases: start, nextHealth: start, nextSchedules: start, nextSweep: start}
	r := SimReport{Config: cfg}

	// background runs every worker's periodic requests and the leader's
	// duties that are due.
	background := func() error {
		now := clock.Now()
		var leader *simWorker
		for _, w := range workers {
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
				if len(w.leases) < target && !now.Before(w.nextAcquire) {
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
			if leader == nil && w.mon.IsLeader() {
				leader = w
			}
		}
		if leader == nil {
			return nil
		}
		m := leader.mon
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
	// poll runs the workers' polls that are due.
	poll := func() error {
		now := clock.Now()
		for _, w := range workers {
			if len(w.shards) == 0 || now.Before(w.nextPoll) {
				continue
			}
			entries, next, err := q.ListReady(ctx, queue.ReadyQuery{Shards: w.shards, StartAfter: w.cursor, Limit: 100})
			if err != nil {
				return err
			}
			w.cursor = next
			if len(entries) > 0 {
				w.pollEvery = cfg.Step
			} else {
				w.pollEvery = min(2*w.pollEvery, simPollMax)
			}
			w.nextPoll = now.Add(w.pollEvery)
			for _, e := range entries {
				l, err := q.Claim(ctx, e, w.id)
				if err != nil {
					continue // a stale entry or a lost race: the real worker moves on too
				}
				if r.Completed%cfg.FailEvery == cfg.FailEvery-1 {
					_, err = q.Fail(ctx, l, "simulated failure")
				} else {
					_, err = q.Complete(ctx, l, nil)
				}
				if err != nil {
					return err
				}
				r.Completed++
			}
		}
		return nil
	}

	if cfg.IdleSeconds > 0 {
		// Idle workers poll at the ceiling, each at its own time.
		for i, w := range workers {
			w.pollEvery, w.nextPoll = simPollMax, start.Add(time.Duration(i)*simPollMax/n)
		}
		s.reset()
		steps := int(time.Duration(cfg.IdleSeconds) * time.Second / cfg.Step)
		for step := 0; step < steps; step++ {
			if err := ctx.Err(); err != nil {
				return r, err
			}
			if err := background(); err != nil {
				return r, err
			}
			if err := poll(); err != nil {
				return r, err
			}
			clock.advance(cfg.Step)
		}
		r.Idle = s.idle(cfg)
	}

	// The load is measured in its steady state: every holder polls at
	// the step (an idle worker's first poll after its backoff finds work
	// and brings it back there).
	for _, w := range workers {
		w.pollEvery, w.nextPoll = cfg.Step, clock.Now()
	}
	s.reset()
	steps := int(time.Duration(cfg.Seconds) * time.Second / cfg.Step)
	perStep := float64(cfg.Rate) * cfg.Step.Seconds()
	owed := 0.0
	for step := 0; step < steps; step++ {
		if err := ctx.Err(); err != nil {
			return r, err
		}
		if err := background(); err != nil {
			return r, err
		}
		for owed += perStep; owed >= 1; owed-- {
			if _, _, err := q.Submit(ctx, queue.SubmitRequest{Type: "sim", Input: json.RawMessage(`{}`)}); err != nil {
				return r, err
			}
			r.Tasks++
		}
		if err := poll(); err != nil {
			return r, err
		}
		clock.advance(cfg.Step)
	}
	r.summarize(s)
	return r, nil
}

// idle turns what was counted over an idle phase into its report.
func (s *simStore) idle(cfg SimConfig) *SimIdle {
	secs := float64(cfg.IdleSeconds)
	out := &SimIdle{Seconds: cfg.IdleSeconds, Workers: cfg.Workers,
		RequestsPerSecond: map[store.Op]float64{}, ByPrefix: map[string]float64{}}
	c := store.Counts{OK: map[store.Op]int64{}}
	for op, n := range s.ops {
		out.RequestsPerSecond[op] = float64(n) / secs
		c.OK[op] = int64(n)
	}
	for root, n := range s.roots {
		out.ByPrefix[root] = float64(n) / secs
	}
	const secondsPerMonth = 30 * 24 * 3600
	out.CostPerMonth = c.Cost(cfg.Prices) / secs * secondsPerMonth
	var r SimReport
	r.summarize(s)
	out.BusiestPrefix = r.BusiestReads
	if r.BusiestWrites.PeakWrites > r.BusiestReads.PeakReads {
		out.BusiestPrefix = r.BusiestWrites
	}
	return out
}

func (r *SimReport) summarize(s *simStore) {
	peaks := map[string]*PrefixLoad{}
	for _, bySec := range s.counts {
		for p, c := range bySec {
			pl := peaks[p]
			if pl == nil {
				pl = &PrefixLoad{Prefix: p}
				peaks[p] = pl
			}
			pl.PeakWrites = max(pl.PeakWrites, c[0])
			pl.PeakReads = max(pl.PeakReads, c[1])
			pl.TotalRequests += c[0] + c[1]
		}
	}
	var all []PrefixLoad
	for _, pl := range peaks {
		all = append(all, *pl)
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].PeakWrites != all[j].PeakWrites {
			return all[i].PeakWrites > all[j].PeakWrites
		}
		return all[i].Prefix < all[j].Prefix
	})
	r.Prefixes = len(all)
	if len(all) > 0 {
		r.BusiestWrites = all[0]
	}
	r.Top = all[:min(len(all), 8)]
	for _, pl := range all {
		if pl.PeakReads > r.BusiestReads.PeakReads {
			r.BusiestReads = pl
		}
	}
	if r.Tasks > 0 {
		r.RequestsPerTask = float64(s.total) / float64(r.Tasks)
	}
	r.WritesOK = r.BusiestWrites.PeakWrites <= S3WritesPerPrefix
	r.ReadsOK = r.BusiestReads.PeakReads <= S3ReadsPerPrefix
}

// WriteText prints the simulation's findings.
func (r SimReport) WriteText(w io.Writer) {
	c := r.Config
	shards := 1 << (4 * c.ShardChars)
	share := fmt.Sprintf("%d workers each owning %d shards", c.Workers, max(1, shards/c.Workers))
	switch {
	case c.Workers == shards:
		share = fmt.Sprintf("%d workers each owning 1 shard", c.Workers)
	case c.Workers > shards:
		share = fmt.Sprintf("%d workers, %d of them owning 1 shard each", c.Workers, shards)
	}
	if i := r.Idle; i != nil {
		fmt.Fprintf(w, "idle for %d s: the fleet of %d workers sent %.0f LIST, %.0f GET, %.0f PUT per second ($%.2f per month, $%.2f per worker); by prefix:",
			i.Seconds, i.Workers, i.RequestsPerSecond[store.OpList], i.RequestsPerSecond[store.OpGet], i.RequestsPerSecond[store.OpPut],
			i.CostPerMonth, i.CostPerMonth/float64(max(i.Workers, 1)))
		roots := make([]string, 0, len(i.ByPrefix))
		for root := range i.ByPrefix {
			roots = append(roots, root)
		}
		sort.Strings(roots)
		for _, root := range roots {
			fmt.Fprintf(w, " %s %.0f/s", root, i.ByPrefix[root])
		}
		fmt.Fprintf(w, "; busiest prefix %s, %d writes/s and %d reads/s at peak\n\n", i.BusiestPrefix.Prefix, i.BusiestPrefix.PeakWrites, i.BusiestPrefix.PeakReads)
	}
	fmt.Fprintf(w, "simulated %d tasks/s for %d s: %d shards, %s; %d tasks submitted, %d finished, %.2f requests per task over %d prefixes\n\n",
		c.Rate, c.Seconds, shards, share, r.Tasks, r.Completed, r.RequestsPerTask, r.Prefixes)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PREFIX\tPEAK WRITES/S\tPEAK READS/S")
	for _, p := range r.Top {
		fmt.Fprintf(tw, "%s\t%d\t%d\n", p.Prefix, p.PeakWrites, p.PeakReads)
	}
	tw.Flush()
	verdict := func(ok bool) string {
		if ok {
			return "within"
		}
		return "OVER"
	}
	fmt.Fprintf(w, "\nbusiest prefix by writes: %s, %d/s (%s S3's %d/s)\n", r.BusiestWrites.Prefix, r.BusiestWrites.PeakWrites, verdict(r.WritesOK), S3WritesPerPrefix)
	fmt.Fprintf(w, "busiest prefix by reads:  %s, %d/s (%s S3's %d/s)\n", r.BusiestReads.Prefix, r.BusiestReads.PeakReads, verdict(r.ReadsOK), S3ReadsPerPrefix)
}
