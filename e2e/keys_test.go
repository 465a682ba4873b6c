//go:build unix

package e2e

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/internal/testutil"
)

// keyLogLine is one line of the handlers' own log: "S|E KEY PID NANOS".
type keyLogLine struct {
	start bool
	key   string
	pid   string
	at    int64
}

func readKeyLog(t *testing.T, path string) []keyLogLine {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var out []keyLogLine
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		parts := strings.Fields(sc.Text())
		require.Len(t, parts, 4, "log line %q", sc.Text())
		at, err := strconv.ParseInt(parts[3], 10, 64)
		require.NoError(t, err)
		out = append(out, keyLogLine{start: parts[0] == "S", key: parts[1], pid: parts[2], at: at})
	}
	require.NoError(t, sc.Err())
	return out
}

// keyScript writes an exec handler that logs its start and end, with its
// task's key, to logPath, sleeping for sleep in between.
func keyScript(t *testing.T, dir, logPath, sleep string) string {
	t.Helper()
	script := filepath.Join(dir, "work.sh")
	require.NoError(t, os.WriteFile(script, []byte(`#!/bin/sh
echo "S ${QO_TASK_KEY:-none} $$ $(date +%s%N)" >> `+logPath+`
sleep `+sleep+`
echo "E ${QO_TASK_KEY:-none} $$ $(date +%s%N)" >> `+logPath+`
echo '{}'
`), 0o755))
	return script
}

// submitKeyed submits n tasks of typ with key through qo submit --file.
func (e *wkEnv) submitKeyed(t *testing.T, dir, typ, key string, n int) {
	t.Helper()
	file := filepath.Join(dir, key+".jsonl")
	line := fmt.Sprintf(`{"type":%q,"key":%q,"timeout_seconds":60}`+"\n", typ, key)
	require.NoError(t, os.WriteFile(file, []byte(strings.Repeat(line, n)), 0o600))
	e.cli(t, "submit", "--file", file, "--concurrency", "32")
}

// A per-key cap of 2 over three worker processes of 8 slots each: the
// exec handlers' own start/end log never shows more than 2 of one key
// running at once, and every task completes.
func TestPerKeyCapAcrossProcesses(t *testing.T) {
	t.Parallel()
	e := wkSetup(t)
	dir := t.TempDir()
	logPath := filepath.Join(dir, "handlers.log")
	script := keyScript(t, dir, logPath, "0.2")
	const capN, perKey = 2, 30
	keys := []string{"customer-1", "customer-2", "customer-3"}
	e.cli(t, "limit", "sync", "--concurrency", strconv.Itoa(capN), "--per-key")
	for _, k := range keys {
		e.submitKeyed(t, dir, "sync", k, perKey)
	}
	var procs []*wkProc
	for _, id := range []string{"key-a", "key-b", "key-c"} {
		procs = append(procs, e.start(t, id, workerArgs(id, "--concurrency", "8", "--exec", "sync="+script)...))
	}
	testutil.Poll{Limit: 120 * time.Second, Every: 100 * time.Millisecond}.Until(t, func() bool {
		b, _ := os.ReadFile(logPath)
		return strings.Count(string(b), "E ") >= perKey*len(keys)
	}, "every handler run to end")

	lines := readKeyLog(t, logPath)
	slices.SortStableFunc(lines, func(a, b keyLogLine) int {
		if a.at != b.at {
			return int(a.at - b.at)
		}
		if a.start != b.start { // starts first at the same instant: the stricter count
			if a.start {
				return -1
			}
			return 1
		}
		return 0
	})
	cur, most := map[string]int{}, map[string]int{}
	all, allMost := 0, 0
	for _, l := range lines {
		d := -1
		if l.start {
			d = 1
		}
		cur[l.key] += d
		most[l.key] = max(most[l.key], cur[l.key])
		all += d
		allMost = max(allMost, all)
	}
	t.Logf("%d handler runs; at most at once per key: %v (cap %d per key); %d at once in all", len(lines)/2, most, capN, allMost)
	for _, k := range keys {
		require.LessOrEqual(t, most[k], capN, "handlers of key %s running at once", k)
		require.Positive(t, most[k])
	}
	for _, p := range procs {
		p.signal(t, syscall.SIGTERM)
		require.Equal(t, 0, p.wait(t), "%s", p.name)
	}
}

// Fairness: one key with 2,000 pending tasks submitted first
// (QO_E2E_FAIR_DEEP=10000 for 10,000), another with 10 after them; two
// worker processes of 4 slots, with pages of 100 keys, so the backlog is
// deeper than a page in every shard (as 20,000 would be with the default
// page). The second key's tasks all start within the bound of
// queue/doc.go, "Task keys": each walk that lists a partition goes on past
// the backlog's section to theirs, so they take turns with the backlog,
// not after it, however deep it is.
func TestKeysTakeTurnsAcrossProcesses(t *testing.T) {
	t.Parallel()
	e := wkSetup(t)
	dir := t.TempDir()
	logPath := filepath.Join(dir, "handlers.log")
	script := keyScript(t, dir, logPath, "0")
	const few, workers, slots = 10, 2, 4
	deep := 2000
	if v := os.Getenv("QO_E2E_FAIR_DEEP"); v != "" {
		n, err := strconv.Atoi(v)
		require.NoError(t, err, "QO_E2E_FAIR_DEEP")
		deep = n
	}
	began := time.Now()
	e.submitKeyed(t, dir, "sync", "big", deep)
	e.submitKeyed(t, dir, "sync", "small", few)
	t.Logf("submitted %d + %d tasks in %s", deep, few, time.Since(began).Round(time.Millisecond))
	var procs []*wkProc
	for i := range workers {
		id := fmt.Sprintf("fair-%d", i)
		procs = append(procs, e.start(t, id, workerArgs(id, "--concurrency", strconv.Itoa(slots), "--ready-page-size", "100", "--exec", "sync="+script)...))
	}
	testutil.Poll{Limit: 120 * time.Second, Every: 100 * time.Millisecond}.Until(t, func() bool {
		b, _ := os.ReadFile(logPath)
		return strings.Count(string(b), "S small") >= few
	}, "the small key's tasks to start")
	for _, p := range procs {
		p.signal(t, syscall.SIGTERM)
		require.Equal(t, 0, p.wait(t), "%s", p.name)
	}
	var starts []keyLogLine
	for _, l := range readKeyLog(t, logPath) {
		if l.start {
			starts = append(starts, l)
		}
	}
	slices.SortStableFunc(starts, func(a, b keyLogLine) int { return int(a.at - b.at) })
	last := -1
	for i, s := range starts {
		if s.key == "small" {
			last = i
		}
	}
	require.GreaterOrEqual(t, last, 0)
	// The bound: the first walk of each worker lists the small key's
	// section of every partition it reaches; a partition it did not reach
	// is listed again at most a page hold (10 s) later, plus poll waits
	// and claims on a loaded machine; and most of the backlog still
	// waiting then. A small-key
	// task can also wait one hold when the worker's first walk lists its
	// shard: a worker just started knows the server's time to about a
	// second (s3store/clock.go), so the newest entries, stamped by the
	// submitting process a moment before, can look not yet available to
	// it; the shard counts as listed to its end until its page is a hold
	// old (the bound of a task that became ready after its page was
	// listed, worker/poll.go). A count of
	// starts alone would measure the machine: a task first seen a page
	// hold later follows as many starts as the fleet makes in 10 s (682
	// of 2,000 at 68 a second in one run).
	took := time.Duration(starts[last].at - starts[0].at)
	t.Logf("the small key's last task started as start %d of %d, %s after the first start (backlog %d)", last+1, len(starts), took.Round(time.Millisecond), deep)
	require.Less(t, took, 20*time.Second, "the small key's last start after the first start")
	require.Less(t, last-(few-1), deep*3/4, "the backlog's starts before the small key's last: a quarter of it still waits")
}
