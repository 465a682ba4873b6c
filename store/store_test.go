package store_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/store/memstore"
)

func TestCounters(t *testing.T) {
	t.Parallel()
	var c store.Counters
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				c.Add(store.OpPut, false)
				c.Add(store.OpGet, true)
			}
		}()
	}
	wg.Wait()
	before := c.Snapshot()
	require.Equal(t, int64(800), before.OK[store.OpPut])
	require.Equal(t, int64(800), before.Failed[store.OpGet])
	require.Equal(t, int64(800), before.Total(store.OpGet))
	require.Zero(t, before.Total(store.OpList))

	c.Add(store.OpList, false)
	c.Add(store.Op("SOMETHING-NEW"), false)
	d := c.Snapshot().Sub(before)
	require.Equal(t, "LIST=1 OTHER=1", d.String(), "unknown kinds count as OTHER")
	require.Equal(t, "GET=800 PUT=800", before.String())
}

// failingStore answers Now with an error.
type failingStore struct{ store.Store }

func (failingStore) Now(context.Context) (time.Time, error) {
	return time.Time{}, errors.New("unreachable")
}

func TestServerClock(t *testing.T) {
	t.Parallel()
	fixed := time.Date(2031, 2, 3, 4, 5, 6, 0, time.UTC)
	s := memstore.New(memstore.WithClock(store.ClockFunc(func() time.Time { return fixed })))
	require.Equal(t, fixed, store.ServerClock(s).Now())

	// Without an answer the local clock stands in.
	got := store.ServerClock(failingStore{s}).Now()
	require.WithinDuration(t, time.Now(), got, time.Minute)
}

func TestConditions(t *testing.T) {
	t.Parallel()
	require.Equal(t, store.Condition{IfNoneMatch: true}, store.CreateOnly)
	require.Equal(t, store.Condition{IfMatch: `"e"`}, store.IfMatch(`"e"`))
}
