package command

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
)

type waitJSONOut struct {
	Outcome string `json:"outcome"`
	Tasks   []struct {
		ID      string       `json:"id"`
		Outcome string       `json:"outcome"`
		Status  queue.Status `json:"status"`
		Task    *queue.Task  `json:"task"`
	} `json:"tasks"`
}

func TestWaitExitCodes(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *cliEnv) {
		ctx := t.Context()
		done1 := e.submit("t", `{"n":1}`, 0)
		done2 := e.submit("t", `{"n":2}`, 0)
		e.complete(done1.ID)
		e.complete(done2.ID)
		failed := e.submit("t", "", 0)
		e.fail(failed.ID, "disk full")
		cancelled := e.submit("t", "", 0)
		_, err := e.q.Cancel(ctx, cancelled.ID, "not needed")
		require.NoError(t, err)
		archivedOK := e.submit("t", "", 0)
		e.complete(archivedOK.ID)
		_, err = e.q.Archive(ctx, archivedOK.ID)
		require.NoError(t, err)
		archivedFailed := e.submit("t", "", 0)
		e.fail(archivedFailed.ID, "bad input")
		_, err = e.q.Archive(ctx, archivedFailed.ID)
		require.NoError(t, err)
		pending := e.submit("t", "", 0)

		id := func(t *queue.Task) string { return t.ID.String() }

		// All completed (an archived completed task counts as completed).
		res := e.run("wait", id(done1), id(done2), id(archivedOK), "--interval", "10ms")
		require.Equal(t, 0, res.code, res)
		require.Equal(t, id(done1)+" completed\n"+id(done2)+" completed\n"+id(archivedOK)+" archived (completed)\n", res.stdout)

		// Any failed or cancelled: 6, each printed with its reason.
		res = e.run("wait", id(done1), id(failed), id(cancelled), "--interval", "10ms")
		require.Equal(t, exitTaskFailed, res.code, res)
		require.Contains(t, res.stdout, id(failed)+" failed: disk full\n")
		require.Contains(t, res.stdout, id(cancelled)+" cancelled: not needed\n")
		require.Equal(t, "qo: 2 of 3 tasks did not complete (1 failed, 1 cancelled)\n", res.stderr)

		// An archived task counts as what it was before archiving.
		res = e.run("wait", id(archivedFailed), "--interval", "10ms")
		require.Equal(t, exitTaskFailed, res.code, res)
		require.Equal(t, id(archivedFailed)+" archived (failed): bad input\n", res.stdout)

		// --timeout: 7, the unfinished tasks listed.
		res = e.run("wait", id(done1), id(pending), "--interval", "10ms", "--timeout", "50ms")
		require.Equal(t, exitWaitTimeout, res.code, res)
		require.Contains(t, res.stdout, id(pending)+" still pending\n")
		require.Contains(t, res.stderr, "--timeout 50ms ran out with 1 of 2 tasks unfinished ("+id(pending)+")")

		// --fail-fast returns at the first failure even with tasks open.
		res = e.run("wait", id(pending), id(failed), "--fail-fast", "--interval", "10ms")
		require.Equal(t, exitTaskFailed, res.code, res)
		require.Contains(t, res.stderr, "1 failed, 1 unfinished")

		// JSON, ids from stdin (duplicates dropped).
		res = e.runWithStdin(id(done1)+"\n"+id(failed)+" "+id(done1)+"\n", "wait", "-", "--json", "--interval", "10ms")
		require.Equal(t, exitTaskFailed, res.code, res)
		var out waitJSONOut
		require.NoError(t, json.Unmarshal([]byte(res.stdout), &out), res)
		require.Equal(t, "failed", out.Outcome)
		require.Len(t, out.Tasks, 2)
		require.Equal(t, id(done1), out.Tasks[0].ID)
		require.Equal(t, "completed", out.Tasks[0].Outcome)
		require.Equal(t, queue.StatusCompleted, out.Tasks[0].Task.Status)
		require.Equal(t, "failed", out.Tasks[1].Outcome)

		res = e.run("wait", id(pending), "--json", "--timeout", "30ms", "--interval", "10ms")
		require.Equal(t, exitWaitTimeout, res.code, res)
		require.NoError(t, json.Unmarshal([]byte(res.stdout), &out), res)
		require.Equal(t, "timeout", out.Outcome)
		require.Equal(t, "unfinished", out.Tasks[0].Outcome)
		require.Equal(t, queue.StatusPending, out.Tasks[0].Status)
	})
}

// TestWaitBlocksUntilDone: qo wait keeps polling a running task and returns
// once it completes.
func TestWaitBlocksUntilDone(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *cliEnv) {
		a := e.submit("t", "", 0)
		b := e.submit("t", "", 0)
		e.complete(b.ID)
		lease := e.claim(a.ID, "w1")

		run := e.start("wait", a.ID.String(), b.ID.String(), "--interval", "10ms", "--max-interval", "20ms")
		// b is printed after the first round, which saw a running.
		run.waitOutput(b.ID.String() + " completed")
		_, err := e.q.Complete(t.Context(), lease, nil)
		require.NoError(t, err)
		require.Equal(t, 0, run.exit(), "stderr: %s", run.errb)
		require.Equal(t, b.ID.String()+" completed\n"+a.ID.String()+" completed\n", run.out.String())
	})
}

func TestWaitBadInput(t *testing.T) {
	t.Parallel()
	q := newQueueCLI(t)
	q.ok("init")
	const missing = "0b6f4c2e-8d1a-4f7e-9c3b-2a5d6e7f8a9b"
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"wait"}, exitUsage, "no task ids given"},
		{[]string{"wait", "nope"}, exitUsage, "not a task id"},
		{[]string{"wait", missing, "--interval", "0s"}, exitUsage, "--interval 0s: want at least 10ms"},
		{[]string{"wait", missing, "--interval", "often"}, exitUsage, `--interval "often": want a duration such as 30s`},
		{[]string{"wait", "--timeout", "30", missing}, exitUsage, `--timeout "30": want a duration such as 30s`},
		{[]string{"wait", missing, "--timeout", "-1s"}, exitUsage, "negative"},
		{[]string{"wait", missing, "--bogus"}, exitUsage, "flag provided but not defined: -bogus"},
		{[]string{"wait", missing}, exitNotFound, "task " + missing + " does not exist"},
		{[]string{"tail", "nope"}, exitUsage, "not a task id"},
		{[]string{"tail", missing}, exitNotFound, "task " + missing + " does not exist"},
		{[]string{"tail", missing, "--new-only"}, exitNotFound, "does not exist"},
		{[]string{"tail", "--until-done"}, exitUsage, "--until-done needs task ids"},
		{[]string{"tail", "--count", "-1"}, exitUsage, "--count -1 is negative"},
		{[]string{"tail", "--interval", "1ms"}, exitUsage, "want at least 10ms"},
		{[]string{"completion"}, exitUsage, "want one shell: bash, zsh or fish, got nothing"},
		{[]string{"completion", "tcsh"}, exitUsage, `got "tcsh"`},
		{[]string{"status", missing}, exitNotFound, "not found"},
		{[]string{"submit", "--type", "t", "--input", "{nope"}, exitUsage, "not valid JSON"},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			before := q.puts()
			code, out, errs := q.run(tc.args...)
			require.Equal(t, tc.code, code, "stdout %q stderr %q", out, errs)
			require.Contains(t, errs, tc.want)
			require.True(t, strings.HasPrefix(errs, "qo: "), errs)
			require.Equal(t, 1, strings.Count(strings.TrimSpace(errs), "\n")+1, "one line: %q", errs)
			require.Equal(t, before, q.puts(), "nothing written")
		})
	}
}
