package queue_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/store/storetest"
)

func TestPayloadOffload(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		b := setup(t, be)
		q, err := queue.Open(b.ctx, b.s, queue.Options{Clock: b.clock, OffloadThreshold: 64})
		require.NoError(t, err)
		big := json.RawMessage(`{"blob":"` + strings.Repeat("x", 200) + `"}`)

		// Small inputs stay inline.
		small, _, err := q.Submit(b.ctx, queue.SubmitRequest{Type: "o", Input: json.RawMessage(`{"a":1}`)})
		require.NoError(t, err)
		require.Nil(t, small.InputRef)

		before := b.counts()
		task, created, err := q.Submit(b.ctx, queue.SubmitRequest{Type: "o", Input: big, IdempotencyKey: "k1"})
		require.NoError(t, err)
		require.True(t, created)
		requireCounts(t, "offloaded keyed submit", before, b.counts(), map[store.Op]int64{store.OpPut: 4}) // marker, input, entry, task
		require.Nil(t, task.Input)
		require.NotNil(t, task.InputRef)
		require.Equal(t, queue.DataKey(task.Shard, task.ID, "input"), task.InputRef.Key)
		require.Equal(t, int64(len(big)), task.InputRef.Bytes)

		stored := b.get(t, task)
		require.Nil(t, stored.Input, "the task object does not carry the payload")
		in, err := q.LoadPayload(b.ctx, stored, queue.InputPayload)
		require.NoError(t, err)
		require.JSONEq(t, string(big), string(in))

		// A repeated submit is a duplicate, not a mismatch; another input
		// with the same key is refused and leaves the stored input alone.
		_, created, err = q.Submit(b.ctx, queue.SubmitRequest{Type: "o", Input: big, IdempotencyKey: "k1"})
		require.NoError(t, err)
		require.False(t, created)
		other := json.RawMessage(`{"blob":"` + strings.Repeat("y", 200) + `"}`)
		_, _, err = q.Submit(b.ctx, queue.SubmitRequest{Type: "o", Input: other, IdempotencyKey: "k1"})
		require.ErrorIs(t, err, queue.ErrIdempotencyMismatch)
		in, err = q.LoadPayload(b.ctx, b.get(t, task), queue.InputPayload)
		require.NoError(t, err)
		require.JSONEq(t, string(big), string(in))

		// A large output is offloaded by Complete and loaded back.
		l, err := q.Claim(b.ctx, readyEntryOf(task), "w1")
		require.NoError(t, err)
		done, err := q.Complete(b.ctx, l, big)
		require.NoError(t, err)
		require.Nil(t, done.Output)
		require.NotNil(t, done.OutputRef)
		full, err := q.WithPayloads(b.ctx, b.get(t, task))
		require.NoError(t, err)
		require.JSONEq(t, string(big), string(full.Input))
		require.JSONEq(t, string(big), string(full.Output))

		// An overwritten payload is reported, never handed out as the task's.
		_, err = b.raw.Put(b.ctx, done.OutputRef.Key, []byte(`{"tampered":true}`), store.Condition{})
		require.NoError(t, err)
		if done.OutputRef.VersionID == "" {
			_, err = q.LoadPayload(b.ctx, done, queue.OutputPayload)
			var m *queue.MalformedError
			require.ErrorAs(t, err, &m)
		} else {
			out, err := q.LoadPayload(b.ctx, done, queue.OutputPayload)
			require.NoError(t, err, "the reference pins the version written")
			require.JSONEq(t, string(big), string(out))
		}
	})
}

// TestStaleOutputNeverReplacesWinner: an offloaded output is written under
// its attempt's own key, so a worker that lost its lease cannot replace
// the output of the attempt that completed the task (on an unversioned
// bucket it would be lost), and its own orphan is removed.
func TestStaleOutputNeverReplacesWinner(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		b := setup(t, be)
		q, err := queue.Open(b.ctx, b.s, queue.Options{Clock: b.clock, OffloadThreshold: 64})
		require.NoError(t, err)
		task, _, err := q.Submit(b.ctx, queue.SubmitRequest{Type: "o", Timeout: time.Second})
		require.NoError(t, err)
		stale, err := q.Claim(b.ctx, readyEntryOf(task), "w1")
		require.NoError(t, err)

		// w1's lease runs out; the task is taken back and claimed by w2.
		b.clock.Advance(time.Minute)
		exp, _, err := q.Recovery().ListLeases(b.ctx, queue.ExpiredLeases, 0, "")
		require.NoError(t, err)
		require.Len(t, exp, 1)
		_, err = q.Recovery().ExpireLease(b.ctx, exp[0])
		require.NoError(t, err)
		b.clock.Advance(time.Hour) // past the retry's backoff
		winner, err := q.Claim(b.ctx, readyEntryOf(b.get(t, task)), "w2")
		require.NoError(t, err)

		won := json.RawMessage(`{"by":"w2","blob":"` + strings.Repeat("a", 200) + `"}`)
		late := json.RawMessage(`{"by":"w1","blob":"` + strings.Repeat("b", 200) + `"}`)
		done, err := q.Complete(b.ctx, winner, won)
		require.NoError(t, err)
		require.NotNil(t, done.OutputRef)
		_, err = q.Complete(b.ctx, stale, late)
		require.ErrorIs(t, err, queue.ErrLeaseLost)

		obj, err := b.raw.Get(b.ctx, done.OutputRef.Key)
		require.NoError(t, err)
		require.JSONEq(t, string(won), string(obj.Body), "the winner's output object is untouched")
		out, err := q.LoadPayload(b.ctx, b.get(t, task), queue.OutputPayload)
		require.NoError(t, err)
		require.JSONEq(t, string(won), string(out))
		require.Equal(t, []string{done.OutputRef.Key}, b.keys(t, queue.DataPrefix), "the stale attempt's output is removed")
	})
}
