//go:build unix

package e2e

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store"
)

// TestBadInputSweep writes broken objects straight into the bucket and
// feeds the CLI bad arguments: every case gets a clear error or is skipped
// and reported, and a running worker and monitor carry on regardless.
func TestBadInputSweep(t *testing.T) {
	t.Parallel()
	e := wkSetup(t)
	ctx := context.Background()
	w := e.start(t, "worker", workerArgs("sweep-worker", "--builtins")...)

	good := e.submit(t, "echo", `{"before":"junk"}`, 10*time.Second, 1)
	e.waitTask(t, good, "completed", func(t *queue.Task) bool { return t.Status == queue.StatusCompleted })

	recent := queue.NewIDAt(time.Now()) // a broken object inside the listing window
	junk := map[string][]byte{
		"tasks/" + queue.ShardOf(recent, 1) + "/" + recent.String() + ".json":    []byte(`{"format":1,"id":"` + recent.String() + `","status":"runn`),
		"tasks/0/00000000-0000-4000-8000-000000000001.json":                      []byte(`{"format":1,"id":"00000000-0000-4000-8000-000000000001","status":"pend`), // partial
		"tasks/0/00000000-0000-4000-8000-000000000002.json":                      []byte(`{"format":7,"id":"00000000-0000-4000-8000-000000000002","status":"pending"}`),
		"tasks/0/00000000-0000-4000-8000-000000000003.json":                      []byte(`{"format":1,"id":"00000000-0000-4000-8000-000000000003","status":"pending","attempt":"two"}`),
		"tasks/0/00000000-0000-4000-8000-000000000004.json":                      {0xff, 0xfe, 0x00, 0x7b},
		"tasks/1/not-a-uuid.json":                                                []byte(`{}`),
		"ready/echo/0/0000000000000~normal~00000000-0000-4000-8000-000000000001": nil, // points at the partial task
		"ready/garbage": nil,
		"leases/0/0000000000001~echo~00000000-0000-4000-8000-000000000003~00000000-0000-4000-8000-0000000000aa~w-gone": nil, // an expired lease of a broken task
		"workers/broken.json":     []byte(`{"format":1,"worker_id":`),
		"monitor/leader.json.bak": []byte(`x`),
	}
	for key, body := range junk {
		_, err := e.s.Put(ctx, key, body, store.Condition{})
		require.NoError(t, err, key)
	}

	// The worker and its monitor keep working: a new task completes.
	after := e.submit(t, "echo", `{"after":"junk"}`, 10*time.Second, 1)
	e.waitTask(t, after, "completed", func(t *queue.Task) bool { return t.Status == queue.StatusCompleted })
	select {
	case err := <-w.done:
		t.Fatalf("the worker exited: %v\n%s", err, w.out.String())
	default:
	}

	dir := t.TempDir()
	big := filepath.Join(dir, "big.json")
	require.NoError(t, os.WriteFile(big, []byte(`{"blob":"`+strings.Repeat("x", 10<<20)+`"}`), 0o644))
	latin1 := filepath.Join(dir, "latin1.json")
	require.NoError(t, os.WriteFile(latin1, []byte("{\"name\":\"caf\xe9\"}"), 0o644))
	notJSON := filepath.Join(dir, "input.txt")
	require.NoError(t, os.WriteFile(notJSON, []byte("hello world"), 0o644))

	tests := []struct {
		name     string
		args     []string
		code     int
		contains string
	}{
		{"list skips and reports", []string{"list", "--status", "completed"}, 0, "malformed"},
		{"status of a malformed task", []string{"status", "00000000-0000-4000-8000-000000000002"}, 1, "format version 7"},
		{"history of a malformed task", []string{"history", "00000000-0000-4000-8000-000000000001"}, 0, "unreadable version"},
		{"an id that is not a UUID", []string{"status", "not-a-task"}, 2, "not a task id"},
		{"a missing task", []string{"status", "00000000-0000-4000-8000-0000000000ff"}, 3, "not found"},
		{"input that is not JSON", []string{"submit", "--type", "echo", "--input", "{nope"}, 2, "JSON"},
		{"an input file that is not JSON", []string{"submit", "--type", "echo", "--input-file", notJSON}, 2, "JSON"},
		{"non-UTF-8 input", []string{"submit", "--type", "echo", "--input-file", latin1}, 2, "UTF-8"},
		{"a bad type", []string{"submit", "--type", "has space", "--input", "{}"}, 2, "type"},
		{"workers skips the broken entry", []string{"workers"}, 0, "sweep-worker"},
		{"a 10 MB input", []string{"submit", "--type", "echo", "--input-file", big}, -1, ""},
	}
	for _, tt := range tests {
		r := qo(t, e.env, tt.args...)
		out := r.stdout + r.stderr
		if tt.code >= 0 {
			require.Equal(t, tt.code, r.code, "%s: %s", tt.name, r)
		}
		require.Contains(t, out, tt.contains, "%s: %s", tt.name, r)
		if tt.code > 0 {
			require.Equal(t, 1, strings.Count(strings.TrimSpace(r.stderr), "\n")+1, "%s: one line of error: %q", tt.name, r.stderr)
		}
		t.Logf("%s: exit %d: %s", tt.name, r.code, firstLine(out))
	}
	// Nothing half-written: the rejected submits left no task behind.
	page, err := e.q.List(ctx, queue.ListQuery{Type: "echo", Limit: 1000})
	require.NoError(t, err)
	for _, task := range page.Tasks {
		require.NotContains(t, string(task.Input), "nope")
		require.False(t, bytes.Contains(task.Input, []byte("caf")), "a non-UTF-8 input was stored")
	}
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if len(s) > 160 {
		s = s[:160] + "..."
	}
	return s
}
