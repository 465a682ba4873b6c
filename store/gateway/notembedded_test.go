package gateway_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/qo-queue/qo/store/gateway"
)

// The error a build without the gateway returns is one the qo command
// exits 2 on (a cli.ExitCoder) and that tells the user what to run instead.
func TestErrNotEmbedded(t *testing.T) {
	t.Parallel()
	var coder interface{ ExitCode() int }
	if !errors.As(gateway.ErrNotEmbedded, &coder) || coder.ExitCode() != 2 {
		t.Fatalf("ErrNotEmbedded: want an error with ExitCode 2")
	}
	for _, want := range []string{"built without the embedded S3 gateway", "qo dev from the release binary", "--endpoint"} {
		if !strings.Contains(gateway.ErrNotEmbedded.Error(), want) {
			t.Errorf("ErrNotEmbedded %q does not say %q", gateway.ErrNotEmbedded, want)
		}
	}
}

// TestStartWithoutTheGateway runs in builds with the tag nogateway
// (scripts/test.sh tests this package so): Start fails at once, before it
// looks at its options or touches the data directory.
func TestStartWithoutTheGateway(t *testing.T) {
	if gateway.Embedded {
		t.Skip("this build carries the gateway: go test -tags nogateway tests its absence")
	}
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data")
	tests := []struct {
		name string
		opts gateway.Options
	}{
		{"valid options", gateway.Options{DataDir: dir, AccessKey: "a", SecretKey: "b", Bucket: "qo-dev"}},
		{"no options", gateway.Options{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := gateway.Start(context.Background(), tt.opts)
			if g != nil || !errors.Is(err, gateway.ErrNotEmbedded) {
				t.Fatalf("Start: %v, %v; want nil, ErrNotEmbedded", g, err)
			}
		})
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Start made the data directory (stat: %v)", err)
	}
}
