package bench_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
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
	// The run under a fleet-wide cap (half the 6 slots) and a rate pays
	// the same request floor per task.
	l := r.Limited
	require.NotNil(t, l, "the end-to-end run with a cap and a rate ran")
	require.Equal(t, 3, l.Cap)
	require.Positive(t, l.RatePerSecond)
	require.Equal(t, 60, l.Tasks)
	require.Zero(t, l.Duplicates)
	require.GreaterOrEqual(t, l.RequestsPerTask[store.OpPut], 5.0)
	require.Less(t, l.RequestsPerTask[store.OpPut], 8.0)
	require.GreaterOrEqual(t, l.RequestsPerTask[store.OpGet], 1.0)
	require.InDelta(t, 2.0, l.RequestsPerTask[store.OpDelete], 0.5)
	var text strings.Builder
	r.WriteText(&text)
	require.Contains(t, text.String(), "end to end, fleet-wide cap 3 and rate")
	require.Equal(t, 12, r.Claim.N)
	require.LessOrEqual(t, r.Claim.P50, r.Claim.P99)
	require.Positive(t, r.Pickup.N)
	require.Positive(t, r.Raw.PutPerSec)
	require.Len(t, r.Raw.Runs, 2, "the raw ceiling is measured before and after the end-to-end run")
	require.InDelta(t, (r.Raw.Runs[0].PutPerSec+r.Raw.Runs[1].PutPerSec)/2, r.Raw.PutPerSec, 1e-9)
	require.Positive(t, r.Efficiency)
	require.Equal(t, 6, r.TaskCeiling.Concurrency)
	require.Positive(t, r.TaskCeiling.PerSecond)
	require.InDelta(t, e.TasksPerSecond/r.TaskCeiling.PerSecond, r.OfTaskCeiling, 1e-9)
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

// TestDependenciesSmall runs the dependency phases alone with small
// shapes against MinIO: every child is released by its parents' ends
// alone, the fan-in's child exactly once, and the costs the report
// computes are the ones queue/doc.go states where nothing races (the
// fan-out's edges; the fan-in's races on its child are counted, not
// asserted).
func TestDependenciesSmall(t *testing.T) {
	t.Parallel()
	storetest.MinIO(t) // skips (or fails in CI) without MinIO
	cfg := bench.Config{
		NewBucket: func(ctx context.Context, name string) (bench.Bucket, error) {
			return s3store.New(ctx, storetest.S3Config(t, name))
		},
		FanOut: 40, FanIn: 12, DepsOnly: true, Prices: store.AWSStandardPrices,
	}
	r, err := bench.Run(context.Background(), cfg)
	require.NoError(t, err)
	require.Zero(t, r.EndToEnd.Tasks, "only the dependency phases ran")
	require.Len(t, r.Fans, 4)
	for _, f := range r.Fans {
		name := f.Shape + " via " + f.Via
		require.Zero(t, f.Unrecorded, name)
		require.Zero(t, f.SubmitErrors, name)
		require.Nil(t, f.Repair, name)
		require.Positive(t, f.BigBytes, name)
		require.GreaterOrEqual(t, f.ReleaseMS, 0.0, name)
		if f.Shape == "fan-out" {
			require.Equal(t, 40, f.Edges, name)
			require.Equal(t, 40, f.Released, name)
			require.Equal(t, 40, f.ReleasedByEnd, name)
			// The parent's claim and complete, then per child 1 GET + 1 PUT
			// of the child, its ready entry and its waiting entry.
			require.InDelta(t, 41.0/40, f.End.PerEdge[store.OpGet], 0.001, name)
			require.InDelta(t, 83.0/40, f.End.PerEdge[store.OpPut], 0.001, name)
			require.InDelta(t, 42.0/40, f.End.PerEdge[store.OpDelete], 0.001, name)
			require.Equal(t, int64(2), f.End.BigWrites, "%s: the parent is written by its claim and its complete", name)
		} else {
			require.Equal(t, 12, f.Edges, name)
			require.Equal(t, 1, f.Released, name)
			require.Equal(t, 1, f.Releases, "%s: the child is released exactly once", name)
			require.GreaterOrEqual(t, f.End.BigWrites, int64(12), "%s: one write of the child per parent at least", name)
		}
		if f.Via == "workflow" {
			steps := f.Edges + 1
			require.InDelta(t, float64(2*steps+3)/float64(f.Edges), f.Submit.PerEdge[store.OpPut], 0.001, "%s: 2 PUTs per step, the marker, the record and the name", name)
		}
	}
	require.NotEmpty(t, r.Targets)
	var text strings.Builder
	r.WriteText(&text)
	require.Contains(t, text.String(), "fan-in, 12 parents, via after")
	require.Contains(t, text.String(), "released events of the child")
}
