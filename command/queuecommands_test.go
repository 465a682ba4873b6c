package command

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/urfave/cli/v2"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/store/memstore"
	"github.com/qo-queue/qo/store/s3store"
	"github.com/qo-queue/qo/store/storetest"
)

// queueCLI runs qo commands against one in-memory bucket.
type queueCLI struct {
	t *testing.T
	s *memstore.Store
}

func newQueueCLI(t *testing.T) *queueCLI {
	s := memstore.New()
	oldQ, oldI := queueStore, initStore
	queueStore = func(*cli.Context) (store.Store, error) { return s, nil }
	initStore = queueStore
	t.Cleanup(func() { queueStore, initStore = oldQ, oldI })
	return &queueCLI{t: t, s: s}
}

func (q *queueCLI) run(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = runApp(append([]string{"qo"}, args...), &out, &errb)
	return code, out.String(), errb.String()
}

func (q *queueCLI) ok(args ...string) string {
	q.t.Helper()
	code, out, errs := q.run(args...)
	require.Equal(q.t, 0, code, "qo %s: %s", strings.Join(args, " "), errs)
	return out
}

func (q *queueCLI) task(args ...string) *queue.Task {
	q.t.Helper()
	var task queue.Task
	require.NoError(q.t, json.Unmarshal([]byte(q.ok(append(args, "--json")...)), &task))
	return &task
}

func (q *queueCLI) puts() int64 { return q.s.Requests().Snapshot().Total(store.OpPut) }

// These tests swap the package-level store opener, so they do not run in
// parallel.

func TestQueueCommandsFlow(t *testing.T) {
	q := newQueueCLI(t)

	code, _, errs := q.run("status", "0b6f4c2e-8d1a-4f7e-9c3b-2a5d6e7f8a9b")
	require.Equal(t, exitStorage, code)
	require.Contains(t, errs, "qo init")

	out := q.ok("init")
	require.Contains(t, out, "16 shards")
	require.Contains(t, q.ok("init"), "already initialised")
	code, _, errs = q.run("init", "--shard-chars", "2")
	require.Equal(t, exitConflict, code)
	require.Contains(t, errs, "--shard-chars 1")

	id := strings.TrimSpace(q.ok("submit", "--type", "send_email", "--input", `{"to":"ann@example.com"}`))
	_, err := queue.ParseID(id)
	require.NoError(t, err)

	task := q.task("status", id)
	require.Equal(t, queue.StatusPending, task.Status)
	require.JSONEq(t, `{"to":"ann@example.com"}`, string(task.Input))
	human := q.ok("status", id)
	for _, want := range []string{"id:", id, "send_email", "pending", "available:", `{"to":"ann@example.com"}`} {
		require.Contains(t, human, want)
	}

	// Delayed: the countdown shows.
	later := q.task("submit", "--type", "report", "--delay", "1h", "--retries", "0", "--timeout", "30s")
	require.Equal(t, 0, later.MaxRetries)
	require.Equal(t, 30, later.TimeoutSeconds)
	require.Contains(t, q.ok("status", later.ID.String()), "(in 1h0m0s)")

	// list: JSON shape and human table.
	var page struct {
		Tasks      []*queue.Task `json:"tasks"`
		NextCursor string        `json:"next_cursor"`
		Malformed  []any         `json:"malformed"`
		Stale      []string      `json:"stale_index_entries"`
	}
	require.NoError(t, json.Unmarshal([]byte(q.ok("list", "--json")), &page))
	require.Len(t, page.Tasks, 2)
	require.Empty(t, page.NextCursor)
	require.NoError(t, json.Unmarshal([]byte(q.ok("list", "--json", "--limit", "1")), &page))
	require.Len(t, page.Tasks, 1)
	require.NotEmpty(t, page.NextCursor)
	require.NoError(t, json.Unmarshal([]byte(q.ok("list", "--json", "--limit", "1", "--cursor", page.NextCursor)), &page))
	require.Len(t, page.Tasks, 1)
	table := q.ok("list", "--status", "pending")
	require.Contains(t, table, "ID")
	require.Contains(t, table, id)
	require.Contains(t, table, "available in 1h0m0s")

	// cancel, replay, archive.
	require.Contains(t, q.ok("cancel", id, "--reason", "no longer needed"), "pending -> cancelled")
	task = q.task("status", id)
	require.Equal(t, "no longer needed", task.CancelReason)
	code, _, errs = q.run("cancel", id)
	require.Equal(t, exitConflict, code)
	require.Contains(t, errs, "invalid transition")
	task = q.task("replay", id)
	require.Equal(t, queue.StatusPending, task.Status)
	code, _, _ = q.run("archive", id)
	require.Equal(t, exitConflict, code)
	q.ok("cancel", id)
	require.Contains(t, q.ok("archive", id), "cancelled -> archived")

	// history.
	var hist struct {
		ID     string `json:"id"`
		Events []struct {
			Event string       `json:"event"`
			Rev   int64        `json:"rev"`
			Task  *queue.Task  `json:"task"`
			Stat  queue.Status `json:"status"`
		} `json:"events"`
	}
	require.NoError(t, json.Unmarshal([]byte(q.ok("history", id, "--json")), &hist))
	var names []string
	for _, e := range hist.Events {
		names = append(names, e.Event)
	}
	require.Equal(t, []string{"enqueued", "cancelled", "replayed", "cancelled", "archived"}, names)
	h := q.ok("history", id)
	require.Contains(t, h, "REV")
	require.Contains(t, h, "replayed")

	// Idempotency keys.
	first := q.task("submit", "--type", "charge", "--input", `{"n":1}`, "--idempotency-key", "k1")
	code, out, errs = q.run("submit", "--type", "charge", "--input", `{"n":1}`, "--idempotency-key", "k1")
	require.Equal(t, 0, code)
	require.Equal(t, first.ID.String(), strings.TrimSpace(out))
	require.Contains(t, errs, "already exists")
	code, _, errs = q.run("submit", "--type", "charge", "--input", `{"n":2}`, "--idempotency-key", "k1")
	require.Equal(t, exitConflict, code)
	require.Contains(t, errs, "different input")

	// Not found.
	code, _, _ = q.run("status", "0b6f4c2e-8d1a-4f7e-9c3b-2a5d6e7f8a9b")
	require.Equal(t, exitNotFound, code)
	code, _, _ = q.run("history", "0b6f4c2e-8d1a-4f7e-9c3b-2a5d6e7f8a9b")
	require.Equal(t, exitNotFound, code)
}

func TestQueueCommandsBadInput(t *testing.T) {
	q := newQueueCLI(t)
	q.ok("init")
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"status", "nope"}, "not a task id"},
		{[]string{"status"}, "exactly one task id"},
		{[]string{"history", "1234"}, "not a task id"},
		{[]string{"cancel", "x-y"}, "not a task id"},
		{[]string{"submit", "--input", "{}"}, "--type is required"},
		{[]string{"submit", "--type", "a b"}, "contains"},
		{[]string{"submit", "--type", "t", "--input", "{nope"}, "not valid JSON"},
		{[]string{"submit", "--type", "t", "--input", "{}", "--input-file", "x"}, "not both"},
		{[]string{"submit", "--type", "t", "--input-file", "/does/not/exist"}, "--input-file"},
		{[]string{"submit", "--type", "t", "--at", "tomorrow"}, "RFC 3339"},
		{[]string{"submit", "--type", "t", "--at", "2030-01-01T00:00:00Z", "--delay", "1h"}, "not both"},
		{[]string{"submit", "--type", "t", "--retries", "-1"}, "negative"},
		{[]string{"submit", "--type", "t", "--timeout", "10ms"}, "1s minimum"},
		{[]string{"submit", "--type", "t", "--bogus"}, "flag provided but not defined"},
		{[]string{"list", "--status", "done"}, "unknown status"},
		{[]string{"list", "--limit", "0"}, "--limit"},
		{[]string{"list", "--shard", "zz"}, "--shard"},
		{[]string{"list", "--cursor", "garbage"}, "cursor"},
		{[]string{"init", "--shard-chars", "3"}, "--shard-chars"},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			before := q.puts()
			code, out, errs := q.run(tc.args...)
			require.Equal(t, exitUsage, code, "stdout %q stderr %q", out, errs)
			require.Contains(t, errs, tc.want)
			require.Equal(t, 1, strings.Count(strings.TrimSpace(errs), "\n")+1, "one line: %q", errs)
			require.Equal(t, before, q.puts(), "nothing written")
		})
	}
}

// TestQueueCommandsMinIO drives the commands through the real connection
// code against the test S3 server.
func TestQueueCommandsMinIO(t *testing.T) {
	bucket := storetest.BucketName()
	cfg := storetest.S3Config(t, bucket)
	t.Setenv("AWS_ACCESS_KEY_ID", cfg.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", cfg.SecretKey)
	t.Setenv("S3_ENDPOINT", cfg.Endpoint)
	t.Setenv("S3_BUCKET", bucket)
	t.Setenv("S3_REGION", cfg.Region)
	s, err := s3store.New(t.Context(), cfg)
	require.NoError(t, err)
	t.Cleanup(func() { storetest.RemoveBucket(t, s) })
	q := &queueCLI{t: t}

	code, _, errs := q.run("init")
	require.Equal(t, exitStorage, code)
	require.Contains(t, errs, "--create-bucket")
	code, _, errs = q.run("submit", "--type", "t")
	require.Equal(t, exitStorage, code, errs)

	require.Contains(t, q.ok("init", "--create-bucket", "--shard-chars", "2"), "256 shards")
	on, err := s.Versioning(t.Context())
	require.NoError(t, err)
	require.True(t, on, "init turned versioning on")
	rules, err := s.Lifecycle(t.Context())
	require.NoError(t, err)
	require.NotEmpty(t, rules)

	task := q.task("submit", "--type", "resize", "--input", `{"w":64}`, "--at", "2030-01-02T03:04:05Z")
	require.Len(t, task.Shard, 2)
	got := q.task("status", task.ID.String())
	require.Equal(t, task.RequestID, got.RequestID)
	require.Contains(t, q.ok("list", "--status", "pending"), task.ID.String())
	require.Contains(t, q.ok("cancel", task.ID.String()), "pending -> cancelled")
	require.Contains(t, q.ok("history", task.ID.String()), "cancelled")
}
