// This file: the stats, backlog and workers reads.

package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/qo-queue/qo/metrics"
	"github.com/qo-queue/qo/monitor"
	"github.com/qo-queue/qo/monitor/view"
	"github.com/qo-queue/qo/queue/registry"
)

// getStats answers from the stats cache (see cachedStats).
func (a *api) getStats(w http.ResponseWriter, r *http.Request) error {
	v, err := a.cachedStats(r.Context())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}

// cachedStats returns the last stats while they are younger than
// StatsMaxAge; otherwise one refresh runs for every caller waiting on it.
// GET /api/stats and the backlog gauges of /metrics both read here, so
// together they cost at most one refresh per StatsMaxAge. A caller whose
// ctx ends first gets its error; the refresh goes on and fills the cache
// for the next caller.
func (a *api) cachedStats(ctx context.Context) (*view.Stats, error) {
	a.statsMu.Lock()
	v, at := a.statsView, a.statsAt
	a.statsMu.Unlock()
	if v != nil && a.q.Now().Sub(at) < a.opts.StatsMaxAge {
		return v, nil
	}
	done := a.statsOnce.DoChan("stats", func() (any, error) {
		// Not the caller's context: the refresh serves every waiter.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), a.opts.RequestTimeout)
		defer cancel()
		v, err := a.model.Stats(ctx)
		if err != nil {
			return nil, fmt.Errorf("refresh the queue stats: %w", err)
		}
		a.statsMu.Lock()
		a.statsView, a.statsAt = &v, a.q.Now()
		a.statsMu.Unlock()
		return &v, nil
	})
	select {
	case res := <-done:
		if res.Err != nil {
			return nil, res.Err
		}
		return res.Val.(*view.Stats), nil
	case <-ctx.Done():
		return nil, fmt.Errorf("wait for the queue stats: %w", context.Cause(ctx))
	}
}

// backlog reads the stats cache for the backlog gauges of /metrics.
func (a *api) backlog(ctx context.Context) (metrics.Backlog, error) {
	v, err := a.cachedStats(ctx)
	if err != nil {
		return metrics.Backlog{}, err
	}
	return backlogOf(v), nil
}

// backlogOf converts stats to the gauges' plain types. Only the counted
// statuses are carried, per type too, where a counted status without tasks
// is 0: a type's series then stay the same from one scrape to the next.
func backlogOf(v *view.Stats) metrics.Backlog {
	b := metrics.Backlog{
		Tasks:            map[string]int{},
		TypeTasks:        map[string]map[string]int{},
		Delayed:          v.Delayed,
		OldestPendingAge: time.Duration(v.OldestPendingSeconds * float64(time.Second)),
		Workers:          map[string]int{},
		Partial:          v.Partial,
	}
	for _, s := range v.Counted {
		b.Tasks[string(s)] = v.ByStatus[s]
	}
	for typ, byStatus := range v.ByType {
		b.TypeTasks[typ] = map[string]int{}
		for _, s := range v.Counted {
			b.TypeTasks[typ][string(s)] = byStatus[s]
		}
	}
	for state, n := range v.Workers {
		b.Workers[string(state)] = n
	}
	return b
}

func (a *api) health0(ctx context.Context, now time.Time) ([]monitor.WorkerHealth, error) {
	ws, _, err := registry.ListReport(ctx, a.q)
	if err != nil {
		return nil, err
	}
	return monitor.Health(ws, now), nil
}

func (a *api) getWorkers(w http.ResponseWriter, r *http.Request) error {
	now := a.q.Now()
	health, err := a.health0(r.Context(), now)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, view.WorkersOf(health, now))
	return nil
}
