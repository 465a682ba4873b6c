package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store"
)

func TestSubmitPriorityAndExpiry(t *testing.T) {
	q := newQueueCLI(t)
	q.ok("init")
	task := q.task("submit", "--type", "job", "--priority", "high", "--expires-in", "10m")
	require.Equal(t, queue.PriorityHigh, task.Priority)
	require.NotNil(t, task.ExpiresAt)
	// --expires-in counts from when the command read the clock, which may be
	// a millisecond before the submit stamped available_at.
	require.WithinDuration(t, task.AvailableAt.Add(10*time.Minute), *task.ExpiresAt, time.Second)
	out := q.ok("status", task.ID.String())
	require.Contains(t, out, "priority:")
	require.Contains(t, out, "high")
	require.Contains(t, out, "expires:")
	require.Contains(t, q.ok("list"), "PRIORITY")

	// A task nobody started in time: qo wait reports it expired, exit 6.
	short := q.task("submit", "--type", "nobody", "--expires-in", "1ms")
	time.Sleep(5 * time.Millisecond)
	qq, err := queue.Open(context.Background(), q.s, queue.Options{})
	require.NoError(t, err)
	res, _, err := qq.Sweep(context.Background(), "", 0, 0)
	require.NoError(t, err)
	require.Equal(t, 1, res.Expired)
	code, out, _ := q.run("wait", short.ID.String())
	require.Equal(t, exitTaskFailed, code)
	require.Contains(t, out, "expired")

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--priority", "urgent"}, "--priority: unknown priority"},
		{[]string{"--expires-in", "-1m"}, "must be positive"},
		{[]string{"--expires-in", "1m", "--expires-at", "2030-01-01T00:00:00Z"}, "not both"},
		{[]string{"--expires-at", "tomorrow"}, "RFC 3339"},
		{[]string{"--delay", "1h", "--expires-at", "2000-01-01T00:00:00Z"}, "could never run"},
	} {
		before := q.puts()
		code, _, errs := q.run(append([]string{"submit", "--type", "job"}, tc.args...)...)
		require.Equal(t, exitUsage, code, "%v: %s", tc.args, errs)
		require.Contains(t, errs, tc.want)
		require.Equal(t, before, q.puts(), "nothing written for %v", tc.args)
	}
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

func TestPauseResumeCommands(t *testing.T) {
	q := newQueueCLI(t)
	q.ok("init")
	require.Contains(t, q.ok("pause"), "nothing is paused")
	require.Contains(t, q.ok("pause", "send_email", "resize", "--reason", "provider down"), "paused types: resize, send_email")
	out := q.ok("pause", "--all", "--reason", "migration")
	require.Contains(t, out, "the whole queue is paused: migration")
	var ctl queue.Control
	require.NoError(t, json.Unmarshal([]byte(q.ok("pause", "--json")), &ctl))
	require.True(t, ctl.Paused)
	require.Equal(t, "provider down", ctl.Types["send_email"].Reason)
	require.Contains(t, q.ok("resume", "--all"), "paused types: resize, send_email")
	require.Contains(t, q.ok("resume", "resize", "send_email"), "nothing is paused")

	for _, args := range [][]string{{"resume"}, {"pause", "a", "--all"}, {"pause", "bad/type"}} {
		code, _, errs := q.run(args...)
		require.Equal(t, exitUsage, code, "%v: %s", args, errs)
	}
}

func TestScheduleCommands(t *testing.T) {
	q := newQueueCLI(t)
	q.ok("init")
	out := q.ok("schedule", "create", "nightly", "--cron", "30 2 * * *", "--tz", "Europe/Berlin", "--type", "report",
		"--input", `{"kind":"daily"}`, "--priority", "low", "--expires-in", "1h")
	require.Contains(t, out, "30 2 * * * (Europe/Berlin)")
	require.Contains(t, out, "upcoming:")
	var v struct {
		Name    string  `json:"name"`
		Enabled bool    `json:"enabled"`
		NextDue *string `json:"next_due"`
		Task    struct {
			Priority string `json:"priority"`
			Expires  int    `json:"expires_after_seconds"`
		} `json:"task"`
	}
	require.NoError(t, json.Unmarshal([]byte(q.ok("schedule", "show", "nightly", "--json")), &v))
	require.True(t, v.Enabled)
	require.NotNil(t, v.NextDue)
	require.Equal(t, "low", v.Task.Priority)
	require.Equal(t, 3600, v.Task.Expires)

	list := q.ok("schedule", "list")
	require.Contains(t, list, "nightly")
	require.Contains(t, list, "enabled")

	require.Contains(t, q.ok("schedule", "disable", "nightly"), "disabled")
	require.Contains(t, q.ok("schedule", "list"), "disabled")
	require.Contains(t, q.ok("schedule", "enable", "nightly"), "enabled")

	id := strings.TrimSpace(q.ok("schedule", "trigger", "nightly"))
	task := q.task("status", id)
	require.Equal(t, "report", task.Type)
	require.JSONEq(t, `{"kind":"daily"}`, string(task.Input))

	code, _, errs := q.run("schedule", "create", "nightly", "--cron", "@daily", "--type", "report")
	require.Equal(t, exitConflict, code, errs)
	require.Contains(t, errs, "exists")

	q.ok("schedule", "delete", "nightly")
	code, _, _ = q.run("schedule", "show", "nightly")
	require.Equal(t, exitNotFound, code)
	require.Contains(t, q.ok("schedule", "list"), "no schedules")

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"schedule", "create", "x", "--cron", "61 * * * *", "--type", "t"}, "5 fields"},
		{[]string{"schedule", "create", "x", "--cron", "@daily", "--type", "t", "--tz", "Nowhere/City"}, "IANA"},
		{[]string{"schedule", "create", "x", "--cron", "@daily", "--type", "t", "--missed", "all"}, "catch-up"},
		{[]string{"schedule", "create", "x", "--cron", "@daily", "--type", "t", "--input", "{"}, "not valid JSON"},
		{[]string{"schedule", "create", "a/b", "--cron", "@daily", "--type", "t"}, "schedule name"},
		{[]string{"schedule", "create", "x", "--type", "t"}, "cron"},
		{[]string{"schedule", "show"}, "exactly one schedule name"},
	} {
		before := q.s.Requests().Snapshot().Total(store.OpPut)
		code, _, errs := q.run(tc.args...)
		require.Equal(t, exitUsage, code, "%v: %s", tc.args, errs)
		require.Contains(t, errs, tc.want, tc.args)
		require.Equal(t, before, q.s.Requests().Snapshot().Total(store.OpPut), "nothing written for %v", tc.args)
	}
}
