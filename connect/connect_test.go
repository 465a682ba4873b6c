package connect

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store/s3store"
)

// envOf is a lookup over a fixed environment.
func envOf(kv map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := kv[k]
		return v, ok
	}
}

func TestFromEnv(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		env  map[string]string
		want Settings
		err  string
	}{
		{"nothing", nil, Settings{}, ""},
		{"all set", map[string]string{
			EnvBucket: " jobs ", EnvEndpoint: "http://h:9000", EnvRegion: "eu-west-1", EnvAWSRegion: "us-west-2",
			EnvProfile: "ops", EnvPathStyle: "false", EnvAllowNoVersioning: "1",
		}, Settings{Bucket: "jobs", Endpoint: "http://h:9000", Region: "eu-west-1", Profile: "ops", PathStyleSet: true, AllowNoVersioning: true}, ""},
		{"AWS_REGION when S3_REGION is unset", map[string]string{EnvAWSRegion: "ap-south-1"}, Settings{Region: "ap-south-1"}, ""},
		{"path style on", map[string]string{EnvPathStyle: "true"}, Settings{PathStyle: true, PathStyleSet: true}, ""},
		{"empty path style is unset", map[string]string{EnvPathStyle: ""}, Settings{}, ""},
		{"allow no versioning spelled true", map[string]string{EnvAllowNoVersioning: "TRUE"}, Settings{AllowNoVersioning: true}, ""},
		{"allow no versioning other values", map[string]string{EnvAllowNoVersioning: "yes"}, Settings{}, ""},
		{"malformed path style", map[string]string{EnvPathStyle: "sometimes"}, Settings{}, "S3_PATH_STYLE=\"sometimes\" is not a boolean"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := fromEnv(envOf(tt.env))
			if tt.err != "" {
				require.ErrorContains(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestStoreConfig(t *testing.T) {
	t.Parallel()
	dev := &DevState{Endpoint: "http://127.0.0.1:9470", Bucket: "qo-dev", Region: "us-east-1", AccessKey: "K", SecretKey: "S", PID: 1}
	devCfg := s3store.Config{Endpoint: dev.Endpoint, Bucket: "qo-dev", Region: "us-east-1", AccessKey: "K", SecretKey: "S", PathStyle: true}
	tests := []struct {
		name     string
		settings Settings
		devRuns  bool
		want     s3store.Config
		err      error
	}{
		{"bucket on AWS", Settings{Bucket: "b", Region: "eu-west-1", Profile: "p"}, true,
			s3store.Config{Bucket: "b", Region: "eu-west-1", Profile: "p"}, nil},
		{"an endpoint turns path style on", Settings{Bucket: "b", Endpoint: "http://h:1"}, false,
			s3store.Config{Bucket: "b", Endpoint: "http://h:1", PathStyle: true}, nil},
		{"path style off explicitly", Settings{Bucket: "b", Endpoint: "http://h:1", PathStyleSet: true}, false,
			s3store.Config{Bucket: "b", Endpoint: "http://h:1"}, nil},
		{"path style on for AWS", Settings{Bucket: "b", PathStyle: true, PathStyleSet: true}, false,
			s3store.Config{Bucket: "b", PathStyle: true}, nil},
		{"nothing set: the running qo dev", Settings{}, true, devCfg, nil},
		{"nothing set, no qo dev", Settings{}, false, s3store.Config{}, ErrNoBucket},
		{"an endpoint without a bucket never falls back to qo dev", Settings{Endpoint: "http://h:1"}, true, s3store.Config{}, ErrNoBucket},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := tt.settings.storeConfig(func() (*DevState, bool) {
				if tt.devRuns {
					return dev, true
				}
				return nil, false
			})
			if tt.err != nil {
				require.ErrorIs(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

// writeDevState writes a state file the way qo dev does.
func writeDevState(t *testing.T, dir string, st DevState) {
	t.Helper()
	st.Format = DevStateFormat
	b, err := json.Marshal(st)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, DevStateFile), b, 0o600))
}

// TestDiscoverDev reads the state file from QO_DEV_DATA_DIR, the way a Go
// program finds qo dev; not parallel (it sets the environment).
func TestDiscoverDev(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusForbidden) // like S3 to an unsigned request
	}))
	defer srv.Close()
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	good := DevState{Endpoint: srv.URL, Bucket: "qo-dev", Region: "us-east-1", AccessKey: "QODEVKEY", SecretKey: "secret",
		PID: os.Getpid(), StartedAt: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)}
	gone := good
	gone.PID = deadPID(t)
	silent := good
	silent.Endpoint = closed.URL
	tests := []struct {
		name  string
		state *DevState
		raw   string
		found bool
	}{
		{"running", &good, "", true},
		{"no state file", nil, "", false},
		{"process gone", &gone, "", false},
		{"endpoint not answering", &silent, "", false},
		{"malformed file", nil, "{", false},
		{"incomplete file", nil, `{"format":1,"endpoint":"http://x"}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			t.Setenv(EnvDevDataDir, dir)
			if tt.state != nil {
				writeDevState(t, dir, *tt.state)
			}
			if tt.raw != "" {
				require.NoError(t, os.WriteFile(filepath.Join(dir, DevStateFile), []byte(tt.raw), 0o600))
			}
			st, ok := DiscoverDev(t.Context())
			require.Equal(t, tt.found, ok)
			cfg, err := Settings{}.StoreConfig(t.Context())
			if !tt.found {
				require.ErrorIs(t, err, ErrNoBucket)
				return
			}
			require.Equal(t, dir, st.DataDir)
			require.NoError(t, err)
			require.Equal(t, s3store.Config{Endpoint: srv.URL, Bucket: "qo-dev", Region: "us-east-1",
				AccessKey: "QODEVKEY", SecretKey: "secret", PathStyle: true}, cfg)
		})
	}
}

// TestOpenWithoutBucket: with nothing configured and no qo dev, Open says
// what to set.
func TestOpenWithoutBucket(t *testing.T) {
	t.Setenv(EnvDevDataDir, t.TempDir())
	_, err := Settings{}.Open(t.Context(), queue.Options{})
	require.ErrorIs(t, err, ErrNoBucket)
	require.ErrorContains(t, err, "set S3_BUCKET")
	require.ErrorContains(t, err, "qo dev")
}

// TestNoGatewayDependency: a program that connects with this package
// does not link the embedded S3 server (versitygw), which would add
// megabytes to a client.
func TestNoGatewayDependency(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs go list")
	}
	out, err := exec.CommandContext(t.Context(), "go", "list", "-deps", ".").CombinedOutput()
	require.NoError(t, err, "%s", out)
	deps := strings.Fields(string(out))
	require.Contains(t, deps, "github.com/qo-queue/qo/queue", "the dependency list is incomplete")
	for _, d := range deps {
		if strings.HasPrefix(d, "github.com/versity/") || d == "github.com/qo-queue/qo/store/gateway" || d == "github.com/qo-queue/qo/devenv" {
			t.Errorf("package connect depends on %s: it must read qo dev's state without linking the gateway", d)
		}
	}
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

func TestProcessAlive(t *testing.T) {
	t.Parallel()
	require.True(t, processAlive(os.Getpid()))
	require.False(t, processAlive(0))
	require.False(t, processAlive(-1))
	require.False(t, processAlive(deadPID(t)))
}
