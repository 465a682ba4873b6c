package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/urfave/cli/v2"

	"github.com/qo-queue/qo/monitor"
	"github.com/qo-queue/qo/queue"
)

// Bad flags are usage errors (exit 2) with a message naming the flag and
// the fix, reported before any connection is attempted.
func TestWorkerCommandsRejectBadFlags(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"run-worker", "--concurrency", "0"}, "invalid --concurrency 0"},
		{[]string{"run-worker", "--exec", "nope"}, "want TYPE=COMMAND"},
		{[]string{"run-worker", "--exec", "x=/definitely/not/here"}, "chmod +x"},
		{[]string{"run-worker", "--exec", "x=sh", "--exec", "x=sh"}, `type "x" is given twice`},
		{[]string{"run-worker", "--index-mode", "fast"}, "want index-only, hybrid or log-scan"},
		{[]string{"run-worker", "--poll-min", "1x"}, "invalid --poll-min"},
		{[]string{"run-worker", "--poll-min", "2s", "--poll-max", "1s"}, "below --poll-min"},
		{[]string{"run-worker", "--builtins=false"}, "no handlers"},
		{[]string{"run-worker", "--types", "a/b"}, "invalid --types"},
		{[]string{"run-worker", "--id", "has space"}, "invalid --id"},
		{[]string{"run-worker", "--shard-leasing", "--shard-leasing-ttl", "5", "--shard-leasing-renew", "5"}, "must be shorter"},
		{[]string{"run-worker", "--log-level", "loud"}, "invalid --log-level"},
		{[]string{"run-worker", "extra"}, "takes no arguments"},
		{[]string{"monitor", "--lease-check-interval", "10s", "--leader-ttl", "1s"}, "shorter than --lease-check-interval"},
		{[]string{"monitor", "--sweep-page-size", "0"}, "invalid --sweep-page-size"},
		{[]string{"workers", "--worker-health-threshold", "0"}, "must be positive"},
		{[]string{"worker", "--exec", "="}, "want TYPE=COMMAND"}, // the alias
		{[]string{"run-worker", "--exec", "x=sh", "--env", "MY-VAR"}, `invalid --env "MY-VAR": "MY-VAR" is not a variable name: use letters, digits and _`},
		{[]string{"run-worker", "--exec", "x=sh", "--env", "=v"}, "invalid --env"},
		{[]string{"run-worker", "--exec", "x=sh", "--env-file", "/definitely/not/here.env"}, "invalid --env-file: env file /definitely/not/here.env does not exist"},
		{[]string{"dev", "--exec", "x=sh", "--env", "1X"}, "invalid --env"},
		{[]string{"dev", "--exec", "x=sh", "--env-file", "/definitely/not/here.env"}, "does not exist"},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := runApp(append([]string{"qo"}, tc.args...), &stdout, &stderr)
			require.Equal(t, exitUsage, code, "stderr: %s", stderr.String())
			require.Contains(t, stderr.String(), tc.want)
		})
	}
}

func TestParseSecondsOrDuration(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"30": 30 * time.Second, "0.5": 500 * time.Millisecond, "250ms": 250 * time.Millisecond, "2m": 2 * time.Minute, "0": 0,
	} {
		got, err := parseSecondsOrDuration(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	_, err := parseSecondsOrDuration("soon")
	require.Error(t, err)
}

func TestPrintWorkers(t *testing.T) {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	ws := []*queue.WorkerInfo{
		{ID: "a", LastHeartbeat: now.Add(-2 * time.Second), Concurrency: 2, CurrentTasks: []string{"t1"}, TasksCompleted: 5, Types: []string{"echo"}, Host: "h", PID: 7},
		{ID: "b", LastHeartbeat: now.Add(-2 * time.Minute), Concurrency: 1, Shards: []string{"3", "1"}, TasksFailed: 1},
		{ID: "c", LastHeartbeat: now.Add(-time.Hour), Concurrency: 1, Shards: []string{"0", "1", "2", "3", "4", "5", "6", "7", "8"}},
	}
	var out bytes.Buffer
	require.NoError(t, printWorkers(&out, monitor.Health(ws, now, time.Minute)))
	s := out.String()
	for _, want := range []string{"a  ", "active", "2s ago", "1/2", "all", "b  ", "stale", "1,3", "dead", "0..8 (9)", "a running: t1", "1 active, 1 stale, 1 dead"} {
		require.Contains(t, s, want)
	}
	out.Reset()
	require.NoError(t, printWorkers(&out, nil))
	require.Equal(t, "no workers registered\n", out.String())
}

// workerSetupOf parses run-worker's flags the way the command does.
func workerSetupOf(t *testing.T, args ...string) (*workerSetup, error) {
	t.Helper()
	cmd := cloneCommand(runWorkerCommand())
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
