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
		{ID: "a", LastHeartbeat: now.Add(-2 * time.Second), Concurrency: 2, CurrentTasks: []string{"t1"}, TasksCompleted: 5, Types: []string{"echo"}, Host: "h", PID: 7,
			Holds: map[string]int{"echo": 1, "rate:echo": 30, "key:echo": 2, "keyrate:echo": 6, "beta": 0}},
		{ID: "b", LastHeartbeat: now.Add(-18 * time.Second), Concurrency: 1, Shards: []string{"3", "1"}, TasksFailed: 1},
		{ID: "c", LastHeartbeat: now.Add(-time.Hour), Concurrency: 1, Shards: []string{"0", "1", "2", "3", "4", "5", "6", "7", "8"}, Holds: map[string]int{"echo": 1}},
	}
	var out bytes.Buffer
	require.NoError(t, printWorkers(&out, monitor.Health(ws, now)))
	s := out.String()
	for _, want := range []string{"a  ", "active", "2s ago", "1/2", "all", "b  ", "stale", "1,3", "dead", "0..8 (9)", "a running: t1", "1 active, 1 stale, 1 dead",
		"a holds of the fleet-wide limits: beta 0 of its cap, echo 1 of its cap, echo 30/m of its rate, echo 2 of its per-key cap, echo 6/m of its per-key rate\n"} {
		require.Contains(t, s, want)
	}
	require.NotContains(t, s, "c holds", "a dead worker's holds are not shown: it holds nothing")
	out.Reset()
	require.NoError(t, printWorkers(&out, nil))
	require.Equal(t, "no workers registered\n", out.String())
}
