package monitor

import (
	"context"
	"errors"
	"time"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/queue/throughput"
)

// rollup is the leader's copy of the throughput rollup's open hours (see
// throughput.Hour): loaded from the bucket on first use, folded at
// every worker-health check, written back when they changed.
type rollup struct {
	hours    map[string]*throughput.Hour // by key
	prunedAt time.Time
}

// RollUp folds every registered worker's per-minute finishes into the
// throughput rollup and writes the hour objects that changed: at most two
// PUTs (the minutes a heartbeat carries span at most two hours), plus one
// GET per hour the first time this monitor folds into it, plus one LIST
// per hour to delete the objects older than throughput.Keep.
// CheckWorkers calls it with the registry it read; the leader alone runs
// it.
func (m *Monitor) RollUp(ctx context.Context, workers []*queue.WorkerInfo, now time.Time) error {
	m.mu.Lock()
	r := m.rollup
	if r == nil {
		r = &rollup{hours: map[string]*throughput.Hour{}}
		m.rollup = r
	}
	m.mu.Unlock()
	changed := map[string]bool{}
	for _, w := range workers {
		for _, mc := range w.Recent {
			key := throughput.Key(mc.Start)
			h, ok := r.hours[key]
			if !ok {
				loaded, err := throughput.Load(ctx, m.q, mc.Start)
				var bad *queue.MalformedError
				if errors.As(err, &bad) {
					// Start the hour again rather than stop the rollup.
					m.log.Warn("malformed throughput rollup hour; writing it anew", "key", bad.Key, "err", bad.Err)
					loaded, err = &throughput.Hour{Format: queue.FormatVersion, Hour: mc.Start.UTC().Truncate(time.Hour)}, nil
				}
				if err != nil {
					return err
				}
				h = loaded
				r.hours[key] = h
			}
			if h.Fold(w.ID, mc) {
				changed[key] = true
			}
		}
	}
	closeBefore := now.Add(-throughput.OpenFor)
	for key, h := range r.hours {
		if h.Close(closeBefore) {
			changed[key] = true
		}
	}
	for key := range changed {
		if err := throughput.Save(ctx, m.q, r.hours[key]); err != nil {
			return err
		}
	}
	// Hours no worker can report any more are final in the bucket.
	for key, h := range r.hours {
		if h.Hour.Add(time.Hour).Before(closeBefore) {
			delete(r.hours, key)
		}
	}
	if now.Sub(r.prunedAt) >= time.Hour {
		n, err := throughput.Prune(ctx, m.q, now)
		if err != nil {
			return err
		}
		r.prunedAt = now
		if n > 0 {
			m.log.Info("pruned old throughput rollup hours", "deleted", n)
		}
	}
	return nil
}
