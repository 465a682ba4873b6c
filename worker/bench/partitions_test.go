package bench

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
)

// TestPartitionSimulation runs a short version of the simulation of
// docs/scaling.md: 20,000 tasks/s over 256 shards keeps every key prefix
// within S3's per-prefix limits; over 16 shards the task objects' prefixes
// are over the write limit (3 task writes per task / 16 = 3,750/s), which
// is why the docs say to init with 256 shards above about 15,000 tasks/s.
func TestPartitionSimulation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		shardChars int
		workers    int
		writesOK   bool
	}{
		{"256 shards", 2, 64, true},
		{"16 shards", 1, 16, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, err := SimulatePartitions(context.Background(), SimConfig{Rate: 20000, Seconds: 1, ShardChars: tt.shardChars, Workers: tt.workers, Step: 50 * time.Millisecond})
			require.NoError(t, err)
			var out bytes.Buffer
			r.WriteText(&out)
			t.Log("\n" + out.String())
			require.Equal(t, 20000, r.Tasks)
			require.Greater(t, r.Completed, r.Tasks*9/10, "workers keep up")
			require.Equal(t, tt.writesOK, r.WritesOK, "busiest by writes: %+v", r.BusiestWrites)
			require.True(t, r.ReadsOK, "busiest by reads: %+v", r.BusiestReads)
			if !tt.writesOK {
				require.Contains(t, r.BusiestWrites.Prefix, "tasks/", "the task objects are what 16 shards cannot carry")
			}
			for _, p := range r.Top {
				require.NotContains(t, []string{"ready/", "leases/", "tasks/"}, p.Prefix, "no request lands on an unsharded index prefix")
			}
		})
	}
}

func TestPartitionOf(t *testing.T) {
	t.Parallel()
	for key, want := range map[string]string{
		"tasks/3a/01a2-x.json":               "tasks/3a/",
		"ready/t/3a/0000000000001~normal~id": "ready/t/3a/",
		"ready/t/3a/":                        "ready/t/3a/",
		"ready/t/":                           "ready/t/",
		"ready/":                             "ready/",
		"leases/f/1~t~id~l~w":                "leases/f/",
		"dead/0000000000001/3a/t/id":         "dead/",
		"idempotency/ab/abcd.json":           "idempotency/ab/",
		"workers/w1.json":                    "workers/",
		"queue.json":                         "queue.json",
		"monitor/leader.json":                "monitor/",
	} {
		require.Equal(t, want, partitionOf(key), key)
	}
}

// A fleet of 1,000 idle workers (256 shards, shard leasing, embedded
// monitors) sends requests that grow linearly with it: per worker per
// second at most one registry read (its leasing round's LIST every 10 s
// and the leader's health check), one standby read of the leader lease
// every 5 s, and the polls of the 256 shard holders; no prefix comes near
// S3's limits. Under load at 20,000 tasks/s the same fleet stays within
// them too.
func TestPartitionSimulationFleet(t *testing.T) {
	t.Parallel()
	const n = 1000
	r, err := SimulatePartitions(context.Background(), SimConfig{Rate: 20000, Seconds: 1, ShardChars: 2, Workers: n, Step: 50 * time.Millisecond, IdleSeconds: 60})
	require.NoError(t, err)
	var out bytes.Buffer
	r.WriteText(&out)
	t.Log("\n" + out.String())
	i := r.Idle
	require.NotNil(t, i)
	// workers/: a LIST per worker every 10 s, a heartbeat per worker every
	// 10 s, and the leader's health check (a LIST and a GET per worker
	// every 30 s): 0.1 + 0.1 + 1/30 per worker per second, not n/10 GETs.
	require.InDelta(t, 0.2+1.0/30, i.ByPrefix[queue.WorkersPrefix]/n, 0.01, "registry requests per worker per second")
	// shard-leases/: the 256 holders renew every 10 s; the 744 workers
	// below their target list the leases every 40 s (a 60 s window sees
	// one or two listings of each).
	sl := i.ByPrefix[queue.ShardLeasePrefix]
	require.GreaterOrEqual(t, sl, 256.0/10+744.0/60, "shard-lease requests per second")
	require.LessOrEqual(t, sl, 256.0/10+744.0/30, "shard-lease requests per second")
	// monitor/: every standby reads the leader lease every 5 s.
	require.InDelta(t, 0.2, i.ByPrefix[queue.MonitorPrefix]/n, 0.01, "leadership requests per worker per second")
	// ready/: an idle shard holder polls every 5 s (and the leader's sweep
	// lists a page every 5 minutes).
	require.InDelta(t, 256.0/5, i.ByPrefix[queue.ReadyPrefix], 256.0/5/10, "idle polls")
	require.Positive(t, i.CostPerMonth)
	require.LessOrEqual(t, i.BusiestPrefix.PeakReads, S3ReadsPerPrefix)
	require.LessOrEqual(t, i.BusiestPrefix.PeakWrites, S3WritesPerPrefix)
	require.True(t, r.WritesOK, "busiest by writes: %+v", r.BusiestWrites)
	require.True(t, r.ReadsOK, "busiest by reads: %+v", r.BusiestReads)
	require.Greater(t, r.Completed, r.Tasks*9/10, "workers keep up")
}
