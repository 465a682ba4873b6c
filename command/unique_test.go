package command

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// --unique-while-active: the key returns its task while it is active and
// makes a new one once it ended; bad combinations are usage errors.
func TestSubmitUniqueWhileActive(t *testing.T) {
	t.Parallel()
	q := newQueueCLI(t)
	q.ok("init")
	args := []string{"submit", "--type", "refresh", "--idempotency-key", "customer-42", "--unique-while-active"}
	first := strings.TrimSpace(q.ok(args...))
	require.Equal(t, first, strings.TrimSpace(q.ok(args...)), "pending: the same task")
	q.ok("cancel", first)
	second := strings.TrimSpace(q.ok(args...))
	require.NotEqual(t, first, second, "ended: a new task")

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"submit", "--type", "a", "--unique-while-active"}, "need --idempotency-key"},
		{[]string{"submit", "--type", "a", "--unique-for", "10m"}, "need --idempotency-key"},
		{[]string{"submit", "--type", "a", "--idempotency-key", "k", "--unique-for", "0s"}, "must be positive"},
		{[]string{"submit", "--type", "a", "--idempotency-key", "k", "--unique-for", "1m", "--unique-while-active"}, "exclude each other"},
	} {
		code, _, errs := q.run(tc.args...)
		require.Equal(t, exitUsage, code, "%v: %s", tc.args, errs)
		require.Contains(t, errs, tc.want)
	}
}
