package command

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
)

// A snoozed version says how many snoozes the task used and when it is
// back, not just "available".
func TestEventDetailSnoozed(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	task := &queue.Task{Status: queue.StatusPending, AvailableAt: at, SnoozeCount: 3}
	require.Equal(t, "snooze 3 of 100, available 2026-01-02 03:04:05.000Z",
		eventDetail(queue.Event{Name: queue.EventSnoozed, Task: task}))
	task.LastError = "snoozed: rate limited"
	require.Equal(t, "snooze 3 of 100, available 2026-01-02 03:04:05.000Z; snoozed: rate limited",
		eventDetail(queue.Event{Name: queue.EventSnoozed, Task: task}))
}
