package devenv

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/internal/testutil"
	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store/gateway"
	"github.com/qo-queue/qo/worker"
)

func TestMain(m *testing.M) {
	gateway.MaybeRunChild() // the embedded gateway runs in a child process of the test binary
	os.Exit(m.Run())
}

// startEnv starts an environment on dir on a free port, closed at the end
// of the test.
func startEnv(t *testing.T, dir string, cfg Config) *Env {
	t.Helper()
	cfg.DataDir, cfg.Addr = dir, "127.0.0.1:0"
	env, err := Start(t.Context(), cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = env.Close() })
	return env
}

// stateFileExists reports whether dir holds a state file.
func stateFileExists(t *testing.T, dir string) bool {
	t.Helper()
	_, err := os.Stat(filepath.Join(dir, StateFile))
	if os.IsNotExist(err) {
		return false
	}
	require.NoError(t, err)
	return true
}

// TestStartRunsTasks starts an environment, runs a task through its worker,
// closes it and starts it again on the same data.
func TestStartRunsTasks(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dir := t.TempDir()
	// Start's context bounds the start only: the environment outlives it.
	startCtx, cancel := context.WithCancel(ctx)
	env, err := Start(startCtx, Config{DataDir: dir, Addr: "127.0.0.1:0", Concurrency: 2, Version: "test"})
	cancel()
	require.NoError(t, err)
	t.Cleanup(func() { _ = env.Close() })

	st := env.State()
	require.Equal(t, DefaultBucket, st.Bucket)
	require.Equal(t, os.Getpid(), st.PID)
	require.Equal(t, WorkerID, env.WorkerID())
	require.Subset(t, env.Types(), []string{worker.BuiltinEcho, worker.BuiltinSleep, worker.BuiltinFail})
	running, ok := Running(ctx, dir)
	require.True(t, ok, "the state file names a live process and an answering endpoint")
	require.Equal(t, st.Endpoint, running.Endpoint)

	_, err = Start(ctx, Config{DataDir: dir, Addr: "127.0.0.1:0"})
	require.ErrorIs(t, err, ErrRunning, "one environment per data directory")

	q := env.Queue()
	task, _, err := q.Submit(ctx, queue.SubmitRequest{Type: worker.BuiltinEcho, Input: json.RawMessage(`{"hi":1}`)})
	require.NoError(t, err)
	testutil.Eventually(t, func() bool {
		got, err := q.Get(ctx, task.ID)
		require.NoError(t, err)
		return got.Status == queue.StatusCompleted
	}, "the echo task to complete")
	done, err := q.Get(ctx, task.ID)
	require.NoError(t, err)
	require.JSONEq(t, `{"hi":1}`, string(done.Output))

	require.NoError(t, env.Close())
	require.NoError(t, env.Close(), "closing twice is fine")
	require.False(t, stateFileExists(t, dir), "Close removes the state file")
	_, ok = Running(ctx, dir)
	require.False(t, ok)

	// A restart finds the same credentials and tasks; the demo submits.
	again := startEnv(t, dir, Config{Demo: true, DemoRate: MaxDemoRate})
	require.Equal(t, st.AccessKey, again.State().AccessKey)
	got, err := again.Queue().Get(ctx, task.ID)
	require.NoError(t, err)
	require.Equal(t, queue.StatusCompleted, got.Status)
	testutil.Eventually(t, func() bool {
		page, err := again.Queue().List(ctx, queue.ListQuery{Limit: 10})
		require.NoError(t, err)
		return len(page.Tasks) > 1
	}, "a demo task")
	require.NoError(t, again.Close())
	require.False(t, stateFileExists(t, dir))
}

func TestStartRefusesBadConfig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"relative data directory", Config{DataDir: "rel/dir"}, "not an absolute path"},
		{"bucket", Config{Bucket: "Bad_Bucket"}, "bucket"},
		{"concurrency", Config{Concurrency: -1}, "concurrency"},
		{"demo rate", Config{DemoRate: MaxDemoRate + 1}, "demo rate"},
		// Found once the worker is built, after the gateway started.
		{"limit of a type no handler serves", Config{Limits: map[string]int{"nosuch": 1}}, "nosuch"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			cfg := tt.cfg
			if cfg.DataDir == "" {
				cfg.DataDir = dir
			}
			cfg.Addr = "127.0.0.1:0"
			_, err := Start(t.Context(), cfg)
			require.ErrorIs(t, err, ErrConfig)
			require.ErrorContains(t, err, tt.want)
			require.False(t, stateFileExists(t, dir), "nothing is left running")
		})
	}
}

func TestStartAddrInUse(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	dir := filepath.Join(t.TempDir(), "dev")
	_, err = Start(t.Context(), Config{DataDir: dir, Addr: l.Addr().String()})
	require.ErrorIs(t, err, ErrAddrInUse)
	_, err = os.Stat(dir)
	require.ErrorIs(t, err, os.ErrNotExist, "refused before anything was created")
}

// An environment whose gateway exits stops by itself: Done, then Close
// report why.
func TestGatewayExitStopsTheEnvironment(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	env := startEnv(t, dir, Config{})
	p, err := os.FindProcess(env.gw.PID())
	require.NoError(t, err)
	require.NoError(t, p.Kill())
	select {
	case <-env.Done():
	case <-time.After(testutil.WaitLimit):
		t.Fatal("the environment did not notice its gateway exit")
	}
	require.ErrorIs(t, env.Err(), ErrGatewayExited)
	require.ErrorIs(t, env.Close(), ErrGatewayExited)
	require.False(t, stateFileExists(t, dir))
}
