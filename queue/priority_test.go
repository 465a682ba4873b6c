package queue_test

import (
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store/storetest"
)

func TestPriorityOrder(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		b := setup(t, be)
		now := b.q.Now()
		// Submitted oldest first: low, normal, high, all available now.
		low := b.submitReq(t, queue.SubmitRequest{Type: "p", Priority: queue.PriorityLow})
		b.clock.Advance(time.Second)
		normal := b.submitReq(t, queue.SubmitRequest{Type: "p"})
		b.clock.Advance(time.Second)
		high := b.submitReq(t, queue.SubmitRequest{Type: "p", Priority: queue.PriorityHigh})
		// Not available yet, whatever its priority: never listed.
		b.submitReq(t, queue.SubmitRequest{Type: "p", Priority: queue.PriorityHigh, AvailableAt: now.Add(time.Hour)})

		// Entries come partition by partition (shard by shard), each in rank
		// order; the rank orders them across shards (workers claim a page
		// by priority).
		es := b.readyEntries(t, queue.ReadyQuery{})
		byRank := func(es []queue.ReadyEntry) []queue.ReadyEntry {
			slices.SortStableFunc(es, func(a, b queue.ReadyEntry) int { return a.Rank.Compare(b.Rank) })
			return es
		}
		var got []uuid.UUID
		for _, e := range byRank(es) {
			got = append(got, e.ID)
		}
		require.Equal(t, []uuid.UUID{high.ID, normal.ID, low.ID}, got, "high first, low last, the delayed task not at all")
		require.Equal(t, queue.PriorityLow, es[2].Priority)
		require.Equal(t, low.AvailableAt, es[2].AvailableAt, "a low task is claimable as soon as it is available")

		// No starvation: a low task that has waited more than two steps
		// goes ahead of a high task submitted now.
		b.clock.Advance(2*queue.PriorityStep + time.Minute)
		late := b.submitReq(t, queue.SubmitRequest{Type: "p", Priority: queue.PriorityHigh})
		es = byRank(b.readyEntries(t, queue.ReadyQuery{}))
		require.Equal(t, late.ID, es[len(es)-1].ID, "the new high task ranks after tasks that waited longer than 2 x PriorityStep")

		// The priority survives a retry.
		l := b.claim(t, high, "w1")
		next, err := b.q.Retry(b.ctx, l, "again", time.Millisecond)
		require.NoError(t, err)
		require.Equal(t, queue.PriorityHigh, next.Priority)

		_, _, err = b.q.Submit(b.ctx, queue.SubmitRequest{Type: "p", Priority: "urgent"})
		require.ErrorIs(t, err, queue.ErrInvalidInput)
		require.Contains(t, err.Error(), "high, normal, low")
	})
}
