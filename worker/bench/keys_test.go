package bench_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/store/s3store"
	"github.com/qo-queue/qo/store/storetest"
	"github.com/qo-queue/qo/worker/bench"
)

// TestRunKeys runs only the run over task keys against MinIO: a deep key
// and small keys, without then with keys, every task run once, the waits
// and the ratio reported (no timing assertions).
func TestRunKeys(t *testing.T) {
	t.Parallel()
	storetest.MinIO(t) // skips (or fails in CI) without MinIO
	cfg := bench.Config{
		NewBucket: func(ctx context.Context, name string) (bench.Bucket, error) {
			return s3store.New(ctx, storetest.S3Config(t, name))
		},
		Tasks: 80, Workers: 2, Concurrency: 3, Keys: 5, KeysOnly: true, Prices: store.AWSStandardPrices,
	}
	r, err := bench.Run(context.Background(), cfg)
	require.NoError(t, err)
	require.Zero(t, r.EndToEnd.Tasks, "--keys-only runs nothing else")
	k := r.Keyed
	require.NotNil(t, k)
	require.Equal(t, 5, k.Keys)
	require.Equal(t, 60, k.DeepKeyTasks, "80 tasks: 4 small keys of 5, the rest on the deep key")
	require.Equal(t, 5, k.SmallKeyTasks)
	for _, e := range []bench.EndToEnd{k.NoKeys, k.WithKeys} {
		require.Equal(t, 80, e.Tasks)
		require.GreaterOrEqual(t, e.RequestsPerTask[store.OpPut], 5.0)
		require.GreaterOrEqual(t, e.RequestsPerTask[store.OpGet], 1.0)
	}
	require.Positive(t, k.RequestsRatio)
	require.Positive(t, k.FirstWaitMaxSeconds)
	require.GreaterOrEqual(t, k.SmallWaitMaxSeconds, k.FirstWaitMaxSeconds)
	require.LessOrEqual(t, k.DeepBacklog, k.DeepKeyTasks)
	var text strings.Builder
	r.WriteText(&text)
	require.Contains(t, text.String(), "end to end over 5 keys (1 of 60 tasks, 4 of 5), without keys")
	require.Contains(t, text.String(), "small keys behind a deep backlog of")
	names := []string{}
	for _, tg := range r.Targets {
		names = append(names, tg.Name)
	}
	require.Contains(t, names, "requests per task over 5 keys vs none")
}
