package queue_test

import (
	"sort"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/queue/registry"
	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/store/storetest"
)

func TestWorkersRegistry(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		b := setup(t, be)
		now := b.clock.Now()
		for _, id := range []string{"w-b", "w-a"} {
			require.NoError(t, registry.Put(b.ctx, b.q, &queue.WorkerInfo{ID: id, StartedAt: now, LastHeartbeat: now, Shards: []string{"0"}, Concurrency: 2}))
		}
		_, err := b.raw.Put(b.ctx, queue.WorkerKey("broken"), []byte(`{`), store.Condition{})
		require.NoError(t, err)
		ws, bad, err := registry.ListReport(b.ctx, b.q)
		require.NoError(t, err)
		require.Len(t, bad, 1)
		require.Len(t, ws, 2)
		ids := []string{ws[0].ID, ws[1].ID}
		sort.Strings(ids)
		require.Equal(t, []string{"w-a", "w-b"}, ids)
		require.Equal(t, 1, ws[0].Format)
		require.NoError(t, registry.Delete(b.ctx, b.q, "w-a"))
		ws, err = registry.List(b.ctx, b.q)
		require.NoError(t, err)
		require.Len(t, ws, 1)
		require.ErrorIs(t, registry.Put(b.ctx, b.q, &queue.WorkerInfo{ID: "a/b"}), queue.ErrInvalidInput)
	})
}
