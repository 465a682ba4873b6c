package inspect

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/qo-queue/qo/monitor"
	"github.com/qo-queue/qo/monitor/view"
	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/queue/control"
	"github.com/qo-queue/qo/queue/registry"
	"github.com/qo-queue/qo/store"
)

// Options configure a Model.
type Options struct {
	// Prices turn the request rate into dollars per hour (default
	// store.AWSStandardPrices).
	Prices *store.Prices
	// Stats configure the task counts.
	Stats queue.StatsOptions
}

// Model is the read model of one queue. It keeps what it read before (the
// stats counter's listings, the rate meter's heartbeats, the rollup's
// hours, task versions) so that each read costs only what changed. Safe
// for concurrent use.
type Model struct {
	q        *queue.Queue
	prices   store.Prices
	counter  *queue.StatsCounter
	rates    RateMeter
	rollup   throughputReader
	versions versionCache
}

// New returns a read model of q.
func New(q *queue.Queue, opts Options) *Model {
	m := &Model{q: q, prices: store.AWSStandardPrices, counter: q.NewStatsCounter(opts.Stats)}
	if opts.Prices != nil {
		m.prices = *opts.Prices
	}
	return m
}

// Snapshot is the queue at a glance: what qo stats, GET /api/stats, the
// console's overview and qo dev's status line show.
type Snapshot struct {
	// Stats are the task counts; Stats.Recent holds the finishes of the
	// last minutes from the rollup and the live heartbeats.
	Stats            queue.Stats
	Workers          []monitor.WorkerHealth
	MalformedWorkers []queue.MalformedError
	// Control is the pause switches; ControlErr says why they could not
	// be read (the rest of the snapshot stands).
	Control    queue.Control
	ControlErr error
	Unserved   []view.Unserved
	Rate       *view.Rate
	LastHour   []queue.MinuteCount
	LastDay    []queue.MinuteCount
	// RollupErr says why the throughput rollup could not be read (the
	// throughput then comes from the live heartbeats alone).
	RollupErr error
}

// Snapshot reads the queue: the stats counter's listings (a handful of
// LISTs whatever the bucket's history), the worker registry (1 LIST + 1
// GET per worker), the pause switches (1 GET) and the throughput rollup
// (1 LIST + 1 GET per hour object changed since the last read).
func (m *Model) Snapshot(ctx context.Context) (Snapshot, error) {
	var s Snapshot
	st, err := m.counter.Refresh(ctx)
	if err != nil {
		return s, err
	}
	ws, bad, err := registry.ListReport(ctx, m.q)
	if err != nil {
		return s, err
	}
	s.Stats, s.MalformedWorkers = st, bad
	s.Workers = monitor.Health(ws, st.At)
	s.Control, s.ControlErr = control.Read(ctx, m.q)
	if errors.Is(s.ControlErr, queue.ErrNotFound) {
		s.ControlErr = nil
	}
	s.Unserved = Unserved(st, s.Workers, s.Control)
	s.Rate = m.rates.Observe(s.Workers, m.prices)

	hours, badHours, err := m.rollup.read(ctx, m.q, st.At.Add(-DayHours*time.Hour))
	if err != nil {
		s.RollupErr = fmt.Errorf("throughput rollup: %w", err)
	}
	if len(badHours) > 0 {
		s.Stats.Malformed = slices.Concat(st.Malformed, badHours) // never into the counter's own slice
	}
	t := ThroughputOf(hours, ws, st.At, len(st.Recent))
	if len(st.Recent) > 0 {
		s.Stats.Recent = t.Recent
	}
	s.LastHour, s.LastDay = t.LastHour, t.LastDay
	return s, nil
}

// View is the snapshot in the shape of GET /api/stats and qo stats --json.
func (s Snapshot) View() view.Stats {
	v := view.StatsOf(s.Stats, s.Workers)
	v.Unserved = s.Unserved
	for _, t := range s.Control.LimitedTypes() {
		if n, ok := s.Control.ConcurrencyCap(t); ok {
			v.Limits[t] = n
		}
		if r, ok := s.Control.RateLimit(t); ok {
			if v.Rates == nil {
				v.Rates = map[string]string{}
			}
			v.Rates[t] = fmt.Sprintf("%s burst %d", r, r.Burst)
		}
		if n, ok := s.Control.KeyConcurrencyCap(t); ok {
			if v.KeyLimits == nil {
				v.KeyLimits = map[string]int{}
			}
			v.KeyLimits[t] = n
		}
		if r, ok := s.Control.KeyRateLimit(t); ok {
			if v.KeyRates == nil {
				v.KeyRates = map[string]string{}
			}
			v.KeyRates[t] = fmt.Sprintf("%s burst %d", r, r.Burst)
		}
	}
	v.RequestRate = s.Rate
	v.LastHour, v.LastDay = s.LastHour, s.LastDay
	return v
}

// Stats is Snapshot(ctx).View().
func (m *Model) Stats(ctx context.Context) (view.Stats, error) {
	s, err := m.Snapshot(ctx)
	if err != nil {
		return view.Stats{}, err
	}
	return s.View(), nil
}

// Workers reads the registry (1 LIST + 1 GET per worker) and judges each
// worker by the monitor's rule at the queue's time.
func (m *Model) Workers(ctx context.Context) ([]monitor.WorkerHealth, time.Time, error) {
	ws, err := registry.List(ctx, m.q)
	if err != nil {
		return nil, time.Time{}, err
	}
	now := m.q.Now()
	return monitor.Health(ws, now), now, nil
}

// History is the task's history (queue.History), each version read once
// per Model: reading again the history of a task that did not change
// costs its version listing alone.
func (m *Model) History(ctx context.Context, id uuid.UUID) ([]queue.Event, error) {
	return m.q.History(ctx, id, queue.ReadThrough(&m.versions))
}
