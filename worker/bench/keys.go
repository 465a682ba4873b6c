package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/worker"
)

// smallKeyTasks is how many tasks each small key of the keyed run holds.
const smallKeyTasks = 5

// Keyed is the end-to-end run over task keys (qo bench --keys N), shaped
// as the fairness e2e: one key with a deep backlog (the run's tasks but
// the small keys', submitted first) and N-1 small keys of smallKeyTasks
// tasks each, submitted after it. Beside it, the same tasks in the same
// order without keys, on the same machine load: what keys cost per task.
type Keyed struct {
	Keys          int      `json:"keys"`
	DeepKeyTasks  int      `json:"deep_key_tasks"`
	SmallKeyTasks int      `json:"small_key_tasks"` // per small key
	NoKeys        EndToEnd `json:"no_keys"`
	WithKeys      EndToEnd `json:"with_keys"`
	// RequestsRatio is requests per task with keys over without (1: the
	// same).
	RequestsRatio float64 `json:"requests_ratio"`
	// DeepBacklog is how many of the deep key's tasks had not started
	// when the small keys' submits began (what they had to pass).
	DeepBacklog int `json:"deep_backlog_at_small_submits"`
	// FirstWaitMaxSeconds is the longest wait (created to started) of a
	// small key's first task, SmallWaitMaxSeconds that of any small key's
	// task, and DeepDrainSeconds how long the deep key's tasks took from
	// the small keys' submits to the last start.
	FirstWaitMaxSeconds float64 `json:"small_key_first_wait_max_seconds"`
	SmallWaitMaxSeconds float64 `json:"small_key_wait_max_seconds"`
	DeepDrainSeconds    float64 `json:"deep_drain_seconds"`
}

// keyedShape returns how many tasks the deep key and each small key hold
// for tasks over keys, or an error naming the fix.
func keyedShape(tasks, keys int) (deep int, err error) {
	if keys < 1 {
		return 0, fmt.Errorf("--keys %d: want at least 1", keys)
	}
	deep = tasks - (keys-1)*smallKeyTasks
	if deep < smallKeyTasks {
		return 0, fmt.Errorf("--keys %d with --tasks %d: the deep key would hold %d tasks; give --tasks at least %d", keys, tasks, deep, keys*smallKeyTasks)
	}
	return deep, nil
}

// keyedStep runs the keyed run without keys on q (in bucket b), then with
// keys in a fresh bucket, into k.
func keyedStep(ctx context.Context, cfg Config, b Bucket, q *queue.Queue, k *Keyed) error {
	deep, err := keyedShape(cfg.Tasks, cfg.Keys)
	if err != nil {
		return err
	}
	k.Keys, k.DeepKeyTasks, k.SmallKeyTasks = cfg.Keys, deep, smallKeyTasks
	run, err := keyedRun(ctx, b, q, cfg, deep, false)
	if err != nil {
		return fmt.Errorf("without keys: %w", err)
	}
	k.NoKeys = run.EndToEnd
	return withBucket(ctx, cfg, func(b Bucket, q *queue.Queue) error {
		run, err := keyedRun(ctx, b, q, cfg, deep, true)
		if err != nil {
			return fmt.Errorf("with keys: %w", err)
		}
		k.WithKeys, k.DeepBacklog = run.EndToEnd, run.backlog
		k.FirstWaitMaxSeconds, k.SmallWaitMaxSeconds, k.DeepDrainSeconds = run.firstWait.Seconds(), run.smallWait.Seconds(), run.deepDrain.Seconds()
		if n, w := totalPerTask(k.NoKeys), totalPerTask(k.WithKeys); n > 0 {
			k.RequestsRatio = w / n
		}
		return nil
	})
}

func totalPerTask(e EndToEnd) float64 {
	t := 0.0
	for _, v := range e.RequestsPerTask {
		t += v
	}
	return t
}

// keyedResult is one keyed run: its end-to-end figures, and the waits of
// the small keys' tasks (measured with keys only).
type keyedResult struct {
	EndToEnd
	backlog                         int
	firstWait, smallWait, deepDrain time.Duration
}

// keyedRun submits deep tasks (key "deep" when keyed), then the small
// keys' tasks (keys "small-1"...), to cfg.Workers workers already
// registered, and waits until all ran.
func keyedRun(ctx context.Context, b Bucket, q *queue.Queue, cfg Config, deep int, keyed bool) (keyedResult, error) {
	total := deep + (cfg.Keys-1)*smallKeyTasks
	keyOf := func(i int) string {
		if i < deep {
			return "deep"
		}
		return fmt.Sprintf("small-%d", (i-deep)/smallKeyTasks+1)
	}
	var mu sync.Mutex
	startedAt := map[uuid.UUID]time.Time{}
	cnt := &counter{done: make(chan struct{}), want: int64(total)}
	handler := func(_ context.Context, t *queue.Task) (json.RawMessage, error) {
		mu.Lock()
		defer mu.Unlock()
		if _, seen := startedAt[t.ID]; !seen {
			startedAt[t.ID] = q.Now() // the clock created_at was read on
		}
		return nil, nil
	}
	ids, stop := startWorkers(ctx, q, cfg.Workers, worker.Options{Concurrency: cfg.Concurrency, Observer: cnt}, handler)
	defer stop()
	if err := AwaitRegistered(ctx, q, ids, time.Now().Add(time.Minute)); err != nil {
		return keyedResult{}, err
	}
	before := b.Requests().Snapshot()
	start := time.Now()
	created := make([]*queue.Task, total)
	submit := func(from, to int) error {
		return parallel(to-from, 32, func(i int) error {
			req := noopRequest()
			if keyed {
				req.Key = keyOf(from + i)
			}
			t, _, err := q.Submit(ctx, req)
			created[from+i] = t
			return err
		})
	}
	if err := submit(0, deep); err != nil {
		return keyedResult{}, err
	}
	var res keyedResult
	mu.Lock()
	for _, t := range created[:deep] {
		if _, ok := startedAt[t.ID]; !ok {
			res.backlog++
		}
	}
	mu.Unlock()
	smallFrom := q.Now()
	if err := submit(deep, total); err != nil {
		return keyedResult{}, err
	}
	select {
	case <-cnt.done:
	case <-time.After(10 * time.Minute):
		return keyedResult{}, fmt.Errorf("only %d of %d tasks completed in 10 minutes", cnt.completed.Load(), total)
	case <-ctx.Done():
		return keyedResult{}, ctx.Err()
	}
	secs := time.Since(start).Seconds()
	d := b.Requests().Snapshot().Sub(before)
	res.EndToEnd = EndToEnd{Tasks: total, Seconds: secs, TasksPerSecond: float64(total) / secs, RequestsPerTask: map[store.Op]float64{}}
	for _, op := range store.Ops {
		if n := d.Total(op); n > 0 {
			res.RequestsPerTask[op] = float64(n) / float64(total)
		}
	}
	res.CostPerMillion = d.Cost(cfg.Prices) / float64(total) * 1e6
	mu.Lock()
	defer mu.Unlock()
	for i, t := range created {
		wait := startedAt[t.ID].Sub(t.CreatedAt)
		switch {
		case i < deep:
			res.deepDrain = max(res.deepDrain, startedAt[t.ID].Sub(smallFrom))
		case (i-deep)%smallKeyTasks == 0:
			res.firstWait = max(res.firstWait, wait)
			fallthrough
		default:
			res.smallWait = max(res.smallWait, wait)
		}
	}
	return res, nil
}

// writeKeyed prints the keyed run's lines.
func writeKeyed(p func(format string, args ...any), k *Keyed) {
	p("end to end over %d keys (1 of %d tasks, %d of %d), without keys\t%.0f tasks/s (%.1f s), %s", k.Keys, k.DeepKeyTasks, k.Keys-1, k.SmallKeyTasks, k.NoKeys.TasksPerSecond, k.NoKeys.Seconds, opsLine(k.NoKeys.RequestsPerTask))
	p("end to end over %d keys, with keys\t%.0f tasks/s (%.1f s), %s; %.3f x the requests without", k.Keys, k.WithKeys.TasksPerSecond, k.WithKeys.Seconds, opsLine(k.WithKeys.RequestsPerTask), k.RequestsRatio)
	p("small keys behind a deep backlog of %d\tfirst task started within %.2f s (any task %.2f s); the deep key drained in %.2f s", k.DeepBacklog, k.FirstWaitMaxSeconds, k.SmallWaitMaxSeconds, k.DeepDrainSeconds)
}

func keyedSteps(cfg Config, r *Report) []step {
	if cfg.Keys <= 0 {
		return nil
	}
	return []step{{fmt.Sprintf("end to end over %d keys", cfg.Keys), func(ctx context.Context, b Bucket, q *queue.Queue) error {
		r.Keyed = &Keyed{}
		return keyedStep(ctx, cfg, b, q, r.Keyed)
	}}}
}

// keyedTargets: requests per task with keys within 2% of those without.
func keyedTargets(k *Keyed) []Target {
	if k == nil || k.RequestsRatio == 0 {
		return nil
	}
	return []Target{{fmt.Sprintf("requests per task over %d keys vs none", k.Keys), "1 +/- 0.02", k.RequestsRatio, math.Abs(k.RequestsRatio-1) <= 0.02}}
}
