//go:build unix

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/internal/testutil"
	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/queue/control"
	"github.com/qo-queue/qo/queue/schedule"
)

// tmuxSession runs one program in a detached tmux session on a private
// server, so the test sees exactly what a terminal would.
type tmuxSession struct {
	t      *testing.T
	socket string
	name   string
}

func startTmux(t *testing.T, w, h int, script string) *tmuxSession {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		if os.Getenv("QO_TEST_REQUIRE_S3") == "1" {
			t.Fatalf("tmux is not installed (scripts/test.sh installs it): %v", err)
		}
		t.Skip("tmux is not installed")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "run.sh")
	require.NoError(t, os.WriteFile(path, []byte("#!/bin/sh\n"+script+"\n"), 0o755))
	s := &tmuxSession{t: t, socket: "qo-e2e-" + uuid.NewString()[:8], name: "qo"}
	s.tmux("new-session", "-d", "-s", s.name, "-x", fmt.Sprint(w), "-y", fmt.Sprint(h), path)
	t.Cleanup(func() { _ = exec.Command("tmux", "-L", s.socket, "kill-server").Run() })
	return s
}

func (s *tmuxSession) tmux(args ...string) string {
	s.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-L", s.socket}, args...)...).CombinedOutput()
	require.NoError(s.t, err, "tmux %v: %s", args, out)
	return string(out)
}

func (s *tmuxSession) keys(keys ...string) {
	s.tmux(append([]string{"send-keys", "-t", s.name}, keys...)...)
}

func (s *tmuxSession) screen() string { return s.tmux("capture-pane", "-p", "-t", s.name) }

// taskInRow returns the task whose short id starts row n (from 0) of the
// task table on scr.
func taskInRow(t *testing.T, scr string, tasks []*queue.Task, n int) *queue.Task {
	t.Helper()
	byShort := map[string]*queue.Task{}
	for _, task := range tasks {
		byShort[queue.ShortID(task.ID)] = task
	}
	row := 0
	for _, line := range strings.Split(scr, "\n") {
		fields := strings.Fields(strings.TrimPrefix(strings.TrimSpace(line), ">"))
		if len(fields) == 0 || byShort[fields[0]] == nil {
			continue
		}
		if row == n {
			return byShort[fields[0]]
		}
		row++
	}
	t.Fatalf("the screen has no row %d of these tasks:\n%s", n, scr)
	return nil
}

// waitFor polls the screen until it contains all of want.
func (s *tmuxSession) waitFor(want ...string) string {
	s.t.Helper()
	var scr string
	testutil.Poll{Limit: 30 * time.Second, Every: 100 * time.Millisecond}.Until(s.t, func() bool {
		scr = s.screen()
		for _, w := range want {
			if !strings.Contains(scr, w) {
				return false
			}
		}
		return true
	}, "the screen to show %q; it shows:\n%s", want, testutil.Lazy(func() string { return scr }))
	return scr
}

// waitQuit waits until the console has quit and its session is gone.
func (s *tmuxSession) waitQuit() {
	s.t.Helper()
	testutil.Poll{Limit: 10 * time.Second, Every: 100 * time.Millisecond}.Until(s.t, func() bool {
		return exec.Command("tmux", "-L", s.socket, "has-session", "-t", s.name).Run() != nil
	}, "the console to quit; it shows:\n%s", testutil.Lazy(s.screen))
}

// TestTUIInTmux runs the real console in tmux against MinIO: it finds a
// failed task, opens its timeline, replays it, and the change shows in the
// console and through qo status.
func TestTUIInTmux(t *testing.T) {
	t.Parallel()
	e := wkSetup(t)
	ctx := context.Background()
	submit := func(typ, input string) *queue.Task {
		task, _, err := e.q.Submit(ctx, queue.SubmitRequest{Type: typ, Input: json.RawMessage(input)})
		require.NoError(t, err)
		return task
	}
	claim := func(task *queue.Task) *queue.Lease {
		entry, err := queue.ParseReadyKey(queue.ReadyKey(task))
		require.NoError(t, err)
		l, err := e.q.Claim(ctx, entry, "e2e-worker")
		require.NoError(t, err)
		return l
	}
	submit("resize", `{"w":1}`) // pending
	done := submit("email", `{"to":"a@example.com"}`)
	_, err := e.q.Complete(ctx, claim(done), json.RawMessage(`{"ok":true}`))
	require.NoError(t, err)
	claim(submit("resize", `{"w":2}`)) // running
	failed := submit("email", `{"to":"bounce@example.com"}`)
	_, err = e.q.Fail(ctx, claim(failed), "smtp: 550 no such user")
	require.NoError(t, err)

	var script strings.Builder
	for _, kv := range e.env {
		name, value, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "S3_") || strings.HasPrefix(name, "AWS_") {
			fmt.Fprintf(&script, "export %s='%s'\n", name, value)
		}
	}
	fmt.Fprintf(&script, "export NO_COLOR=1 TERM=xterm-256color\nexec '%s' tui --refresh off\n", wkBinary(t))
	s := startTmux(t, 100, 30, script.String())

	s.waitFor("1 Overview", "running 1", "failed (dead letters) 1")
	s.keys("2")
	s.waitFor("NEXT / LEASE", "lease")
	s.keys("s", "s", "s", "s") // all, pending, running, completed, failed
	s.waitFor("status: failed", queue.ShortID(failed.ID))
	s.keys("Enter")
	s.waitFor("Timeline: 3 versions", "smtp: 550 no such user", "enqueued", "claimed")
	s.keys("R")
	s.waitFor("Replay task " + failed.ID.String())
	s.keys("y")
	scr := s.waitFor("pending again", "Timeline: 4 versions", "replayed")
	t.Logf("console after the replay:\n%s", scr)

	r := qo(t, append(e.env, "NO_COLOR=1"), "status", failed.ID.String(), "--json")
	require.Equal(t, 0, r.code, r.String())
	var got queue.Task
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &got), r.String())
	require.Equal(t, queue.StatusPending, got.Status)

	// q goes back to the list. P pauses the whole queue (the overview says
	// so), and the schedules screen triggers a run of a schedule.
	s.keys("q")
	s.waitFor("NEXT / LEASE")
	_, err = schedule.Create(ctx, e.q, schedule.Spec{Name: "nightly", Cron: "30 2 * * *", Task: schedule.Task{Type: "report"}})
	require.NoError(t, err)
	s.keys("1", "P")
	s.waitFor("Pause the whole queue?")
	s.keys("y")
	s.waitFor("PAUSED: the whole queue")
	ctl, err := control.Read(ctx, e.q)
	require.NoError(t, err)
	require.True(t, ctl.Paused)
	s.keys("4")
	s.waitFor("nightly", "30 2 * * *")
	s.keys("t")
	s.waitFor("Trigger schedule nightly")
	s.keys("y")
	s.waitFor("schedule nightly submitted")
	sc, err := schedule.Get(ctx, e.q, "nightly")
	require.NoError(t, err)
	require.NotEmpty(t, sc.LastTaskID)

	s.keys("q")
	s.waitQuit()
}

// TestTUIWorkflowInTmux opens a workflow by name in the real console
// against MinIO, replays its failed step (the step it cancelled waits
// again), then cancels the rest of the workflow; the queue API sees each
// change.
func TestTUIWorkflowInTmux(t *testing.T) {
	t.Parallel()
	e := wkSetup(t)
	ctx := context.Background()
	spec, err := queue.DecodeWorkflow([]byte(`{"name": "e2e-etl", "steps": [
		{"name": "extract", "type": "extract"},
		{"name": "clean", "type": "transform", "input_from": {"rows": "extract.output.rows"}},
		{"name": "enrich", "type": "transform", "input_from": {"rows": "extract.output.rows"}},
		{"name": "load", "type": "load", "after": ["clean", "enrich"]}]}`), queue.DefaultSubmitDefaults)
	require.NoError(t, err)
	w, _, err := e.q.Workflows().Submit(ctx, spec)
	require.NoError(t, err)
	step := func(name string) *queue.Task {
		s, ok := w.Step(name)
		require.True(t, ok)
		task, err := e.q.Get(ctx, s.TaskID)
		require.NoError(t, err)
		return task
	}
	claim := func(name string) *queue.Lease {
		entry, err := queue.ParseReadyKey(queue.ReadyKey(step(name)))
		require.NoError(t, err)
		l, err := e.q.Claim(ctx, entry, "e2e-worker")
		require.NoError(t, err)
		return l
	}
	_, err = e.q.Complete(ctx, claim("extract"), json.RawMessage(`{"rows":[1,2]}`))
	require.NoError(t, err)
	_, err = e.q.Fail(ctx, claim("enrich"), "enrich: upstream 503")
	require.NoError(t, err)
	require.Equal(t, queue.StatusCancelled, step("load").Status)

	var script strings.Builder
	for _, kv := range e.env {
		name, value, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "S3_") || strings.HasPrefix(name, "AWS_") {
			fmt.Fprintf(&script, "export %s='%s'\n", name, value)
		}
	}
	fmt.Fprintf(&script, "export NO_COLOR=1 TERM=xterm-256color\nexec '%s' tui --screen tasks --refresh off\n", wkBinary(t))
	s := startTmux(t, 100, 30, script.String())

	s.waitFor("NEXT / LEASE")
	s.keys("/", "wf:e2e-etl", "Enter")
	s.waitFor("Workflow e2e-etl", w.ID.String(), "├─ clean", "└─ enrich", "└─ load")
	s.keys("j", "j") // extract, clean, enrich
	s.waitFor("last error enrich: upstream 503")
	s.keys("R")
	s.waitFor("Replay task " + step("enrich").ID.String())
	s.keys("y")
	scr := s.waitFor("pending again", "(2 of 2)")
	t.Logf("the workflow after the replay:\n%s", scr)
	require.Equal(t, queue.StatusPending, step("enrich").Status)
	require.Equal(t, queue.StatusWaiting, step("load").Status, "the step it cancelled waits again")

	s.keys("X")
	s.waitFor("Cancel the 3 steps of workflow e2e-etl")
	s.keys("y")
	s.waitFor("cancelled 3 step(s) of workflow e2e-etl", "cancelled")
	for _, name := range []string{"clean", "enrich", "load"} {
		require.Equal(t, queue.StatusCancelled, step(name).Status, name)
	}
	require.Equal(t, queue.StatusCompleted, step("extract").Status)

	s.keys("Enter") // the selected step's task
	s.waitFor("› task "+queue.ShortID(step("enrich").ID), "workflow   step enrich of e2e-etl")
	s.keys("q")
	s.waitFor("Workflow e2e-etl")
	s.keys("q")
	s.waitFor("NEXT / LEASE")
	s.keys("q")
	s.waitQuit()
}

// TestTUISelectionInTmux: in the real console against MinIO, with the list
// refreshing every 2 s, tasks arriving above the selected row leave the
// selection on its task, with and without a dialog open, and y cancels
// the task chosen. The short id the list shows, typed in the search box,
// opens its task.
func TestTUISelectionInTmux(t *testing.T) {
	t.Parallel()
	e := wkSetup(t)
	ctx := context.Background()
	var tasks []*queue.Task
	submit := func() *queue.Task {
		task, _, err := e.q.Submit(ctx, queue.SubmitRequest{Type: "resize", Input: json.RawMessage(fmt.Sprintf(`{"n":%d}`, len(tasks)))})
		require.NoError(t, err)
		tasks = append(tasks, task)
		return task
	}
	for range 5 {
		submit()
	}
	var script strings.Builder
	for _, kv := range e.env {
		name, value, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "S3_") || strings.HasPrefix(name, "AWS_") {
			fmt.Fprintf(&script, "export %s='%s'\n", name, value)
		}
	}
	fmt.Fprintf(&script, "export NO_COLOR=1 TERM=xterm-256color\nexec '%s' tui --screen tasks --refresh 2s\n", wkBinary(t))
	s := startTmux(t, 100, 30, script.String())

	all := []string{"NEXT / LEASE"}
	for _, task := range tasks {
		all = append(all, queue.ShortID(task.ID))
	}
	// The list is newest first, and tasks created in the same second
	// may come in either order: choose whichever task the third row shows.
	chosen := taskInRow(t, s.waitFor(all...), tasks, 2)
	s.keys("j", "j")
	s.waitFor("> " + queue.ShortID(chosen.ID))
	arrived := []*queue.Task{submit(), submit(), submit()}
	want := []string{"> " + queue.ShortID(chosen.ID)}
	for _, a := range arrived {
		want = append(want, queue.ShortID(a.ID))
	}
	scr := s.waitFor(want...) // the refresh showed them, above it
	t.Logf("after three tasks arrived:\n%s", scr)

	s.keys("C")
	s.waitFor("Cancel task " + chosen.ID.String())
	more := []string{"Cancel task " + chosen.ID.String(), "> " + queue.ShortID(chosen.ID)}
	for _, a := range []*queue.Task{submit(), submit()} {
		more = append(more, queue.ShortID(a.ID))
	}
	s.waitFor(more...) // refreshed under the open dialog
	s.keys("y")
	s.waitFor("cancelled " + chosen.ID.String())
	for _, task := range tasks {
		got, err := e.q.Get(ctx, task.ID)
		require.NoError(t, err)
		if task.ID == chosen.ID {
			require.Equal(t, queue.StatusCancelled, got.Status, "the chosen task")
		} else {
			require.Equal(t, queue.StatusPending, got.Status, "task %s was not chosen", task.ID)
		}
	}

	s.keys("/", queue.ShortID(tasks[0].ID), "Enter")
	s.waitFor("› task "+queue.ShortID(tasks[0].ID), tasks[0].ID.String())
	s.keys("q")
	s.waitFor("NEXT / LEASE")
	s.keys("q")
	s.waitQuit()
}
