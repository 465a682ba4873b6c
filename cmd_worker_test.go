package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/monitor"
	"github.com/qo-queue/qo/queue"
)

// Bad flags are usage errors (exit 2) with a message naming the flag and
// the fix, reported before any connection is attempted.
func TestWorkerCommandsRejectBadFlags(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"run-worker", "--concurrency", "0"}, "invalid --concurrency 0"},
		{[]string{"run-worker", "--exec", "nope"}, "want TYPE=COMMAND"},
		{[]string{"run-worker", "--exec", "x=/definitely/not/here"}, "chmod +x"},
		{[]string{"run-worker", "--exec", "x=sh", "--exec", "x=sh"}, `type "x" is given twice`},
		{[]string{"run-worker", "--index-mode", "fast"}, "want index-only, hybrid or log-scan"},
		{[]string{"run-worker", "--poll-min", "1x"}, "invalid --poll-min"},
		{[]string{"run-worker", "--poll-min", "2s", "--poll-max", "1s"}, "below --poll-min"},
		{[]string{"run-worker", "--builtins=false"}, "no handlers"},
		{[]string{"run-worker", "--types", "a/b"}, "invalid --types"},
		{[]string{"run-worker", "--id", "has space"}, "invalid --id"},
		{[]string{"run-worker", "--shard-leasing", "--shard-leasing-ttl", "5", "--shard-leasing-renew", "5"}, "must be shorter"},
		{[]string{"run-worker", "--log-level", "loud"}, "invalid --log-level"},
		{[]string{"run-worker", "extra"}, "takes no arguments"},
		{[]string{"monitor", "--lease-check-interval", "10s", "--leader-ttl", "1s"}, "shorter than --lease-check-interval"},
		{[]string{"monitor", "--sweep-page-size", "0"}, "invalid --sweep-page-size"},
		{[]string{"workers", "--worker-health-threshold", "0"}, "must be positive"},
		{[]string{"worker", "--exec", "="}, "want TYPE=COMMAND"}, // the alias
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := runApp(append([]string{"qo"}, tc.args...), &stdout, &stderr)
			require.Equal(t, exitUsage, code, "stderr: %s", stderr.String())
			require.Contains(t, stderr.String(), tc.want)
		})
	}
}

func TestParseSecondsOrDuration(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"30": 30 * time.Second, "0.5": 500 * time.Millisecond, "250ms": 250 * time.Millisecond, "2m": 2 * time.Minute, "0": 0,
	} {
		got, err := parseSecondsOrDuration(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	_, err := parseSecondsOrDuration("soon")
	require.Error(t, err)
}

func TestPrintWorkers(t *testing.T) {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	ws := []*queue.WorkerInfo{
		{ID: "a", LastHeartbeat: now.Add(-2 * time.Second), Concurrency: 2, CurrentTasks: []string{"t1"}, TasksCompleted: 5, Types: []string{"echo"}, Host: "h", PID: 7},
		{ID: "b", LastHeartbeat: now.Add(-2 * time.Minute), Concurrency: 1, Shards: []string{"3", "1"}, TasksFailed: 1},
		{ID: "c", LastHeartbeat: now.Add(-time.Hour), Concurrency: 1, Shards: []string{"0", "1", "2", "3", "4", "5", "6", "7", "8"}},
	}
	var out bytes.Buffer
	require.NoError(t, printWorkers(&out, monitor.Health(ws, now, time.Minute)))
	s := out.String()
	for _, want := range []string{"a  ", "active", "2s ago", "1/2", "all", "b  ", "stale", "1,3", "dead", "0..8 (9)", "a running: t1", "1 active, 1 stale, 1 dead"} {
		require.Contains(t, s, want)
	}
	out.Reset()
	require.NoError(t, printWorkers(&out, nil))
	require.Equal(t, "no workers registered\n", out.String())
}
