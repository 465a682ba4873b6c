package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/store"
)

// clockBound is how far a store's Now may be from the local clock. The
// test servers run on this machine, so the real offset is near zero; the
// bound only catches gross errors (a wrong time zone, seconds read as
// milliseconds, an uninitialised estimate).
const clockBound = 2 * time.Minute

func testClock(t *testing.T, s store.Store) {
	ctx := ctxFor(t)
	// Before any other request: a store must still tell the time.
	now, err := s.Now(ctx)
	require.NoError(t, err)
	require.WithinDuration(t, time.Now(), now, clockBound, "server time is near local time")

	res, err := s.Put(ctx, "clock/a", []byte("a"), store.Condition{})
	require.NoError(t, err)
	obj, err := s.Get(ctx, "clock/a")
	require.NoError(t, err)
	require.Equal(t, res.ETag, obj.ETag)
	now, err = s.Now(ctx)
	require.NoError(t, err)
	require.WithinDuration(t, now, obj.LastModified, clockBound, "last-modified is on the server clock")
	require.WithinDuration(t, time.Now(), now, clockBound)

	// Now reads a cached estimate: asking repeatedly sends no request.
	if c, ok := s.(store.Counted); ok {
		before := c.Requests().Snapshot()
		for range 10 {
			_, err := s.Now(ctx)
			require.NoError(t, err)
		}
		diff := c.Requests().Snapshot().Sub(before)
		require.Empty(t, diff.String(), "Now sent requests: %s", diff)
	}

	require.WithinDuration(t, time.Now(), store.ServerClock(s).Now(), clockBound)
}
