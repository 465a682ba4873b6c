package queue_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/queue/namedlease"
	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/store/storetest"
)

func TestNamedLeases(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		b := setup(t, be)
		key := queue.ShardLeaseKey("3")
		require.Equal(t, "shard-leases/3.json", key)

		_, err := namedlease.Read(b.ctx, b.q, key)
		require.ErrorIs(t, err, queue.ErrNotFound)

		a, err := namedlease.Acquire(b.ctx, b.q, key, "w-a", 30*time.Second)
		require.NoError(t, err)
		require.Equal(t, "w-a", a.Holder)
		require.Equal(t, b.clock.Now().Add(30*time.Second), a.ExpiresAt)

		_, err = namedlease.Acquire(b.ctx, b.q, key, "w-b", 30*time.Second)
		require.ErrorIs(t, err, queue.ErrConflict)
		require.Contains(t, err.Error(), "w-a")

		// Renewing pushes the expiry; re-acquiring your own lease works.
		b.clock.Advance(20 * time.Second)
		require.NoError(t, namedlease.Renew(b.ctx, b.q, a, 30*time.Second))
		require.Equal(t, b.clock.Now().Add(30*time.Second), a.ExpiresAt)
		b.clock.Advance(20 * time.Second)
		_, err = namedlease.Acquire(b.ctx, b.q, key, "w-b", 30*time.Second)
		require.ErrorIs(t, err, queue.ErrConflict)

		// Expired: another holder takes over; the old one's renewal fails.
		b.clock.Advance(11 * time.Second)
		bl, err := namedlease.Acquire(b.ctx, b.q, key, "w-b", 30*time.Second)
		require.NoError(t, err)
		require.ErrorIs(t, namedlease.Renew(b.ctx, b.q, a, 30*time.Second), queue.ErrLeaseLost)
		require.NoError(t, namedlease.Release(b.ctx, b.q, a), "releasing a lost lease is a no-op")
		got, err := namedlease.Read(b.ctx, b.q, key)
		require.NoError(t, err)
		require.Equal(t, "w-b", got.Holder)

		// Released: free at once.
		require.NoError(t, namedlease.Release(b.ctx, b.q, bl))
		got, err = namedlease.Read(b.ctx, b.q, key)
		require.NoError(t, err)
		require.Empty(t, got.Holder)
		c, err := namedlease.Acquire(b.ctx, b.q, key, "w-c", 30*time.Second)
		require.NoError(t, err)
		require.Equal(t, "w-c", c.Holder)

		// Concurrent acquisition of a fresh lease: one winner.
		results := make(chan error, 10)
		for i := 0; i < 10; i++ {
			go func() {
				_, err := namedlease.Acquire(b.ctx, b.q, queue.MonitorLeaderKey, fmt.Sprintf("m%d", i), time.Minute)
				results <- err
			}()
		}
		wins := 0
		for i := 0; i < 10; i++ {
			if err := <-results; err == nil {
				wins++
			} else {
				require.ErrorIs(t, err, queue.ErrConflict)
			}
		}
		require.Equal(t, 1, wins)

		// A corrupted lease object can be taken over.
		_, err = b.raw.Put(b.ctx, queue.ShardLeaseKey("9"), []byte("garbage"), store.Condition{})
		require.NoError(t, err)
		_, err = namedlease.Read(b.ctx, b.q, queue.ShardLeaseKey("9"))
		var m *queue.MalformedError
		require.ErrorAs(t, err, &m)
		_, err = namedlease.Acquire(b.ctx, b.q, queue.ShardLeaseKey("9"), "w-a", time.Minute)
		require.NoError(t, err)

		_, err = namedlease.Acquire(b.ctx, b.q, "tasks/0/x.json", "w-a", time.Minute)
		require.ErrorIs(t, err, queue.ErrInvalidInput)
	})
}
