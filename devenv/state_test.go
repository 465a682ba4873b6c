package devenv

import (
	"context"
	"encoding/json"
	"errors"
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
)

func TestDefaultDataDir(t *testing.T) {
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
			got, err := defaultDataDir(tt.goos, tt.getenv, tt.home)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestDataDirExplicitIsAbsolute(t *testing.T) {
	t.Parallel()
	got, err := DataDir("  some/rel  ")
	require.NoError(t, err)
	require.True(t, filepath.IsAbs(got), got)
	require.Equal(t, "rel", filepath.Base(got))
}

func testState(endpoint string, pid int) *State {
	return &State{
		Endpoint: endpoint, Bucket: "qo-dev", Region: "us-east-1",
		AccessKey: "QODEVKEY", SecretKey: "secret", PID: pid,
		StartedAt: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC),
	}
}

func TestStateRoundTrip(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	_, err := ReadState(dir)
	require.ErrorIs(t, err, os.ErrNotExist)

	st := testState("http://127.0.0.1:9470", 4242)
	require.NoError(t, writeState(dir, st))
	got, err := ReadState(dir)
	require.NoError(t, err)
	want := *st
	want.Format = StateFormat
	want.DataDir = dir
	require.Equal(t, &want, got)

	if runtime.GOOS != "windows" {
		fi, err := os.Stat(filepath.Join(dir, StateFile))
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "the state file holds the secret key")
	}
	// The documented shape other tools may read.
	raw, err := os.ReadFile(filepath.Join(dir, StateFile))
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m))
	for _, k := range []string{"format", "endpoint", "bucket", "region", "access_key_id", "secret_access_key", "pid", "started_at"} {
		require.Contains(t, m, k)
	}

	// Another server's state is left alone; our own is removed.
	require.NoError(t, removeState(dir, 1))
	_, err = ReadState(dir)
	require.NoError(t, err)
	require.NoError(t, removeState(dir, 4242))
	_, err = ReadState(dir)
	require.ErrorIs(t, err, os.ErrNotExist)
	require.NoError(t, removeState(dir, 4242), "removing twice is fine")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Empty(t, entries, "no temporary files are left behind")
}

func TestReadStateRejectsBadFiles(t *testing.T) {
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
			require.NoError(t, os.WriteFile(filepath.Join(dir, StateFile), []byte(tt.body), 0o600))
			_, err := ReadState(dir)
			require.ErrorContains(t, err, tt.want)
			_, ok := Running(context.Background(), dir)
			require.False(t, ok)
		})
	}
}

func TestCredentialsGeneratedOnce(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	first, err := loadCredentials(dir)
	require.NoError(t, err)
	require.Len(t, first.AccessKey, 20)
	require.True(t, strings.HasPrefix(first.AccessKey, "QODEV"))
	require.Len(t, first.SecretKey, 40)
	again, err := loadCredentials(dir)
	require.NoError(t, err)
	require.Equal(t, first, again, "credentials survive a restart")
	if runtime.GOOS != "windows" {
		fi, err := os.Stat(filepath.Join(dir, CredentialsFile))
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	}
	other, err := loadCredentials(t.TempDir())
	require.NoError(t, err)
	require.NotEqual(t, first, other, "each data directory gets its own credentials")

	bad := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(bad, CredentialsFile), []byte(`{"access_key_id":""}`), 0o600))
	_, err = loadCredentials(bad)
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

func TestRunning(t *testing.T) {
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
		state *State
		want  bool
	}{
		{"alive and answering", testState(srv.URL, os.Getpid()), true},
		{"process gone", testState(srv.URL, dead), false},
		{"endpoint not answering", testState(closedURL, os.Getpid()), false},
		{"no state file", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			if tt.state != nil {
				require.NoError(t, writeState(dir, tt.state))
			}
			st, ok := Running(context.Background(), dir)
			require.Equal(t, tt.want, ok)
			if ok {
				require.Equal(t, tt.state.Endpoint, st.Endpoint)
				require.Equal(t, dir, st.DataDir)
			}
		})
	}
}

// TestDiscover uses QO_DEV_DATA_DIR, the way other processes find a dev
// server, so it cannot run in parallel.
func TestDiscover(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusForbidden)
	}))
	defer srv.Close()
	dir := t.TempDir()
	t.Setenv(EnvDataDir, dir)

	_, ok := Discover()
	require.False(t, ok, "no state file")

	require.NoError(t, writeState(dir, testState(srv.URL, os.Getpid())))
	st, ok := Discover()
	require.True(t, ok)
	cfg := st.StoreConfig()
	require.Equal(t, srv.URL, cfg.Endpoint)
	require.Equal(t, "qo-dev", cfg.Bucket)
	require.Equal(t, "us-east-1", cfg.Region)
	require.Equal(t, "QODEVKEY", cfg.AccessKey)
	require.Equal(t, "secret", cfg.SecretKey)
	require.True(t, cfg.PathStyle)

	srv.Close()
	_, ok = Discover()
	require.False(t, ok, "a server that stopped answering is not running")

	// The per-user default when QO_DEV_DATA_DIR is unset.
	t.Setenv(EnvDataDir, "")
	xdg := t.TempDir()
	t.Setenv("XDG_DATA_HOME", xdg)
	t.Setenv("LocalAppData", xdg)
	got, err := DataDir("")
	require.NoError(t, err)
	require.Equal(t, filepath.Join(xdg, "qo", "dev"), got)
}
