// Package e2e drives the real qo binary, built once in TestMain.
//
// Set QO_E2E_BINARY to test a binary built elsewhere (e.g. a release
// build) instead of building one. Tests that need an S3 server read the
// QO_TEST_S3_* variables like every other test (scripts/test.sh sets them);
// the embedded gateway is started through the binary's hidden
// `qo gateway` command.
package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// qoBin is the path of the binary under test.
var qoBin string

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	if bin := os.Getenv("QO_E2E_BINARY"); bin != "" {
		qoBin = bin
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "qo-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	qoBin = filepath.Join(dir, "qo")
	if runtime.GOOS == "windows" {
		qoBin += ".exe"
	}
	build := exec.Command("go", "build", "-o", qoBin, ".")
	build.Dir = ".." // the root module: built as the release builds it
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: building qo failed: %v\n%s", err, out)
		return 1
	}
	return m.Run()
}

// result is the outcome of one qo run.
type result struct {
	code           int
	stdout, stderr string
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
}

// baseEnv is the test process's environment without anything that would
// point qo at a bucket or at credentials, plus an empty AWS configuration.
func baseEnv(t *testing.T) []string {
	t.Helper()
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "S3_") || strings.HasPrefix(name, "AWS_") ||
			strings.HasPrefix(name, "QO_GATEWAY_") || name == "QO_ALLOW_NO_VERSIONING" {
			continue
		}
		env = append(env, kv)
	}
	home := t.TempDir()
	return append(env,
		"AWS_CONFIG_FILE="+filepath.Join(home, "aws-config"),
		"AWS_SHARED_CREDENTIALS_FILE="+filepath.Join(home, "aws-credentials"),
		"AWS_EC2_METADATA_DISABLED=true",
	)
}

// qo runs the binary with env (VAR=value entries added to baseEnv) and args.
func qo(t *testing.T, env []string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, qoBin, args...)
	cmd.Env = append(baseEnv(t), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := result{stdout: stdout.String(), stderr: stderr.String()}
	var exitErr *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exitErr):
		r.code = exitErr.ExitCode()
	default:
		t.Fatalf("run qo %v: %v", args, err)
	}
	return r
}
