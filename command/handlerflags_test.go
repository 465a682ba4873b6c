package command

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/urfave/cli/v2"

	"github.com/qo-queue/qo/worker"
)

// workerSetupOf parses run-worker's flags the way the command does.
func workerSetupOf(t *testing.T, args ...string) (*workerSetup, error) {
	t.Helper()
	cmd := workerCommand(Build{})
	// As New does: without it urfave/cli adds its shared help command
	// to cmd and writes to it, a race between parallel tests.
	prepareCommand(cmd, true)
	var ws *workerSetup
	var err error
	cmd.Action = func(c *cli.Context) error { ws, err = workerSetupFromFlags(c); return nil }
	app := &cli.App{Commands: []*cli.Command{cmd}, Writer: &bytes.Buffer{}, ErrWriter: &bytes.Buffer{}}
	require.NoError(t, app.Run(append([]string{"qo", "run-worker", "--exec", "x=sh"}, args...)))
	return ws, err
}

// --env and --env-file become the exec handlers' options: names to pass
// through, NAME=VALUE entries (the file's first, so --env wins), commas
// kept in a value given on the command line. (Not parallel: it sets the
// process environment.)
func TestWorkerExecEnvFlags(t *testing.T) {
	file := filepath.Join(t.TempDir(), "handler.env")
	require.NoError(t, os.WriteFile(file, []byte("SMTP_HOST=mail.example.com\nGREETING=from file\n"), 0o600))

	ws, err := workerSetupOf(t, "--env", "DATABASE_URL", "--env", "GREETING=hello, world", "--env-file", file)
	require.NoError(t, err)
	require.Equal(t, []string{"DATABASE_URL"}, ws.execOpts.PassEnv)
	require.Equal(t, []string{"GREETING=from file", "SMTP_HOST=mail.example.com", "GREETING=hello, world"}, ws.execOpts.Env)

	t.Setenv("QO_EXEC_ENV", "DATABASE_URL, REDIS_URL,MODE=fast")
	t.Setenv("QO_EXEC_ENV_FILE", file)
	ws, err = workerSetupOf(t)
	require.NoError(t, err)
	require.Equal(t, []string{"DATABASE_URL", "REDIS_URL"}, ws.execOpts.PassEnv)
	require.Equal(t, []string{"GREETING=from file", "SMTP_HOST=mail.example.com", "MODE=fast"}, ws.execOpts.Env)

	ws, err = workerSetupOf(t, "--env", "ONLY_THIS")
	require.NoError(t, err)
	require.Equal(t, []string{"ONLY_THIS"}, ws.execOpts.PassEnv, "the command line replaces QO_EXEC_ENV")

	require.NoError(t, os.WriteFile(file, []byte("OK=1\nbad name=s3cret\n"), 0o600))
	_, err = workerSetupOf(t)
	require.ErrorContains(t, err, "invalid --env-file: env file "+file+": line 2:")
	require.NotContains(t, err.Error(), "s3cret")
	require.Equal(t, exitUsage, exitCode(err))
}

// A kill grace longer than the margins that keep two attempts of a task
// apart is refused before the worker connects, naming the bound and the
// fix.
func TestWorkerKillGraceBound(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args []string
		want string // "" when accepted
	}{
		{nil, ""},
		{[]string{"--dead-after", "4s", "--heartbeat-interval", "1s"}, ""}, // the default lowered to 1s
		{[]string{"--kill-grace", "5s"}, ""},
		{[]string{"--kill-grace", "10s", "--dead-after", "40s"}, ""},
		{[]string{"--kill-grace", "6s"}, "--kill-grace 6s is more than 5s, the most --dead-after 20s allows"},
		{[]string{"--kill-grace", "6s"}, "raise --dead-after to at least 24s"},
		{[]string{"--kill-grace", "30s"}, "lower --kill-grace to at most 5s (at most 10s with --dead-after 40s or more)"},
		{[]string{"--kill-grace", "11s", "--dead-after", "1m"}, "--kill-grace 11s is more than 10s, the most any --dead-after allows"},
		{[]string{"--kill-grace", "3s", "--dead-after", "10s", "--heartbeat-interval", "5s"}, "--kill-grace 3s is more than 2.5s, the most --dead-after 10s allows"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			t.Parallel()
			ws, err := workerSetupOf(t, tt.args...)
			if tt.want == "" {
				require.NoError(t, err)
				require.Equal(t, ws.execOpts.KillGrace, ws.opts.KillGrace, "the worker holds its exec handlers' kill grace")
				most, _ := worker.MaxKillGrace(ws.opts.DeadAfter)
				require.LessOrEqual(t, ws.opts.KillGrace, most)
				return
			}
			require.ErrorContains(t, err, tt.want)
			require.Equal(t, exitUsage, exitCode(err))
		})
	}
}

// The whole command refuses it too, before it needs a bucket.
func TestWorkerKillGraceRefused(t *testing.T) {
	t.Parallel()
	var stdout, stderr bytes.Buffer
	code := runApp([]string{"qo", "worker", "--kill-grace", "30s"}, &stdout, &stderr)
	require.Equal(t, exitUsage, code, "stderr: %s", stderr.String())
	require.Contains(t, stderr.String(), "invalid --kill-grace: --kill-grace 30s is more than 5s, the most --dead-after 20s allows")
}

// --concurrency defaults to what suits the machine or container (a worker
// in a container ran one task at a time before), and its help says so.
// (Not parallel: QO_CONCURRENCY is read from the environment.)
func TestWorkerConcurrencyDefault(t *testing.T) {
	t.Setenv("QO_CONCURRENCY", "")
	ws, err := workerSetupOf(t)
	require.NoError(t, err)
	require.Equal(t, worker.DefaultConcurrency(), ws.opts.Concurrency)
	require.GreaterOrEqual(t, ws.opts.Concurrency, worker.MinDefaultConcurrency)

	ws, err = workerSetupOf(t, "--concurrency", "2")
	require.NoError(t, err)
	require.Equal(t, 2, ws.opts.Concurrency)
	t.Setenv("QO_CONCURRENCY", "3")
	ws, err = workerSetupOf(t)
	require.NoError(t, err)
	require.Equal(t, 3, ws.opts.Concurrency)
	_, err = workerSetupOf(t, "--concurrency", "0")
	require.ErrorContains(t, err, "invalid --concurrency 0: must be at least 1")

	var out bytes.Buffer
	require.Equal(t, exitOK, runApp([]string{"qo", "run-worker", "--help"}, &out, &out))
	require.Contains(t, out.String(), "(default: the CPUs the process may use (a container's CPU limit), at least 4, at most 32)")
}
