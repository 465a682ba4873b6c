//go:build unix

package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/internal/testutil"
	"github.com/qo-queue/qo/queue"
)

// An exec handler run by qo worker reports progress through
// QO_PROGRESS_FILE; qo status (text and --json), run as a user would,
// shows it while the task runs.
func TestExecProgressReachesStatus(t *testing.T) {
	t.Parallel()
	e := wkSetup(t)
	dir := t.TempDir()
	gate := filepath.Join(dir, "go-on")
	sh := filepath.Join(dir, "resize.sh")
	require.NoError(t, os.WriteFile(sh, []byte("#!/bin/sh\n"+
		`echo "0.1 starting" >> "$QO_PROGRESS_FILE"`+"\n"+
		`echo "42% resized 42 of 100" >> "$QO_PROGRESS_FILE"`+"\n"+
		`while [ ! -e "`+gate+`" ]; do sleep 0.05; done`+"\n"), 0o755))
	id := e.submit(t, "resize", `{}`, time.Minute, 0)
	e.start(t, "worker", workerArgs("progress-worker", "--exec", "resize="+sh)...)

	testutil.Poll{Limit: 30 * time.Second, Every: 100 * time.Millisecond}.Until(t, func() bool {
		return strings.Contains(e.cli(t, "status", id.String()), "42% resized 42 of 100")
	}, "qo status to show the handler's progress")
	require.Regexp(t, `progress:\s+42% resized 42 of 100`, e.cli(t, "status", id.String()))
	var task queue.Task
	require.NoError(t, json.Unmarshal([]byte(e.cli(t, "status", id.String(), "--json")), &task))
	require.Equal(t, queue.StatusRunning, task.Status)
	require.NotNil(t, task.Progress)
	require.InDelta(t, 0.42, task.Progress.Fraction, 1e-9)

	require.NoError(t, os.WriteFile(gate, nil, 0o600))
	e.waitTask(t, id, "completed", func(t *queue.Task) bool { return t.Status == queue.StatusCompleted })
	require.NotContains(t, e.cli(t, "status", id.String()), "progress:", "progress belongs to a running attempt")
}
