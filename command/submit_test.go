package command

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store/storetest"
)

func TestSubmitPriorityAndExpiry(t *testing.T) {
	t.Parallel()
	q := newQueueCLI(t)
	q.ok("init")
	task := q.task("submit", "--type", "job", "--priority", "high", "--expires-in", "10m")
	require.Equal(t, queue.PriorityHigh, task.Priority)
	require.NotNil(t, task.ExpiresAt)
	// --expires-in counts from available_at, both from one clock reading.
	require.Equal(t, task.AvailableAt.Add(10*time.Minute), *task.ExpiresAt)
	out := q.ok("status", task.ID.String())
	require.Contains(t, out, "priority:")
	require.Contains(t, out, "high")
	require.Contains(t, out, "expires:")
	require.Contains(t, q.ok("list"), "PRIORITY")

	// A task nobody started in time: qo wait reports it expired, exit 6.
	// The sweep runs on a clock just past the task's deadline.
	short := q.task("submit", "--type", "nobody", "--expires-in", "1ms")
	qq, err := queue.Open(context.Background(), q.s, queue.Options{Clock: storetest.NewClock(short.ExpiresAt.Add(time.Millisecond))})
	require.NoError(t, err)
	res, _, err := qq.Recovery().Sweep(context.Background(), "", 0, 0)
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

func TestSubmitMetadata(t *testing.T) {
	t.Parallel()
	q := newQueueCLI(t)
	q.ok("init")
	task := q.task("submit", "--type", "job", "--metadata", "tenant=acme", "--metadata", "tracestate=a=1,b=2")
	want := map[string]string{"tenant": "acme", "tracestate": "a=1,b=2"}
	require.Equal(t, want, task.Metadata, "one entry per flag, commas and all")

	got := q.task("status", task.ID.String())
	require.Equal(t, want, got.Metadata)
	out := q.ok("status", task.ID.String())
	require.Regexp(t, `metadata:\s+tenant=acme`, out)
	require.Regexp(t, `metadata:\s+tracestate=a=1,b=2`, out)
	require.Contains(t, q.ok("history", task.ID.String()), "metadata tenant=acme tracestate=a=1,b=2")

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--metadata", "tenant"}, "want KEY=VALUE"},
		{[]string{"--metadata", "a b=1"}, `metadata key "a b" contains " "`},
		{[]string{"--metadata", "k=1", "--metadata", "k=2"}, `key "k" given twice`},
		{[]string{"--metadata", "k=" + strings.Repeat("v", queue.MaxMetadataBytes)}, "at most 4096"},
		{[]string{"--metadata", "k=1", "--file", "-"}, `give each line or step a "metadata" field`},
	} {
		before := q.puts()
		code, _, errs := q.run(append([]string{"submit", "--type", "job"}, tc.args...)...)
		require.Equal(t, exitUsage, code, "%v: %s", tc.args, errs)
		require.Contains(t, errs, tc.want)
		require.Equal(t, before, q.puts(), "nothing written for %v", tc.args)
	}
}
