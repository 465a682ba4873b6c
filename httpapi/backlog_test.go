package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/metrics"
	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/store/storetest"
)

// scrapeMetrics GETs /metrics with the token, requires a 200 and parses
// the exposition.
func scrapeMetrics(t *testing.T, url, token string) map[string]*dto.MetricFamily {
	t.Helper()
	req, err := http.NewRequest("GET", url+"/metrics", nil)
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	require.NoError(t, err)
	return fams
}

// gaugeOf is the value of the series of family name whose labels include
// labels; ok is false when there is none.
func gaugeOf(fams map[string]*dto.MetricFamily, name string, labels map[string]string) (v float64, ok bool) {
	for _, m := range fams[name].GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		match := true
		for k, want := range labels {
			if have[k] != want {
				match = false
			}
		}
		if match {
			return m.GetGauge().GetValue(), true
		}
	}
	return 0, false
}

// TestBacklogGauges: /metrics exports the queue's backlog from the same
// stats as GET /api/stats.
func TestBacklogGauges(t *testing.T) {
	t.Parallel()
	e := newEnv(t, storetest.Backends()[0], Options{Metrics: metrics.New(), Token: "s3cret"})
	ctx := context.Background()
	for range 3 {
		_, _, err := e.q.Submit(ctx, queue.SubmitRequest{Type: "resize", Input: json.RawMessage(`{}`)})
		require.NoError(t, err)
	}
	_, _, err := e.q.Submit(ctx, queue.SubmitRequest{Type: "email", Input: json.RawMessage(`{}`), AvailableAt: e.q.Now().Add(time.Hour)})
	require.NoError(t, err)
	fams := scrapeMetrics(t, e.srv.URL, e.token)

	// newEnv left one pending email and two dead letters (email, resize).
	tests := []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"qo_queue_stats_up", nil, 1},
		{"qo_queue_tasks", map[string]string{"status": "pending"}, 5},
		{"qo_queue_tasks", map[string]string{"status": "running"}, 0},
		{"qo_queue_tasks", map[string]string{"status": "failed"}, 2},
		{"qo_queue_type_tasks", map[string]string{"type": "resize", "status": "pending"}, 3},
		{"qo_queue_type_tasks", map[string]string{"type": "resize", "status": "failed"}, 1},
		{"qo_queue_type_tasks", map[string]string{"type": "email", "status": "pending"}, 2},
		{"qo_queue_type_tasks", map[string]string{"type": "email", "status": "running"}, 0},
		{"qo_queue_delayed_tasks", nil, 1},
		{"qo_queue_workers", map[string]string{"state": "active"}, 1},
		{"qo_queue_workers", map[string]string{"state": "dead"}, 0},
		{"qo_queue_stats_partial", nil, 0},
	}
	for _, tt := range tests {
		got, ok := gaugeOf(fams, tt.name, tt.labels)
		require.True(t, ok, "no series %s%v", tt.name, tt.labels)
		require.Equal(t, tt.want, got, "%s%v", tt.name, tt.labels)
	}
	_, ok := gaugeOf(fams, "qo_queue_tasks", map[string]string{"status": "completed"})
	require.False(t, ok, "finished statuses are not counted, so not exported")
	oldest, _ := gaugeOf(fams, "qo_queue_oldest_pending_age_seconds", nil)
	require.GreaterOrEqual(t, oldest, 0.0)

	status, body, _ := e.do(t, "GET", "/api/stats", "")
	require.Equal(t, 200, status)
	require.Equal(t, 5.0, body.(map[string]any)["by_status"].(map[string]any)["pending"], "the same answer as the gauge")
}

// TestBacklogSharesStatsCache: scrapes and GET /api/stats within
// StatsMaxAge cost one stats refresh between them, whichever comes first.
func TestBacklogSharesStatsCache(t *testing.T) {
	t.Parallel()
	e := newEnv(t, storetest.Backends()[0], Options{Metrics: metrics.New(), StatsMaxAge: 5 * time.Second})
	counted := e.raw.(store.Counted).Requests()
	steps := []struct {
		name        string
		path        string
		advance     time.Duration
		wantRefresh bool
	}{
		{"first scrape refreshes", "/metrics", 0, true},
		{"second scrape reuses", "/metrics", 0, false},
		{"stats reuse the scrape's refresh", "/api/stats", 0, false},
		{"stats past StatsMaxAge refresh", "/api/stats", 5 * time.Second, true},
		{"a scrape reuses the stats' refresh", "/metrics", 0, false},
		{"a scrape past StatsMaxAge refreshes", "/metrics", 5 * time.Second, true},
	}
	for _, st := range steps {
		e.clock.Advance(st.advance)
		before := counted.Snapshot()
		if st.path == "/metrics" {
			fams := scrapeMetrics(t, e.srv.URL, e.token)
			up, _ := gaugeOf(fams, "qo_queue_stats_up", nil)
			require.Equal(t, 1.0, up, st.name)
			pending, _ := gaugeOf(fams, "qo_queue_tasks", map[string]string{"status": "pending"})
			require.Equal(t, 1.0, pending, st.name)
		} else {
			status, _, _ := e.do(t, "GET", st.path, "")
			require.Equal(t, 200, status, st.name)
		}
		n := sum(counted.Snapshot().Sub(before))
		if st.wantRefresh {
			require.Positive(t, n, st.name)
		} else {
			require.Zero(t, n, st.name)
		}
	}
}

// TestBacklogBucketDown: when the stats cannot be read, /metrics still
// answers 200 with the process's own metrics and qo_queue_stats_up 0.
func TestBacklogBucketDown(t *testing.T) {
	t.Parallel()
	e := newEnv(t, storetest.Backends()[0], Options{})
	q, err := queue.Open(context.Background(), downStore{e.raw}, queue.Options{})
	require.NoError(t, err)
	m := metrics.New()
	m.Submitted("email")
	srv := httptest.NewServer(New(q, Options{Metrics: m}))
	defer srv.Close()
	fams := scrapeMetrics(t, srv.URL, "")
	up, ok := gaugeOf(fams, "qo_queue_stats_up", nil)
	require.True(t, ok)
	require.Zero(t, up)
	require.NotContains(t, fams, "qo_queue_tasks")
	require.Contains(t, fams, "qo_tasks_submitted_total")
}
