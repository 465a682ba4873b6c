package devenv

import (
	"context"
	"encoding/json"
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
