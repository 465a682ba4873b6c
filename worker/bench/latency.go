package bench

import (
	"context"
	"encoding/json"
	"errors"
	"math/rand"
	"sort"
	"time"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/worker"
)

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
