package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/queue/registry"
	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/worker"
)

// limitedRate is the rate the limited run sets: above the end-to-end
// rate of the machines qo is measured on, so it does not slow the run
// (its cost is then per task, not per second waited).
const limitedRate = 1000

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
