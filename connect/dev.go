package connect

// The state file of a running `qo dev`, as other processes find it. The
// writer is package devenv; this side only reads, so a client finds a dev
// environment without linking the embedded S3 server.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/qo-queue/qo/store/s3store"
)

// DevStateFile is the name of the state file in a dev data directory.
const DevStateFile = "state.json"

// DevStateFormat is the version of the state file's shape.
const DevStateFormat = 1

// devProbeTimeout bounds the check that a dev environment's endpoint
// answers.
const devProbeTimeout = time.Second

// DevState is what a running `qo dev` publishes in its state file:
// everything another process needs to talk to its bucket.
type DevState struct {
	Format    int       `json:"format"`
	Endpoint  string    `json:"endpoint"`
	Bucket    string    `json:"bucket"`
	Region    string    `json:"region"`
	AccessKey string    `json:"access_key_id"`
	SecretKey string    `json:"secret_access_key"`
	PID       int       `json:"pid"`
	StartedAt time.Time `json:"started_at"`
	// DataDir is the directory this state was read from (not stored).
	DataDir string `json:"-"`
}

// StoreConfig is the S3 configuration that reaches the environment's
// bucket.
func (s *DevState) StoreConfig() s3store.Config {
	return s3store.Config{
		Endpoint:  s.Endpoint,
		Region:    s.Region,
		Bucket:    s.Bucket,
		AccessKey: s.AccessKey,
		SecretKey: s.SecretKey,
		PathStyle: true,
	}
}

// ProcessAlive reports whether the process that wrote the state still
// exists (it may be starting or stopping: Running also asks its endpoint).
func (s *DevState) ProcessAlive() bool { return processAlive(s.PID) }

// defaultDevDataDir returns the per-user data directory:
// %LocalAppData%\qo\dev on Windows, else $XDG_DATA_HOME/qo/dev or
// ~/.local/share/qo/dev. getenv and home are injected for tests.
func defaultDevDataDir(goos string, getenv func(string) string, home func() (string, error)) (string, error) {
	if goos == "windows" {
		if d := getenv("LocalAppData"); d != "" {
			return filepath.Join(d, "qo", "dev"), nil
		}
		h, err := home()
		if err != nil || h == "" {
			return "", fmt.Errorf("cannot find a data directory: %%LocalAppData%% is not set and the home directory is unknown: pass --data-dir DIR (or set %s)", EnvDevDataDir)
		}
		return filepath.Join(h, "AppData", "Local", "qo", "dev"), nil
	}
	// The XDG spec says a relative $XDG_DATA_HOME is invalid and ignored.
	if d := getenv("XDG_DATA_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "qo", "dev"), nil
	}
	h, err := home()
	if err != nil || h == "" {
		return "", fmt.Errorf("cannot find a data directory: $HOME is not set: pass --data-dir DIR (or set %s)", EnvDevDataDir)
	}
	return filepath.Join(h, ".local", "share", "qo", "dev"), nil
}

// DevDataDir resolves a dev data directory: explicit (qo dev's --data-dir
// or QO_DEV_DATA_DIR) when given, else the per-user default
// ($XDG_DATA_HOME/qo/dev or ~/.local/share/qo/dev; %LocalAppData%\qo\dev
// on Windows). The result is absolute.
func DevDataDir(explicit string) (string, error) {
	dir := strings.TrimSpace(explicit)
	if dir == "" {
		var err error
		dir, err = defaultDevDataDir(runtime.GOOS, os.Getenv, os.UserHomeDir)
		if err != nil {
			return "", err
		}
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("data directory %q: %w", dir, err)
	}
	return abs, nil
}

// ReadDevState reads dir's state file. It reports fs.ErrNotExist when no
// dev environment published one. The state may be stale (a crash leaves
// it behind): RunningDev also checks that its process and endpoint are
// alive.
func ReadDevState(dir string) (*DevState, error) {
	path := filepath.Join(dir, DevStateFile)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var st DevState
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("dev state %s is not valid JSON (%v): delete it if no qo dev runs", path, err)
	}
	if st.Format != DevStateFormat || st.Endpoint == "" || st.Bucket == "" || st.AccessKey == "" || st.SecretKey == "" || st.PID <= 0 {
		return nil, fmt.Errorf("dev state %s is incomplete or from another qo version: delete it if no qo dev runs", path)
	}
	st.DataDir = dir
	return &st, nil
}

// processAlive reports whether a process with this pid exists.
func processAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		return false // Windows: no such process
	}
	defer p.Release()
	if runtime.GOOS == "windows" {
		return true // FindProcess opened a handle to it
	}
	err = p.Signal(syscall.Signal(0))
	// EPERM: it exists but belongs to another user.
	return err == nil || errors.Is(err, os.ErrPermission)
}

// endpointAnswers reports whether an HTTP server answers at endpoint (any
// status counts: an unsigned request to S3 is refused, but answered).
func endpointAnswers(ctx context.Context, endpoint string, timeout time.Duration) bool {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, endpoint, nil)
	if err != nil {
		return false
	}
	client := &http.Client{
		// A dev server is on this machine: never go through a proxy.
		Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true},
	}
	resp, err := client.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return true
}

// RunningDev returns the state of the dev environment running on dir, if
// any: its state file exists, its pid is alive and its endpoint answers.
func RunningDev(ctx context.Context, dir string) (*DevState, bool) {
	st, err := ReadDevState(dir)
	if err != nil {
		return nil, false
	}
	if !processAlive(st.PID) || !endpointAnswers(ctx, st.Endpoint, devProbeTimeout) {
		return nil, false
	}
	return st, true
}

// DiscoverDev returns the state of a running dev environment (pid alive
// and endpoint answering) in the data directory QO_DEV_DATA_DIR names,
// else the per-user default. Settings.StoreConfig calls it when no bucket
// and no endpoint are given, so a developer's programs need no
// environment at all.
func DiscoverDev(ctx context.Context) (*DevState, bool) {
	dir, err := DevDataDir(os.Getenv(EnvDevDataDir))
	if err != nil {
		return nil, false
	}
	return RunningDev(ctx, dir)
}
