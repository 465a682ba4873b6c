//go:build unix

package e2e

// The features beyond the core lifecycle (pause, per-type limits,
// priorities, expiry, large payloads, cron schedules), driven through the
// real binary against the test S3 server.

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

	"github.com/qo-queue/qo/internal/testutil"
	"github.com/qo-queue/qo/queue"
)

func (e *wkEnv) cli(t *testing.T, args ...string) string {
	t.Helper()
	r := qo(t, e.env, args...)
	require.Equal(t, 0, r.code, "qo %s: %s", strings.Join(args, " "), r)
	return r.stdout
}

func (e *wkEnv) cliID(t *testing.T, args ...string) uuid.UUID {
	t.Helper()
	id, err := uuid.Parse(strings.TrimSpace(e.cli(t, args...)))
	require.NoError(t, err)
	return id
}

func TestPauseLimitsExpiryAndLargePayloads(t *testing.T) {
	t.Parallel()
	e := wkSetup(t)
	ctx := context.Background()
	e.cli(t, "pause", "echo", "sleep", "--reason", "e2e")

	expiring := e.cliID(t, "submit", "--type", "echo", "--expires-in", "1s")
	big := `{"blob":"` + strings.Repeat("b", 300<<10) + `"}`
	file := filepath.Join(t.TempDir(), "big.json")
	require.NoError(t, os.WriteFile(file, []byte(big), 0o600))
	bigID := e.cliID(t, "submit", "--type", "echo", "--input-file", file, "--priority", "high")
	var sleeps []uuid.UUID
	for range 4 {
		sleeps = append(sleeps, e.cliID(t, "submit", "--type", "sleep", "--input", `{"ms":400}`))
	}

	e.start(t, "w1", workerArgs("w1", "--builtins", "--concurrency", "4", "--limit", "sleep=1")...)
	// Paused: nothing starts (the worker reads the switches within 5 s).
	time.Sleep(2 * time.Second)
	for _, id := range append([]uuid.UUID{expiring, bigID}, sleeps...) {
		task, err := e.q.Get(ctx, id)
		require.NoError(t, err)
		require.Zero(t, task.Attempt, "task %s of a paused type started", id)
		if id != expiring { // the monitor's sweep may expire that one already
			require.Equal(t, queue.StatusPending, task.Status)
		}
	}

	e.cli(t, "resume", "echo")
	e.waitTask(t, expiring, "expired", func(t *queue.Task) bool { return t.Status == queue.StatusExpired })
	done := e.waitTask(t, bigID, "completed", func(t *queue.Task) bool { return t.Status == queue.StatusCompleted })
	require.NotNil(t, done.InputRef, "an input over 256 KiB lives in its own object")
	require.NotNil(t, done.OutputRef, "so does the echoed output")
	var shown queue.Task
	require.NoError(t, json.Unmarshal([]byte(e.cli(t, "status", bigID.String(), "--json")), &shown))
	require.JSONEq(t, big, string(shown.Input), "qo status loads the input back")
	require.JSONEq(t, big, string(shown.Output), "and the output")

	e.cli(t, "resume", "sleep")
	type span struct{ from, to time.Time }
	var spans []span
	for _, id := range sleeps {
		e.waitTask(t, id, "completed", func(t *queue.Task) bool { return t.Status == queue.StatusCompleted })
		evs, err := e.q.History(ctx, id)
		require.NoError(t, err)
		var s span
		for _, ev := range evs {
			switch ev.Name {
			case queue.EventClaimed:
				s.from = ev.At
			case queue.EventSucceeded:
				s.to = ev.At
			}
		}
		spans = append(spans, s)
	}
	for i := range spans {
		for j := range spans {
			if i != j {
				overlap := spans[i].from.Before(spans[j].to) && spans[j].from.Before(spans[i].to)
				require.False(t, overlap, "--limit sleep=1: two sleep tasks ran at once (%v and %v)", spans[i], spans[j])
			}
		}
	}
}

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
	var first *queue.Schedule
	testutil.Poll{Limit: 150 * time.Second, Every: 500 * time.Millisecond}.Until(t, func() bool {
		var err error
		first, err = e.q.GetSchedule(ctx, "tick")
		require.NoError(t, err)
		return first.LastTaskID != ""
	}, "the schedule to run")
	id, err := uuid.Parse(first.LastTaskID)
	require.NoError(t, err)
	task := e.waitTask(t, id, "completed", func(t *queue.Task) bool { return t.Status == queue.StatusCompleted })
	require.JSONEq(t, `{"from":"cron"}`, string(task.Output))
	require.Equal(t, queue.ScheduleRunKey("tick", *first.LastDue), task.IdempotencyKey)

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
	latest, err := e.q.GetSchedule(ctx, "tick")
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
