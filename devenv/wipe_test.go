package devenv

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestWipe(t *testing.T) {
	t.Parallel()
	dead := deadPID(t)
	tests := []struct {
		name    string
		pid     int  // of the state file
		foreign bool // a file the environment did not create
		inUse   bool
	}{
		{"only dev environment data", dead, false, false},
		{"with a foreign file", dead, true, false},
		{"in use by a live process", os.Getppid(), false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), "dev")
			require.NoError(t, os.MkdirAll(filepath.Join(dir, GatewayDir, "buckets", "qo-dev"), 0o700))
			_, err := loadCredentials(dir)
			require.NoError(t, err)
			require.NoError(t, writeState(dir, testState("http://127.0.0.1:1", tt.pid)))
			require.NoError(t, os.WriteFile(filepath.Join(dir, LogFile), []byte("log"), 0o600))
			require.NoError(t, os.WriteFile(filepath.Join(dir, "."+StateFile+".tmp123"), nil, 0o600))
			if tt.foreign {
				require.NoError(t, os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("mine"), 0o600))
			}
			err = Wipe(dir)
			entries, readErr := os.ReadDir(dir)
			switch {
			case tt.inUse:
				require.ErrorIs(t, err, ErrRunning)
				require.NoError(t, readErr)
				require.Len(t, entries, 5, "nothing was deleted")
			case tt.foreign:
				require.NoError(t, err)
				require.NoError(t, readErr)
				require.Len(t, entries, 1)
				require.Equal(t, "notes.txt", entries[0].Name())
			default:
				require.NoError(t, err)
				require.ErrorIs(t, readErr, os.ErrNotExist, "an emptied data directory is removed")
			}
		})
	}
}
