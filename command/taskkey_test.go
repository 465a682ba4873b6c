package command

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// qo submit --key gives a task its key (bulk lines too, --key as their
// default); qo status and qo list show it; a bad key is refused with the
// rule named; qo limit --per-key sets a per-key cap qo limits shows.
func TestTaskKeyCLI(t *testing.T) {
	q := newQueueCLI(t)
	q.ok("init")
	task := q.task("submit", "--type", "sync", "--key", "customer-42")
	require.Equal(t, "customer-42", task.TaskKey)
	require.Regexp(t, `(?m)^key:\s+customer-42$`, q.ok("status", task.ID.String()))
	out := q.ok("list", "--status", "pending")
	require.Contains(t, out, "KEY")
	require.Contains(t, out, "customer-42")

	file := filepath.Join(t.TempDir(), "tasks.jsonl")
	require.NoError(t, os.WriteFile(file, []byte(`{"type":"sync","key":"customer-7"}`+"\n"+`{"type":"sync"}`+"\n"), 0o600))
	var res struct {
		IDs []string `json:"ids"`
	}
	require.NoError(t, json.Unmarshal([]byte(q.ok("submit", "--file", file, "--key", "dflt", "--json")), &res))
	require.Len(t, res.IDs, 2)
	require.Regexp(t, `(?m)^key:\s+customer-7$`, q.ok("status", res.IDs[0]))
	require.Regexp(t, `(?m)^key:\s+dflt$`, q.ok("status", res.IDs[1]))

	code, _, errs := q.run("submit", "--type", "sync", "--key", "a/b")
	require.Equal(t, exitUsage, code, errs)
	require.Contains(t, errs, `--key: task key "a/b" contains "/"`)

	require.Contains(t, q.ok("limit", "sync", "--concurrency", "2", "--per-key"), "sync: at most 2 running at once for each key across the fleet")
	require.Equal(t, "sync\tconcurrency 2 per key\n", q.ok("limits"))
	require.Contains(t, q.ok("limits", "--json"), `"per_key_concurrency": 2`)
	require.Contains(t, q.ok("limit", "sync", "--rate", "5/s", "--burst", "2", "--per-key"), "sync: at most 5/s started for each key across the fleet (burst 2)")
	require.Equal(t, "sync\tconcurrency 2 per key, rate 5/s burst 2 per key\n", q.ok("limits"))
	require.Contains(t, q.ok("limits", "--json"), `"per_key_rate": "5/s"`)
	stats := q.ok("stats")
	require.Contains(t, stats, "per-key caps (running at once for each key): sync 2")
	require.Contains(t, stats, "per-key rates (starts for each key): sync 5/s burst 2")
	require.Contains(t, q.ok("stats", "--json"), `"key_limits": {
    "sync": 2
  }`)
	for _, bad := range []struct {
		args []string
		msg  string
	}{
		{[]string{"limit", "sync", "--per-key"}, "--per-key goes with --concurrency N or --rate R"},
		{[]string{"limit", "sync", "--rate", "0/s", "--per-key"}, "20/s or 600/m"},
	} {
		code, _, errs := q.run(bad.args...)
		require.Equal(t, exitUsage, code, "%v: %s", bad.args, errs)
		require.Contains(t, errs, bad.msg, "%v", bad.args)
	}
	require.Contains(t, q.ok("limit", "sync", "--clear"), "sync: no fleet-wide limit")
	require.Equal(t, "no fleet-wide limits\n", q.ok("limits"))
}
