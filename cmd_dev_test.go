package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/store/memstore"
	"github.com/qo-queue/qo/worker"
)

func TestDefaultDevDataDir(t *testing.T) {
	t.Parallel()
	homeOK := func() (string, error) { return "/home/ann", nil }
	homeErr := func() (string, error) { return "", errors.New("no home") }
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i+1 < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	tests := []struct {
		name    string
		goos    string
		getenv  func(string) string
		home    func() (string, error)
		want    string
		wantErr string
	}{
		{"xdg", "linux", env("XDG_DATA_HOME", "/data/ann"), homeOK, filepath.Join("/data/ann", "qo", "dev"), ""},
		{"no xdg", "linux", env(), homeOK, filepath.Join("/home/ann", ".local", "share", "qo", "dev"), ""},
		{"relative xdg is ignored", "linux", env("XDG_DATA_HOME", "rel/dir"), homeOK, filepath.Join("/home/ann", ".local", "share", "qo", "dev"), ""},
		{"darwin follows the unix rule", "darwin", env(), homeOK, filepath.Join("/home/ann", ".local", "share", "qo", "dev"), ""},
		{"no home", "linux", env(), homeErr, "", "--data-dir"},
		{"windows", "windows", env("LocalAppData", `C:\Users\ann\AppData\Local`), homeOK, filepath.Join(`C:\Users\ann\AppData\Local`, "qo", "dev"), ""},
		{"windows without LocalAppData", "windows", env(), homeOK, filepath.Join("/home/ann", "AppData", "Local", "qo", "dev"), ""},
		{"windows ignores XDG", "windows", env("XDG_DATA_HOME", "/x", "LocalAppData", `D:\l`), homeOK, filepath.Join(`D:\l`, "qo", "dev"), ""},
		{"windows nothing", "windows", env(), homeErr, "", "--data-dir"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := defaultDevDataDir(tt.goos, tt.getenv, tt.home)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestDevDataDirExplicitIsAbsolute(t *testing.T) {
	t.Parallel()
	got, err := devDataDir("  some/rel  ")
	require.NoError(t, err)
	require.True(t, filepath.IsAbs(got), got)
	require.Equal(t, "rel", filepath.Base(got))
}

func testDevState(endpoint string, pid int) *devState {
	return &devState{
		Endpoint: endpoint, Bucket: "qo-dev", Region: "us-east-1",
		AccessKey: "QODEVKEY", SecretKey: "secret", PID: pid,
		StartedAt: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC),
	}
}

func TestDevStateRoundTrip(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	_, err := readDevState(dir)
	require.ErrorIs(t, err, os.ErrNotExist)

	st := testDevState("http://127.0.0.1:9470", 4242)
	require.NoError(t, writeDevState(dir, st))
	got, err := readDevState(dir)
	require.NoError(t, err)
	want := *st
	want.Format = devStateFormat
	want.DataDir = dir
	require.Equal(t, &want, got)

	if runtime.GOOS != "windows" {
		fi, err := os.Stat(filepath.Join(dir, devStateFile))
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "the state file holds the secret key")
	}
	// The documented shape other tools may read.
	raw, err := os.ReadFile(filepath.Join(dir, devStateFile))
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m))
	for _, k := range []string{"format", "endpoint", "bucket", "region", "access_key_id", "secret_access_key", "pid", "started_at"} {
		require.Contains(t, m, k)
	}

	// Another server's state is left alone; our own is removed.
	require.NoError(t, removeDevState(dir, 1))
	_, err = readDevState(dir)
	require.NoError(t, err)
	require.NoError(t, removeDevState(dir, 4242))
	_, err = readDevState(dir)
	require.ErrorIs(t, err, os.ErrNotExist)
	require.NoError(t, removeDevState(dir, 4242), "removing twice is fine")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Empty(t, entries, "no temporary files are left behind")
}

func TestReadDevStateRejectsBadFiles(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, body, want string
	}{
		{"not json", "{", "not valid JSON"},
		{"incomplete", `{"format":1,"endpoint":"http://x"}`, "incomplete"},
		{"other format", `{"format":9,"endpoint":"http://x","bucket":"b","access_key_id":"a","secret_access_key":"s","pid":1}`, "another qo version"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(dir, devStateFile), []byte(tt.body), 0o600))
			_, err := readDevState(dir)
			require.ErrorContains(t, err, tt.want)
			_, ok := runningDevIn(context.Background(), dir)
			require.False(t, ok)
		})
	}
}

func TestDevCredentialsGeneratedOnce(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	first, err := loadDevCredentials(dir)
	require.NoError(t, err)
	require.Len(t, first.AccessKey, 20)
	require.True(t, strings.HasPrefix(first.AccessKey, "QODEV"))
	require.Len(t, first.SecretKey, 40)
	again, err := loadDevCredentials(dir)
	require.NoError(t, err)
	require.Equal(t, first, again, "credentials survive a restart")
	if runtime.GOOS != "windows" {
		fi, err := os.Stat(filepath.Join(dir, devCredentialsFile))
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	}
	other, err := loadDevCredentials(t.TempDir())
	require.NoError(t, err)
	require.NotEqual(t, first, other, "each data directory gets its own credentials")

	bad := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(bad, devCredentialsFile), []byte(`{"access_key_id":""}`), 0o600))
	_, err = loadDevCredentials(bad)
	require.ErrorContains(t, err, "--reset")
}

// deadPID returns the pid of a process that has exited (and been reaped).
func deadPID(t *testing.T) int {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(exe, "-test.run=^$")
	require.NoError(t, cmd.Run())
	return cmd.Process.Pid
}

func TestProcessAlive(t *testing.T) {
	t.Parallel()
	require.True(t, processAlive(os.Getpid()))
	require.False(t, processAlive(0))
	require.False(t, processAlive(-1))
	require.False(t, processAlive(deadPID(t)))
}

func TestRunningDevIn(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusForbidden) // like S3 to an unsigned request
	}))
	t.Cleanup(srv.Close) // after the parallel subtests
	closed := httptest.NewServer(http.NotFoundHandler())
	closedURL := closed.URL
	closed.Close()
	dead := deadPID(t)

	tests := []struct {
		name  string
		state *devState
		want  bool
	}{
		{"alive and answering", testDevState(srv.URL, os.Getpid()), true},
		{"process gone", testDevState(srv.URL, dead), false},
		{"endpoint not answering", testDevState(closedURL, os.Getpid()), false},
		{"no state file", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			if tt.state != nil {
				require.NoError(t, writeDevState(dir, tt.state))
			}
			st, ok := runningDevIn(context.Background(), dir)
			require.Equal(t, tt.want, ok)
			if ok {
				require.Equal(t, tt.state.Endpoint, st.Endpoint)
				require.Equal(t, dir, st.DataDir)
			}
		})
	}
}

// TestDiscoverDev uses QO_DEV_DATA_DIR, the way other processes find a dev
// server, so it cannot run in parallel.
func TestDiscoverDev(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusForbidden)
	}))
	defer srv.Close()
	dir := t.TempDir()
	t.Setenv(envDevDataDir, dir)

	_, ok := discoverDev()
	require.False(t, ok, "no state file")

	require.NoError(t, writeDevState(dir, testDevState(srv.URL, os.Getpid())))
	st, ok := discoverDev()
	require.True(t, ok)
	cfg := st.storeConfig()
	require.Equal(t, srv.URL, cfg.Endpoint)
	require.Equal(t, "qo-dev", cfg.Bucket)
	require.Equal(t, "us-east-1", cfg.Region)
	require.Equal(t, "QODEVKEY", cfg.AccessKey)
	require.Equal(t, "secret", cfg.SecretKey)
	require.True(t, cfg.PathStyle)

	srv.Close()
	_, ok = discoverDev()
	require.False(t, ok, "a server that stopped answering is not running")

	// The per-user default when QO_DEV_DATA_DIR is unset.
	t.Setenv(envDevDataDir, "")
	xdg := t.TempDir()
	t.Setenv("XDG_DATA_HOME", xdg)
	t.Setenv("LocalAppData", xdg)
	got, err := devDataDir("")
	require.NoError(t, err)
	require.Equal(t, filepath.Join(xdg, "qo", "dev"), got)
}

func TestWipeDevDataKeepsForeignFiles(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		foreign bool
	}{{"only qo dev data", false}, {"with a foreign file", true}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), "dev")
			require.NoError(t, os.MkdirAll(filepath.Join(dir, devGatewayDir, "buckets", "qo-dev"), 0o700))
			_, err := loadDevCredentials(dir)
			require.NoError(t, err)
			require.NoError(t, writeDevState(dir, testDevState("http://127.0.0.1:1", 1)))
			require.NoError(t, os.WriteFile(filepath.Join(dir, devLogFile), []byte("log"), 0o600))
			require.NoError(t, os.WriteFile(filepath.Join(dir, "."+devStateFile+".tmp123"), nil, 0o600))
			if tt.foreign {
				require.NoError(t, os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("mine"), 0o600))
			}
			require.NoError(t, wipeDevData(dir))
			entries, err := os.ReadDir(dir)
			if !tt.foreign {
				require.ErrorIs(t, err, os.ErrNotExist, "an emptied data directory is removed")
				return
			}
			require.NoError(t, err)
			require.Len(t, entries, 1)
			require.Equal(t, "notes.txt", entries[0].Name())
		})
	}
}

func TestDevEnvLines(t *testing.T) {
	t.Parallel()
	st := testDevState("http://127.0.0.1:9470", 1)
	require.Equal(t, []string{
		"export S3_ENDPOINT=http://127.0.0.1:9470 S3_BUCKET=qo-dev AWS_ACCESS_KEY_ID=QODEVKEY AWS_SECRET_ACCESS_KEY=secret AWS_REGION=us-east-1",
	}, devEnvLines(st, "linux"))
	require.Equal(t, []string{
		`$env:S3_ENDPOINT="http://127.0.0.1:9470"`, `$env:S3_BUCKET="qo-dev"`,
		`$env:AWS_ACCESS_KEY_ID="QODEVKEY"`, `$env:AWS_SECRET_ACCESS_KEY="secret"`, `$env:AWS_REGION="us-east-1"`,
	}, devEnvLines(st, "windows"))
}

// runApp shares the command tree: tests calling it do not run in parallel.
func TestDevFlagErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"addr without port", []string{"--addr", "127.0.0.1"}, "invalid --addr"},
		{"addr bad port", []string{"--addr", "127.0.0.1:99999"}, "port must be a number"},
		{"bucket", []string{"--bucket", "Bad_Bucket"}, "invalid --bucket"},
		{"concurrency", []string{"--concurrency", "0"}, "invalid --concurrency"},
		{"demo rate zero", []string{"--demo-rate", "0"}, "invalid --demo-rate"},
		{"demo rate too high", []string{"--demo-rate", "1000"}, "invalid --demo-rate"},
		{"exec", []string{"--exec", "noequals"}, "invalid --exec"},
		{"exec twice", []string{"--exec", "a=/bin/true", "--exec", "a=/bin/false"}, "given twice"},
		{"shutdown timeout", []string{"--shutdown-timeout", "soon"}, "invalid --shutdown-timeout"},
		{"argument", []string{"extra"}, "takes no arguments"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			args := append([]string{"qo", "dev", "--data-dir", t.TempDir()}, tt.args...)
			code := runApp(args, &out, &errOut)
			require.Equal(t, exitUsage, code, errOut.String())
			require.Contains(t, errOut.String(), tt.want)
			require.Equal(t, 1, strings.Count(errOut.String(), "\n"), "one line: %q", errOut.String())
		})
	}
}

func TestCheckDevAddrBusy(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	err = checkDevAddr(l.Addr().String())
	require.Error(t, err)
	require.Equal(t, exitConflict, exitCode(err))
	require.Contains(t, err.Error(), "--addr")
	require.Contains(t, err.Error(), "another 'qo dev' may be running")

	free, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := free.Addr().String()
	require.NoError(t, free.Close())
	require.NoError(t, checkDevAddr(addr))
	require.NoError(t, checkDevAddr("127.0.0.1:0"))
}

func TestDevResetRefusesWhileRunning(t *testing.T) {
	dir := t.TempDir()
	// The state names a live process other than this one (our parent).
	require.NoError(t, writeDevState(dir, testDevState("http://127.0.0.1:1", os.Getppid())))
	var out, errOut bytes.Buffer
	code := runApp([]string{"qo", "dev", "--reset", "--yes", "--data-dir", dir, "--addr", "127.0.0.1:0"}, &out, &errOut)
	require.Equal(t, exitConflict, code, errOut.String())
	require.Contains(t, errOut.String(), "stop it before --reset")
	_, err := os.Stat(filepath.Join(dir, devStateFile))
	require.NoError(t, err, "nothing was deleted")
}

func TestDemoCycle(t *testing.T) {
	t.Parallel()
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	builtins := worker.Builtins()
	kinds := map[string]bool{}
	for n := 0; n < len(demoCycle); n++ {
		req := demoRequest(n, now)
		require.Contains(t, builtins, req.Type, "demo tasks run on the built-in handlers")
		require.True(t, json.Valid(req.Input), "input %s", req.Input)
		require.NotNil(t, req.MaxRetries)
		var in struct {
			Mode string `json:"mode"`
		}
		_ = json.Unmarshal(req.Input, &in)
		switch {
		case !req.AvailableAt.IsZero():
			require.True(t, req.AvailableAt.After(now))
			kinds["delayed"] = true
		case req.Type == worker.BuiltinFail && in.Mode == "permanent":
			kinds["permanent"] = true
		case req.Type == worker.BuiltinFail:
			require.Positive(t, *req.MaxRetries, "a retryable demo failure is retried")
			kinds["retryable"] = true
		case req.Type == worker.BuiltinSleep:
			kinds["sleep"] = true
		case req.Type == worker.BuiltinEcho:
			kinds["echo"] = true
		}
	}
	require.Len(t, kinds, 5, "every kind of demo task is in the cycle: %v", kinds)
	require.Equal(t, demoRequest(0, now).Input, demoRequest(len(demoCycle), now).Input, "the cycle repeats")
}

func TestCountsLine(t *testing.T) {
	t.Parallel()
	by := func(p, r, c, f, x, a int) map[queue.Status]int {
		return map[queue.Status]int{queue.StatusPending: p, queue.StatusRunning: r, queue.StatusCompleted: c,
			queue.StatusFailed: f, queue.StatusCancelled: x, queue.StatusArchived: a}
	}
	recent := []queue.MinuteCount{{Completed: 3, Failed: 1}, {Completed: 2}}
	tests := []struct {
		name  string
		stats queue.Stats
		want  string
	}{
		{"empty", queue.Stats{ByStatus: by(0, 0, 0, 0, 0, 0), Recent: make([]queue.MinuteCount, 15)},
			"pending 0  running 0  failed 0  |  last 15m: completed 0, failed 0"},
		{"delayed", queue.Stats{ByStatus: by(2, 1, 1, 1, 0, 0), Delayed: 1, Recent: recent},
			"pending 2 (1 later)  running 1  failed 1  |  last 2m: completed 5, failed 1"},
		{"partial", queue.Stats{ByStatus: by(1, 0, 0, 0, 0, 0), Partial: true, Recent: recent},
			"pending 1  running 0  failed 0  |  last 2m: completed 5, failed 1  (lower bounds)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, countsLine(tt.stats))
		})
	}
}

// corsStore records SetCORS calls and answers with err.
type corsStore struct {
	*memstore.Store
	err     error
	origins []string
}

func (s *corsStore) SetCORS(ctx context.Context, origins []string) error {
	s.origins = origins
	return s.err
}

func TestPrepareDevQueue(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		corsErr error
		wantErr string
	}{
		{"cors set", nil, ""},
		{"cors not supported", fmt.Errorf("put bucket cors: %w", store.ErrNotSupported), ""},
		{"cors failed", errors.New("boom"), "set CORS"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s := &corsStore{Store: memstore.New(), err: tt.corsErr}
			log := slog.New(slog.DiscardHandler)
			q, err := prepareDevQueue(ctx, s, "qo-dev", log)
			require.Equal(t, []string{"*"}, s.origins)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, 1, q.Config().ShardChars)
			task, _, err := q.Submit(ctx, queue.SubmitRequest{Type: "echo"})
			require.NoError(t, err)

			// A restart opens the same queue.
			again, err := prepareDevQueue(ctx, s, "qo-dev", log)
			require.NoError(t, err)
			got, err := again.Get(ctx, task.ID)
			require.NoError(t, err)
			require.Equal(t, queue.StatusPending, got.Status)
		})
	}
}

// A dev server whose data an older qo wrote is converted in place.
func TestPrepareDevQueueMigrates(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := &corsStore{Store: memstore.New()}
	_, err := s.Put(ctx, queue.ConfigKey, []byte(`{"format":1,"shard_chars":1,"created_at":"2026-01-01T00:00:00Z"}`), store.Condition{})
	require.NoError(t, err)
	q, err := prepareDevQueue(ctx, s, "qo-dev", slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	require.Equal(t, queue.LayoutVersion, q.Config().Format)
}

// TestDevRefusesListeningBeyondLoopback: qo dev serves its root keys and
// an open CORS rule, so an address other machines reach needs
// --insecure-listen, and then it says so loudly.
func TestDevRefusesListeningBeyondLoopback(t *testing.T) {
	// Hold the port: should qo dev get past the check it fails at once
	// ("in use") instead of starting a server.
	l, err := net.Listen("tcp", "0.0.0.0:0")
	require.NoError(t, err)
	defer l.Close()
	addr := l.Addr().String() // [::]:PORT or 0.0.0.0:PORT
	_, port, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	addr = "0.0.0.0:" + port

	run := func(args ...string) (int, string) {
		var out, errOut bytes.Buffer
		code := runApp(append([]string{"qo", "dev", "--no-tui", "--data-dir", t.TempDir(), "--addr", addr}, args...), &out, &errOut)
		return code, errOut.String()
	}
	code, stderr := run()
	require.Equal(t, exitUsage, code, stderr)
	require.Contains(t, stderr, "refusing to listen on "+addr)
	require.Contains(t, stderr, "127.0.0.1", "names the fix")
	require.Contains(t, stderr, "--insecure-listen")
	require.Contains(t, stderr, "QO_DEV_INSECURE_LISTEN")
	require.Equal(t, 1, strings.Count(stderr, "\n"), "one line: %q", stderr)

	code, stderr = run("--insecure-listen")
	require.Equal(t, exitConflict, code, "past the check, the held port stops it: %s", stderr)
	require.Contains(t, stderr, "WARNING")
	require.Contains(t, stderr, addr)

	t.Setenv("QO_DEV_INSECURE_LISTEN", "true")
	code, stderr = run()
	require.Equal(t, exitConflict, code, stderr)
	require.Contains(t, stderr, "WARNING")
}

func TestCheckListenAddr(t *testing.T) {
	t.Parallel()
	tests := []struct {
		addr     string
		loopback bool
	}{
		{"127.0.0.1:9470", true},
		{"127.0.0.2:0", true},
		{"localhost:9470", true},
		{"[::1]:9470", true},
		{"0.0.0.0:9470", false},
		{"[::]:9470", false},
		{"192.168.1.20:9470", false},
		{"dev-box.internal:9470", false},
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			t.Parallel()
			warning, err := checkListenAddr("qo dev", tt.addr, false, envDevInsecureListen)
			require.Empty(t, warning)
			if tt.loopback {
				require.NoError(t, err)
			} else {
				require.Error(t, err)
				require.Equal(t, exitUsage, exitCode(err))
				require.Contains(t, err.Error(), "refusing to listen on "+tt.addr)
				require.Contains(t, err.Error(), "--insecure-listen ("+envDevInsecureListen+"=true)")
			}

			warning, err = checkListenAddr("qo dev", tt.addr, true, envDevInsecureListen)
			require.NoError(t, err)
			if tt.loopback {
				require.Empty(t, warning, "loopback needs no warning, flag or not")
			} else {
				require.Contains(t, warning, "WARNING")
				require.Contains(t, warning, tt.addr)
			}
		})
	}
	_, err := checkListenAddr("qo dev", "no-port", false, envDevInsecureListen)
	require.Error(t, err)
}

// The hidden qo gateway command applies the same rule before starting
// anything.
func TestGatewayRefusesListeningBeyondLoopback(t *testing.T) {
	var out, errOut bytes.Buffer
	code := runApp([]string{"qo", "gateway", "--data-dir", t.TempDir(), "--addr", "0.0.0.0:0"}, &out, &errOut)
	require.Equal(t, exitUsage, code, errOut.String())
	require.Contains(t, errOut.String(), "QO_GATEWAY_INSECURE_LISTEN")
	require.Empty(t, out.String())
}
