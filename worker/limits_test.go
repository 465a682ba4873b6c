package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/store/storetest"
)

// A worker that meets a task object over its bound skips it and stays up;
// a handler's output over the queue's limit fails its task permanently,
// with the limit in the error, instead of being written.
func TestWorkerSizeLimits(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		s := b.New(t)
		const limit = 100
		_, err := queue.InitWithOptions(ctx, s, queue.InitOptions{ShardChars: 1, MaxPayloadBytes: limit})
		require.NoError(t, err)
		q, err := queue.Open(ctx, s, queue.Options{Logger: testLogger(t)})
		require.NoError(t, err)
		bd := &bundle{s: s, q: q}

		// A task whose object someone padded past the task bound (two
		// inline payloads and 4 MiB): valid JSON still, its ready entry in
		// place.
		big := bd.submit(t, "echo", `{}`)
		body, err := queue.EncodeTask(big)
		require.NoError(t, err)
		body = append(body, bytes.Repeat([]byte(" "), 6<<20+1-len(body))...)
		_, err = s.Put(ctx, q.TaskKey(big.ID), body, store.Condition{})
		require.NoError(t, err)

		w := New(q, bd.opts(t))
		RegisterBuiltins(w)
		w.Handle("large", func(context.Context, *queue.Task) (json.RawMessage, error) {
			return json.RawMessage(`"` + strings.Repeat("a", limit) + `"`), nil
		})
		r := start(t, w)
		large := bd.submit(t, "large", `{}`, retries(3))
		echo := bd.submit(t, "echo", `{"a":1}`)

		failed := bd.waitStatus(t, large.ID, queue.StatusFailed)
		require.Contains(t, failed.LastError, "102 bytes of output, over the queue's limit of 100 bytes")
		require.Equal(t, 0, failed.RetryCount, "not retried: the same output would be refused again")
		require.Nil(t, failed.Output)
		done := bd.waitStatus(t, echo.ID, queue.StatusCompleted)
		require.JSONEq(t, `{"a":1}`, string(done.Output))

		require.False(t, r.finished(), "the worker is still up")
		require.NoError(t, r.stop(t))
		// Never claimed: the object is as planted.
		obj, err := s.Get(ctx, q.TaskKey(big.ID))
		require.NoError(t, err)
		require.Equal(t, body, obj.Body)
		_, err = q.Get(ctx, big.ID)
		require.ErrorIs(t, err, store.ErrTooLarge)
	})
}
