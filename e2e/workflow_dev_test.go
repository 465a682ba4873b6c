package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/internal/testutil"
)

// The README's workflow example, as a new user runs it: qo dev with the
// example's exec handlers, qo submit --workflow, qo wait --workflow, qo
// workflow show.
func TestDevWorkflowExample(t *testing.T) {
	t.Parallel()
	devSkip(t)
	ex, err := filepath.Abs("../examples/etl")
	require.NoError(t, err)
	dir := t.TempDir()
	startDev(t, dir, testutil.FreeAddr(t),
		"--exec", "extract="+filepath.Join(ex, "extract.sh"),
		"--exec", "transform="+filepath.Join(ex, "transform.sh"),
		"--exec", "load="+filepath.Join(ex, "load.sh"))
	env := []string{"QO_DEV_DATA_DIR=" + dir}

	r := qo(t, env, "submit", "--workflow", filepath.Join(ex, "etl.json"))
	require.Equal(t, 0, r.code, r.String())
	id := strings.TrimSpace(r.stdout)

	r = qo(t, env, "wait", "--workflow", "nightly-etl", "--timeout", "90s")
	require.Equal(t, 0, r.code, r.String())
	require.Contains(t, r.stdout, "(step load) completed")

	r = qo(t, env, "workflow", "show", "nightly-etl")
	require.Equal(t, 0, r.code, r.String())
	require.Contains(t, r.stdout, "workflow nightly-etl  "+id+"  completed")
	require.Contains(t, r.stdout, "5 steps: 5 completed")

	r = qo(t, env, "workflow", "show", id, "--json")
	require.Equal(t, 0, r.code, r.String())
	var report struct {
		Status string
		Steps  []struct {
			Name   string
			TaskID string `json:"task_id"`
			After  []string
		}
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &report))
	require.Equal(t, "completed", report.Status)
	load := report.Steps[len(report.Steps)-1]
	require.Equal(t, "load", load.Name)
	require.ElementsMatch(t, []string{"clean", "enrich", "score"}, load.After, "input_from implies after")

	// The load step's handler got the three transforms' outputs, each the
	// extract's rows passed on.
	task := devWaitStatus(t, env, load.TaskID, "completed")
	var out struct {
		Table                string
		Clean, Enrich, Score struct {
			Op   string
			Rows []map[string]int
		}
	}
	require.NoError(t, json.Unmarshal(task.Output, &out), string(task.Output))
	require.Equal(t, "daily", out.Table, "its own input")
	for op, got := range map[string]string{"clean": out.Clean.Op, "enrich": out.Enrich.Op, "score": out.Score.Op} {
		require.Equal(t, op, got)
	}
	require.Len(t, out.Score.Rows, 3)

	// The same file again with the workflow's key is the same workflow.
	r = qo(t, env, "workflow", "status", id, "--json")
	require.Equal(t, 0, r.code, r.String())
	var st struct {
		Key string `json:"idempotency_key"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &st))
	r = qo(t, env, "submit", "--workflow", filepath.Join(ex, "etl.json"), "--idempotency-key", st.Key)
	require.Equal(t, 0, r.code, r.String())
	require.Equal(t, id, strings.TrimSpace(r.stdout))
	require.Contains(t, r.stderr, "already exists")

	// Bad input: a clear error, exit 2 or 3, nothing submitted.
	cyclic := filepath.Join(t.TempDir(), "cycle.json")
	require.NoError(t, os.WriteFile(cyclic, []byte(`{"steps": [{"name": "a", "type": "echo", "after": ["b"]}, {"name": "b", "type": "echo", "after": ["a"]}]}`), 0o600))
	r = qo(t, env, "submit", "--workflow", cyclic)
	require.Equal(t, 2, r.code, r.String())
	require.Contains(t, r.stderr, "form a cycle")
	r = qo(t, env, "submit", "--workflow", filepath.Join(ex, "etl.json"), "--type", "echo")
	require.Equal(t, 2, r.code, r.String())
	r = qo(t, env, "workflow", "show", "no-such-flow")
	require.Equal(t, 3, r.code, r.String())
	require.Contains(t, r.stderr, `no workflow named "no-such-flow"`)
	r = qo(t, env, "workflow", "list")
	require.Equal(t, 0, r.code, r.String())
	require.Contains(t, r.stdout, "nightly-etl")
}
