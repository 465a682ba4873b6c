package devenv

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Wipe deletes a dev environment's data from dir: every task, the
// credentials, the state file and the log. Files the environment did not
// create are left alone, so a mistaken directory cannot lose unrelated
// data; dir itself goes when nothing else is left in it. Wipe refuses
// (ErrRunning) while another live process uses dir.
func Wipe(dir string) error {
	if st, ok := InUse(dir); ok {
		return fmt.Errorf("%w: %s (pid %d, %s)", ErrRunning, dir, st.PID, st.Endpoint)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("reset: %w", err)
	}
	own := map[string]bool{StateFile: true, CredentialsFile: true, GatewayDir: true, LogFile: true}
	for _, e := range entries {
		name := e.Name()
		temp := strings.HasPrefix(name, "."+StateFile+".tmp") || strings.HasPrefix(name, "."+CredentialsFile+".tmp")
		if !own[name] && !temp {
			continue
		}
		if err := os.RemoveAll(filepath.Join(dir, name)); err != nil {
			return fmt.Errorf("reset: %w", err)
		}
	}
	_ = os.Remove(dir) // only succeeds when empty
	return nil
}
