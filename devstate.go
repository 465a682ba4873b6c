package main

// The state of a running `qo dev` server, as other qo processes find it.
//
// Layout of the dev data directory (see devDataDir):
//
//	credentials.json  the gateway's access key and secret, generated once (0600)
//	state.json        present only while a dev server runs (0600): endpoint,
//	                  bucket, credentials, region, pid, started_at
//	gateway/          the embedded S3 gateway's buckets and object versions
//	dev.log           the server's log when it runs on a terminal
//
// Invariant: state.json is written after the gateway answers and the queue
// exists, and removed on a clean exit. A crash leaves it behind, so a
// reader trusts it only while its pid is alive AND its endpoint answers
// (discoverDev); a stale file is overwritten by the next `qo dev`.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/qo-queue/qo/store/s3store"
)

// Names in the dev data directory.
const (
	devStateFile       = "state.json"
	devCredentialsFile = "credentials.json"
	devGatewayDir      = "gateway"
	devLogFile         = "dev.log"
)

// envDevDataDir overrides the dev data directory, for `qo dev` and for the
// discovery of a running dev server by other commands.
const envDevDataDir = "QO_DEV_DATA_DIR"

// devStateFormat is the version of state.json's shape.
const devStateFormat = 1

// devProbeTimeout bounds the check that a dev server's endpoint answers.
const devProbeTimeout = time.Second

// devState is what a running `qo dev` publishes in state.json: everything
// another process needs to talk to its bucket.
type devState struct {
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

// storeConfig is the S3 configuration that reaches the dev server's bucket.
func (s *devState) storeConfig() s3store.Config {
	return s3store.Config{
		Endpoint:  s.Endpoint,
		Region:    s.Region,
		Bucket:    s.Bucket,
		AccessKey: s.AccessKey,
		SecretKey: s.SecretKey,
		PathStyle: true,
	}
}

// devCredentials are the embedded gateway's root credentials.
type devCredentials struct {
	AccessKey string `json:"access_key_id"`
	SecretKey string `json:"secret_access_key"`
}

// defaultDevDataDir returns the per-user dev data directory:
// %LocalAppData%\qo\dev on Windows, else $XDG_DATA_HOME/qo/dev or
// ~/.local/share/qo/dev. getenv and home are injected for tests.
func defaultDevDataDir(goos string, getenv func(string) string, home func() (string, error)) (string, error) {
	if goos == "windows" {
		if d := getenv("LocalAppData"); d != "" {
			return filepath.Join(d, "qo", "dev"), nil
		}
		h, err := home()
		if err != nil || h == "" {
			return "", fmt.Errorf("cannot find a data directory: %%LocalAppData%% is not set and the home directory is unknown: pass --data-dir DIR (or set %s)", envDevDataDir)
		}
		return filepath.Join(h, "AppData", "Local", "qo", "dev"), nil
	}
	// The XDG spec says a relative $XDG_DATA_HOME is invalid and ignored.
	if d := getenv("XDG_DATA_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "qo", "dev"), nil
	}
	h, err := home()
	if err != nil || h == "" {
		return "", fmt.Errorf("cannot find a data directory: $HOME is not set: pass --data-dir DIR (or set %s)", envDevDataDir)
	}
	return filepath.Join(h, ".local", "share", "qo", "dev"), nil
}

// devDataDir resolves the dev data directory: explicit (the flag or
// QO_DEV_DATA_DIR) when given, else the per-user default. The result is
// absolute.
func devDataDir(explicit string) (string, error) {
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

// readDevState reads dir's state.json. It reports fs.ErrNotExist when no
// dev server published one.
func readDevState(dir string) (*devState, error) {
	path := filepath.Join(dir, devStateFile)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var st devState
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("dev state %s is not valid JSON (%v): delete it if no qo dev runs", path, err)
	}
	if st.Format != devStateFormat || st.Endpoint == "" || st.Bucket == "" || st.AccessKey == "" || st.SecretKey == "" || st.PID <= 0 {
		return nil, fmt.Errorf("dev state %s is incomplete or from another qo version: delete it if no qo dev runs", path)
	}
	st.DataDir = dir
	return &st, nil
}

// writeDevState publishes st in dir atomically (a reader never sees half a
// file), readable by the owner only: it holds the secret key.
func writeDevState(dir string, st *devState) error {
	st.Format = devStateFormat
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(filepath.Join(dir, devStateFile), append(b, '\n'), 0o600)
}

// removeDevState removes dir's state.json if it still belongs to pid (a
// newer server may have replaced it).
func removeDevState(dir string, pid int) error {
	st, err := readDevState(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err == nil && st.PID != pid:
		return nil
	}
	if err := os.Remove(filepath.Join(dir, devStateFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove dev state: %w", err)
	}
	return nil
}

// writeFileAtomic writes data to a temporary file next to path and renames
// it into place.
func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // a no-op once renamed
	if err := f.Chmod(perm); err != nil && runtime.GOOS != "windows" {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// loadDevCredentials returns the credentials kept in dir, generating and
// saving them (0600) on first use, so the printed environment lines stay
// valid across restarts.
func loadDevCredentials(dir string) (devCredentials, error) {
	path := filepath.Join(dir, devCredentialsFile)
	b, err := os.ReadFile(path)
	if err == nil {
		var cr devCredentials
		if err := json.Unmarshal(b, &cr); err != nil || cr.AccessKey == "" || cr.SecretKey == "" {
			return cr, fmt.Errorf("dev credentials %s are unreadable: run 'qo dev --reset' to start over (this deletes the dev data), or delete that file", path)
		}
		return cr, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return devCredentials{}, fmt.Errorf("read dev credentials: %w", err)
	}
	cr, err := newDevCredentials()
	if err != nil {
		return cr, err
	}
	b, err = json.MarshalIndent(cr, "", "  ")
	if err != nil {
		return cr, err
	}
	if err := writeFileAtomic(path, append(b, '\n'), 0o600); err != nil {
		return cr, fmt.Errorf("save dev credentials: %w", err)
	}
	return cr, nil
}

// newDevCredentials returns a random key pair shaped like AWS's: a
// 20-character access key id and a 40-character secret.
func newDevCredentials() (devCredentials, error) {
	var id [8]byte
	var secret [20]byte
	if _, err := rand.Read(id[:]); err != nil {
		return devCredentials{}, fmt.Errorf("generate dev credentials: %w", err)
	}
	if _, err := rand.Read(secret[:]); err != nil {
		return devCredentials{}, fmt.Errorf("generate dev credentials: %w", err)
	}
	return devCredentials{
		AccessKey: "QODEV" + strings.ToUpper(hex.EncodeToString(id[:]))[:15],
		SecretKey: hex.EncodeToString(secret[:]),
	}, nil
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

// runningDevIn returns the state of the dev server running on dir, if any:
// its state file exists, its pid is alive and its endpoint answers.
func runningDevIn(ctx context.Context, dir string) (*devState, bool) {
	st, err := readDevState(dir)
	if err != nil {
		return nil, false
	}
	if !processAlive(st.PID) || !endpointAnswers(ctx, st.Endpoint, devProbeTimeout) {
		return nil, false
	}
	return st, true
}

// discoverDev returns the state of a running `qo dev` server (pid alive and
// endpoint answering) in the dev data directory (QO_DEV_DATA_DIR, else the
// per-user default). Commands call it when no S3 settings are given, so a
// developer's other terminals need no environment at all.
func discoverDev() (*devState, bool) {
	dir, err := devDataDir(os.Getenv(envDevDataDir))
	if err != nil {
		return nil, false
	}
	return runningDevIn(context.Background(), dir)
}
