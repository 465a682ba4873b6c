package tui

import (
	"bytes"
	"testing"
	"time"

	"github.com/charmbracelet/x/exp/golden"
	"github.com/charmbracelet/x/exp/teatest"
	"github.com/stretchr/testify/require"
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
}
