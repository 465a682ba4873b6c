//go:build unix

package e2e

// The CLI's bulk operator actions on MinIO: a filter over a few hundred
// tasks (a dry run first, which writes nothing), ids on stdin, and the
// --json summary, read back through the Go queue API.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
)

// qoStdin runs qo on e's bucket with in as its standard input.
func (e *wkEnv) qoStdin(t *testing.T, in string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, wkBinary(t), args...)
	cmd.Env = e.env
	cmd.Stdin = strings.NewReader(in)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := result{stdout: stdout.String(), stderr: stderr.String()}
	var exitErr *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exitErr):
		r.code = exitErr.ExitCode()
	default:
		t.Fatalf("run qo %v: %v", args, err)
	}
	return r
}

type actJSON struct {
	Op      string          `json:"op"`
	DryRun  bool            `json:"dry_run"`
	Done    []uuid.UUID     `json:"done"`
	Skipped []queue.ActSkip `json:"skipped"`
	Failed  []queue.ActSkip `json:"failed"`
}

func submitMany(t *testing.T, e *wkEnv, typ string, n int) []*queue.Task {
	t.Helper()
	items := make([]queue.BulkItem, n)
	for i := range items {
		items[i] = queue.BulkItem{Line: i + 1, Request: queue.SubmitRequest{Type: typ, Input: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))}}
	}
	res := e.q.SubmitBulk(context.Background(), items, queue.BulkOptions{Concurrency: 32})
	require.NoError(t, res.Stopped)
	var out []*queue.Task
	for _, l := range res.Lines {
		require.NoError(t, l.Err)
		task, err := e.q.Get(context.Background(), l.ID)
		require.NoError(t, err)
		out = append(out, task)
	}
	return out
}

// TestCLIBulkCancel: qo cancel --status pending --type thumb on 300 tasks:
// the dry run states the plan and its cost and writes nothing; the run
// cancels each task once and leaves another type alone; ids on stdin act
// on those named and skip, saying why, those already cancelled.
func TestCLIBulkCancel(t *testing.T) {
	t.Parallel()
	e := wkSetup(t)
	bg := context.Background()
	thumbs := submitMany(t, e, "thumb", 300)
	others := submitMany(t, e, "other", 20)

	r := e.qoStdin(t, "", "cancel", "--status", "pending", "--type", "thumb", "--dry-run", "--json")
	require.Equal(t, 0, r.code, r)
	var dry actJSON
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &dry), r)
	require.True(t, dry.DryRun)
	require.Len(t, dry.Done, 300)
	require.Regexp(t, `dry run \(nothing written\): cancel 300 tasks: 300 PUT \+ 300 DELETE \(finding them took 1 LIST \+ 3\d\d GET\); about \$0\.\d+ at S3 Standard prices`, r.stderr)
	for _, task := range thumbs {
		got, err := e.q.Get(bg, task.ID)
		require.NoError(t, err)
		require.Equal(t, task.Rev, got.Rev, "a dry run writes nothing")
	}

	start := time.Now()
	r = e.qoStdin(t, "", "cancel", "--status", "pending", "--type", "thumb", "--reason", "bulk", "--json")
	took := time.Since(start)
	require.Equal(t, 0, r.code, r)
	var run actJSON
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &run), r)
	require.False(t, run.DryRun)
	require.Len(t, run.Done, 300)
	require.Empty(t, run.Skipped)
	require.Empty(t, run.Failed)
	t.Logf("qo cancel --status pending --type thumb: 300 tasks in %s", took.Round(time.Millisecond))
	for _, task := range thumbs {
		got, err := e.q.Get(bg, task.ID)
		require.NoError(t, err)
		require.Equal(t, queue.StatusCancelled, got.Status)
		require.Equal(t, "bulk", got.CancelReason)
		require.Equal(t, task.Rev+1, got.Rev, "written once")
	}
	page, err := e.q.List(bg, queue.ListQuery{Status: queue.StatusPending, Limit: 1000})
	require.NoError(t, err)
	require.Len(t, page.Tasks, 20, "only the other type is left pending")

	// Again: nothing left to do.
	r = e.qoStdin(t, "", "cancel", "--status", "pending", "--type", "thumb", "--json")
	require.Equal(t, 0, r.code, r)
	var again actJSON
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &again), r)
	require.Empty(t, again.Done)

	// Ids on stdin: the other type's tasks, and some already cancelled.
	var in strings.Builder
	for _, task := range others {
		fmt.Fprintln(&in, task.ID)
	}
	for _, task := range thumbs[:5] {
		fmt.Fprint(&in, task.ID, " ")
	}
	r = e.qoStdin(t, in.String(), "cancel", "-")
	require.Equal(t, 0, r.code, r)
	var ids actJSON
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &ids), r)
	require.Len(t, ids.Done, 20)
	require.Len(t, ids.Skipped, 5)
	for _, sk := range ids.Skipped {
		require.Equal(t, "cancelled: only waiting, pending or running tasks can be cancelled", sk.Reason)
	}
	for _, task := range others {
		got, err := e.q.Get(bg, task.ID)
		require.NoError(t, err)
		require.Equal(t, queue.StatusCancelled, got.Status)
	}

	// The cancelled tasks back, by filter, then archived.
	r = e.qoStdin(t, "", "replay", "--status", "cancelled", "--type", "other", "--json")
	require.Equal(t, 0, r.code, r)
	var rep actJSON
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep), r)
	require.Len(t, rep.Done, 20)
	r = e.qoStdin(t, "", "archive", "--status", "cancelled", "--json")
	require.Equal(t, 0, r.code, r)
	var arch actJSON
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &arch), r)
	require.Len(t, arch.Done, 300)
}
