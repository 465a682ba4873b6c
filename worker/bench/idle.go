package bench

import (
	"context"
	"encoding/json"
	"time"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/worker"
)

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
