package queue_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store/storetest"
)

func TestExpiry(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		b := setup(t, be)
		now := b.q.Now()

		// A task started in time runs normally.
		ok := b.submitReq(t, queue.SubmitRequest{Type: "e", ExpiresAt: now.Add(time.Minute)})
		l := b.claim(t, ok, "w1")
		require.Equal(t, queue.StatusRunning, l.Task.Status)

		// A claim after the deadline expires the task instead of running it.
		exp := b.expired(t, "e")
		require.Equal(t, queue.EventExpired, exp.LastEvent)
		require.Zero(t, exp.Attempt, "an expired task never ran")
		require.NotContains(t, b.keys(t, queue.ReadyPrefix), queue.ReadyKey(exp), "its ready entry is gone")

		// The sweeper expires tasks no worker looks at (a paused type).
		idle := b.submitReq(t, queue.SubmitRequest{Type: "nobody", ExpiresAt: b.q.Now().Add(time.Second)})
		b.clock.Advance(2 * time.Second)
		res, _, err := b.q.Recovery().Sweep(b.ctx, "", 0, 0)
		require.NoError(t, err)
		require.Equal(t, 1, res.Expired)
		require.Equal(t, queue.StatusExpired, b.get(t, idle).Status)

		// Replay runs it after all: the passed deadline is cleared.
		re, err := b.q.Replay(b.ctx, exp.ID)
		require.NoError(t, err)
		require.Equal(t, queue.StatusPending, re.Status)
		require.Nil(t, re.ExpiresAt)
		b.claim(t, re, "w1")
		_, err = b.q.Archive(b.ctx, idle.ID)
		require.NoError(t, err)

		// A deadline at or before availability can never be met.
		_, _, err = b.q.Submit(b.ctx, queue.SubmitRequest{Type: "e", AvailableAt: now.Add(time.Hour), ExpiresAt: now.Add(time.Minute)})
		require.ErrorIs(t, err, queue.ErrInvalidInput)
		require.Contains(t, err.Error(), "could never run")
	})
}
