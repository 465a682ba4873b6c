package command

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

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
	t   *testing.T
	s   *memstore.Store
	env Env // opens s
}

func newQueueCLI(t *testing.T) *queueCLI {
	s := memstore.New()
	return &queueCLI{t: t, s: s, env: storeEnv(s)}
}

// cli is q as a cliEnv (no queue handle of its own).
func (q *queueCLI) cli() *cliEnv { return &cliEnv{t: q.t, s: q.s, env: q.env} }

func (q *queueCLI) run(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = runIn(q.env, append([]string{"qo"}, args...), &out, &errb)
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

func TestQueueCommandsBadInput(t *testing.T) {
	t.Parallel()
	q := newQueueCLI(t)
	q.ok("init")
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"status", "nope"}, "not a task id"},
		{[]string{"status"}, "exactly one task id"},
		{[]string{"history", "1234g"}, "not a task id"},
		{[]string{"cancel", "x-y"}, "not a task id"},
		{[]string{"submit", "--input", "{}"}, "missing --type"},
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

// ignoringStore is a server that answers success where it should refuse:
// it ignores If-None-Match and If-Match, or does not apply versioning.
type ignoringStore struct {
	*memstore.Store
	conditions, versioning bool
}

func (s *ignoringStore) Put(ctx context.Context, key string, body []byte, cond store.Condition) (store.PutResult, error) {
	if s.conditions {
		cond = store.Condition{}
	}
	return s.Store.Put(ctx, key, body, cond)
}

func (s *ignoringStore) EnableVersioning(ctx context.Context) error {
	if s.versioning {
		return nil
	}
	return s.Store.EnableVersioning(ctx)
}

// qo init and run-worker refuse a server that ignores conditional writes
// or bucket settings, with the doctor's finding and exit code 5.
func TestInitAndWorkerRefuseAServerThatIgnoresRequests(t *testing.T) {
	t.Parallel()
	q := newQueueCLI(t)
	q.env.InitSettleTime = time.Millisecond
	opener := func(s store.Store) func(*cli.Context) (store.Store, error) {
		return func(*cli.Context) (store.Store, error) { return s, nil }
	}

	lying := &ignoringStore{Store: q.s, conditions: true}
	q.env.OpenInitStore = opener(lying)
	code, _, errs := q.run("init")
	require.Equal(t, exitStorage, code, errs)
	require.Contains(t, errs, "ignored If-None-Match")
	require.Contains(t, errs, "docs/providers.md")
	code, _, errs = q.run("init", "--json")
	require.Equal(t, exitStorage, code, errs)
	require.Contains(t, errs, `{"error":{"code":"storage_unsafe","message":"init: the storage server does not honour conditional writes`)
	_, err := q.s.Get(t.Context(), queue.ConfigKey)
	require.ErrorIs(t, err, store.ErrNotFound, "no queue on an unsafe server")

	// A queue made elsewhere; a worker on the unsafe server refuses to start.
	q.env.OpenInitStore = opener(q.s)
	q.ok("init")
	q.env.OpenStore = opener(lying)
	code, _, errs = q.run("run-worker", "--builtins", "--no-monitor")
	require.Equal(t, exitStorage, code, errs)
	require.Contains(t, errs, "ignored If-None-Match")

	// Versioning the server says it enabled but did not.
	fresh := &ignoringStore{Store: memstore.New(memstore.WithoutVersioning()), versioning: true}
	q.env.OpenInitStore = opener(fresh)
	code, _, errs = q.run("init")
	require.Equal(t, exitStorage, code, errs)
	require.Contains(t, errs, "versioning is still off")
}
