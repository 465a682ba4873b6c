//go:build unix

package e2e

import (
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

// A fleet-wide rate of 10/s (burst 2) over four worker processes of 8
// slots each, measured from the exec handlers' own start times while a
// backlog is pending: no 10 s window holds more than 100 starts plus the
// burst and one per worker, and the start rate is within 10% of 10/s.
func TestFleetRateAcrossProcesses(t *testing.T) {
	t.Parallel()
	e := wkSetup(t)
	dir := t.TempDir()
	logPath := filepath.Join(dir, "starts.log")
	script := filepath.Join(dir, "work.sh")
	require.NoError(t, os.WriteFile(script, []byte(`#!/bin/sh
echo "$(date +%s%N)" >> `+logPath+`
echo '{}'
`), 0o755))
	const perSec, burst, workers, tasks, measured = 10, 2, 4, 260, 200
	e.cli(t, "limit", "rated", "--rate", strconv.Itoa(perSec)+"/s", "--burst", strconv.Itoa(burst))
	for range tasks {
		e.submit(t, "rated", `{}`, time.Minute, 5)
	}
	var procs []*wkProc
	for i := range workers {
		id := "rate-" + strconv.Itoa(i)
		procs = append(procs, e.start(t, id, workerArgs(id, "--concurrency", "8", "--exec", "rated="+script)...))
	}
	starts := func() []int64 {
		b, _ := os.ReadFile(logPath)
		var out []int64
		for _, l := range strings.Fields(string(b)) {
			n, err := strconv.ParseInt(l, 10, 64)
			require.NoError(t, err, "log line %q", l)
			out = append(out, n)
		}
		return out
	}
	testutil.Poll{Limit: 3 * time.Minute, Every: 100 * time.Millisecond}.Until(t, func() bool { return len(starts()) >= measured }, "%d handler starts", measured)
	for _, p := range procs {
		p.signal(t, syscall.SIGTERM)
		require.Equal(t, 0, p.wait(t))
	}
	all := starts()
	slices.Sort(all)
	all = all[:measured]
	window := int64(10 * time.Second)
	most := 0
	for i, s := range all {
		j, _ := slices.BinarySearch(all, s+window)
		most = max(most, j-i)
	}
	span := time.Duration(all[len(all)-1] - all[0]).Seconds()
	rate := float64(len(all)-1) / span
	t.Logf("%d starts over %.1fs: %.2f/s (limit %d/s); at most %d in a 10 s window", len(all), span, rate, perSec, most)
	require.LessOrEqual(t, most, 10*perSec+burst+workers, "starts in a 10 s window")
	// Never faster than the limit; slower only by what a busy machine
	// costs the handlers (the fleet simulation, worker/sim
	// TestRatePrecision, holds the rate to 10% over each minute in
	// simulated time, where no load can slow it).
	require.LessOrEqual(t, rate, perSec*1.1, "start rate")
	require.GreaterOrEqual(t, rate, perSec*0.5, "start rate: the limit throttles far below itself")
}
