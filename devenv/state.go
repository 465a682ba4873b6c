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
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/qo-queue/qo/connect"
)

// Names in the data directory.
const (
	StateFile       = connect.DevStateFile
	CredentialsFile = "credentials.json"
	GatewayDir      = "gateway"
	// LogFile is where qo dev logs when it runs on a terminal; the
	// environment itself writes no log file.
	LogFile = "dev.log"
)

// EnvDataDir overrides the per-user data directory, for qo dev and for
// Discover.
const EnvDataDir = connect.EnvDevDataDir

// StateFormat is the version of state.json's shape.
const StateFormat = connect.DevStateFormat

// State is what a running dev environment publishes in state.json:
// everything another process needs to talk to its bucket. Package connect
// reads it (without linking the gateway); this package writes it.
type State = connect.DevState

// credentials are the embedded gateway's root credentials.
type credentials struct {
	AccessKey string `json:"access_key_id"`
	SecretKey string `json:"secret_access_key"`
}

// DataDir resolves the data directory: explicit (qo dev's --data-dir or
// QO_DEV_DATA_DIR) when given, else the per-user default (see the package
// documentation). The result is absolute.
func DataDir(explicit string) (string, error) { return connect.DevDataDir(explicit) }

// ReadState reads dir's state.json. It reports fs.ErrNotExist when no dev
// environment published one. The state may be stale (a crash leaves it
// behind): Running also checks that its process and endpoint are alive.
func ReadState(dir string) (*State, error) { return connect.ReadDevState(dir) }

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

// Running returns the state of the dev environment running on dir, if any:
// its state file exists, its pid is alive and its endpoint answers.
func Running(ctx context.Context, dir string) (*State, bool) { return connect.RunningDev(ctx, dir) }

// Discover returns the state of a running dev environment (pid alive and
// endpoint answering) in the data directory QO_DEV_DATA_DIR names, else
// the per-user default.
func Discover() (*State, bool) { return connect.DiscoverDev(context.Background()) }

// InUse returns the state of the dev environment of another live process
// that uses dir, if any (its endpoint need not answer: it may be starting
// or stopping).
func InUse(dir string) (*State, bool) {
	st, err := ReadState(dir)
	if err != nil || !st.ProcessAlive() || st.PID == os.Getpid() {
		return nil, false
	}
	return st, true
}
