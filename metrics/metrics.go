// Package metrics exports qo's Prometheus metrics: what workers and
// monitors do (through their Observer hooks), every S3 request by kind and
// outcome with its latency and estimated cost, and the API's submits.
//
// Metric names all start with qo_. One Metrics value owns one registry, so
// tests and several components in one process do not collide.
package metrics

import (
	"errors"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/worker"
)

// Metrics is a registry with qo's metrics. It implements worker.Observer
// and monitor.Observer.
type Metrics struct {
	reg *prometheus.Registry

	submitted      *prometheus.CounterVec
	claimed        *prometheus.CounterVec
	claimConflicts *prometheus.CounterVec
	finished       *prometheus.CounterVec
	handlerSecs    *prometheus.HistogramVec
	calls          *prometheus.CounterVec
	callSecs       *prometheus.HistogramVec
	leaseChecks    *prometheus.CounterVec
	timedOut       *prometheus.CounterVec
	scheduleRuns   *prometheus.CounterVec
	leader         prometheus.Gauge
	s3Latency      *prometheus.HistogramVec
}

// New returns a registry with every qo metric plus the Go runtime and
// process collectors.
func New() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		submitted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "qo_tasks_submitted_total", Help: "Tasks submitted by this process, by type (duplicates of an idempotency key not counted).",
		}, []string{"type"}),
		claimed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "qo_tasks_claimed_total", Help: "Tasks claimed by this worker, by type.",
		}, []string{"type"}),
		claimConflicts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "qo_claim_conflicts_total", Help: "Claims lost to another worker or to a change of the task, by type.",
		}, []string{"type"}),
		finished: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "qo_tasks_finished_total", Help: "Attempts ended by this worker, by type and outcome (completed, retried, rescheduled, snoozed, failed, cancelled, released, lost).",
		}, []string{"type", "outcome"}),
		handlerSecs: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "qo_handler_duration_seconds", Help: "Handler run time per attempt, by type and outcome.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2.5, 12), // 5 ms to about 5 min
		}, []string{"type", "outcome"}),
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "qo_handler_calls_total", Help: "Handler calls seen by the metrics middleware, by type and result (ok, error, panic).",
		}, []string{"type", "result"}),
		callSecs: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "qo_handler_call_duration_seconds", Help: "Handler call time seen by the metrics middleware (the middleware inside it included), by type and result.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2.5, 12),
		}, []string{"type", "result"}),
		leaseChecks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "qo_lease_checks_total", Help: "Re-reads of running tasks (a cancel request or a lost lease), by type and result (ok, failed).",
		}, []string{"type", "result"}),
		scheduleRuns: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "qo_schedule_runs_total", Help: "Due times of cron schedules handled by this process's monitor, by schedule and outcome (submitted, duplicate, skipped, failed).",
		}, []string{"schedule", "outcome"}),
		timedOut: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "qo_tasks_timed_out_total", Help: "Leases the monitor found expired and took back, by type.",
		}, []string{"type"}),
		leader: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "qo_monitor_leader", Help: "1 while this process's monitor is the leader, else 0.",
		}),
		s3Latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "qo_s3_request_duration_seconds", Help: "S3 request latency by kind and outcome (each SDK retry is one request).",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"op", "outcome"}),
	}
	m.reg.MustRegister(m.submitted, m.claimed, m.claimConflicts, m.finished, m.handlerSecs, m.calls, m.callSecs, m.leaseChecks,
		m.timedOut, m.scheduleRuns, m.leader, m.s3Latency,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Registry returns the underlying registry (to add collectors).
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the metrics in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// Submitted counts a task this process submitted.
func (m *Metrics) Submitted(taskType string) { m.submitted.WithLabelValues(taskType).Inc() }

// Middleware returns worker middleware that counts handler calls and
// their time by type and result (ok, error, panic): qo_handler_calls_total
// and qo_handler_call_duration_seconds. Install it with
// (*worker.Worker).Use. It measures the handler as middleware sees it;
// the outcome the worker wrote (completed, retried, failed...) is counted
// by the Observer side (qo_tasks_finished_total).
func (m *Metrics) Middleware() worker.Middleware {
	return worker.Measure(func(taskType string, r worker.Result, d time.Duration) {
		m.calls.WithLabelValues(taskType, string(r)).Inc()
		m.callSecs.WithLabelValues(taskType, string(r)).Observe(d.Seconds())
	})
}

// Claimed implements worker.Observer.
func (m *Metrics) Claimed(taskType string) { m.claimed.WithLabelValues(taskType).Inc() }

// ClaimConflict implements worker.Observer.
func (m *Metrics) ClaimConflict(taskType string) { m.claimConflicts.WithLabelValues(taskType).Inc() }

// Finished implements worker.Observer.
func (m *Metrics) Finished(taskType string, o worker.Outcome, d time.Duration) {
	m.finished.WithLabelValues(taskType, string(o)).Inc()
	m.handlerSecs.WithLabelValues(taskType, string(o)).Observe(d.Seconds())
}

// LeaseChecked implements worker.Observer.
func (m *Metrics) LeaseChecked(taskType string, ok bool) {
	result := "ok"
	if !ok {
		result = "failed"
	}
	m.leaseChecks.WithLabelValues(taskType, result).Inc()
}

// Leadership implements monitor.Observer.
func (m *Metrics) Leadership(leader bool) {
	if leader {
		m.leader.Set(1)
	} else {
		m.leader.Set(0)
	}
}

// TimedOut implements monitor.Observer.
func (m *Metrics) TimedOut(taskType string) { m.timedOut.WithLabelValues(taskType).Inc() }

// ScheduleRun counts a handled due time of a schedule.
func (m *Metrics) ScheduleRun(schedule, outcome string) {
	m.scheduleRuns.WithLabelValues(schedule, outcome).Inc()
}

// ObserveS3 records one S3 request's latency; it fits s3store.Config.Observe.
func (m *Metrics) ObserveS3(op store.Op, d time.Duration, err error) {
	m.s3Latency.WithLabelValues(string(op), outcome(err)).Observe(d.Seconds())
}

func outcome(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, store.ErrPreconditionFailed):
		return "precondition_failed"
	case errors.Is(err, store.ErrNotFound):
		return "not_found"
	}
	return "error"
}

// WatchStore exports a store's request counters (qo_s3_requests_total by
// kind and outcome) and their estimated cost at prices
// (qo_s3_estimated_cost_dollars_total), read at every scrape.
func (m *Metrics) WatchStore(c *store.Counters, prices store.Prices) {
	m.reg.MustRegister(&storeCollector{c: c, prices: prices})
}

var (
	requestsDesc = prometheus.NewDesc("qo_s3_requests_total",
		"S3 requests sent by this process, by kind and outcome (each SDK retry counts; a lost compare-and-swap is failed and billed).",
		[]string{"op", "outcome"}, nil)
	costDesc = prometheus.NewDesc("qo_s3_estimated_cost_dollars_total",
		"Estimated cost in US dollars of the S3 requests sent by this process, at the configured request prices.", nil, nil)
)

type storeCollector struct {
	c      *store.Counters
	prices store.Prices
}

func (s *storeCollector) Describe(ch chan<- *prometheus.Desc) { ch <- requestsDesc; ch <- costDesc }

func (s *storeCollector) Collect(ch chan<- prometheus.Metric) {
	snap := s.c.Snapshot()
	for _, op := range store.Ops {
		ch <- prometheus.MustNewConstMetric(requestsDesc, prometheus.CounterValue, float64(snap.OK[op]), string(op), "ok")
		ch <- prometheus.MustNewConstMetric(requestsDesc, prometheus.CounterValue, float64(snap.Failed[op]), string(op), "failed")
	}
	ch <- prometheus.MustNewConstMetric(costDesc, prometheus.CounterValue, snap.Cost(s.prices))
}
