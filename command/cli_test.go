package command

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"github.com/urfave/cli/v2"

	"github.com/qo-queue/qo/internal/testutil"
	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/store/s3store"
	"github.com/qo-queue/qo/store/storetest"
)

// Helpers shared by the command tests: qo run in this process, against a
// fresh queue on each test backend.

// runApp runs qo with args as the binary does, built as a development
// build.
func runApp(args []string, stdout, stderr io.Writer) int {
	return runIn(Env{}, args, stdout, stderr)
}

// runIn is runApp in env, its streams set to stdout and stderr.
func runIn(env Env, args []string, stdout, stderr io.Writer) int {
	env.Stdout, env.Stderr = stdout, stderr
	return Run(args, env, Build{})
}

// storeEnv is the Env of an app whose commands (qo init's too) open s.
func storeEnv(s store.Store) Env {
	open := func(*cli.Context) (store.Store, error) { return s, nil }
	return Env{OpenStore: open, OpenInitStore: open}
}

// cliEnv runs qo commands against one initialised queue on a test backend
// and drives the queue directly through q.
type cliEnv struct {
	t   *testing.T
	s   store.Store
	q   *queue.Queue
	env Env // the app's: the memstore backend's store opener
}

type cliResult struct {
	code           int
	stdout, stderr string
}

func (r cliResult) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
}

// forEachBackend runs fn against a fresh queue on every test backend: "mem"
// (the store opener swapped for a memstore) and "minio" (a fresh versioned
// bucket reached through the real connection code, configured by the
// environment as a user would).
func forEachBackend(t *testing.T, fn func(t *testing.T, e *cliEnv)) {
	for _, b := range storetest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			s := b.New(t)
			var env Env
			if s3, ok := s.(*s3store.Store); ok {
				cfg := storetest.S3Config(t, s3.Bucket())
				t.Setenv("AWS_ACCESS_KEY_ID", cfg.AccessKey)
				t.Setenv("AWS_SECRET_ACCESS_KEY", cfg.SecretKey)
				t.Setenv("AWS_PROFILE", "")
				t.Setenv("S3_ENDPOINT", cfg.Endpoint)
				t.Setenv("S3_BUCKET", s3.Bucket())
				t.Setenv("S3_REGION", cfg.Region)
			} else {
				env = storeEnv(s)
			}
			ctx := t.Context()
			_, err := queue.Init(ctx, s, 1)
			require.NoError(t, err)
			q, err := queue.Open(ctx, s, queue.Options{})
			require.NoError(t, err)
			fn(t, &cliEnv{t: t, s: s, q: q, env: env})
		})
	}
}

func (e *cliEnv) run(args ...string) cliResult {
	var out, errb bytes.Buffer
	code := runIn(e.env, append([]string{"qo"}, args...), &out, &errb)
	return cliResult{code: code, stdout: out.String(), stderr: errb.String()}
}

// runWithStdin runs qo with in as its standard input.
func (e *cliEnv) runWithStdin(in string, args ...string) cliResult {
	on := *e
	on.env.Stdin = strings.NewReader(in)
	return on.run(args...)
}

// onTerminal is e with its standard output and error taken for terminals.
func (e *cliEnv) onTerminal() *cliEnv {
	on := *e
	on.env.IsTerminal = func(io.Writer) bool { return true }
	return &on
}

func (e *cliEnv) counts() store.Counts {
	return e.s.(store.Counted).Requests().Snapshot()
}

func (e *cliEnv) submit(typ, input string, retries int) *queue.Task {
	e.t.Helper()
	req := queue.SubmitRequest{Type: typ, MaxRetries: &retries}
	if input != "" {
		req.Input = json.RawMessage(input)
	}
	task, created, err := e.q.Submit(e.t.Context(), req)
	require.NoError(e.t, err)
	require.True(e.t, created)
	return task
}

// claim takes the pending task id for worker. Like a worker, it tries
// again while the task is not available yet: on S3 the queue clock is an
// estimate from response dates that may step back a little.
func (e *cliEnv) claim(id uuid.UUID, worker string) *queue.Lease {
	e.t.Helper()
	var l *queue.Lease
	eventually(e.t, "claim of "+id.String(), func() bool {
		task, err := e.q.Get(e.t.Context(), id)
		require.NoError(e.t, err)
		require.Equal(e.t, queue.StatusPending, task.Status)
		entry, err := queue.ParseReadyKey(queue.ReadyKey(task))
		require.NoError(e.t, err)
		l, err = e.q.Claim(e.t.Context(), entry, worker)
		if errors.Is(err, queue.ErrConflict) && strings.Contains(err.Error(), "not available until") {
			return false
		}
		require.NoError(e.t, err)
		return true
	})
	return l
}

func (e *cliEnv) complete(id uuid.UUID) *queue.Task {
	e.t.Helper()
	task, err := e.q.Complete(e.t.Context(), e.claim(id, "w1"), json.RawMessage(`{"ok":true}`))
	require.NoError(e.t, err)
	return task
}

func (e *cliEnv) fail(id uuid.UUID, msg string) *queue.Task {
	e.t.Helper()
	task, err := e.q.Fail(e.t.Context(), e.claim(id, "w1"), msg)
	require.NoError(e.t, err)
	return task
}

// asyncRun is a qo command running in the background.
type asyncRun struct {
	t         *testing.T
	out, errb *testutil.Buffer
	done      chan int
}

// start runs qo in the background; the test waits for its exit at the end.
func (e *cliEnv) start(args ...string) *asyncRun {
	r := &asyncRun{t: e.t, out: &testutil.Buffer{}, errb: &testutil.Buffer{}, done: make(chan int, 1)}
	go func() { r.done <- runIn(e.env, append([]string{"qo"}, args...), r.out, r.errb) }()
	return r
}

// asyncLimit bounds every wait for a background command: generous, since
// the machine is shared, and only ever reached when the test fails anyway.
const asyncLimit = 60 * time.Second

// eventually waits for cond as testutil.Eventually does; what names what
// it waits for.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testutil.Eventually(t, cond, "%s", what)
}

// waitOutput waits until stdout contains every one of want.
func (r *asyncRun) waitOutput(want ...string) {
	r.t.Helper()
	eventually(r.t, fmt.Sprintf("output %q", want), func() bool {
		out := r.out.String()
		for _, w := range want {
			if !strings.Contains(out, w) {
				return false
			}
		}
		return true
	})
}

// exit waits for the command to end and returns its exit code.
func (r *asyncRun) exit() int {
	r.t.Helper()
	select {
	case code := <-r.done:
		return code
	case <-time.After(asyncLimit):
		r.t.Fatalf("command still running; stdout:\n%s\nstderr:\n%s", r.out, r.errb)
		return -1
	}
}
