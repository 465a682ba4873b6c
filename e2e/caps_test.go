//go:build unix

package e2e

import (
	"bufio"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/internal/testutil"
	"github.com/qo-queue/qo/queue"
)

// A fleet-wide cap of 5 over four worker processes of 8 slots each, one
// SIGKILLed while it runs capped handlers and one added mid-run: the exec
// handlers' own start/end log never shows more than 5 running at once,
// and every task completes. The kill lands while the killed worker runs
// capped handlers (its handlers take 5 s, the others' 0.2 s, and the kill
// waits for one of its to start), so its share is held by a dead worker
// until it is found dead, and its tasks run again elsewhere.
func TestFleetCapAcrossProcesses(t *testing.T) {
	t.Parallel()
	e := wkSetup(t)
	dir := t.TempDir()
	logPath := filepath.Join(dir, "handlers.log")
	script := filepath.Join(dir, "work.sh")
	require.NoError(t, os.WriteFile(script, []byte(`#!/bin/sh
echo "S $$ $QO_WORKER_ID $(date +%s%N)" >> `+logPath+`
case "$QO_WORKER_ID" in
cap-b) sleep 5 ;; # the worker to kill: running one most of the time
*) sleep 0.2 ;;
esac
echo "E $$ $QO_WORKER_ID $(date +%s%N)" >> `+logPath+`
echo '{}'
`), 0o755))
	const capN, tasks = 5, 120
	e.cli(t, "limit", "capped", "--concurrency", strconv.Itoa(capN))
	var ids []uuid.UUID
	for range tasks {
		ids = append(ids, e.submit(t, "capped", `{}`, time.Minute, 5))
	}
	args := func(id string) []string {
		return workerArgs(id, "--concurrency", "8", "--dead-after", "4s", "--exec", "capped="+script)
	}
	procs := map[string]*wkProc{}
	for _, id := range []string{"cap-a", "cap-b", "cap-c", "cap-d"} {
		procs[id] = e.start(t, id, args(id)...)
	}
	countLines := func(prefix string) int { // "S " or "E ": only at a line's start
		b, _ := os.ReadFile(logPath)
		return strings.Count(string(b), prefix)
	}
	waitEnds := func(n int) {
		testutil.Poll{Limit: 90 * time.Second, Every: 50 * time.Millisecond}.Until(t, func() bool { return countLines("E ") >= n }, "%d handler runs to end", n)
	}
	// runsOf counts the runs of worker id the log shows started and not
	// ended.
	runsOf := func(id string) int {
		b, _ := os.ReadFile(logPath)
		n := 0
		for _, line := range strings.Split(string(b), "\n") {
			switch f := strings.Fields(line); {
			case len(f) == 4 && f[2] == id && f[0] == "S":
				n++
			case len(f) == 4 && f[2] == id && f[0] == "E":
				n--
			}
		}
		return n
	}
	waitEnds(20)
	testutil.Poll{Limit: 90 * time.Second, Every: 50 * time.Millisecond}.Until(t, func() bool { return runsOf("cap-b") > 0 }, "cap-b to run a capped handler")
	procs["cap-b"].signal(t, syscall.SIGKILL)
	procs["cap-b"].wait(t)
	killedAt := time.Now().UnixNano() // its exec children die with it (Pdeathsig)
	held := runsOf("cap-b")
	require.Positive(t, held, "the killed worker had capped handlers running at the kill")
	waitEnds(40)
	procs["cap-e"] = e.start(t, "cap-e", args("cap-e")...)
	for _, id := range ids {
		e.waitTask(t, id, "completed", func(task *queue.Task) bool { return task.Status == queue.StatusCompleted })
	}

	// Replay the handlers' own log: +1 at a start, -1 at an end; a start
	// with no end was a child of the killed worker, ended at the kill.
	type ev struct {
		at    int64
		delta int
	}
	f, err := os.Open(logPath)
	require.NoError(t, err)
	defer f.Close()
	open := map[string]string{} // shell pid -> worker id
	var evs []ev
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		parts := strings.Fields(sc.Text())
		require.Len(t, parts, 4, "log line %q", sc.Text())
		at, err := strconv.ParseInt(parts[3], 10, 64)
		require.NoError(t, err)
		if parts[0] == "S" {
			open[parts[1]] = parts[2]
			evs = append(evs, ev{at, +1})
		} else {
			delete(open, parts[1])
			evs = append(evs, ev{at, -1})
		}
	}
	require.NoError(t, sc.Err())
	for pid, id := range open {
		require.Equal(t, "cap-b", id, "handler %s of a worker not killed never ended", pid)
		evs = append(evs, ev{killedAt, -1})
	}
	require.Len(t, open, held, "the killed worker's handlers ended at the kill, none after")
	// Starts before ends at the same instant: the stricter count.
	slices.SortFunc(evs, func(a, b ev) int {
		if a.at != b.at {
			return int(a.at - b.at)
		}
		return b.delta - a.delta
	})
	cur, most := 0, 0
	for _, x := range evs {
		cur += x.delta
		most = max(most, cur)
	}
	t.Logf("%d handler runs, at most %d at once (cap %d), %d cut by the SIGKILL", len(evs)/2, most, capN, len(open))
	require.LessOrEqual(t, most, capN, "handlers running at once")
	require.GreaterOrEqual(t, countLines("S "), tasks)
	for id, p := range procs {
		if id == "cap-b" {
			continue
		}
		p.signal(t, syscall.SIGTERM)
		require.Equal(t, 0, p.wait(t), "%s", id)
	}
}
