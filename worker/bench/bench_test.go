package bench_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/store/s3store"
	"github.com/qo-queue/qo/store/storetest"
	"github.com/qo-queue/qo/worker/bench"
)

// TestRunSmall runs every phase with tiny counts against MinIO and checks
// that the report is complete and self-consistent (no timing assertions:
// speed targets are for qo bench on a quiet machine).
func TestRunSmall(t *testing.T) {
	t.Parallel()
	storetest.MinIO(t) // skips (or fails in CI) without MinIO
	var made []string
	cfg := bench.Config{
		NewBucket: func(ctx context.Context, name string) (bench.Bucket, error) {
			made = append(made, name)
			return s3store.New(ctx, storetest.S3Config(t, name))
		},
		Tasks: 60, Workers: 2, Concurrency: 3, SubmitTasks: 20, LatencySamples: 12, RawOps: 60,
		Idle: 3 * time.Second, IdleSettle: 500 * time.Millisecond, IdleWorkers: 2,
		SeedFinished: 50, LeaderWindow: 2 * time.Second, Prices: store.AWSStandardPrices,
	}
	r, err := bench.Run(context.Background(), cfg)
	require.NoError(t, err)

	require.Len(t, r.Submit, 2)
	for _, s := range r.Submit {
		require.Positive(t, s.PerSecond)
	}
	e := r.EndToEnd
	require.Equal(t, 60, e.Tasks)
	require.Positive(t, e.TasksPerSecond)
	require.Zero(t, e.Duplicates)
	// The request floor of one task is 5 PUT, 1 GET, 2 DELETE (queue/doc.go);
	// heartbeats, the monitor and polling add a little on top.
	require.GreaterOrEqual(t, e.RequestsPerTask[store.OpPut], 5.0)
	require.Less(t, e.RequestsPerTask[store.OpPut], 8.0)
	require.GreaterOrEqual(t, e.RequestsPerTask[store.OpGet], 1.0)
	require.InDelta(t, 2.0, e.RequestsPerTask[store.OpDelete], 0.5)
	require.Positive(t, e.CostPerMillion)
	require.NotNil(t, r.Seeded)
	require.Equal(t, 12, r.Claim.N)
	require.LessOrEqual(t, r.Claim.P50, r.Claim.P99)
	require.Positive(t, r.Pickup.N)
	require.Positive(t, r.Raw.PutPerSec)
	require.Positive(t, r.Efficiency)
	require.Len(t, r.Idle, 2)
	for _, idle := range r.Idle {
		require.Positive(t, idle.RequestsPerMinute[store.OpList], "idle workers poll")
	}
	require.NotEmpty(t, r.Targets)

	// Every bucket was removed.
	for _, name := range made {
		s, err := s3store.New(context.Background(), storetest.S3Config(t, name))
		require.NoError(t, err)
		_, err = s.Versioning(context.Background())
		require.ErrorIs(t, err, store.ErrBucketNotFound, "bucket %s was left behind", name)
	}
}

// TestPlots draws both charts from fixed points.
func TestPlots(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sweep := []bench.SweepPoint{{Shape: bench.Shape{Workers: 1, Concurrency: 1}, TasksPerSecond: 10}, {Shape: bench.Shape{Workers: 4, Concurrency: 8}, TasksPerSecond: 40}}
	require.NoError(t, bench.PlotSweep(sweep, filepath.Join(dir, "t.svg")))
	polls := []bench.PollPoint{{PollMax: time.Second, CostPerMonth: 20}, {PollMax: 5 * time.Second, CostPerMonth: 4.6}}
	require.NoError(t, bench.PlotPolls(polls, filepath.Join(dir, "c.svg")))
	for _, f := range []string{"t.svg", "c.svg"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		require.NoError(t, err)
		require.Contains(t, string(b), "<svg")
	}
	b, err := os.ReadFile(filepath.Join(dir, "t.svg"))
	require.NoError(t, err)
	require.Contains(t, string(b), "4x8", "the shapes label the bars")
}
