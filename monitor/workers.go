package monitor

import (
	"context"
	"fmt"
	"time"

	"github.com/qo-queue/qo/queue/registry"
)

func (m *Monitor) checkWorkers(ctx context.Context) {
	if !m.IsLeader() {
		return
	}
	if _, err := m.CheckWorkers(ctx); err != nil && ctx.Err() == nil {
		m.log.Warn("worker health check failed", "err", err)
	}
}

// CheckWorkers reads the worker registry, judges each heartbeat, logs
// workers whose state changed, prunes long-dead registrations when
// PruneDeadAfter is set, and folds the workers' finishes into the
// throughput rollup (RollUp).
func (m *Monitor) CheckWorkers(ctx context.Context) ([]WorkerHealth, error) {
	workers, err := registry.List(ctx, m.q)
	if err != nil {
		return nil, fmt.Errorf("list workers: %w", err)
	}
	now := m.opts.Clock.Now()
	health := Health(workers, now)
	seen := make(map[string]bool, len(health))
	for _, h := range health {
		id := h.Worker.ID
		seen[id] = true
		m.mu.Lock()
		prev, known := m.states[id]
		m.states[id] = h.State
		m.mu.Unlock()
		if h.State != Active && (!known || prev != h.State) {
			m.log.Warn("worker heartbeat is "+string(h.State), "worker_id", id,
				"last_heartbeat", h.Worker.LastHeartbeat, "age", h.Age.Round(time.Second).String(),
				"current_tasks", len(h.Worker.CurrentTasks), "host", h.Worker.Host)
		} else if h.State == Active && known && prev != Active {
			m.log.Info("worker heartbeat is active again", "worker_id", id)
		}
		if m.opts.PruneDeadAfter > 0 && h.State == Dead && h.Age > m.opts.PruneDeadAfter {
			if err := registry.Delete(ctx, m.q, id); err != nil {
				m.log.Warn("pruning dead worker failed", "worker_id", id, "err", err)
			} else {
				m.log.Info("pruned dead worker registration", "worker_id", id, "age", h.Age.Round(time.Second).String())
			}
		}
	}
	m.mu.Lock()
	for id := range m.states {
		if !seen[id] {
			delete(m.states, id)
		}
	}
	m.health = health
	m.mu.Unlock()
	if err := m.RollUp(ctx, workers, now); err != nil {
		return health, fmt.Errorf("throughput rollup: %w", err)
	}
	return health, nil
}
