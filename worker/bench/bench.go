// Package bench measures qo on a real bucket: throughput, latency, S3
// requests per task and what they cost, the store's raw ceiling, and the
// price of idle workers. qo bench runs it; docs/performance.md reports it.
//
// Every phase runs on a fresh, throwaway bucket so a measurement never
// touches a real queue and starts from an empty bucket.
package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/queue/control"
	"github.com/qo-queue/qo/queue/registry"
	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/worker"
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

// Report is the result of a run. Durations are in milliseconds, rates per
// second.
type Report struct {
	Config struct {
		Tasks, Workers, Concurrency, SubmitTasks, IdleWorkers, SeedFinished int
		IdleSeconds                                                         float64
	} `json:"config"`
	Submit   []Rate    `json:"submit"`
	EndToEnd EndToEnd  `json:"end_to_end"`
	Seeded   *EndToEnd `json:"seeded,omitempty"`
	// Limited is the end-to-end run again with a fleet-wide cap and rate
	// set on its type, for its requests per task beside EndToEnd's.
	Limited *Limited `json:"limited,omitempty"`
	// Processes is the end-to-end run through real worker processes (its
	// requests from their own counters; duplicates are not measured).
	Processes  *EndToEnd `json:"processes,omitempty"`
	Claim      Latency   `json:"claim_latency_ms"`
	Pickup     Latency   `json:"pickup_latency_ms"`
	Raw        Raw       `json:"raw"`
	Efficiency float64   `json:"efficiency"`
	// TaskCeiling is the rate of one task's requests with no dispatcher
	// (see taskCeiling), and OfTaskCeiling the end-to-end rate over it:
	// what the dispatcher costs, apart from the request mix.
	TaskCeiling   Rate    `json:"task_ceiling"`
	OfTaskCeiling float64 `json:"end_to_end_of_task_ceiling"`
	Idle          []Idle  `json:"idle"`
	// History holds the reads beside 0 and SeedFinished finished tasks.
	History []History `json:"history,omitempty"`
	// Fans holds the dependency phases (FanOut, FanIn).
	Fans        []Fan `json:"dependencies,omitempty"`
	Prices      store.Prices
	WorkerRSSMB float64  `json:"worker_rss_mb,omitempty"`
	Targets     []Target `json:"targets"`
}

// Rate is a throughput at a concurrency.
type Rate struct {
	Concurrency int     `json:"concurrency"`
	PerSecond   float64 `json:"per_second"`
}

// EndToEnd is the no-op workload: first submit to last completion.
type EndToEnd struct {
	Tasks           int                  `json:"tasks"`
	Seconds         float64              `json:"seconds"`
	TasksPerSecond  float64              `json:"tasks_per_second"`
	RequestsPerTask map[store.Op]float64 `json:"requests_per_task"`
	CostPerMillion  float64              `json:"cost_per_million_tasks"`
	Duplicates      int64                `json:"duplicate_executions"`
	// Overtaken: per task, how many tasks of the run became ready after it
	// (a later created_at) yet started before it.
	Overtaken Overtaking `json:"overtaken"`
}

// Limited is an end-to-end run under a fleet-wide cap (half the slots of
// the run, so it holds the workers back) and a rate (RatePerSecond, above
// what the run reaches, so the workers hold tokens and take them) on its
// type: what limits cost per task.
type Limited struct {
	Cap           int `json:"cap"`
	RatePerSecond int `json:"rate_per_second"`
	EndToEnd
}

// limitedRate is the rate the limited run sets: above the end-to-end
// rate of the machines qo is measured on, so it does not slow the run
// (its cost is then per task, not per second waited).
const limitedRate = 1000

// Overtaking summarises how far tasks were overtaken (see EndToEnd).
type Overtaking struct {
	Max  int     `json:"max"`
	P99  int     `json:"p99"`
	Mean float64 `json:"mean"`
}

// overtaking computes Overtaking from the tasks' creation times in the
// order they started.
func overtaking(createdInStartOrder []time.Time) Overtaking {
	n := len(createdInStartOrder)
	if n == 0 {
		return Overtaking{}
	}
	counts := make([]int, n)
	sum := 0
	for i, c := range createdInStartOrder {
		for _, earlier := range createdInStartOrder[:i] {
			if earlier.After(c) {
				counts[i]++
			}
		}
		sum += counts[i]
	}
	sort.Ints(counts)
	return Overtaking{Max: counts[n-1], P99: counts[min(n-1, n*99/100)], Mean: float64(sum) / float64(n)}
}

// Latency holds percentiles in milliseconds.
type Latency struct {
	N   int     `json:"n"`
	P50 float64 `json:"p50"`
	P95 float64 `json:"p95"`
	P99 float64 `json:"p99"`
}

// Raw is the store's ceiling at the same concurrency: the mean of one
// measurement right before the end-to-end run and one right after it (a
// shared machine's load drifts; the two are in Runs).
type Raw struct {
	Concurrency int     `json:"concurrency"`
	PutPerSec   float64 `json:"conditional_put_per_second"`
	GetPerSec   float64 `json:"get_per_second"`
	Runs        []Raw   `json:"runs,omitempty"`
}

// add records one measurement and keeps the mean.
func (r *Raw) add(m Raw) {
	r.Concurrency = m.Concurrency
	r.Runs = append(r.Runs, m)
	r.PutPerSec, r.GetPerSec = 0, 0
	for _, x := range r.Runs {
		r.PutPerSec += x.PutPerSec / float64(len(r.Runs))
		r.GetPerSec += x.GetPerSec / float64(len(r.Runs))
	}
}

// Idle is the cost of idle workers.
type Idle struct {
	ShardLeasing      bool                 `json:"shard_leasing"`
	Workers           int                  `json:"workers"`
	RequestsPerMinute map[store.Op]float64 `json:"requests_per_worker_minute"`
	ListsPerPoll      float64              `json:"lists_per_worker_poll"`
	CostPerMonth      float64              `json:"cost_per_worker_month"`
}

// Target is one goal of docs/performance.md, met or not.
type Target struct {
	Name     string  `json:"name"`
	Goal     string  `json:"goal"`
	Measured float64 `json:"measured"`
	Met      bool    `json:"met"`
}

// Run runs every phase and returns the report.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	cfg.defaults()
	r := NewReport(cfg)
	conc := cfg.Workers * cfg.Concurrency

	rawStep := func(ctx context.Context, b Bucket, _ *queue.Queue) error {
		m, err := rawCeiling(ctx, b, conc, cfg.RawOps)
		if err != nil {
			return err
		}
		r.Raw.add(m)
		return nil
	}
	steps := []struct {
		name string
		fn   func(ctx context.Context, b Bucket, q *queue.Queue) error
	}{
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
	if cfg.HistoryOnly || cfg.DepsOnly {
		steps = steps[:0]
	} else if !cfg.NoLimits {
		// Right after the run without limits, on the same machine load.
		steps = slices.Insert(steps, 3, struct {
			name string
			fn   func(ctx context.Context, b Bucket, q *queue.Queue) error
		}{"end to end with a cap and a rate", func(ctx context.Context, b Bucket, q *queue.Queue) error {
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
		}})
	}
	if cfg.SeedFinished > 0 {
		steps = append(steps, struct {
			name string
			fn   func(ctx context.Context, b Bucket, q *queue.Queue) error
		}{"reads in an empty bucket", func(ctx context.Context, b Bucket, q *queue.Queue) error {
			h, err := measureHistory(ctx, b, q, 0, cfg.LeaderWindow, cfg.Log)
			r.History = append(r.History, h)
			return err
		}}, struct {
			name string
			fn   func(ctx context.Context, b Bucket, q *queue.Queue) error
		}{fmt.Sprintf("reads beside %d finished tasks", cfg.SeedFinished), func(ctx context.Context, b Bucket, q *queue.Queue) error {
			h, err := measureHistory(ctx, b, q, cfg.SeedFinished, cfg.LeaderWindow, cfg.Log)
			r.History = append(r.History, h)
			return err
		}})
	}
	fanOutAfter := cfg.FanOutAfter
	if fanOutAfter == 0 {
		fanOutAfter = cfg.FanOut
	}
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
		steps = append(steps, struct {
			name string
			fn   func(ctx context.Context, b Bucket, q *queue.Queue) error
		}{fmt.Sprintf("%s of %d via %s", fan.shape, fan.edges, fan.via), func(ctx context.Context, b Bucket, _ *queue.Queue) error {
			f, err := runFan(ctx, b, fan.shape, fan.via, fan.edges, cfg.Log)
			r.Fans = append(r.Fans, f)
			return err
		}})
	}
	if cfg.SeedFinished > 0 && !cfg.HistoryOnly && !cfg.DepsOnly {
		steps = append(steps, struct {
			name string
			fn   func(ctx context.Context, b Bucket, q *queue.Queue) error
		}{"end to end over finished tasks", func(ctx context.Context, b Bucket, q *queue.Queue) error {
			if err := SeedFinished(ctx, b, q, Seed{Tasks: cfg.SeedFinished, FailedEvery: 100}); err != nil {
				return err
			}
			e, err := endToEnd(ctx, b, q, cfg)
			r.Seeded = &e
			return err
		}})
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

// NewReport returns a report of cfg with no phase measured yet, for a run
// made of phases measured elsewhere (see Report.AddProcesses).
func NewReport(cfg Config) *Report {
	cfg.defaults()
	r := &Report{Prices: cfg.Prices}
	r.Config.Tasks, r.Config.Workers, r.Config.Concurrency = cfg.Tasks, cfg.Workers, cfg.Concurrency
	r.Config.SubmitTasks, r.Config.IdleWorkers, r.Config.SeedFinished = cfg.SubmitTasks, cfg.IdleWorkers, cfg.SeedFinished
	r.Config.IdleSeconds = cfg.Idle.Seconds()
	return r
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

// rawCeiling measures conditional PUTs (each goroutine rewrites its own key
// with If-Match) and GETs at concurrency c.
func rawCeiling(ctx context.Context, b Bucket, c, ops int) (Raw, error) {
	etags := make([]string, c)
	for i := range c {
		res, err := b.Put(ctx, fmt.Sprintf("raw/%03d", i), []byte(`{"n":0}`), store.Condition{})
		if err != nil {
			return Raw{}, err
		}
		etags[i] = res.ETag
	}
	per := max(ops/c, 1)
	start := time.Now()
	err := parallel(c, c, func(g int) error {
		for n := range per {
			res, err := b.Put(ctx, fmt.Sprintf("raw/%03d", g), []byte(fmt.Sprintf(`{"n":%d}`, n+1)), store.IfMatch(etags[g]))
			if err != nil {
				return err
			}
			etags[g] = res.ETag
		}
		return nil
	})
	if err != nil {
		return Raw{}, err
	}
	putRate := float64(per*c) / time.Since(start).Seconds()
	start = time.Now()
	err = parallel(c, c, func(g int) error {
		for range per {
			if _, err := b.Get(ctx, fmt.Sprintf("raw/%03d", g)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return Raw{}, err
	}
	return Raw{Concurrency: c, PutPerSec: putRate, GetPerSec: float64(per*c) / time.Since(start).Seconds()}, nil
}

// taskCeiling sends the requests of n no-op tasks on c goroutines, each
// task's in its order with nothing between them: create the task and its
// ready entry; read the task, write the lease entry and the running task,
// delete the ready entry; write the completed task, delete the lease
// entry (the floor of queue/doc.go). It returns tasks per second: what the
// server allows for this mix of new objects, overwrites and deletes, which
// costs it more than the raw ceiling's overwrites of a few keys. The end
// to end rate over it is what the dispatcher costs (finding work, waiting
// for a slot, handing a task to its handler).
func taskCeiling(ctx context.Context, b Bucket, c, n int) (float64, error) {
	start := time.Now()
	err := parallel(n, c, func(i int) error {
		return taskRequests(ctx, b, fmt.Sprintf("ceiling/tasks/%06d.json", i), fmt.Sprintf("ceiling/ready/%06d", i), fmt.Sprintf("ceiling/leases/%06d", i))
	})
	return float64(n) / time.Since(start).Seconds(), err
}

// taskRequests sends the requests of one no-op task, in their order, on
// the given keys: create the task and its ready entry; read the task,
// write the lease entry and the running task, delete the ready entry;
// write the completed task, delete the lease entry.
func taskRequests(ctx context.Context, b Bucket, task, ready, lease string) error {
	body := func(status string) []byte {
		return []byte(`{"id":"00000000-0000-0000-0000-000000000000","type":"noop","status":"` + status + `","input":{},"timeout_seconds":60,"max_retries":3,"created_at":"2026-01-01T00:00:00Z"}`)
	}
	created, err := b.Put(ctx, task, body("pending"), store.CreateOnly)
	if err != nil {
		return err
	}
	if _, err := b.Put(ctx, ready, nil, store.Condition{}); err != nil {
		return err
	}
	if _, err := b.Get(ctx, task); err != nil {
		return err
	}
	if _, err := b.Put(ctx, lease, nil, store.Condition{}); err != nil {
		return err
	}
	running, err := b.Put(ctx, task, body("running"), store.IfMatch(created.ETag))
	if err != nil {
		return err
	}
	if err := b.Delete(ctx, ready, store.Condition{}); err != nil {
		return err
	}
	if _, err := b.Put(ctx, task, body("completed"), store.IfMatch(running.ETag)); err != nil {
		return err
	}
	return b.Delete(ctx, lease, store.Condition{})
}

func noopRequest() queue.SubmitRequest {
	return queue.SubmitRequest{Type: "noop", Input: json.RawMessage(`{}`), Timeout: time.Minute}
}

// submitRate submits n tasks on c goroutines.
func submitRate(ctx context.Context, q *queue.Queue, c, n int) (float64, error) {
	start := time.Now()
	err := parallel(n, c, func(int) error {
		_, _, err := q.Submit(ctx, noopRequest())
		return err
	})
	return float64(n) / time.Since(start).Seconds(), err
}

// counter counts completions through the worker's observer.
type counter struct {
	completed atomic.Int64
	done      chan struct{}
	want      int64
	once      sync.Once
}

func (c *counter) Claimed(string)            {}
func (c *counter) ClaimConflict(string)      {}
func (c *counter) LeaseChecked(string, bool) {}
func (c *counter) Finished(_ string, o worker.Outcome, _ time.Duration) {
	if o == worker.OutcomeCompleted && c.completed.Add(1) >= c.want {
		c.once.Do(func() { close(c.done) })
	}
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// startWorkers runs n workers, whose ids it returns, until the returned
// stop is called.
func startWorkers(ctx context.Context, q *queue.Queue, n int, opts worker.Options, h worker.HandlerFunc) (ids []string, stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for i := range n {
		o := opts
		o.ID = fmt.Sprintf("bench-%d-%s", i, uuid.NewString()[:6])
		ids = append(ids, o.ID)
		o.Logger = quiet
		w := worker.New(q, o)
		w.Handle("noop", h)
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = w.Run(ctx)
		}()
	}
	return ids, func() { cancel(); wg.Wait() }
}

// AwaitRegistered waits until every worker in ids has its registry entry,
// reading the registry every 50 ms until deadline.
func AwaitRegistered(ctx context.Context, q *queue.Queue, ids []string, deadline time.Time) error {
	for {
		ws, err := registry.List(ctx, q)
		seen := 0
		if err == nil {
			for _, w := range ws {
				if slices.Contains(ids, w.ID) {
					seen++
				}
			}
			if seen == len(ids) {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d workers did not register in time (last error: %v)", len(ids)-seen, len(ids), err)
		}
		select {
		case <-time.After(50 * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// endToEnd runs cfg.Tasks no-op tasks through cfg.Workers workers.
func endToEnd(ctx context.Context, b Bucket, q *queue.Queue, cfg Config) (EndToEnd, error) {
	cnt := &counter{done: make(chan struct{}), want: int64(cfg.Tasks)}
	var runs sync.Map
	var dups atomic.Int64
	var startMu sync.Mutex
	var started []time.Time // created_at of each task, in start order
	handler := func(_ context.Context, t *queue.Task) (json.RawMessage, error) {
		if _, seen := runs.LoadOrStore(t.ID, true); seen {
			dups.Add(1)
			return nil, nil
		}
		startMu.Lock()
		started = append(started, t.CreatedAt)
		startMu.Unlock()
		return nil, nil
	}
	// The workers start and register before the first submit, so the
	// window holds the load and not their start-up (as with processes).
	ids, stop := startWorkers(ctx, q, cfg.Workers, worker.Options{Concurrency: cfg.Concurrency, Observer: cnt}, handler)
	defer stop()
	if err := AwaitRegistered(ctx, q, ids, time.Now().Add(time.Minute)); err != nil {
		return EndToEnd{}, err
	}
	before := b.Requests().Snapshot()
	start := time.Now()
	if err := parallel(cfg.Tasks, 32, func(int) error {
		_, _, err := q.Submit(ctx, noopRequest())
		return err
	}); err != nil {
		return EndToEnd{}, err
	}
	select {
	case <-cnt.done:
	case <-time.After(10 * time.Minute):
		return EndToEnd{}, fmt.Errorf("only %d of %d tasks completed in 10 minutes", cnt.completed.Load(), cfg.Tasks)
	case <-ctx.Done():
		return EndToEnd{}, ctx.Err()
	}
	secs := time.Since(start).Seconds()
	d := b.Requests().Snapshot().Sub(before)
	startMu.Lock()
	order := overtaking(started)
	startMu.Unlock()
	e := EndToEnd{Tasks: cfg.Tasks, Seconds: secs, TasksPerSecond: float64(cfg.Tasks) / secs, RequestsPerTask: map[store.Op]float64{}, Duplicates: dups.Load(), Overtaken: order}
	for _, op := range store.Ops {
		if n := d.Total(op); n > 0 {
			e.RequestsPerTask[op] = float64(n) / float64(cfg.Tasks)
		}
	}
	e.CostPerMillion = d.Cost(cfg.Prices) / float64(cfg.Tasks) * 1e6
	return e, nil
}

// claimLatency times queue.Claim (GET, conditional PUT of the task, PUT of
// the lease entry, DELETE of the ready entry) one at a time.
func claimLatency(ctx context.Context, q *queue.Queue, n int) (Latency, error) {
	for range n {
		if _, _, err := q.Submit(ctx, noopRequest()); err != nil {
			return Latency{}, err
		}
	}
	var samples []time.Duration
	for len(samples) < n {
		entries, _, err := q.ListReady(ctx, queue.ReadyQuery{Limit: 100})
		if err != nil {
			return Latency{}, err
		}
		if len(entries) == 0 {
			break
		}
		for _, e := range entries {
			start := time.Now()
			if _, err := q.Claim(ctx, e, "bench-claim"); err != nil {
				return Latency{}, err
			}
			samples = append(samples, time.Since(start))
		}
	}
	return percentiles(samples), nil
}

// pickupLatency submits tasks one at a time, at random moments, to a warm
// idle worker and times submission (Submit returned) to the handler start.
func pickupLatency(ctx context.Context, q *queue.Queue, n int) (Latency, error) {
	started := make(chan time.Time, 1)
	_, stop := startWorkers(ctx, q, 1, worker.Options{Concurrency: 1}, func(context.Context, *queue.Task) (json.RawMessage, error) {
		started <- time.Now()
		return nil, nil
	})
	defer stop()
	rnd := rand.New(rand.NewSource(1))
	var samples []time.Duration
	time.Sleep(time.Second) // let the worker settle into idle polling
	// The first task warms the worker up and is not counted: a worker
	// that has not claimed anything for WarmFor polls every PollMax at
	// the slowest, and its first pickup says that, not how fast a warm
	// one is.
	for i := range n + 1 {
		time.Sleep(time.Duration(200+rnd.Intn(600)) * time.Millisecond)
		if _, _, err := q.Submit(ctx, noopRequest()); err != nil {
			return Latency{}, err
		}
		submitted := time.Now()
		select {
		case at := <-started:
			if i > 0 {
				samples = append(samples, at.Sub(submitted))
			}
		case <-time.After(time.Minute):
			return Latency{}, errors.New("a task was not picked up within a minute")
		}
	}
	return percentiles(samples), nil
}

// idleCost runs idle workers (with their embedded monitors, as deployed)
// and counts their requests.
func idleCost(ctx context.Context, b Bucket, q *queue.Queue, cfg Config, leasing bool) (Idle, error) {
	return idleCostPoll(ctx, b, q, cfg, leasing, worker.DefaultPollMax)
}

// idleCostPoll is idleCost with the workers' poll ceiling set to pollMax.
func idleCostPoll(ctx context.Context, b Bucket, q *queue.Queue, cfg Config, leasing bool, pollMax time.Duration) (Idle, error) {
	opts := worker.Options{Concurrency: 1, PollMax: pollMax, ShardLeasing: worker.ShardLeasing{Enabled: leasing}}
	_, stop := startWorkers(ctx, q, cfg.IdleWorkers, opts, func(context.Context, *queue.Task) (json.RawMessage, error) { return nil, nil })
	time.Sleep(cfg.IdleSettle) // past start-up and the adaptive backoff ramp
	before := b.Requests().Snapshot()
	start := time.Now()
	select {
	case <-time.After(cfg.Idle):
	case <-ctx.Done():
	}
	d := b.Requests().Snapshot().Sub(before)
	mins := time.Since(start).Minutes()
	stop()
	if err := ctx.Err(); err != nil {
		return Idle{}, err
	}
	perWorker := float64(cfg.IdleWorkers) * mins
	idle := Idle{ShardLeasing: leasing, Workers: cfg.IdleWorkers, RequestsPerMinute: map[store.Op]float64{}}
	for _, op := range store.Ops {
		if n := d.Total(op); n > 0 {
			idle.RequestsPerMinute[op] = float64(n) / perWorker
		}
	}
	polls := mins * 60 / pollMax.Seconds()
	idle.ListsPerPoll = float64(d.Total(store.OpList)) / float64(cfg.IdleWorkers) / polls
	idle.CostPerMonth = d.Cost(cfg.Prices) / perWorker * 60 * 24 * 30
	return idle, nil
}

func percentiles(ds []time.Duration) Latency {
	if len(ds) == 0 {
		return Latency{}
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	at := func(p float64) float64 {
		i := int(p*float64(len(ds))+0.5) - 1
		i = min(max(i, 0), len(ds)-1)
		return float64(ds[i]) / float64(time.Millisecond)
	}
	return Latency{N: len(ds), P50: at(0.50), P95: at(0.95), P99: at(0.99)}
}

// efficiency compares the end-to-end request rate with the raw ceiling:
// tasks/s x requests per task / raw ops/s, the raw rate weighted by the
// task's mix of GETs and writes.
func efficiency(e EndToEnd, raw Raw) float64 {
	gets := e.RequestsPerTask[store.OpGet] + e.RequestsPerTask[store.OpHead]
	total := 0.0
	for _, v := range e.RequestsPerTask {
		total += v
	}
	if total == 0 || raw.PutPerSec == 0 || raw.GetPerSec == 0 {
		return 0
	}
	writes := total - gets
	secondsPerTaskAtCeiling := writes/raw.PutPerSec + gets/raw.GetPerSec
	return e.TasksPerSecond * secondsPerTaskAtCeiling
}
