//go:build unix

package e2e

// Cron schedules driven through the real binary against the test S3
// server.

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/internal/testutil"
	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/queue/schedule"
)

// Two workers, each with an embedded monitor: a once-a-minute schedule
// submits exactly one task per due time, and the task runs.
func TestScheduleRunsOncePerDueTime(t *testing.T) {
	t.Parallel()
	e := wkSetup(t)
	ctx := context.Background()
	e.cli(t, "schedule", "create", "tick", "--cron", "* * * * *", "--type", "echo", "--input", `{"from":"cron"}`)
	for _, id := range []string{"s1", "s2"} {
		e.start(t, id, workerArgs(id, "--builtins")...)
	}
	var first *schedule.Schedule
	testutil.Poll{Limit: 150 * time.Second, Every: 500 * time.Millisecond}.Until(t, func() bool {
		var err error
		first, err = schedule.Get(ctx, e.q, "tick")
		require.NoError(t, err)
		return first.LastTaskID != ""
	}, "the schedule to run")
	id, err := uuid.Parse(first.LastTaskID)
	require.NoError(t, err)
	task := e.waitTask(t, id, "completed", func(t *queue.Task) bool { return t.Status == queue.StatusCompleted })
	require.JSONEq(t, `{"from":"cron"}`, string(task.Output))
	require.Equal(t, schedule.RunKey("tick", *first.LastDue), task.IdempotencyKey)

	// Exactly one task per due time handled so far.
	var runs int
	cursor := ""
	for {
		page, err := e.q.List(ctx, queue.ListQuery{Type: "echo", Cursor: cursor, Limit: 100})
		require.NoError(t, err)
		for _, t := range page.Tasks {
			if strings.HasPrefix(t.IdempotencyKey, "schedule:tick:") {
				runs++
			}
		}
		if cursor = page.Cursor; cursor == "" {
			break
		}
	}
	latest, err := schedule.Get(ctx, e.q, "tick")
	require.NoError(t, err)
	due := 0
	for d := latest.CreatedAt; ; {
		d = latest.Next(d)
		if d.After(*latest.LastDue) {
			break
		}
		due++
	}
	require.Equal(t, due, runs, "one task per due time, however many monitors run")

	out := e.cli(t, "schedule", "list")
	require.Contains(t, out, "tick")
	require.Contains(t, out, first.LastTaskID)
}
