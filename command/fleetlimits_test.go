package command

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// qo limit sets and clears a fleet-wide cap in the bucket; qo limits and
// qo stats show it; bad input is refused with the fix named.
func TestLimitCLI(t *testing.T) {
	t.Parallel()
	q := newQueueCLI(t)
	q.ok("init")
	require.Equal(t, "no fleet-wide limits\n", q.ok("limits"))
	require.Contains(t, q.ok("limit", "api", "--concurrency", "5"), "api: at most 5 running at once across the fleet")
	q.ok("limit", "other", "--concurrency", "2")
	require.Equal(t, "api\tconcurrency 5\nother\tconcurrency 2\n", q.ok("limits"))
	require.Contains(t, q.ok("limit", "other", "--clear"), "other: no fleet-wide limit")
	var out struct {
		Limits []struct {
			Type        string `json:"type"`
			Concurrency int    `json:"concurrency"`
		} `json:"limits"`
	}
	require.NoError(t, json.Unmarshal([]byte(q.ok("limits", "--json")), &out))
	require.Len(t, out.Limits, 1)
	require.Equal(t, "api", out.Limits[0].Type)
	require.Equal(t, 5, out.Limits[0].Concurrency)
	require.Contains(t, q.ok("stats"), "fleet-wide caps (running at once): api 5")

	require.Contains(t, q.ok("limit", "api", "--rate", "20/s", "--burst", "5"), "api: at most 20/s started across the fleet (burst 5)")
	q.ok("limit", "slow", "--rate", "600/m")
	require.Equal(t, "api\tconcurrency 5, rate 20/s burst 5\nslow\trate 600/m burst 10\n", q.ok("limits"))
	require.Contains(t, q.ok("limits", "--json"), `"rate": "20/s",
      "burst": 5`)
	require.Contains(t, q.ok("stats"), "fleet-wide rates (starts): api 20/s burst 5, slow 600/m burst 10")

	for _, bad := range []struct {
		args []string
		msg  string
	}{
		{[]string{"limit", "api"}, "--concurrency N"},
		{[]string{"limit", "api", "--concurrency", "0"}, "not between 1 and"},
		{[]string{"limit", "api", "--concurrency", "3", "--clear"}, "not both"},
		{[]string{"limit", "--concurrency", "3"}, "name one task type"},
		{[]string{"limit", "a b", "--concurrency", "3"}, "type"},
		{[]string{"limit", "api", "--rate", "20"}, "20/s or 600/m"},
		{[]string{"limit", "api", "--rate", "0/s"}, "20/s or 600/m"},
		{[]string{"limit", "api", "--burst", "3"}, "--burst goes with --rate"},
		{[]string{"limit", "api", "--rate", "5/s", "--clear"}, "not both"},
	} {
		code, _, errs := q.run(bad.args...)
		require.Equal(t, exitUsage, code, "%v: %s", bad.args, errs)
		require.Contains(t, errs, bad.msg, "%v", bad.args)
	}
}
