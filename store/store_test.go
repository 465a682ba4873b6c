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

func TestCountsCost(t *testing.T) {
	t.Parallel()
	c := store.Counts{
		OK:     map[store.Op]int64{store.OpPut: 4000, store.OpGet: 1000, store.OpDelete: 2000, store.OpList: 100},
		Failed: map[store.Op]int64{store.OpPut: 1000, store.OpHead: 1000},
	}
	tests := []struct {
		name   string
		prices store.Prices
		want   float64
	}{
		// 5,100 PUT-class ($0.0255) + 2,000 GET-class ($0.0008); DELETE free.
		{"aws standard", store.AWSStandardPrices, 0.0263},
		{"free", store.Prices{}, 0},
		{"deletes billed", store.Prices{DeletePer1000: 1}, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.InDelta(t, tc.want, c.Cost(tc.prices), 1e-9)
		})
	}
	sum := c.Add(c)
	require.Equal(t, int64(8000), sum.OK[store.OpPut])
	require.Equal(t, int64(2000), sum.Failed[store.OpPut])
	require.Equal(t, 2*c.All(), sum.All())
	require.Equal(t, int64(9100), c.All())
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
