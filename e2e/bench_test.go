package e2e

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/store/storetest"
)

// qo bench through real 'qo worker' processes: the requests per task come
// from the processes' /metrics over the run's window plus the submitter's,
// so they sit at a task's floor (2 PUTs to submit; GET, 2 PUTs and a
// DELETE to claim; a PUT and a DELETE to complete) plus what dispatch and
// heartbeats add.
func TestBenchThroughWorkerProcesses(t *testing.T) {
	t.Parallel()
	env := s3Env(t, storetest.MinIO(t).Bucket())
	r := qo(t, env, "bench", "--processes-only", "--tasks", "200", "--workers", "2", "--concurrency", "4", "--json")
	require.Equal(t, 0, r.code, r.String())
	var rep struct {
		Processes *struct {
			Tasks           int                `json:"tasks"`
			TasksPerSecond  float64            `json:"tasks_per_second"`
			RequestsPerTask map[string]float64 `json:"requests_per_task"`
		} `json:"processes"`
		Targets []struct {
			Name string `json:"name"`
		} `json:"targets"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep), r.stdout)
	require.NotNil(t, rep.Processes, r.stdout)
	p := rep.Processes
	require.Equal(t, 200, p.Tasks)
	require.Positive(t, p.TasksPerSecond)
	for op, want := range map[string][2]float64{"PUT": {5, 5.5}, "GET": {1, 1.5}, "DELETE": {2, 2.1}, "LIST": {0.001, 0.5}} {
		got := p.RequestsPerTask[op]
		require.True(t, got >= want[0] && got <= want[1], "%s per task %.3f, want %.3f-%.3f (%v)", op, got, want[0], want[1], p.RequestsPerTask)
	}
	var names []string
	for _, tg := range rep.Targets {
		names = append(names, tg.Name)
	}
	require.Contains(t, names, "LIST per task, worker processes")

	r = qo(t, env, "bench", "--processes-only", "--no-processes")
	require.Equal(t, 2, r.code, r.String())
	require.Contains(t, r.stderr, "--processes-only and --no-processes exclude each other")
}
