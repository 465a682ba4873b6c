package queue_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/store/memstore"
	"github.com/qo-queue/qo/store/storetest"
)

// listedAs lists a key's versions in another order than newest first.
type listedAs struct {
	store.Store
	order func([]store.Version)
}

func (l listedAs) ListVersions(ctx context.Context, key string) ([]store.Version, error) {
	vs, err := l.Store.ListVersions(ctx, key)
	l.order(vs)
	return vs, err
}

// History is in rev order whatever order the server lists versions in:
// gofakes3 lists them oldest first.
func TestHistoryOrderIsRevOrder(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	mem := memstore.New(memstore.WithClock(newFakeClock()))
	_, err := queue.Init(ctx, mem, 1)
	require.NoError(t, err)
	q, err := queue.Open(ctx, mem, queue.Options{Clock: newFakeClock()})
	require.NoError(t, err)
	task, _, err := q.Submit(ctx, queue.SubmitRequest{Type: "h", Timeout: time.Minute})
	require.NoError(t, err)
	l, err := q.Claim(ctx, readyEntryOf(task), "w1")
	require.NoError(t, err)
	require.NoError(t, q.Extend(ctx, l))
	_, err = q.Complete(ctx, l, nil)
	require.NoError(t, err)
	want := []string{queue.EventEnqueued, queue.EventClaimed, queue.EventLeaseExtended, queue.EventSucceeded}

	for _, tc := range []struct {
		name  string
		order func([]store.Version)
	}{
		{"newest first", func([]store.Version) {}},
		{"oldest first", func(vs []store.Version) { slices.Reverse(vs) }},
		{"oldest first, wrapped", nil},
		{"rotated", func(vs []store.Version) { vs[0], vs[1], vs[2], vs[3] = vs[2], vs[0], vs[3], vs[1] }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s store.Store = listedAs{mem, tc.order}
			if tc.order == nil {
				s = storetest.ReversedVersions{Store: mem}
			}
			q, err := queue.Open(ctx, s, queue.Options{})
			require.NoError(t, err)
			events, err := q.History(ctx, task.ID)
			require.NoError(t, err)
			var names []string
			for i, e := range events {
				names = append(names, e.Name)
				require.Equal(t, int64(i+1), e.Rev)
			}
			require.Equal(t, want, names)
			require.Equal(t, "w1", events[3].WorkerID, "the lease holder, read from the version before")
		})
	}
}
