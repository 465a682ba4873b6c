package command

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/queue/control"
	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/worker"
)

// A task object with an invalid type name is the bucket's problem, not the
// user's: qo status reports it as malformed (exit 1), not as bad input.
func TestStatusOfMalformedTypeName(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
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

// Operator actions record who acted and on which host, not only the tool:
// in the reasons they keep, and in the actor field of the version each one
// writes (a task's, control.json's, a schedule's), which qo history shows.
func TestOperatorActionsNameUserAndHost(t *testing.T) {
	t.Parallel()
	q := newQueueCLI(t)
	q.ok("init")
	ctx := context.Background()
	qq, err := queue.Open(ctx, q.s, queue.Options{})
	require.NoError(t, err)
	by := func(tool string) string { return queue.Actor() + ", " + tool }
	require.Contains(t, queue.Actor(), "@")

	task := q.task("submit", "--type", "job", "--input", `{}`)
	id := task.ID.String()
	q.ok("cancel", id, "--reason", "duplicate")
	got := q.task("status", id)
	require.Equal(t, "duplicate ("+queue.Actor()+", qo cancel)", got.CancelReason)
	require.Equal(t, by("qo cancel"), got.Actor)
	q.ok("replay", id)
	require.Equal(t, by("qo replay"), q.task("status", id).Actor)
	q.ok("cancel", id)
	q.ok("archive", id)
	require.Equal(t, by("qo archive"), q.task("status", id).Actor)

	// The history names who made each operator version, and no one for
	// the others.
	hist := q.ok("history", id)
	for _, tool := range []string{"qo replay", "qo archive"} {
		require.Contains(t, hist, "by "+by(tool), hist)
	}
	var h struct {
		Events []struct {
			Event string     `json:"event"`
			Task  queue.Task `json:"task"`
		} `json:"events"`
	}
	require.NoError(t, json.Unmarshal([]byte(q.ok("history", id, "--json")), &h))
	var actors []string
	for _, e := range h.Events {
		actors = append(actors, e.Event+": "+e.Task.Actor)
	}
	require.Equal(t, []string{"enqueued: ", "cancelled: " + by("qo cancel"), "replayed: " + by("qo replay"),
		"cancelled: " + by("qo cancel"), "archived: " + by("qo archive")}, actors)

	// Several tasks at once: each write names the bulk command too.
	a := q.task("submit", "--type", "bulk", "--input", `{}`)
	b := q.task("submit", "--type", "bulk", "--input", `{}`)
	q.ok("cancel", a.ID.String(), b.ID.String(), "--json")
	for _, x := range []*queue.Task{a, b} {
		require.Equal(t, by("qo cancel"), q.task("status", x.ID.String()).Actor)
	}

	// A workflow's cancel names its command on every step it cancels.
	spec, err := queue.DecodeWorkflow([]byte(`{"name": "etl", "steps": [{"name": "a", "type": "job"}, {"name": "b", "type": "job", "after": ["a"]}]}`), queue.DefaultSubmitDefaults)
	require.NoError(t, err)
	w, _, err := qq.Workflows().Submit(ctx, spec)
	require.NoError(t, err)
	q.ok("workflow", "cancel", w.ID.String())
	for _, st := range w.Steps {
		require.Equal(t, by("qo workflow cancel"), q.task("status", st.TaskID.String()).Actor, "step %s", st.Name)
	}

	// Pause and resume: control.json's version names who wrote it.
	control := func() queue.Control {
		ctl, err := control.Read(ctx, qq)
		require.NoError(t, err)
		return ctl
	}
	q.ok("pause", "job")
	require.Equal(t, "paused ("+queue.Actor()+", qo pause)", control().Types["job"].Reason)
	require.Equal(t, by("qo pause"), control().Actor)
	q.ok("resume", "job")
	require.Equal(t, by("qo resume"), control().Actor)

	// Schedules: each operator write names its command.
	schedule := func() map[string]any {
		obj, err := q.s.Get(ctx, queue.ScheduleKey("nightly"))
		require.NoError(t, err)
		var m map[string]any
		require.NoError(t, json.Unmarshal(obj.Body, &m))
		return m
	}
	q.ok("schedule", "create", "nightly", "--cron", "@daily", "--type", "job", "--input", `{}`)
	require.Equal(t, by("qo schedule create"), schedule()["actor"])
	for _, sub := range []string{"disable", "enable", "trigger", "delete"} {
		q.ok("schedule", sub, "nightly")
		require.Equal(t, by("qo schedule "+sub), schedule()["actor"], "qo schedule %s", sub)
	}
}

// --after takes the short id qo list shows too.
func TestSubmitAfterTheShortID(t *testing.T) {
	t.Parallel()
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

// An exec handler's progress reaches qo status (text and --json) while
// the task runs, through its worker's heartbeat.
func TestStatusShowsExecProgress(t *testing.T) {
	t.Parallel()
	q := newQueueCLI(t)
	q.ok("init")
	task := q.task("submit", "--type", "resize", "--input", `{}`)

	dir := t.TempDir()
	gate := filepath.Join(dir, "go-on")
	sh := filepath.Join(dir, "resize.sh")
	require.NoError(t, os.WriteFile(sh, []byte("#!/bin/sh\n"+
		`echo "42% resized 42 of 100" >> "$QO_PROGRESS_FILE"`+"\n"+
		`while [ ! -e "$1" ]; do sleep 0.02; done`+"\n"), 0o755))
	wq, err := queue.Open(context.Background(), q.s, queue.Options{})
	require.NoError(t, err)
	w := worker.New(wq, worker.Options{ID: "w-progress", PollMin: 5 * time.Millisecond, PollMax: 50 * time.Millisecond,
		HeartbeatInterval: 50 * time.Millisecond, NoMonitor: true})
	w.Handle("resize", worker.Exec([]string{sh, gate}, worker.ExecOptions{}))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	defer func() {
		cancel()
		<-done
	}()

	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(q.ok("status", task.ID.String()), "progress:") {
		require.False(t, time.Now().After(deadline), "qo status never showed the progress")
		time.Sleep(20 * time.Millisecond)
	}
	out := q.ok("status", task.ID.String())
	require.Regexp(t, `progress:\s+42% resized 42 of 100`, out)
	shown := q.task("status", task.ID.String())
	require.NotNil(t, shown.Progress, "status --json")
	require.InDelta(t, 0.42, shown.Progress.Fraction, 1e-9)
	require.Equal(t, "resized 42 of 100", shown.Progress.Message)
	require.Equal(t, 1, shown.Progress.Attempt)
	require.NoError(t, os.WriteFile(gate, nil, 0o600))
}
