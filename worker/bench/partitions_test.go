package bench

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
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
		"ready/3a/0000000000001~t~normal~id": "ready/3a/",
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
