package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store/storetest"
)

// tsClientDir holds the TypeScript client example: its package.json pins
// the generator (openapi-typescript), the client (openapi-fetch) and tsc.
const tsClientDir = "../examples/ts-client"

// TestTypeScriptClient shows that the OpenAPI document makes a working
// client in another language: it generates TypeScript types from
// openapi.json (the generator refuses a document it cannot read),
// typechecks and compiles examples/ts-client/src/main.ts against them,
// and runs it against the API on 127.0.0.1: it submits a task, reads it
// back and lists it. It needs node and npm (the test command installs
// them; the packages come from the npm registry, or its cache, through
// npm ci).
func TestTypeScriptClient(t *testing.T) {
	t.Parallel()
	for _, tool := range []string{"node", "npm", "npx"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("*** %s not found: SKIPPING the generated TypeScript client test (install Node.js 20 or later with npm; scripts/test.sh does) ***", tool)
		}
	}
	if testing.Short() {
		t.Skip("-short: the generated TypeScript client test runs npm ci")
	}
	dir, err := filepath.Abs(tsClientDir)
	require.NoError(t, err)
	run := func(wd string, name string, args ...string) string {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir = wd
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		began := time.Now()
		err := cmd.Run()
		t.Logf("%s %v: %s", name, args, time.Since(began).Round(time.Millisecond))
		require.NoError(t, err, "%s %v in %s:\n%s%s", name, args, wd, out.String(), errb.String())
		return out.String()
	}
	run(dir, "npm", "ci", "--no-audit", "--no-fund", "--loglevel=error")

	// Build in a scratch copy, so the test leaves the tree as it was.
	work := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(work, "src"), 0o755))
	for _, f := range []string{"package.json", "tsconfig.json", "src/main.ts"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(work, f), b, 0o644))
	}
	require.NoError(t, os.Symlink(filepath.Join(dir, "node_modules"), filepath.Join(work, "node_modules")))
	spec, err := filepath.Abs("openapi.json")
	require.NoError(t, err)
	run(work, "npx", "--no-install", "openapi-typescript", spec, "-o", "src/qo.d.ts")
	run(work, "npx", "--no-install", "tsc", "-p", ".")

	const token = "ts-client-token"
	e := newEnv(t, storetest.Backends()[0], Options{Token: token})
	out := run(work, "node", "dist/main.js", e.srv.URL, token)
	var got struct {
		Submitted struct {
			ID         string `json:"id"`
			Status     string `json:"status"`
			MaxRetries int    `json:"max_retries"`
		} `json:"submitted"`
		Read struct {
			ID     string          `json:"id"`
			Status string          `json:"status"`
			Input  json.RawMessage `json:"input"`
		} `json:"read"`
		Listed  []string `json:"listed"`
		Missing struct {
			Status int    `json:"status"`
			Code   string `json:"code"`
		} `json:"missing"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &got), "the client's output: %s", out)
	require.Equal(t, "pending", got.Submitted.Status)
	require.Equal(t, 2, got.Submitted.MaxRetries)
	require.Equal(t, got.Submitted.ID, got.Read.ID)
	require.JSONEq(t, `{"path":"cat.jpg"}`, string(got.Read.Input))
	require.Contains(t, got.Listed, got.Submitted.ID)
	require.Equal(t, 404, got.Missing.Status)
	require.Equal(t, "not_found", got.Missing.Code)

	// The task the client submitted is in the queue as it said.
	task, err := e.q.Get(context.Background(), uuid.MustParse(got.Submitted.ID))
	require.NoError(t, err)
	require.Equal(t, "resize", task.Type)
	require.Equal(t, queue.StatusPending, task.Status)
}
