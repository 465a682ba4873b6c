package devenv

// The state of a running dev environment, as other processes find it (see
// the package documentation for the data directory's layout).

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

// Names in the data directory.
const (
	StateFile       = "state.json"
	CredentialsFile = "credentials.json"
	GatewayDir      = "gateway"
	// LogFile is where qo dev logs when it runs on a terminal; the
	// environment itself writes no log file.
	LogFile = "dev.log"
)

// EnvDataDir overrides the per-user data directory, for qo dev and for
// Discover.
const EnvDataDir = "QO_DEV_DATA_DIR"

// StateFormat is the version of state.json's shape.
const StateFormat = 1

// probeTimeout bounds the check that a dev environment's endpoint answers.
const probeTimeout = time.Second

// State is what a running dev environment publishes in state.json:
// everything another process needs to talk to its bucket.
type State struct {
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
func (s *State) StoreConfig() s3store.Config {
	return s3store.Config{
		Endpoint:  s.Endpoint,
		Region:    s.Region,
		Bucket:    s.Bucket,
		AccessKey: s.AccessKey,
		SecretKey: s.SecretKey,
		PathStyle: true,
	}
}

// credentials are the embedded gateway's root credentials.
type credentials struct {
	AccessKey string `json:"access_key_id"`
	SecretKey string `json:"secret_access_key"`
}

// defaultDataDir returns the per-user data directory:
// %LocalAppData%\qo\dev on Windows, else $XDG_DATA_HOME/qo/dev or
// ~/.local/share/qo/dev. getenv and home are injected for tests.
func defaultDataDir(goos string, getenv func(string) string, home func() (string, error)) (string, error) {
	if goos == "windows" {
		if d := getenv("LocalAppData"); d != "" {
			return filepath.Join(d, "qo", "dev"), nil
		}
		h, err := home()
		if err != nil || h == "" {
			return "", fmt.Errorf("cannot find a data directory: %%LocalAppData%% is not set and the home directory is unknown: pass --data-dir DIR (or set %s)", EnvDataDir)
		}
		return filepath.Join(h, "AppData", "Local", "qo", "dev"), nil
	}
	// The XDG spec says a relative $XDG_DATA_HOME is invalid and ignored.
	if d := getenv("XDG_DATA_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "qo", "dev"), nil
	}
	h, err := home()
	if err != nil || h == "" {
		return "", fmt.Errorf("cannot find a data directory: $HOME is not set: pass --data-dir DIR (or set %s)", EnvDataDir)
	}
	return filepath.Join(h, ".local", "share", "qo", "dev"), nil
}

// DataDir resolves the data directory: explicit (qo dev's --data-dir or
// QO_DEV_DATA_DIR) when given, else the per-user default (see the package
// documentation). The result is absolute.
func DataDir(explicit string) (string, error) {
	dir := strings.TrimSpace(explicit)
	if dir == "" {
		var err error
		dir, err = defaultDataDir(runtime.GOOS, os.Getenv, os.UserHomeDir)
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

// ReadState reads dir's state.json. It reports fs.ErrNotExist when no dev
// environment published one. The state may be stale (a crash leaves it
// behind): Running also checks that its process and endpoint are alive.
func ReadState(dir string) (*State, error) {
	path := filepath.Join(dir, StateFile)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var st State
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("dev state %s is not valid JSON (%v): delete it if no qo dev runs", path, err)
	}
	if st.Format != StateFormat || st.Endpoint == "" || st.Bucket == "" || st.AccessKey == "" || st.SecretKey == "" || st.PID <= 0 {
		return nil, fmt.Errorf("dev state %s is incomplete or from another qo version: delete it if no qo dev runs", path)
	}
	st.DataDir = dir
	return &st, nil
}

// writeState publishes st in dir atomically (a reader never sees half a
// file), readable by the owner only: it holds the secret key.
func writeState(dir string, st *State) error {
	st.Format = StateFormat
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(filepath.Join(dir, StateFile), append(b, '\n'), 0o600)
}

// removeState removes dir's state.json if it still belongs to pid (a newer
// environment may have replaced it).
func removeState(dir string, pid int) error {
	st, err := ReadState(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err == nil && st.PID != pid:
		return nil
	}
	if err := os.Remove(filepath.Join(dir, StateFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
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

// loadCredentials returns the credentials kept in dir, generating and
// saving them (0600) on first use, so the endpoint's credentials stay
// valid across restarts.
func loadCredentials(dir string) (credentials, error) {
	path := filepath.Join(dir, CredentialsFile)
	b, err := os.ReadFile(path)
	if err == nil {
		var cr credentials
		if err := json.Unmarshal(b, &cr); err != nil || cr.AccessKey == "" || cr.SecretKey == "" {
			return cr, fmt.Errorf("dev credentials %s are unreadable: run 'qo dev --reset' to start over (this deletes the dev data), or delete that file", path)
		}
		return cr, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return credentials{}, fmt.Errorf("read dev credentials: %w", err)
	}
	cr, err := newCredentials()
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

// newCredentials returns a random key pair shaped like AWS's: a
// 20-character access key id and a 40-character secret.
func newCredentials() (credentials, error) {
	var id [8]byte
	var secret [20]byte
	if _, err := rand.Read(id[:]); err != nil {
		return credentials{}, fmt.Errorf("generate dev credentials: %w", err)
	}
	if _, err := rand.Read(secret[:]); err != nil {
		return credentials{}, fmt.Errorf("generate dev credentials: %w", err)
	}
	return credentials{
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

// Running returns the state of the dev environment running on dir, if any:
// its state file exists, its pid is alive and its endpoint answers.
func Running(ctx context.Context, dir string) (*State, bool) {
	st, err := ReadState(dir)
	if err != nil {
		return nil, false
	}
	if !processAlive(st.PID) || !endpointAnswers(ctx, st.Endpoint, probeTimeout) {
		return nil, false
	}
	return st, true
}

// Discover returns the state of a running dev environment (pid alive and
// endpoint answering) in the data directory QO_DEV_DATA_DIR names, else
// the per-user default. qo's commands call it when no S3 settings are
// given, so a developer's other terminals need no environment at all.
func Discover() (*State, bool) {
	dir, err := DataDir(os.Getenv(EnvDataDir))
	if err != nil {
		return nil, false
	}
	return Running(context.Background(), dir)
}

// InUse returns the state of the dev environment of another live process
// that uses dir, if any (its endpoint need not answer: it may be starting
// or stopping).
func InUse(dir string) (*State, bool) {
	st, err := ReadState(dir)
	if err != nil || !processAlive(st.PID) || st.PID == os.Getpid() {
		return nil, false
	}
	return st, true
}
