package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/internal/testutil"
	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store/storetest"
)

func TestTypeWeightsPick(t *testing.T) {
	t.Parallel()
	count := func(c *typeWeights, types []string, n int) (map[string]int, []string) {
		got, seq := map[string]int{}, make([]string, 0, n)
		for range n {
			typ := c.pick(types)
			got[typ]++
			seq = append(seq, typ)
		}
		return got, seq
	}
	t.Run("proportion", func(t *testing.T) {
		c := newTypeWeights(map[string]int{"a": 6, "b": 3, "c": 1})
		got, seq := count(c, []string{"a", "b", "c"}, 1000)
		require.Equal(t, map[string]int{"a": 600, "b": 300, "c": 100}, got)
		// Smooth: every 10 picks in a row hold exactly one c.
		for i := 0; i+10 <= len(seq); i++ {
			n := 0
			for _, typ := range seq[i : i+10] {
				if typ == "c" {
					n++
				}
			}
			require.Equal(t, 1, n, "picks %d..%d: %v", i, i+9, seq[i:i+10])
		}
	})
	t.Run("an absent type gives its share to the others", func(t *testing.T) {
		c := newTypeWeights(map[string]int{"a": 6, "b": 3, "c": 1})
		got, _ := count(c, []string{"a", "b"}, 900)
		require.Equal(t, map[string]int{"a": 600, "b": 300}, got)
		got, _ = count(c, []string{"c"}, 5)
		require.Equal(t, map[string]int{"c": 5}, got, "alone, a type takes every turn")
	})
	t.Run("unnamed types weigh 1", func(t *testing.T) {
		c := newTypeWeights(map[string]int{"a": 3})
		got, _ := count(c, []string{"a", "z"}, 400)
		require.Equal(t, map[string]int{"a": 300, "z": 100}, got)
	})
	t.Run("empty", func(t *testing.T) {
		require.Equal(t, "", newTypeWeights(map[string]int{"a": 1}).pick(nil))
		require.Nil(t, newTypeWeights(nil))
	})
}

// The weighted order keeps the view's order within each type and leaves out
// the types skip names.
func TestWeightedOrder(t *testing.T) {
	t.Parallel()
	types := []string{"a", "b", "a", "b", "a", "b", "a"}
	entries := make([]heldEntry, len(types))
	order := make([]int, len(types))
	for i, typ := range types {
		entries[i].Type = typ
		order[i] = i
	}
	drain := func(w *Worker, skip func(string) bool) []int {
		o := w.weightedOrder(entries, order)
		var out []int
		for {
			i, ok := o.next(skip)
			if !ok {
				return out
			}
			out = append(out, i)
		}
	}
	none := func(string) bool { return false }
	require.Equal(t, order, drain(&Worker{}, none), "without weights: the view's order")
	w := &Worker{weights: newTypeWeights(map[string]int{"a": 1, "b": 3})}
	require.Equal(t, []int{1, 0, 3, 5, 2, 4, 6}, drain(w, none))
	w = &Worker{weights: newTypeWeights(map[string]int{"a": 1, "b": 3})}
	require.Equal(t, []int{0, 2, 4, 6}, drain(w, func(typ string) bool { return typ == "b" }))
}

// A worker serving three weighted types with one slot claims them about
// 6:3:1 while all three have a backlog (counted over claims, not timed).
func TestWorkerWeightedTypes(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, b storetest.Backend) {
		bd := setup(t, b, setupOpts{})
		const perType, claims = 300, 300
		for i := range perType {
			for _, typ := range []string{"a", "b", "c"} {
				bd.submit(t, typ, fmt.Sprintf(`{"n":%d}`, i))
			}
		}
		o := bd.opts(t)
		o.Concurrency = 1
		o.Weights = map[string]int{"a": 6, "b": 3, "c": 1}
		w := New(bd.q, o)
		var (
			mu  sync.Mutex
			seq []string
		)
		for _, typ := range []string{"a", "b", "c"} {
			w.Handle(typ, func(_ context.Context, task *queue.Task) (json.RawMessage, error) {
				mu.Lock()
				seq = append(seq, task.Type)
				mu.Unlock()
				return nil, nil
			})
		}
		r := start(t, w)
		testutil.Eventually(t, func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(seq) >= claims
		}, "claims")
		require.NoError(t, r.stop(t))
		got := map[string]int{}
		for _, typ := range seq[:claims] {
			got[typ]++
		}
		// 180:90:30, within 10% of the claims for each type.
		for typ, want := range map[string]int{"a": 180, "b": 90, "c": 30} {
			require.InDelta(t, want, got[typ], claims/10, "type %s: %v", typ, got)
		}
	})
}
