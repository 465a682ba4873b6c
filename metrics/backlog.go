package metrics

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Backlog is the state of the whole queue as one stats refresh saw it: the
// numbers autoscalers need, in plain types so this package stays below the
// packages that compute them.
type Backlog struct {
	// Tasks counts tasks by status. It holds only the statuses the stats
	// really count (waiting, pending, running and failed: see
	// queue.Stats.Counted);
	// a status missing from it is unknown, not zero, and is not exported.
	Tasks map[string]int
	// TypeTasks is Tasks by task type, then status, with the same statuses.
	TypeTasks map[string]map[string]int
	// Delayed counts the pending tasks not yet available (submitted with a
	// delay, or waiting out a retry backoff).
	Delayed int
	// OldestPendingAge is how long the longest-waiting available task has
	// waited (0 when none waits).
	OldestPendingAge time.Duration
	// Workers counts the registered workers by judged state (active,
	// stale, dead).
	Workers map[string]int
	// Partial is true when an index held more entries than one refresh
	// reads: the counts are then lower bounds.
	Partial bool
}

// DefaultBacklogTimeout is the timeout of WatchBacklog when given none. It
// stays under Prometheus's default scrape timeout (10 s), so a slow bucket
// costs qo_queue_stats_up 0 rather than the whole scrape.
const DefaultBacklogTimeout = 5 * time.Second

// WatchBacklog exports the queue's backlog as gauges (qo_queue_*), calling
// read at every scrape with a context bounded by timeout (<= 0:
// DefaultBacklogTimeout). read should answer from a cache: Prometheus, and
// any number of other scrapers, call it as often as they like. When read
// fails, the scrape still succeeds with every other metric and
// qo_queue_stats_up is 0. Call it once per Metrics: a second call panics
// (duplicate metrics).
func (m *Metrics) WatchBacklog(read func(context.Context) (Backlog, error), timeout time.Duration) {
	if timeout <= 0 {
		timeout = DefaultBacklogTimeout
	}
	m.reg.MustRegister(&backlogCollector{read: read, timeout: timeout})
}

// Every help text says what is shared: the numbers describe the whole
// queue, not the process exporting them (so several replicas of qo serve
// export the same values: aggregate them with max, never sum), and they
// come from the stats cache of GET /api/stats.
const backlogSource = " A gauge of the whole queue, the same from every qo serve (aggregate with max, not sum), from the cached stats that also answer GET /api/stats: scrapes cost at most one stats refresh (a few LISTs) per StatsMaxAge (2s by default), whatever the bucket's history."

var (
	queueTasksDesc = prometheus.NewDesc("qo_queue_tasks",
		"Tasks in the queue by status, counted from its indexes: pending (the ready index, delayed tasks and tasks in retry backoff included), running (leases) and failed (dead letters; a replay or an archive shows up to a minute late). Finished statuses are not counted and not exported."+backlogSource,
		[]string{"status"}, nil)
	queueTypeTasksDesc = prometheus.NewDesc("qo_queue_type_tasks",
		"qo_queue_tasks by task type: the backlog of each type (for one Deployment per type with QO_TYPES)."+backlogSource,
		[]string{"type", "status"}, nil)
	queueDelayedDesc = prometheus.NewDesc("qo_queue_delayed_tasks",
		"Pending tasks not yet available, submitted with a delay or waiting out a retry backoff (included in qo_queue_tasks{status=\"pending\"})."+backlogSource,
		nil, nil)
	queueOldestDesc = prometheus.NewDesc("qo_queue_oldest_pending_age_seconds",
		"How long the longest-waiting available pending task has waited since it became available, 0 when none waits: grows while workers fall behind."+backlogSource,
		nil, nil)
	queueWorkersDesc = prometheus.NewDesc("qo_queue_workers",
		"Workers in the registry by state of their heartbeat: active (within the health threshold), stale (older: overloaded, cut off from the bucket, or gone), dead (older than several thresholds: presumed gone, its tasks come back as their leases expire)."+backlogSource,
		[]string{"state"}, nil)
	queuePartialDesc = prometheus.NewDesc("qo_queue_stats_partial",
		"1 when an index held more entries than one stats refresh reads, so the qo_queue_* counts are lower bounds; else 0."+backlogSource,
		nil, nil)
	queueUpDesc = prometheus.NewDesc("qo_queue_stats_up",
		"1 when this scrape read the queue stats; 0 when the read failed (the bucket unreachable, or slower than the read's timeout, 5s by default), and then no other qo_queue_* metric is exported: GET /api/stats shows the error."+backlogSource,
		nil, nil)
)

type backlogCollector struct {
	read    func(context.Context) (Backlog, error)
	timeout time.Duration
}

func (c *backlogCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{queueTasksDesc, queueTypeTasksDesc, queueDelayedDesc, queueOldestDesc, queueWorkersDesc, queuePartialDesc, queueUpDesc} {
		ch <- d
	}
}

func (c *backlogCollector) Collect(ch chan<- prometheus.Metric) {
	// The registry gives a collector no context: the timeout bounds the
	// read so a slow bucket cannot hold the scrape past Prometheus's own.
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	b, err := c.read(ctx)
	if err != nil {
		// No error metric: the registry would fail the whole scrape, and
		// the process's own counters would be lost with the queue's gauges.
		ch <- gauge(queueUpDesc, 0)
		return
	}
	ch <- gauge(queueUpDesc, 1)
	for status, n := range b.Tasks {
		ch <- gauge(queueTasksDesc, float64(n), status)
	}
	for typ, byStatus := range b.TypeTasks {
		for status, n := range byStatus {
			ch <- gauge(queueTypeTasksDesc, float64(n), typ, status)
		}
	}
	ch <- gauge(queueDelayedDesc, float64(b.Delayed))
	ch <- gauge(queueOldestDesc, b.OldestPendingAge.Seconds())
	for state, n := range b.Workers {
		ch <- gauge(queueWorkersDesc, float64(n), state)
	}
	partial := 0.0
	if b.Partial {
		partial = 1
	}
	ch <- gauge(queuePartialDesc, partial)
}

func gauge(d *prometheus.Desc, v float64, labels ...string) prometheus.Metric {
	return prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
}
