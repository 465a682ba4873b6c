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

	"github.com/qo-queue/qo/queue"
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
	Step       time.Duration // simulated time between polls (default 10ms)
	FailEvery  int           // every n-th task fails for good (default 100: 1%)
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
	s.count(key, false)
	return s.Store.Get(ctx, key)
}

func (s *simStore) GetVersion(ctx context.Context, key, version string) (*store.Object, error) {
	s.count(key, false)
	return s.Store.GetVersion(ctx, key, version)
}

func (s *simStore) Put(ctx context.Context, key string, body []byte, cond store.Condition) (store.PutResult, error) {
	s.count(key, true)
	return s.Store.Put(ctx, key, body, cond)
}

func (s *simStore) Delete(ctx context.Context, key string, cond store.Condition) error {
	s.count(key, true)
	return s.Store.Delete(ctx, key, cond)
}

func (s *simStore) List(ctx context.Context, p store.ListParams) (store.ListPage, error) {
	at := p.Prefix
	if p.StartAfter != "" {
		at = p.StartAfter
	}
	s.count(at, false)
	return s.Store.List(ctx, p)
}

func (s *simStore) ListVersions(ctx context.Context, key string) ([]store.Version, error) {
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

// simWorker is a worker as the simulation drives it: it owns some shards,
// walks their ready partitions with queue.ListReady (one LIST per poll, as
// the real worker), claims what it found and finishes it at once.
type simWorker struct {
	id     string
	shards []string
	cursor string
}

// SimulatePartitions drives cfg.Rate tasks per second for cfg.Seconds of
// simulated time through the queue's real Submit, ListReady, Claim,
// Complete and Fail over the in-memory store, with workers each owning an
// even share of the shards (as shard leasing gives them) and a heartbeat
// every 10 s, and reports the busiest key prefix's request rates against
// S3's per-prefix limits. Nothing waits on the wall clock.
func SimulatePartitions(ctx context.Context, cfg SimConfig) (SimReport, error) {
	cfg.defaults()
	clock := &simClock{t: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
	mem := memstore.New(memstore.WithClock(clock))
	s := &simStore{Store: mem, clock: clock, counts: map[int64]map[string]*[2]int{}}
	if _, err := queue.Init(ctx, mem, cfg.ShardChars); err != nil {
		return SimReport{}, err
	}
	rnd := rand.New(rand.NewSource(1))
	q, err := queue.Open(ctx, s, queue.Options{Clock: clock, Rand: rnd, NewID: queue.SequentialIDs("partition-sim")})
	if err != nil {
		return SimReport{}, err
	}
	shards := q.Shards()
	workers := make([]*simWorker, cfg.Workers)
	for i := range workers {
		workers[i] = &simWorker{id: fmt.Sprintf("sim-%03d", i)}
	}
	for i, sh := range shards {
		w := workers[i%len(workers)]
		w.shards = append(w.shards, sh)
	}
	r := SimReport{Config: cfg}
	steps := int(time.Duration(cfg.Seconds) * time.Second / cfg.Step)
	perStep := float64(cfg.Rate) * cfg.Step.Seconds()
	owed := 0.0
	heartbeat := 10 * time.Second
	nextBeat := clock.Now()
	for step := 0; step < steps; step++ {
		if err := ctx.Err(); err != nil {
			return r, err
		}
		if !clock.Now().Before(nextBeat) {
			for _, w := range workers {
				if err := q.PutWorker(ctx, &queue.WorkerInfo{ID: w.id, LastHeartbeat: clock.Now(), Shards: w.shards, Concurrency: 64}); err != nil {
					return r, err
				}
			}
			nextBeat = nextBeat.Add(heartbeat)
		}
		for owed += perStep; owed >= 1; owed-- {
			if _, _, err := q.Submit(ctx, queue.SubmitRequest{Type: "sim", Input: json.RawMessage(`{}`)}); err != nil {
				return r, err
			}
			r.Tasks++
		}
		for _, w := range workers {
			entries, next, err := q.ListReady(ctx, queue.ReadyQuery{Shards: w.shards, StartAfter: w.cursor, Limit: 100})
			if err != nil {
				return r, err
			}
			w.cursor = next
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
					return r, err
				}
				r.Completed++
			}
		}
		clock.advance(cfg.Step)
	}
	r.summarize(s)
	return r, nil
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
	fmt.Fprintf(w, "simulated %d tasks/s for %d s: %d shards, %d workers each owning %d shards; %d tasks submitted, %d finished, %.2f requests per task over %d prefixes\n\n",
		c.Rate, c.Seconds, 1<<(4*c.ShardChars), c.Workers, max(1, (1<<(4*c.ShardChars))/c.Workers), r.Tasks, r.Completed, r.RequestsPerTask, r.Prefixes)
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
