package queue_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/store/memstore"
)

func TestHistoryWithoutVersioning(t *testing.T) {
	t.Parallel()
	s := memstore.New(memstore.WithoutVersioning())
	ctx := t.Context()
	// A store without Admin: Init cannot turn versioning on.
	_, err := queue.Init(ctx, struct{ store.Store }{s}, 1)
	require.NoError(t, err)
	q, err := queue.Open(ctx, s, queue.Options{})
	require.NoError(t, err)
	task, _, err := q.Submit(ctx, queue.SubmitRequest{Type: "t"})
	require.NoError(t, err)
	_, err = q.Cancel(ctx, task.ID, "")
	require.NoError(t, err)
	events, err := q.History(ctx, task.ID)
	require.NoError(t, err)
	require.Len(t, events, 1, "only the current version survives")
	require.Equal(t, queue.EventCancelled, events[0].Name)
}
