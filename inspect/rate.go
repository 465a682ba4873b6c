package inspect

import (
	"sync"
	"time"

	"github.com/qo-queue/qo/monitor"
	"github.com/qo-queue/qo/monitor/view"
	"github.com/qo-queue/qo/store"
)

// RateMeter measures the fleet's S3 request rate from the counters each
// worker publishes in its heartbeat (queue.WorkerInfo.Requests). A
// worker's counters move only when it heartbeats, so the increase between
// two reads of the registry divided by the time between the reads is
// wrong: zero between heartbeats, a double share after. The meter keeps,
// for each worker, the counters of its last two heartbeats and divides
// their difference by the time between the heartbeats' own timestamps;
// the fleet's rate is the sum over live (not dead) workers. Safe for
// concurrent use; the zero value is ready.
type RateMeter struct {
	mu      sync.Mutex
	workers map[string]*beats
}

type beats struct {
	prev, cur    store.Counts
	prevAt, at   time.Time
	havePrevious bool
}

// Observe takes the judged registry read at some moment and returns the
// fleet's rate (nil until some worker has been seen at two heartbeats).
// Workers gone from the registry are forgotten.
func (m *RateMeter) Observe(health []monitor.WorkerHealth, prices store.Prices) *view.Rate {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.workers == nil {
		m.workers = map[string]*beats{}
	}
	seen := map[string]bool{}
	r := &view.Rate{ByOp: map[store.Op]float64{}}
	var cost float64
	for _, h := range health {
		w := h.Worker
		if w.Requests == nil {
			continue
		}
		seen[w.ID] = true
		b, ok := m.workers[w.ID]
		switch {
		case !ok:
			b = &beats{cur: *w.Requests, at: w.LastHeartbeat}
			m.workers[w.ID] = b
		case w.LastHeartbeat.After(b.at):
			b.prev, b.prevAt, b.havePrevious = b.cur, b.at, true
			b.cur, b.at = *w.Requests, w.LastHeartbeat
			if wentBack(b.cur, b.prev) {
				b.havePrevious = false // the same id restarted: start again
			}
		}
		if h.State == monitor.Dead {
			continue
		}
		if !b.havePrevious {
			r.Waiting++
			continue
		}
		secs := b.at.Sub(b.prevAt).Seconds()
		d := b.cur.Sub(b.prev)
		for _, op := range store.Ops {
			if n := d.Total(op); n != 0 {
				r.ByOp[op] += float64(n) / secs
				r.PerSecond += float64(n) / secs
			}
		}
		cost += d.Cost(prices) / secs
		r.Workers++
	}
	for id := range m.workers {
		if !seen[id] {
			delete(m.workers, id)
		}
	}
	if r.Workers == 0 {
		return nil
	}
	r.DollarsPerHour = cost * 3600
	return r
}

// wentBack reports whether some counter of cur is below prev's.
func wentBack(cur, prev store.Counts) bool {
	for _, op := range store.Ops {
		if cur.OK[op] < prev.OK[op] || cur.Failed[op] < prev.Failed[op] {
			return true
		}
	}
	return false
}
