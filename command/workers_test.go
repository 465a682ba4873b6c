package command

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/monitor"
	"github.com/qo-queue/qo/queue"
)

func TestPrintWorkers(t *testing.T) {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	ws := []*queue.WorkerInfo{
		{ID: "a", LastHeartbeat: now.Add(-2 * time.Second), Concurrency: 2, CurrentTasks: []string{"t1"}, TasksCompleted: 5, Types: []string{"echo"}, Host: "h", PID: 7},
		{ID: "b", LastHeartbeat: now.Add(-18 * time.Second), Concurrency: 1, Shards: []string{"3", "1"}, TasksFailed: 1},
		{ID: "c", LastHeartbeat: now.Add(-time.Hour), Concurrency: 1, Shards: []string{"0", "1", "2", "3", "4", "5", "6", "7", "8"}},
	}
	var out bytes.Buffer
	require.NoError(t, printWorkers(&out, monitor.Health(ws, now)))
	s := out.String()
	for _, want := range []string{"a  ", "active", "2s ago", "1/2", "all", "b  ", "stale", "1,3", "dead", "0..8 (9)", "a running: t1", "1 active, 1 stale, 1 dead"} {
		require.Contains(t, s, want)
	}
	out.Reset()
	require.NoError(t, printWorkers(&out, nil))
	require.Equal(t, "no workers registered\n", out.String())
}
