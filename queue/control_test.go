package queue_test

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/store/storetest"
)

func TestPauseControl(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		b := setup(t, be)
		c, err := b.q.Control(b.ctx)
		require.NoError(t, err)
		require.False(t, c.IsPaused("a"), "a queue never paused has no control object")

		// Concurrent pauses of different types all land (compare-and-swap).
		var wg sync.WaitGroup
		for _, typ := range []string{"a", "b", "c", "d"} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := b.q.Pause(b.ctx, typ, "reason "+typ)
				require.NoError(t, err)
			}()
		}
		wg.Wait()
		c, err = b.q.Control(b.ctx)
		require.NoError(t, err)
		require.Equal(t, []string{"a", "b", "c", "d"}, c.PausedTypes())
		require.Equal(t, "reason b", c.Types["b"].Reason)
		require.False(t, c.IsPaused("e"))

		c, err = b.q.Pause(b.ctx, "", "maintenance")
		require.NoError(t, err)
		require.True(t, c.IsPaused("e"))
		c, err = b.q.Resume(b.ctx, "")
		require.NoError(t, err)
		require.False(t, c.IsPaused("e"))
		require.True(t, c.IsPaused("a"), "resuming the queue leaves types paused by name")
		c, err = b.q.Resume(b.ctx, "a")
		require.NoError(t, err)
		require.False(t, c.IsPaused("a"))

		// Repeating a change writes nothing.
		before := b.counts()
		_, err = b.q.Resume(b.ctx, "a")
		require.NoError(t, err)
		require.Zero(t, b.counts().Sub(before).Total(store.OpPut))

		_, err = b.q.Pause(b.ctx, "bad type", "")
		require.ErrorIs(t, err, queue.ErrInvalidInput)
	})
}
