package command

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// qo submit and qo schedule create read the task fields with one flag set
// and check them with one validator: the same flags give the same errors,
// so a schedule is not accepted and then refused at every run.
func TestScheduleCreateChecksTaskAsSubmit(t *testing.T) {
	t.Parallel()
	q := newQueueCLI(t)
	q.ok("init")
	for _, tc := range []struct {
		name string
		args []string
		want string // "" accepted by both
	}{
		{"input not UTF-8", []string{"--input", "\"caf\xe9\""}, "--input is not valid UTF-8"},
		{"input not JSON", []string{"--input", "{"}, "--input is not valid JSON"},
		{"negative expiry", []string{"--expires-in", "-1s"}, "--expires-in -1s must be positive"},
		{"zero expiry", []string{"--expires-in", "0s"}, "--expires-in 0 must be positive"},
		{"sub-second expiry", []string{"--expires-in", "500ms"}, ""},
		{"short timeout", []string{"--timeout", "10ms"}, "--timeout 10ms is below the 1s minimum"},
		{"negative retries", []string{"--retries", "-1"}, "--retries -1 is negative"},
		{"bad priority", []string{"--priority", "urgent"}, `--priority: unknown priority "urgent"`},
		{"bad type", []string{"--type", "a b"}, `--type: task type "a b" contains " "`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for i, cmd := range [][]string{
				{"submit", "--type", "t"},
				{"schedule", "create", "s" + strings.ReplaceAll(tc.name, " ", "-"), "--cron", "@daily", "--type", "t"},
			} {
				args := append(append([]string{}, cmd...), tc.args...)
				code, _, errs := q.run(args...)
				if tc.want == "" {
					require.Equal(t, 0, code, "%v: %s", args, errs)
					continue
				}
				require.Equal(t, exitUsage, code, "%v: %s", args, errs)
				require.Contains(t, errs, tc.want, "command %d", i)
			}
		})
	}
}

// A schedule's expiry and timeout are whole seconds, rounded up as
// submit rounds its timeout: a sub-second expiry is not dropped.
func TestScheduleCreateRoundsDurationsUp(t *testing.T) {
	t.Parallel()
	q := newQueueCLI(t)
	q.ok("init")
	var s struct {
		Task struct {
			TimeoutSeconds      int `json:"timeout_seconds"`
			ExpiresAfterSeconds int `json:"expires_after_seconds"`
		} `json:"task"`
	}
	out := q.ok("schedule", "create", "r", "--cron", "@daily", "--type", "t", "--timeout", "1500ms", "--expires-in", "500ms", "--json")
	require.NoError(t, json.Unmarshal([]byte(out), &s), out)
	require.Equal(t, 2, s.Task.TimeoutSeconds)
	require.Equal(t, 1, s.Task.ExpiresAfterSeconds)
}
