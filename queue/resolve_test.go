package queue_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/store/memstore"
	"github.com/qo-queue/qo/store/storetest"
	"github.com/qo-queue/qo/worker/bench"
)

// TestResolveIDShortForm resolves the short form lists show (the end of a
// v7 id), its first digits and the whole id, for a task in every place
// one can be: pending, running, completed in the window, dead-lettered.
func TestResolveIDShortForm(t *testing.T) {
	t.Parallel()
	b := setup(t, storetest.Backends()[0], withIDs("resolve"))
	tasks := live(t, b)
	for i, task := range tasks {
		for _, typed := range []string{queue.ShortID(task.ID), strings.ToUpper(queue.ShortID(task.ID)), task.ID.String()[24:], task.ID.String(), task.ID.String()[:30]} {
			got, err := b.q.ResolveID(b.ctx, typed)
			require.NoError(t, err, "task %d typed as %q", i, typed)
			require.Equal(t, task.ID, got, "task %d typed as %q", i, typed)
		}
	}
	_, err := b.q.ResolveID(b.ctx, "0000beef")
	require.ErrorIs(t, err, queue.ErrNotFound)
	_, err = b.q.ResolveID(b.ctx, "not-an-id")
	require.ErrorIs(t, err, queue.ErrInvalidInput)
}

// TestResolveIDAmbiguous: two tasks ending the same way are both named.
func TestResolveIDAmbiguous(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := memstore.New()
	_, err := queue.Init(ctx, s, 1)
	require.NoError(t, err)
	n := 0
	q, err := queue.Open(ctx, s, queue.Options{NewID: func(at time.Time) uuid.UUID {
		id := queue.NewIDAt(at)
		n++
		copy(id[12:], []byte{0x26, 0x45, 0x45, 0xbf}) // both end with 264545bf
		id[11] = byte(n)
		return id
	}})
	require.NoError(t, err)
	var want []uuid.UUID
	for range 2 {
		task, _, err := q.Submit(ctx, queue.SubmitRequest{Type: "t", Input: json.RawMessage(`{}`)})
		require.NoError(t, err)
		want = append(want, task.ID)
	}
	_, err = q.ResolveID(ctx, "264545bf")
	require.ErrorIs(t, err, queue.ErrAmbiguousID)
	var amb *queue.AmbiguousIDError
	require.True(t, errors.As(err, &amb))
	require.ElementsMatch(t, want, amb.Candidates)
	for _, id := range want {
		require.Contains(t, err.Error(), id.String())
	}
	got, err := q.ResolveID(ctx, want[1].String()[19:]) // more digits tell them apart
	require.NoError(t, err)
	require.Equal(t, want[1], got)
}

// TestResolveIDCostIndependentOfHistory counts the requests of resolving a
// short id in a bucket without and with thousands of finished tasks (some
// dead-lettered): the same, request for request, on 16 and 256 shards.
func TestResolveIDCostIndependentOfHistory(t *testing.T) {
	t.Parallel()
	for _, shardChars := range []int{1, 2} {
		costs := map[int][]string{}
		for _, n := range []int{0, 3000} {
			b := setup(t, storetest.Backends()[0], withIDs("live"), func(o *setupOpts) { o.shardChars = shardChars })
			require.NoError(t, bench.SeedFinished(b.ctx, b.raw, b.q, bench.Seed{Tasks: n, FailedEvery: 7}))
			for _, task := range live(t, b) {
				before := b.counts()
				got, err := b.q.ResolveID(b.ctx, queue.ShortID(task.ID))
				require.NoError(t, err)
				require.Equal(t, task.ID, got)
				d := b.counts().Sub(before)
				costs[n] = append(costs[n], fmt.Sprintf("LIST=%d GET=%d", d.Total(store.OpList), d.Total(store.OpGet)))
			}
		}
		require.Equal(t, costs[0], costs[3000], "%d shard chars: resolving costs the same beside 3000 finished tasks", shardChars)
		require.Equal(t, "LIST=5 GET=0", costs[0][0], "ready, leases, waiting of one shard, dead letters, the shard's window")
	}
}
