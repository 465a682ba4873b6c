//go:build unix

package e2e

import (
	"context"
	"encoding/json"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/internal/testutil"
	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/queue/throughput"
)

// workerStates runs qo workers --json and returns each worker's state.
func (e *wkEnv) workerStates(t *testing.T) map[string]string {
	t.Helper()
	var out struct {
		Workers []struct {
			ID    string `json:"worker_id"`
			State string `json:"state"`
		} `json:"workers"`
	}
	require.NoError(t, json.Unmarshal([]byte(e.cli(t, "workers", "--json")), &out))
	states := map[string]string{}
	for _, w := range out.Workers {
		states[w.ID] = w.State
	}
	return states
}

// A SIGKILLed worker, with the default heartbeat (10 s) and liveness bound
// (20 s), is shown dead by qo workers once the monitor would take its tasks
// back: within DeadAfter + MaxClockSkew (22 s) of its last heartbeat, so of
// the kill, not after 3 minutes.
func TestKilledWorkerShownDead(t *testing.T) {
	t.Parallel()
	e := wkSetup(t)
	a := e.start(t, "worker-a", "run-worker", "--id", "worker-a", "--poll-min", "20ms", "--poll-max", "1s", "--no-monitor")
	poll := testutil.Poll{Every: 200 * time.Millisecond}
	poll.Until(t, func() bool { return e.registered(t, "worker-a") }, "worker-a to register")
	require.Equal(t, "active", e.workerStates(t)["worker-a"])
	killed := time.Now()
	a.signal(t, syscall.SIGKILL)
	a.wait(t)
	var seen []string
	poll = testutil.Poll{Every: time.Second, Limit: 2 * time.Minute}
	poll.Until(t, func() bool {
		st := e.workerStates(t)["worker-a"]
		if len(seen) == 0 || seen[len(seen)-1] != st {
			seen = append(seen, st)
		}
		return st == "dead"
	}, "worker-a to be shown dead")
	took := time.Since(killed)
	t.Logf("after SIGKILL, qo workers showed %v; dead after %s", seen, took.Round(100*time.Millisecond))
	// 22 s is the bound; a second of polling and the CLI's start on a
	// loaded machine on top.
	require.Less(t, took, 30*time.Second, "shown dead within the monitor's bound (22 s), not 3 minutes")
}

// Throughput survives a restart of the workers: the finishes of a worker
// that stopped are in qo stats after another took its place, from the
// leading monitor's rollup.
func TestThroughputAcrossRestart(t *testing.T) {
	t.Parallel()
	e := wkSetup(t)
	const n = 6
	for range n {
		e.submit(t, "sleep", `{"ms":10}`, time.Minute, 0)
	}
	a := e.start(t, "worker-a", workerArgs("worker-a")...)
	poll := testutil.Poll{Every: 200 * time.Millisecond, Limit: time.Minute}
	rolledUp := func() int {
		objs, err := throughput.List(context.Background(), e.q, time.Now().Add(-2*time.Hour))
		require.NoError(t, err)
		done := 0
		for _, o := range objs {
			h, err := throughput.Read(context.Background(), e.q, o.Key)
			require.NoError(t, err)
			for _, m := range h.Minutes {
				done += m.Completed
			}
		}
		return done
	}
	poll.Until(t, func() bool { return rolledUp() == n }, "the monitor to fold %d finishes into the rollup", n)
	lastDay := func() int {
		var st struct {
			LastHour []queue.MinuteCount `json:"last_hour"`
			LastDay  []queue.MinuteCount `json:"last_day"`
		}
		require.NoError(t, json.Unmarshal([]byte(e.cli(t, "stats", "--json")), &st))
		done := 0
		for _, m := range st.LastDay {
			done += m.Completed
		}
		hour := 0
		for _, m := range st.LastHour {
			hour += m.Completed
		}
		require.Equal(t, done, hour, "all in the last hour")
		return done
	}
	require.Equal(t, n, lastDay())
	a.signal(t, syscall.SIGTERM)
	require.Equal(t, 0, a.wait(t))
	require.False(t, e.registered(t, "worker-a"), "a clean stop deregisters: its heartbeat's minutes are gone")

	b := e.start(t, "worker-b", workerArgs("worker-b")...)
	poll.Until(t, func() bool { return e.registered(t, "worker-b") }, "worker-b to register")
	require.Equal(t, n, lastDay(), "the finishes before the restart are still shown")
	id := e.submit(t, "sleep", `{"ms":10}`, time.Minute, 0)
	e.waitTask(t, id, "completed", func(task *queue.Task) bool { return task.Status == queue.StatusCompleted })
	poll.Until(t, func() bool { return lastDay() == n+1 }, "the new worker's finish to be added")
	b.signal(t, syscall.SIGTERM)
	require.Equal(t, 0, b.wait(t))
}
