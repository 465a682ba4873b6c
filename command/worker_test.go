package command

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
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
