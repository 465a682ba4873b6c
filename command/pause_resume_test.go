package command

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
)

func TestPauseResumeCommands(t *testing.T) {
	q := newQueueCLI(t)
	q.ok("init")
	require.Contains(t, q.ok("pause"), "nothing is paused")
	require.Contains(t, q.ok("pause", "send_email", "resize", "--reason", "provider down"), "paused types: resize, send_email")
	out := q.ok("pause", "--all", "--reason", "migration")
	require.Contains(t, out, "the whole queue is paused: migration")
	var ctl queue.Control
	require.NoError(t, json.Unmarshal([]byte(q.ok("pause", "--json")), &ctl))
	require.True(t, ctl.Paused)
	require.Equal(t, "provider down", ctl.Types["send_email"].Reason)
	require.Contains(t, q.ok("resume", "--all"), "paused types: resize, send_email")
	require.Contains(t, q.ok("resume", "resize", "send_email"), "nothing is paused")

	for _, args := range [][]string{{"resume"}, {"pause", "a", "--all"}, {"pause", "bad/type"}} {
		code, _, errs := q.run(args...)
		require.Equal(t, exitUsage, code, "%v: %s", args, errs)
	}
}
