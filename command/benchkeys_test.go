package command

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// qo bench refuses --keys and --keys-only used wrongly, naming the fix,
// before it touches any bucket.
func TestBenchKeysFlags(t *testing.T) {
	t.Parallel()
	q := newQueueCLI(t)
	for _, bad := range []struct {
		args []string
		msg  string
	}{
		{[]string{"bench", "--keys-only"}, "--keys-only needs --keys N"},
		{[]string{"bench", "--keys", "-2"}, "--keys -2: want at least 1"},
		{[]string{"bench", "--keys", "100", "--tasks", "50"}, "--keys 100 needs --tasks of at least 500"},
		{[]string{"bench", "--keys", "3", "--keys-only", "--deps-only", "--fan-in", "5"}, "--keys-only excludes --deps-only"},
		{[]string{"bench", "--deps-only", "--history-only", "--fan-in", "5", "--seed-finished", "5"}, "--deps-only and --history-only exclude each other"},
	} {
		code, _, errs := q.run(append([]string{"--endpoint", "http://127.0.0.1:1"}, bad.args...)...)
		require.Equal(t, exitUsage, code, "%v: %s", bad.args, errs)
		require.Contains(t, errs, bad.msg, "%v", bad.args)
	}
}
