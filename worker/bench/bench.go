// Package bench measures qo on a real bucket: throughput, latency, S3
// requests per task and what they cost, the store's raw ceiling, and the
// price of idle workers. qo bench runs it; docs/performance.md reports it.
//
// Every phase runs on a fresh, throwaway bucket so a measurement never
// touches a real queue and starts from an empty bucket.
package bench

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/queue/control"
	"github.com/qo-queue/qo/store"
)

// Bucket is a throwaway bucket: a counted store that can be created and
// removed with everything in it.
type Bucket interface {
	store.Store
	store.Admin
	store.Counted
	RemoveBucket(ctx context.Context) error
}

// Config is one benchmark run.
type Config struct {
	// NewBucket returns a handle on a new bucket name (not created yet).
	NewBucket func(ctx context.Context, name string) (Bucket, error)
	// Keep leaves the buckets in place afterwards.
	Keep bool

	Tasks          int   // tasks of the end-to-end run (default 2000)
	Workers        int   // in-process workers (default 4)
	Concurrency    int   // per worker (default 8)
	SubmitTasks    int   // tasks per submit-throughput run (default 500)
	SubmitConc     []int // submit concurrencies (default 1 and 32)
	LatencySamples int   // claim and pickup samples (default 200 and 50)
	RawOps         int   // operations of each raw-ceiling run (default 2000)
	Idle           time.Duration
	IdleSettle     time.Duration // wait before idle counting starts (default 10s)
	IdleWorkers    int
	SeedFinished   int // finished tasks put in the bucket before a second end-to-end run and the history reads (0: skip)
	// LeaderWindow is how long the history step watches an idle worker
	// whose embedded monitor leads (default 60s).
	LeaderWindow time.Duration
	// HistoryOnly runs only the history step (with SeedFinished).
	HistoryOnly bool
	// FanOut and FanIn, when set, add the dependency phases: one parent
	// with FanOut children, FanIn parents with one child, each submitted
	// as a workflow and with After (see Fan). FanOutAfter, when set, is
	// the children of the fan-out submitted with After instead of FanOut
	// (each of their child_added writes carries the parent's growing list
	// of children; -1 skips it). DepsOnly runs only the dependency phases.
	FanOut, FanIn, FanOutAfter int
	DepsOnly                   bool
	// NoLimits skips the end-to-end run under a fleet-wide cap and rate
	// (see Limited).
	NoLimits bool
	// Keys, when set, adds the run over task keys (see Keyed); KeysOnly
	// runs only it.
	Keys     int
	KeysOnly bool
	Prices   store.Prices
	// Log receives progress lines (nil: none).
	Log io.Writer
}

func (c *Config) defaults() {
	set := func(p *int, v int) {
		if *p <= 0 {
			*p = v
		}
	}
	set(&c.Tasks, 2000)
	set(&c.Workers, 4)
	set(&c.Concurrency, 8)
	set(&c.SubmitTasks, 500)
	set(&c.LatencySamples, 200)
	set(&c.RawOps, 2000)
	set(&c.IdleWorkers, 4)
	if len(c.SubmitConc) == 0 {
		c.SubmitConc = []int{1, 32}
	}
	if c.Idle <= 0 {
		c.Idle = 30 * time.Second
	}
	if c.IdleSettle <= 0 {
		c.IdleSettle = 10 * time.Second
	}
	if c.Log == nil {
		c.Log = io.Discard
	}
	if c.LeaderWindow <= 0 {
		c.LeaderWindow = time.Minute
	}
}

// step is one phase of a run: it measures on a queue in a fresh bucket
// and records what it measured in the report.
type step struct {
	name string
	fn   func(ctx context.Context, b Bucket, q *queue.Queue) error
}

// Run runs every phase and returns the report.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	cfg.defaults()
	r := NewReport(cfg)
	var steps []step
	if !cfg.HistoryOnly && !cfg.DepsOnly && !cfg.KeysOnly {
		steps = throughputSteps(cfg, r)
	}
	steps = append(steps, keyedSteps(cfg, r)...)
	steps = append(steps, historySteps(cfg, r)...)
	steps = append(steps, fanSteps(cfg, r)...)
	if cfg.SeedFinished > 0 && !cfg.HistoryOnly && !cfg.DepsOnly {
		steps = append(steps, seededStep(cfg, r))
	}
	for _, st := range steps {
		fmt.Fprintf(cfg.Log, "bench: %s...\n", st.name)
		if err := withBucket(ctx, cfg, func(b Bucket, q *queue.Queue) error { return st.fn(ctx, b, q) }); err != nil {
			return r, fmt.Errorf("bench: %s: %w", st.name, err)
		}
	}
	r.Efficiency = efficiency(r.EndToEnd, r.Raw)
	if r.TaskCeiling.PerSecond > 0 {
		r.OfTaskCeiling = r.EndToEnd.TasksPerSecond / r.TaskCeiling.PerSecond
	}
	r.Targets = targets(r)
	return r, nil
}

// throughputSteps are the phases of a full run: submit throughput, the
// store's raw ceiling before and after the end-to-end run (with and,
// unless cfg.NoLimits, without a cap and a rate), the task ceiling, the
// claim and pickup latencies and the cost of idle workers.
func throughputSteps(cfg Config, r *Report) []step {
	conc := cfg.Workers * cfg.Concurrency
	rawStep := func(ctx context.Context, b Bucket, _ *queue.Queue) error {
		m, err := rawCeiling(ctx, b, conc, cfg.RawOps)
		if err != nil {
			return err
		}
		r.Raw.add(m)
		return nil
	}
	steps := []step{
		{"submit throughput", func(ctx context.Context, b Bucket, q *queue.Queue) error {
			for _, c := range cfg.SubmitConc {
				rate, err := submitRate(ctx, q, c, cfg.SubmitTasks)
				if err != nil {
					return err
				}
				r.Submit = append(r.Submit, Rate{Concurrency: c, PerSecond: rate})
			}
			return nil
		}},
		{"raw store ceiling", rawStep},
		{"end to end", func(ctx context.Context, b Bucket, q *queue.Queue) error {
			var err error
			r.EndToEnd, err = endToEnd(ctx, b, q, cfg)
			return err
		}},
		{"task ceiling", func(ctx context.Context, b Bucket, _ *queue.Queue) error {
			rate, err := taskCeiling(ctx, b, conc, cfg.Tasks)
			r.TaskCeiling = Rate{Concurrency: conc, PerSecond: rate}
			return err
		}},
		{"raw store ceiling, again", rawStep},
		{"claim latency", func(ctx context.Context, b Bucket, q *queue.Queue) error {
			var err error
			r.Claim, err = claimLatency(ctx, q, cfg.LatencySamples)
			return err
		}},
		{"pickup latency", func(ctx context.Context, b Bucket, q *queue.Queue) error {
			var err error
			r.Pickup, err = pickupLatency(ctx, q, max(cfg.LatencySamples/4, 10))
			return err
		}},
		{"idle workers", func(ctx context.Context, b Bucket, q *queue.Queue) error {
			for _, leasing := range []bool{false, true} {
				idle, err := idleCost(ctx, b, q, cfg, leasing)
				if err != nil {
					return err
				}
				r.Idle = append(r.Idle, idle)
			}
			return nil
		}},
	}
	if !cfg.NoLimits {
		// Right after the run without limits, on the same machine load.
		steps = slices.Insert(steps, 3, limitedStep(cfg, r))
	}
	return steps
}

// limitedStep is the end-to-end run again under a fleet-wide cap and a
// rate on its type (see Limited).
func limitedStep(cfg Config, r *Report) step {
	conc := cfg.Workers * cfg.Concurrency
	return step{"end to end with a cap and a rate", func(ctx context.Context, b Bucket, q *queue.Queue) error {
		l := &Limited{Cap: max(1, conc/2), RatePerSecond: limitedRate}
		if _, err := control.SetLimit(ctx, q, noopRequest().Type, l.Cap); err != nil {
			return err
		}
		if _, err := control.SetRate(ctx, q, noopRequest().Type, l.RatePerSecond, time.Second, 0); err != nil {
			return err
		}
		var err error
		l.EndToEnd, err = endToEnd(ctx, b, q, cfg)
		r.Limited = l
		return err
	}}
}

// historySteps measure the reads in an empty bucket and beside
// cfg.SeedFinished finished tasks (none when it is 0).
func historySteps(cfg Config, r *Report) []step {
	if cfg.SeedFinished <= 0 {
		return nil
	}
	read := func(finished int) func(ctx context.Context, b Bucket, q *queue.Queue) error {
		return func(ctx context.Context, b Bucket, q *queue.Queue) error {
			h, err := measureHistory(ctx, b, q, finished, cfg.LeaderWindow, cfg.Log)
			r.History = append(r.History, h)
			return err
		}
	}
	return []step{
		{"reads in an empty bucket", read(0)},
		{fmt.Sprintf("reads beside %d finished tasks", cfg.SeedFinished), read(cfg.SeedFinished)},
	}
}

// fanSteps are the dependency phases: the fan-out and the fan-in, each
// submitted as a workflow and with After (see Fan). A shape with more
// steps than a workflow holds is skipped via workflow.
func fanSteps(cfg Config, r *Report) []step {
	fanOutAfter := cfg.FanOutAfter
	if fanOutAfter == 0 {
		fanOutAfter = cfg.FanOut
	}
	var steps []step
	for _, fan := range []struct {
		shape, via string
		edges      int
	}{{"fan-out", "workflow", cfg.FanOut}, {"fan-out", "after", fanOutAfter}, {"fan-in", "workflow", cfg.FanIn}, {"fan-in", "after", cfg.FanIn}} {
		if fan.edges <= 0 {
			continue
		}
		if fan.via == "workflow" && fan.edges+1 > queue.MaxWorkflowSteps {
			fmt.Fprintf(cfg.Log, "bench: %s of %d via workflow skipped: %d steps, a workflow has at most %d\n", fan.shape, fan.edges, fan.edges+1, queue.MaxWorkflowSteps)
			continue
		}
		steps = append(steps, step{fmt.Sprintf("%s of %d via %s", fan.shape, fan.edges, fan.via), func(ctx context.Context, b Bucket, _ *queue.Queue) error {
			f, err := runFan(ctx, b, fan.shape, fan.via, fan.edges, cfg.Log)
			r.Fans = append(r.Fans, f)
			return err
		}})
	}
	return steps
}

// seededStep is the end-to-end run again beside cfg.SeedFinished finished
// tasks.
func seededStep(cfg Config, r *Report) step {
	return step{"end to end over finished tasks", func(ctx context.Context, b Bucket, q *queue.Queue) error {
		if err := SeedFinished(ctx, b, q, Seed{Tasks: cfg.SeedFinished, FailedEvery: 100}); err != nil {
			return err
		}
		e, err := endToEnd(ctx, b, q, cfg)
		r.Seeded = &e
		return err
	}}
}

// withBucket runs fn on a queue in a fresh bucket, removed afterwards.
func withBucket(ctx context.Context, cfg Config, fn func(Bucket, *queue.Queue) error) error {
	name := "qo-bench-" + uuid.NewString()[:12]
	b, err := cfg.NewBucket(ctx, name)
	if err != nil {
		return err
	}
	if err := b.CreateBucket(ctx); err != nil {
		return fmt.Errorf("create bucket %s: %w", name, err)
	}
	if !cfg.Keep {
		defer func() {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Minute)
			defer cancel()
			if err := b.RemoveBucket(cctx); err != nil {
				fmt.Fprintf(cfg.Log, "bench: could not remove bucket %s: %v\n", name, err)
			}
		}()
	}
	if err := b.EnableVersioning(ctx); err != nil {
		return fmt.Errorf("enable versioning on %s: %w", name, err)
	}
	if _, err := queue.Init(ctx, b, 1); err != nil {
		return err
	}
	q, err := queue.Open(ctx, b, queue.Options{})
	if err != nil {
		return err
	}
	return fn(b, q)
}

// parallel runs n jobs on c goroutines.
func parallel(n, c int, job func(i int) error) error {
	var next atomic.Int64
	var first error
	var once sync.Once
	var wg sync.WaitGroup
	for range c {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				if err := job(i); err != nil {
					once.Do(func() { first = err })
					return
				}
			}
		}()
	}
	wg.Wait()
	return first
}
