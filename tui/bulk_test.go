package tui

import (
	"bytes"
	"testing"
	"time"

	"github.com/charmbracelet/x/exp/teatest"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
)

func (h *harness) status(id uuid.UUID) queue.Status {
	h.t.Helper()
	task, err := h.q.Get(h.ctx, id)
	require.NoError(h.t, err)
	return task.Status
}

// TestBulkMarked: space marks tasks, C plans the cancel of the marked set,
// the dialog states the count and the cost, y cancels exactly those.
func TestBulkMarked(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil, Options{}).seed().init()
	h.press("2", "s") // pending
	require.Contains(t, h.view(), "status: pending")
	first := h.m.tasks.selected()
	h.press("space", "down")
	second := h.m.tasks.selected()
	h.press("space")
	require.NotEqual(t, first.ID, second.ID)
	v := h.view()
	require.Contains(t, v, "2 marked (R A C act on them)")
	require.Contains(t, v, ">*"+queue.ShortID(second.ID))
	require.Contains(t, v, " *"+queue.ShortID(first.ID))

	h.press("R") // replay applies to neither: nothing to confirm
	require.Nil(t, h.m.confirm)
	require.Contains(t, h.m.flash, "replay: nothing to do among 2 marked tasks (2 skipped, e.g. pending: only failed, cancelled or expired tasks can be replayed)")

	h.press("C")
	require.NotNil(t, h.m.confirm)
	require.Contains(t, h.m.confirm.text, "Cancel 2 tasks (2 marked tasks)? Requests: 2 PUT + 2 DELETE (finding them took 2 GET); about $")
	h.press("n")
	require.Equal(t, queue.StatusPending, h.status(first.ID), "n writes nothing")
	require.True(t, h.m.tasks.marks.any(), "the marks stay after n")

	h.press("C", "y")
	require.Equal(t, "cancel: 2 done, 0 skipped, 0 failed", h.m.flash)
	require.Equal(t, queue.StatusCancelled, h.status(first.ID))
	require.Equal(t, queue.StatusCancelled, h.status(second.ID))
	require.Equal(t, queue.StatusRunning, h.status(h.ids["running"].ID))
	require.False(t, h.m.tasks.marks.any(), "a run clears the marks")
}

// TestBulkAllInFilter: a marks every task of the filter, beyond the page
// shown; a filter change drops the marks.
func TestBulkAllInFilter(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil, Options{}).seed().init()
	h.press("2", "a")
	require.Contains(t, h.view(), "ALL in this filter marked")
	h.press("s") // another filter: the marks go
	require.False(t, h.m.tasks.marks.any())
	h.press("c", "a", "C") // every status: cancel applies to the pending and running ones
	require.NotNil(t, h.m.confirm)
	require.Contains(t, h.m.confirm.text, "Cancel 3 tasks (every task cancel applies to)?")
	h.press("y")
	require.Equal(t, "cancel: 3 done, 0 skipped, 0 failed", h.m.flash)
	require.Equal(t, queue.StatusCancelled, h.status(h.ids["waiting"].ID))
	require.Equal(t, queue.StatusCancelled, h.status(h.ids["later"].ID))
	task, err := h.q.Get(h.ctx, h.ids["running"].ID)
	require.NoError(t, err)
	require.True(t, task.CancelRequested)
	require.Equal(t, queue.StatusCompleted, h.status(h.ids["done"].ID))
}

// TestDeadLetterRowShowsError: a failed task's row says what it died of.
func TestDeadLetterRowShowsError(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil, Options{Screen: "tasks", Status: queue.StatusFailed}).seed().init()
	require.Contains(t, h.view(), "failed        1 0s ago     smtp: 550 mailbox unavailable")
}

// TestProgramBulkCancel runs marking and a bulk cancel in a real program.
func TestProgramBulkCancel(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil, Options{}).seed()
	h.newModel(Options{Screen: "tasks", Status: queue.StatusPending})
	tm := teatest.NewTestModel(t, h.m, teatest.WithInitialTermSize(120, 30))
	waitFor := func(s string) {
		t.Helper()
		teatest.WaitFor(t, tm.Output(), func(b []byte) bool { return bytes.Contains(b, []byte(s)) },
			teatest.WithDuration(10*time.Second), teatest.WithCheckInterval(20*time.Millisecond))
	}
	waitFor("status: pending")
	tm.Send(keyMsg("a"))
	waitFor("ALL in this filter marked")
	tm.Send(keyMsg("C"))
	waitFor("Cancel 2 tasks (every pending task)?")
	tm.Send(keyMsg("y"))
	waitFor("cancel: 2 done, 0 skipped, 0 failed")
	tm.Send(keyMsg("ctrl+c"))
	tm.FinalModel(t, teatest.WithFinalTimeout(10*time.Second))
	require.Equal(t, queue.StatusCancelled, h.status(h.ids["waiting"].ID))
	require.Equal(t, queue.StatusCancelled, h.status(h.ids["later"].ID))
}
