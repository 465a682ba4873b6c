package metrics_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/metrics"
)

var backlogNames = []string{
	"qo_queue_tasks", "qo_queue_type_tasks", "qo_queue_delayed_tasks", "qo_queue_oldest_pending_age_seconds",
	"qo_queue_workers", "qo_queue_stats_partial", "qo_queue_stats_up",
}

// series is one expected sample: a family, its labels and its value.
type series struct {
	name   string
	labels map[string]string
	value  float64
}

func TestWatchBacklog(t *testing.T) {
	t.Parallel()
	full := metrics.Backlog{
		Tasks: map[string]int{"pending": 12, "running": 3, "failed": 1},
		TypeTasks: map[string]map[string]int{
			"email":  {"pending": 10, "running": 3, "failed": 0},
			"resize": {"pending": 2, "running": 0, "failed": 1},
		},
		Delayed:          4,
		OldestPendingAge: 90 * time.Second,
		Workers:          map[string]int{"active": 2, "stale": 1, "dead": 0},
	}
	tests := []struct {
		name   string
		read   func(context.Context) (metrics.Backlog, error)
		want   []series
		absent []string // families that must not be exported
	}{
		{
			name: "counts",
			read: func(context.Context) (metrics.Backlog, error) { return full, nil },
			want: []series{
				{"qo_queue_stats_up", nil, 1},
				{"qo_queue_tasks", map[string]string{"status": "pending"}, 12},
				{"qo_queue_tasks", map[string]string{"status": "running"}, 3},
				{"qo_queue_tasks", map[string]string{"status": "failed"}, 1},
				{"qo_queue_type_tasks", map[string]string{"type": "email", "status": "pending"}, 10},
				{"qo_queue_type_tasks", map[string]string{"type": "email", "status": "failed"}, 0},
				{"qo_queue_type_tasks", map[string]string{"type": "resize", "status": "failed"}, 1},
				{"qo_queue_delayed_tasks", nil, 4},
				{"qo_queue_oldest_pending_age_seconds", nil, 90},
				{"qo_queue_workers", map[string]string{"state": "active"}, 2},
				{"qo_queue_workers", map[string]string{"state": "dead"}, 0},
				{"qo_queue_stats_partial", nil, 0},
			},
		},
		{
			name: "partial",
			read: func(context.Context) (metrics.Backlog, error) {
				b := full
				b.Partial = true
				return b, nil
			},
			want: []series{{"qo_queue_stats_up", nil, 1}, {"qo_queue_stats_partial", nil, 1}},
		},
		{
			name: "empty queue",
			read: func(context.Context) (metrics.Backlog, error) {
				return metrics.Backlog{Tasks: map[string]int{"pending": 0, "running": 0, "failed": 0}}, nil
			},
			want: []series{
				{"qo_queue_stats_up", nil, 1},
				{"qo_queue_tasks", map[string]string{"status": "pending"}, 0},
				{"qo_queue_oldest_pending_age_seconds", nil, 0},
			},
			absent: []string{"qo_queue_type_tasks", "qo_queue_workers"},
		},
		{
			name: "read fails",
			read: func(context.Context) (metrics.Backlog, error) {
				return full, fmt.Errorf("refresh the queue stats: %w", errors.New("connection refused"))
			},
			want:   []series{{"qo_queue_stats_up", nil, 0}},
			absent: backlogNames[:6],
		},
		{
			name: "read slower than the timeout",
			read: func(ctx context.Context) (metrics.Backlog, error) {
				if _, ok := ctx.Deadline(); !ok {
					return metrics.Backlog{}, errors.New("no deadline")
				}
				<-ctx.Done()
				return metrics.Backlog{}, ctx.Err()
			},
			want:   []series{{"qo_queue_stats_up", nil, 0}},
			absent: backlogNames[:6],
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := metrics.New()
			m.Leadership(true)
			m.WatchBacklog(tt.read, time.Millisecond)
			fams := scrape(t, m) // a 200 whatever read answered
			for _, s := range tt.want {
				require.Equal(t, s.value, value(t, fams, s.name, s.labels), "%s%v", s.name, s.labels)
				require.Equal(t, dto.MetricType_GAUGE, fams[s.name].GetType(), s.name)
				require.Contains(t, fams[s.name].GetHelp(), "whole queue", s.name)
			}
			for _, name := range tt.absent {
				require.NotContains(t, fams, name)
			}
			require.Equal(t, 1.0, value(t, fams, "qo_monitor_leader", nil), "the process's own metrics are exported either way")
			require.Contains(t, fams, "go_goroutines")
		})
	}
}

// TestBacklogStatuses: only the statuses the stats count are exported, so
// a finished status never shows as a misleading 0.
func TestBacklogStatuses(t *testing.T) {
	t.Parallel()
	m := metrics.New()
	m.WatchBacklog(func(context.Context) (metrics.Backlog, error) {
		return metrics.Backlog{Tasks: map[string]int{"pending": 5}}, nil
	}, 0)
	fams := scrape(t, m)
	require.Len(t, fams["qo_queue_tasks"].GetMetric(), 1)
	require.Equal(t, 5.0, value(t, fams, "qo_queue_tasks", map[string]string{"status": "pending"}))
}

// TestBacklogLint checks names, types and help texts against Prometheus's
// conventions.
func TestBacklogLint(t *testing.T) {
	t.Parallel()
	m := metrics.New()
	m.WatchBacklog(func(context.Context) (metrics.Backlog, error) {
		return metrics.Backlog{Tasks: map[string]int{"pending": 1}, TypeTasks: map[string]map[string]int{"email": {"pending": 1}},
			Workers: map[string]int{"active": 1}}, nil
	}, 0)
	problems, err := testutil.GatherAndLint(m.Registry(), backlogNames...)
	require.NoError(t, err)
	require.Empty(t, problems)
}
