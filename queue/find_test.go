package queue_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/store/storetest"
)

func TestCanonicalIDPrefix(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in, prefix, hex string
		bad             bool
	}{
		{in: "0B6F", prefix: "0b6f", hex: "0b6f"},
		{in: "0b6f4c2e8d1a", prefix: "0b6f4c2e-8d1a", hex: "0b6f4c2e8d1a"},
		{in: " 0b6f4c2e-8d1a-4f ", prefix: "0b6f4c2e-8d1a-4f", hex: "0b6f4c2e8d1a4f"},
		{in: "0b6f4c2e-8d1a-4f7e-9c3b-2a5d6e7f8a9b", prefix: "0b6f4c2e-8d1a-4f7e-9c3b-2a5d6e7f8a9b", hex: "0b6f4c2e8d1a4f7e9c3b2a5d6e7f8a9b"},
		{in: "", bad: true},
		{in: "--", bad: true},
		{in: "xyz", bad: true},
		{in: "0b6f4c2e-8d1a-4f7e-9c3b-2a5d6e7f8a9b0", bad: true},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			t.Parallel()
			prefix, hex, err := queue.CanonicalIDPrefix(tc.in)
			if tc.bad {
				require.ErrorIs(t, err, queue.ErrInvalidInput)
				require.Contains(t, err.Error(), "hex digits")
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.prefix, prefix)
			require.Equal(t, tc.hex, hex)
		})
	}
}

// TestFindByIDPrefix: tasks are found by the start of their id, in id
// order, at a cost set by the shards listed, never by the bucket's history.
func TestFindByIDPrefix(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		b := setup(t, be)
		var ids []string
		for range 12 {
			ids = append(ids, b.submit(t, "t", `{}`).ID.String())
		}
		first := ids[0]

		find := func(prefix string, limit int) ([]string, bool, map[store.Op]int64) {
			before := b.counts()
			got, more, err := b.q.FindByIDPrefix(b.ctx, prefix, limit)
			require.NoError(t, err)
			d := b.counts().Sub(before)
			var out []string
			for _, id := range got {
				out = append(out, id.String())
			}
			return out, more, map[store.Op]int64{store.OpList: d.Total(store.OpList), store.OpGet: d.Total(store.OpGet)}
		}

		got, more, cost := find(first[:13], 100)
		require.Contains(t, got, first)
		require.False(t, more)
		require.Equal(t, map[store.Op]int64{store.OpList: 16, store.OpGet: 0}, cost, "a time-ordered id: 1 LIST per shard")
		for _, id := range got {
			require.True(t, strings.HasPrefix(id, first[:13]))
		}
		require.IsIncreasing(t, got)

		same, _, _ := find(strings.ToUpper(strings.ReplaceAll(first[:13], "-", "")), 100)
		require.Equal(t, got, same, "case and dashes do not matter")

		all, more, _ := find(first[:1], 100)
		require.Len(t, all, 12, "every task starts with the same time digits")
		require.False(t, more)
		two, more, _ := find(first[:1], 2)
		require.Equal(t, all[:2], two, "the limit keeps the first ids")
		require.True(t, more)

		full, more, cost := find(first, 100)
		require.Equal(t, []string{first}, full)
		require.False(t, more)
		require.Equal(t, map[store.Op]int64{store.OpList: 0, store.OpGet: 0}, cost, "a full id is returned as is")

		none, _, cost := find("00000000-0000-4", 100)
		require.Empty(t, none)
		require.Equal(t, int64(1), cost[store.OpList], "a random id's prefix names its shard: 1 LIST")

		_, _, err := b.q.FindByIDPrefix(b.ctx, "not-hex", 10)
		require.ErrorIs(t, err, queue.ErrInvalidInput)
	})
}
