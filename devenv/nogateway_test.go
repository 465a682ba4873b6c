//go:build nogateway

package devenv

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/qo-queue/qo/store/gateway"
)

// TestStartWithoutGateway: a binary built without the gateway refuses to
// start a dev environment and leaves nothing on disk.
func TestStartWithoutGateway(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "dev")
	_, err := Start(t.Context(), Config{DataDir: dir})
	if !errors.Is(err, gateway.ErrNotEmbedded) {
		t.Fatalf("Start = %v, want ErrNotEmbedded", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Start created %s (stat: %v)", dir, err)
	}
}
