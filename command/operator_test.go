package command

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store"
)

type actSummaryJSON struct {
	Op      string          `json:"op"`
	DryRun  bool            `json:"dry_run"`
	Done    []string        `json:"done"`
	Skipped []queue.ActSkip `json:"skipped"`
	Failed  []queue.ActSkip `json:"failed"`
}

func (e *cliEnv) actJSON(res cliResult) actSummaryJSON {
	e.t.Helper()
	var s actSummaryJSON
	require.NoError(e.t, json.Unmarshal([]byte(res.stdout), &s), res)
	return s
}

// TestBulkCancelFilter: qo cancel --status pending --type X, a dry run
// first (it writes nothing and states the cost), then the run, then again.
func TestBulkCancelFilter(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *cliEnv) {
		var mine []*queue.Task
		for range 25 {
			mine = append(mine, e.submit("resize", "", 0))
		}
		other := e.submit("mail", "", 0)

		before := e.counts()
		res := e.run("cancel", "--status", "pending", "--type", "resize", "--dry-run", "--json")
		require.Equal(t, 0, res.code, res)
		d := e.counts().Sub(before)
		require.Zero(t, d.Total(store.OpPut)+d.Total(store.OpDelete), "a dry run writes nothing: %s", d)
		sum := e.actJSON(res)
		require.True(t, sum.DryRun)
		require.Len(t, sum.Done, 25)
		require.Contains(t, res.stderr, "dry run (nothing written): cancel 25 tasks: 25 PUT + 25 DELETE (finding them took 1 LIST + 25 GET)")
		require.Contains(t, res.stderr, "at S3 Standard prices")

		res = e.run("cancel", "--status", "pending", "--type", "resize", "--reason", "tidy")
		require.Equal(t, 0, res.code, res)
		sum = e.actJSON(res) // stdout is not a terminal: JSON
		require.False(t, sum.DryRun)
		require.Len(t, sum.Done, 25)
		require.Empty(t, sum.Failed)
		for _, task := range mine {
			got, err := e.q.Get(t.Context(), task.ID)
			require.NoError(t, err)
			require.Equal(t, queue.StatusCancelled, got.Status)
			require.Equal(t, "tidy", got.CancelReason)
		}
		got, err := e.q.Get(t.Context(), other.ID)
		require.NoError(t, err)
		require.Equal(t, queue.StatusPending, got.Status)

		// Again: nothing to do, exit 0.
		res = e.run("cancel", "--status", "pending", "--type", "resize")
		require.Equal(t, 0, res.code, res)
		require.Empty(t, e.actJSON(res).Done)
	})
}

// TestBulkOperatorIDs: several ids as arguments or on stdin, each acted on
// once; what the action does not apply to is skipped with the reason.
func TestBulkOperatorIDs(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *cliEnv) {
		a, b, c := e.submit("x", "", 0), e.submit("x", "", 0), e.submit("x", "", 0)
		res := e.run("cancel", a.ID.String(), b.ID.String(), a.ID.String())
		require.Equal(t, 0, res.code, res)
		sum := e.actJSON(res)
		require.Equal(t, []string{a.ID.String(), b.ID.String()}, sum.Done)

		in := a.ID.String() + "\n" + c.ID.String() + "\n"
		res = e.runWithStdin(in, "cancel", "-")
		require.Equal(t, 0, res.code, res)
		sum = e.actJSON(res)
		require.Equal(t, []string{c.ID.String()}, sum.Done)
		require.Equal(t, []queue.ActSkip{{ID: a.ID, Status: queue.StatusCancelled,
			Reason: "cancelled: only waiting, pending or running tasks can be cancelled"}}, sum.Skipped)

		// On a terminal: the text summary and a progress bar.
		e = e.onTerminal()
		res = e.runWithStdin(in, "replay", "-")
		require.Equal(t, 0, res.code, res)
		require.Equal(t, "replay: 2 done, 0 skipped, 0 failed\n", res.stdout)
		require.Contains(t, res.stderr, "plan: replay 2 tasks:")
		require.Contains(t, res.stderr, "2/2")

		res = e.run("archive", a.ID.String(), b.ID.String(), "--dry-run")
		require.Equal(t, 0, res.code, res)
		require.Equal(t, "archive: 1 would be done, 1 skipped, 0 failed\n  skipped "+a.ID.String()+
			": pending: only completed, failed, cancelled or expired tasks can be archived\n", res.stdout)
		require.NotContains(t, res.stderr, "/2", "no progress bar for a dry run")

		// One id keeps the one-task output.
		res = e.run("archive", b.ID.String())
		require.Equal(t, 0, res.code, res)
		require.True(t, strings.HasPrefix(res.stdout, "task "+b.ID.String()+": cancelled -> archived"), res.stdout)
	})
}

func TestBulkOperatorUsage(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *cliEnv) {
		a := e.submit("x", "", 0)
		for _, tc := range []struct {
			args []string
			want string
		}{
			{[]string{"cancel"}, "want task ids ('-' reads them from stdin) or a filter such as --status waiting"},
			{[]string{"cancel", a.ID.String(), "--status", "pending"}, "give task ids or a filter"},
			{[]string{"cancel", "--status", "completed"}, "--status completed: cancel applies only to waiting, pending, running tasks"},
			{[]string{"replay", "--status", "bogus"}, `unknown status "bogus"`},
			{[]string{"archive", "--all", "--type", "x"}, "--all means every task archive applies to"},
			{[]string{"archive", "--shard", "0"}, "--shard alone selects too much"},
			{[]string{"cancel", "--status", "pending", "--concurrency", "0"}, "--concurrency 0: want 1..256"},
		} {
			res := e.run(tc.args...)
			require.Equal(t, exitUsage, res.code, "%v: %s", tc.args, res)
			require.Contains(t, res.stderr, tc.want, tc.args)
		}
		res := e.runWithStdin("", "cancel", "-")
		require.Equal(t, exitUsage, res.code, res)
		require.Contains(t, res.stderr, "no task ids on stdin")
	})
}
