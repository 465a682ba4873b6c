package command

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/store"
)

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
