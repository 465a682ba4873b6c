package metrics_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/internal/testutil"
	"github.com/qo-queue/qo/metrics"
	"github.com/qo-queue/qo/monitor"
	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/store/storetest"
	"github.com/qo-queue/qo/worker"
)

// scrape fetches /metrics over HTTP, requires a 200 and parses it.
func scrape(t *testing.T, m *metrics.Metrics) map[string]*dto.MetricFamily {
	t.Helper()
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	require.NoError(t, err)
	return fams
}

// value returns the value of the series of family name with labels.
func value(t *testing.T, fams map[string]*dto.MetricFamily, name string, labels map[string]string) float64 {
	t.Helper()
	f, ok := fams[name]
	require.True(t, ok, "metric %s not exported", name)
	for _, m := range f.Metric {
		match := true
		for _, l := range m.Label {
			if want, ok := labels[l.GetName()]; ok && want != l.GetValue() {
				match = false
			}
		}
		if !match {
			continue
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount())
		}
	}
	t.Fatalf("no series %s%v", name, labels)
	return 0
}

// total sums every series of a counter family (0 when absent).
func total(fams map[string]*dto.MetricFamily, name string) float64 {
	sum := 0.0
	if f, ok := fams[name]; ok {
		for _, m := range f.Metric {
			sum += m.GetCounter().GetValue()
		}
	}
	return sum
}

// TestWorkerMetrics runs a real worker (with its monitor) against each
// backend and scrapes what it did.
func TestWorkerMetrics(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		s := be.New(t)
		_, err := queue.Init(ctx, s, 1)
		require.NoError(t, err)
		q, err := queue.Open(ctx, s, queue.Options{})
		require.NoError(t, err)
		m := metrics.New()
		m.WatchStore(s.(store.Counted).Requests(), store.AWSStandardPrices)

		var ids []*queue.Task
		for _, typ := range []string{"ok", "ok", "bad"} {
			retries := 0
			task, _, err := q.Submit(ctx, queue.SubmitRequest{Type: typ, Input: json.RawMessage(`{}`), MaxRetries: &retries})
			require.NoError(t, err)
			ids = append(ids, task)
		}
		w := worker.New(q, worker.Options{
			Concurrency: 2, PollMin: 10 * time.Millisecond, PollMax: 50 * time.Millisecond,
			HeartbeatInterval: 100 * time.Millisecond, IndexMode: worker.IndexOnly,
			Logger:   slog.New(slog.NewTextHandler(io.Discard, nil)),
			Observer: m,
			Monitor:  monitor.Options{CheckInterval: 100 * time.Millisecond, Observer: m},
		})
		w.Use(m.Middleware())
		w.Handle("ok", func(context.Context, *queue.Task) (json.RawMessage, error) { return json.RawMessage(`{}`), nil })
		w.Handle("bad", func(context.Context, *queue.Task) (json.RawMessage, error) {
			return nil, worker.Permanent(errors.New("no"))
		})
		runCtx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- w.Run(runCtx) }()
		t.Cleanup(func() { stop(); <-done })
		testutil.Eventually(t, func() bool {
			for _, task := range ids {
				got, err := q.Get(ctx, task.ID)
				if err != nil || !got.Status.Terminal() {
					return false
				}
			}
			fams := scrape(t, m)
			return total(fams, "qo_tasks_finished_total") == 3 && value(t, fams, "qo_monitor_leader", nil) == 1
		}, "the 3 tasks to finish, counted, and the monitor to lead")

		fams := scrape(t, m)
		require.Equal(t, 2.0, value(t, fams, "qo_tasks_claimed_total", map[string]string{"type": "ok"}))
		require.Equal(t, 1.0, value(t, fams, "qo_tasks_claimed_total", map[string]string{"type": "bad"}))
		require.Equal(t, 2.0, value(t, fams, "qo_tasks_finished_total", map[string]string{"type": "ok", "outcome": "completed"}))
		require.Equal(t, 1.0, value(t, fams, "qo_tasks_finished_total", map[string]string{"type": "bad", "outcome": "failed"}))
		require.Equal(t, 2.0, value(t, fams, "qo_handler_duration_seconds", map[string]string{"type": "ok", "outcome": "completed"}))
		require.Equal(t, 2.0, value(t, fams, "qo_handler_calls_total", map[string]string{"type": "ok", "result": "ok"}))
		require.Equal(t, 1.0, value(t, fams, "qo_handler_calls_total", map[string]string{"type": "bad", "result": "error"}))
		require.Equal(t, 1.0, value(t, fams, "qo_handler_call_duration_seconds", map[string]string{"type": "bad", "result": "error"}))
		puts := value(t, fams, "qo_s3_requests_total", map[string]string{"op": "PUT", "outcome": "ok"})
		require.GreaterOrEqual(t, puts, 3*2.0+3*3.0, "3 submits (2 PUT each) and 3 claims+outcomes (3 PUT)")
		require.Greater(t, value(t, fams, "qo_s3_estimated_cost_dollars_total", nil), 0.0)

		stop()
		require.NoError(t, <-done)
		done <- nil // for the cleanup
		require.Equal(t, 0.0, value(t, scrape(t, m), "qo_monitor_leader", nil), "the monitor resigned on shutdown")
	})
}

// TestS3Latency checks the latency histogram's outcome labels.
func TestS3Latency(t *testing.T) {
	t.Parallel()
	m := metrics.New()
	m.ObserveS3(store.OpPut, 3*time.Millisecond, nil)
	m.ObserveS3(store.OpPut, 4*time.Millisecond, store.ErrPreconditionFailed)
	m.ObserveS3(store.OpGet, time.Millisecond, store.ErrNotFound)
	m.ObserveS3(store.OpGet, time.Second, errors.New("reset"))
	fams := scrape(t, m)
	for _, tc := range []struct{ op, outcome string }{{"PUT", "ok"}, {"PUT", "precondition_failed"}, {"GET", "not_found"}, {"GET", "error"}} {
		require.Equal(t, 1.0, value(t, fams, "qo_s3_request_duration_seconds", map[string]string{"op": tc.op, "outcome": tc.outcome}))
	}
	m.Submitted("email")
	m.ClaimConflict("email")
	m.TimedOut("email")
	m.LeaseChecked("email", false)
	m.ScheduleRun("nightly", "submitted")
	fams = scrape(t, m)
	require.Equal(t, 1.0, value(t, fams, "qo_schedule_runs_total", map[string]string{"schedule": "nightly", "outcome": "submitted"}))
	require.Equal(t, 1.0, value(t, fams, "qo_tasks_submitted_total", map[string]string{"type": "email"}))
	require.Equal(t, 1.0, value(t, fams, "qo_claim_conflicts_total", map[string]string{"type": "email"}))
	require.Equal(t, 1.0, value(t, fams, "qo_tasks_timed_out_total", map[string]string{"type": "email"}))
	require.Equal(t, 1.0, value(t, fams, "qo_lease_checks_total", map[string]string{"type": "email", "result": "failed"}))
}
