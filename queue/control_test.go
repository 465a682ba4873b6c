package queue_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/queue/control"
	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/store/memstore"
	"github.com/qo-queue/qo/store/storetest"
)

func TestPauseControl(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		b := setup(t, be)
		c, err := control.Read(b.ctx, b.q)
		require.NoError(t, err)
		require.False(t, c.IsPaused("a"), "a queue never paused has no control object")

		// Concurrent pauses of different types all land (compare-and-swap).
		var wg sync.WaitGroup
		for _, typ := range []string{"a", "b", "c", "d"} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := control.Pause(b.ctx, b.q, typ, "reason "+typ)
				require.NoError(t, err)
			}()
		}
		wg.Wait()
		c, err = control.Read(b.ctx, b.q)
		require.NoError(t, err)
		require.Equal(t, []string{"a", "b", "c", "d"}, c.PausedTypes())
		require.Equal(t, "reason b", c.Types["b"].Reason)
		require.False(t, c.IsPaused("e"))

		c, err = control.Pause(b.ctx, b.q, "", "maintenance")
		require.NoError(t, err)
		require.True(t, c.IsPaused("e"))
		c, err = control.Resume(b.ctx, b.q, "")
		require.NoError(t, err)
		require.False(t, c.IsPaused("e"))
		require.True(t, c.IsPaused("a"), "resuming the queue leaves types paused by name")
		c, err = control.Resume(b.ctx, b.q, "a")
		require.NoError(t, err)
		require.False(t, c.IsPaused("a"))

		// Repeating a change writes nothing.
		before := b.counts()
		_, err = control.Resume(b.ctx, b.q, "a")
		require.NoError(t, err)
		require.Zero(t, b.counts().Sub(before).Total(store.OpPut))

		_, err = control.Pause(b.ctx, b.q, "bad type", "")
		require.ErrorIs(t, err, queue.ErrInvalidInput)
	})
}

// SetLimit and ClearLimit keep a type's fleet-wide cap in control.json
// beside the pauses; a bad cap is refused and a malformed one reported.
func TestSetLimit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := memstore.New()
	_, err := queue.Init(ctx, s, 1)
	require.NoError(t, err)
	q, err := queue.Open(ctx, s, queue.Options{})
	require.NoError(t, err)
	_, err = control.Pause(ctx, q, "api", "")
	require.NoError(t, err)
	c, err := control.SetLimit(ctx, q, "api", 5)
	require.NoError(t, err)
	n, ok := c.ConcurrencyCap("api")
	require.True(t, ok)
	require.Equal(t, 5, n)
	require.True(t, c.IsPaused("api"), "the pause stays")
	rev := c.Rev
	c, err = control.SetLimit(ctx, q, "api", 5)
	require.NoError(t, err)
	require.Equal(t, rev, c.Rev, "setting the same cap writes nothing")
	_, err = control.SetLimit(ctx, q, "api", 0)
	require.ErrorIs(t, err, queue.ErrInvalidInput)
	c, err = control.ClearLimit(ctx, q, "api")
	require.NoError(t, err)
	_, ok = c.ConcurrencyCap("api")
	require.False(t, ok)

	_, err = s.Put(ctx, queue.ControlKey, []byte(`{"format":1,"limits":{"api":{"concurrency":0}}}`), store.Condition{})
	require.NoError(t, err)
	_, err = control.Read(ctx, q)
	var m *queue.MalformedError
	require.ErrorAs(t, err, &m)
}

// A limit on a type whose name begins with the prefix of another kind of
// limit (its share would read as that kind's, of another type) is refused
// by every setter, naming the prefix; clearing one is allowed.
func TestLimitRefusedOnHoldPrefixedType(t *testing.T) {
	t.Parallel()
	b := setup(t, storetest.Backends()[0])
	ctx, q := b.ctx, b.q
	for _, typ := range []string{"rate:x", "key:rotate", "keyrate:x"} {
		for name, set := range map[string]func() (queue.Control, error){
			"cap":          func() (queue.Control, error) { return control.SetLimit(ctx, q, typ, 2) },
			"rate":         func() (queue.Control, error) { return control.SetRate(ctx, q, typ, 5, time.Second, 0) },
			"per-key cap":  func() (queue.Control, error) { return control.SetKeyLimit(ctx, q, typ, 2) },
			"per-key rate": func() (queue.Control, error) { return control.SetKeyRate(ctx, q, typ, 5, time.Second, 0) },
		} {
			_, err := set()
			require.ErrorIs(t, err, queue.ErrInvalidInput, "%s on %s", name, typ)
			require.ErrorContains(t, err, "begins with "+fmt.Sprintf("%q", queue.HoldPrefixed(typ)), "%s on %s", name, typ)
		}
		_, err := control.ClearLimit(ctx, q, typ)
		require.NoError(t, err)
	}
	for _, typ := range []string{"x", "email:send", "ratex", "keys:x"} {
		require.Empty(t, queue.HoldPrefixed(typ), typ)
		_, err := control.SetLimit(ctx, q, typ, 2)
		require.NoError(t, err, typ)
	}
}

// SetRate keeps a type's fleet-wide rate beside its cap; ParseRate takes
// 20/s and 600/m; bad rates are refused and malformed ones reported.
func TestSetRate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := memstore.New()
	_, err := queue.Init(ctx, s, 1)
	require.NoError(t, err)
	q, err := queue.Open(ctx, s, queue.Options{})
	require.NoError(t, err)
	_, err = control.SetLimit(ctx, q, "api", 5)
	require.NoError(t, err)
	c, err := control.SetRate(ctx, q, "api", 20, time.Second, 0)
	require.NoError(t, err)
	r, ok := c.RateLimit("api")
	require.True(t, ok)
	require.Equal(t, queue.RateLimit{Starts: 20, Per: time.Second, Burst: 20}, r, "the burst defaults to a second's worth")
	require.Equal(t, 1200, r.PerMinute())
	n, ok := c.ConcurrencyCap("api")
	require.True(t, ok, "the cap stays")
	require.Equal(t, 5, n)
	c, err = control.SetLimit(ctx, q, "api", 3)
	require.NoError(t, err)
	_, ok = c.RateLimit("api")
	require.True(t, ok, "setting the cap keeps the rate")
	rev := c.Rev
	c, err = control.SetRate(ctx, q, "api", 20, time.Second, 0)
	require.NoError(t, err)
	require.Equal(t, rev, c.Rev, "setting the same rate writes nothing")

	c, err = control.SetRate(ctx, q, "slow", 90, time.Minute, 4)
	require.NoError(t, err)
	r, _ = c.RateLimit("slow")
	require.Equal(t, queue.RateLimit{Starts: 90, Per: time.Minute, Burst: 4}, r)
	require.Equal(t, "90/m", r.String())
	_, ok = c.ConcurrencyCap("slow")
	require.False(t, ok, "a rate alone is no cap")
	c, err = control.Read(ctx, q)
	require.NoError(t, err, "a rate without a cap reads back")
	_, ok = c.RateLimit("slow")
	require.True(t, ok)

	for _, bad := range []struct {
		starts int
		per    time.Duration
		burst  int
	}{{0, time.Second, 0}, {5, time.Hour, 0}, {5, time.Second, -1}, {queue.MaxRate + 1, time.Second, 0}} {
		_, err = control.SetRate(ctx, q, "api", bad.starts, bad.per, bad.burst)
		require.ErrorIs(t, err, queue.ErrInvalidInput, "%+v", bad)
	}
	for in, want := range map[string]int{"20/s": 20, "600/m": 600, " 7/min ": 7} {
		n, _, err := queue.ParseRate(in)
		require.NoError(t, err, in)
		require.Equal(t, want, n, in)
	}
	for _, in := range []string{"20", "0/s", "x/s", "5/h", "-1/m", "2000000/s"} {
		_, _, err := queue.ParseRate(in)
		require.ErrorIs(t, err, queue.ErrInvalidInput, in)
	}

	for _, body := range []string{
		`{"format":1,"limits":{"api":{"concurrency":0,"rate":5,"per":"h"}}}`,
		`{"format":1,"limits":{"api":{"concurrency":2,"rate":-5,"per":"s"}}}`,
		`{"format":1,"limits":{"api":{"concurrency":0,"burst":3}}}`,
	} {
		_, err = s.Put(ctx, queue.ControlKey, []byte(body), store.Condition{})
		require.NoError(t, err)
		_, err = control.Read(ctx, q)
		var m *queue.MalformedError
		require.ErrorAs(t, err, &m, body)
	}
}
