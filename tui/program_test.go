package tui

import (
	"bytes"
	"testing"
	"time"

	"github.com/charmbracelet/x/exp/golden"
	"github.com/charmbracelet/x/exp/teatest"
	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
)

// TestProgram runs the console as a real bubbletea program (commands in
// goroutines, the renderer, window size) with teatest: it walks from the
// overview to a failed task's timeline, replays it, and compares the final
// screen with a golden file.
func TestProgram(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil, Options{}).seed()
	h.newModel(Options{})
	tm := teatest.NewTestModel(t, h.m, teatest.WithInitialTermSize(100, 30))
	waitFor := func(s string) {
		t.Helper()
		teatest.WaitFor(t, tm.Output(), func(b []byte) bool { return bytes.Contains(b, []byte(s)) },
			teatest.WithDuration(10*time.Second), teatest.WithCheckInterval(20*time.Millisecond))
	}
	waitFor("oldest pending")
	tm.Send(keyMsg("2"))
	waitFor("NEXT / LEASE")
	tm.Type("ssss") // all -> pending -> running -> completed -> failed
	waitFor("status: failed")
	tm.Send(keyMsg("enter"))
	waitFor("Timeline: 3 versions")
	tm.Send(keyMsg("R"))
	waitFor("Replay task")
	tm.Send(keyMsg("y"))
	waitFor("Timeline: 4 versions") // the replay, read back
	tm.Send(keyMsg("ctrl+c"))
	final := tm.FinalModel(t, teatest.WithFinalTimeout(10*time.Second)).(*Model)
	require.Contains(t, final.flash, "pending again")
	golden.RequireEqual(t, []byte(final.View()))

	task, err := h.q.Get(h.ctx, h.ids["failed"].ID)
	require.NoError(t, err)
	require.Equal(t, "pending", string(task.Status))
	require.Contains(t, final.View(), "by "+harnessActor, "the timeline names who replayed it")
}

// The console names who runs it on its writes: the user and host of its
// process, unless its caller said otherwise.
func TestConsoleActsAsUserAndHost(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil, Options{})
	m, err := New(h.ctx, h.q, Options{})
	require.NoError(t, err)
	require.Equal(t, queue.Actor()+", qo tui", queue.ActorFrom(m.ctx))
	m, err = New(queue.WithActor(h.ctx, "bob@ops-2, qo dev"), h.q, Options{})
	require.NoError(t, err)
	require.Equal(t, "bob@ops-2, qo dev", queue.ActorFrom(m.ctx))
}
