package command

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store"
)

// A task object with an invalid type name is the bucket's problem, not the
// user's: qo status reports it as malformed (exit 1), not as bad input.
func TestStatusOfMalformedTypeName(t *testing.T) {
	q := newQueueCLI(t)
	q.ok("init")
	id := uuid.MustParse("0b6f4c2e-8d1a-4f7e-9c3b-2a5d6e7f8a9b")
	body := `{"format":1,"id":"` + id.String() + `","shard":"0","status":"pending","task_type":"has space"}`
	_, err := q.s.Put(context.Background(), "tasks/0/"+id.String()+".json", []byte(body), store.Condition{})
	require.NoError(t, err)
	code, _, errs := q.run("status", id.String())
	require.Equal(t, exitInternal, code, errs)
	require.Contains(t, errs, "malformed object")
}

func TestStatusLoadsOffloadedInput(t *testing.T) {
	q := newQueueCLI(t)
	q.ok("init")
	big := `{"blob":"` + strings.Repeat("x", queue.DefaultOffloadThreshold) + `"}`
	task := q.task("submit", "--type", "job", "--input", big)
	require.NotNil(t, task.InputRef, "an input over 256 KiB is offloaded")
	shown := q.task("status", task.ID.String())
	require.JSONEq(t, big, string(shown.Input), "status --json loads it back")
	out := q.ok("status", task.ID.String())
	require.Contains(t, out, "offloaded: ")
	require.Contains(t, out, task.InputRef.Key)

	// qo wait --json shows an offloaded output like any other.
	qq, err := queue.Open(context.Background(), q.s, queue.Options{})
	require.NoError(t, err)
	l, err := qq.Claim(context.Background(), queue.ReadyEntry{ID: task.ID, Key: queue.ReadyKey(task)}, "w1")
	require.NoError(t, err)
	_, err = qq.Complete(context.Background(), l, json.RawMessage(big))
	require.NoError(t, err)
	var res struct {
		Tasks []struct {
			Task queue.Task `json:"task"`
		} `json:"tasks"`
	}
	require.NoError(t, json.Unmarshal([]byte(q.ok("wait", task.ID.String(), "--json")), &res))
	require.NotNil(t, res.Tasks[0].Task.OutputRef)
	require.JSONEq(t, big, string(res.Tasks[0].Task.Output))
}

// The short id qo list shows (the end of the id) is accepted by every
// command that takes a task id; one naming no task says so.
func TestCommandsTakeTheShortIDListsShow(t *testing.T) {
	q := newQueueCLI(t)
	q.ok("init")
	task := q.task("submit", "--type", "job", "--input", `{}`)
	short := queue.ShortID(task.ID)
	require.Contains(t, q.ok("list"), short, "the list shows the short id")
	for _, args := range [][]string{{"status", short}, {"history", short, "--json"}, {"status", strings.ToUpper(short)}} {
		require.Contains(t, q.ok(args...), task.ID.String(), "qo %v", args)
	}
	require.Contains(t, q.ok("cancel", short), "task "+task.ID.String()+": pending -> cancelled")
	_, out, _ := q.run("wait", short, "--json")
	require.Contains(t, out, task.ID.String(), "qo wait takes it too")
	code, _, errs := q.run("status", "0000beef")
	require.Equal(t, exitNotFound, code, errs)
	require.Contains(t, errs, `ending (or starting) with "0000beef"`)
	code, _, errs = q.run("status", "zz-top")
	require.Equal(t, exitUsage, code, errs)
	require.Contains(t, errs, "short id qo list shows")
}

// Operator actions record who acted and on which host, not only the tool.
func TestOperatorActionsNameUserAndHost(t *testing.T) {
	q := newQueueCLI(t)
	q.ok("init")
	task := q.task("submit", "--type", "job", "--input", `{}`)
	q.ok("cancel", task.ID.String(), "--reason", "duplicate")
	got := q.task("status", task.ID.String())
	require.Equal(t, "duplicate ("+queue.Actor()+", qo cancel)", got.CancelReason)
	require.Contains(t, queue.Actor(), "@")
	q.ok("pause", "job")
	qq, err := queue.Open(context.Background(), q.s, queue.Options{})
	require.NoError(t, err)
	ctl, err := qq.Control(context.Background())
	require.NoError(t, err)
	require.Equal(t, "paused ("+queue.Actor()+", qo pause)", ctl.Types["job"].Reason)
}

// --after takes the short id qo list shows too.
func TestSubmitAfterTheShortID(t *testing.T) {
	q := newQueueCLI(t)
	q.ok("init")
	parent := q.task("submit", "--type", "job", "--input", `{}`)
	child := q.task("submit", "--type", "job", "--input", `{}`, "--after", queue.ShortID(parent.ID))
	require.Len(t, child.Parents, 1)
	require.Equal(t, parent.ID, child.Parents[0].ID)
	code, _, errs := q.run("submit", "--type", "job", "--after", "zz")
	require.Equal(t, exitUsage, code, errs)
	require.Contains(t, errs, "--after")
}
