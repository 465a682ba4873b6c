package worker

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/store/storetest"
)

func TestOffloadedPayloads(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		bd := setup(t, b, setupOpts{})
		q, err := queue.Open(ctx, bd.s, queue.Options{OffloadThreshold: 64})
		require.NoError(t, err)
		var mu sync.Mutex
		var seen json.RawMessage
		w := New(q, bd.opts(t))
		w.Handle("big", func(_ context.Context, task *queue.Task) (json.RawMessage, error) {
			mu.Lock()
			seen = task.Input
			mu.Unlock()
			return json.RawMessage(`{"echo":` + string(task.Input) + `}`), nil
		})
		input := json.RawMessage(`{"blob":"` + strings.Repeat("z", 500) + `"}`)
		task, _, err := q.Submit(ctx, queue.SubmitRequest{Type: "big", Input: input})
		require.NoError(t, err)
		require.NotNil(t, task.InputRef)

		runCtx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- w.Run(runCtx) }()
		got := bd.waitStatus(t, task.ID, queue.StatusCompleted)
		cancel()
		require.NoError(t, <-done)

		mu.Lock()
		require.JSONEq(t, string(input), string(seen), "the handler gets the offloaded input")
		mu.Unlock()
		require.NotNil(t, got.OutputRef, "a large output is offloaded too")
		out, err := q.LoadPayload(ctx, got, queue.OutputPayload)
		require.NoError(t, err)
		require.JSONEq(t, `{"echo":`+string(input)+`}`, string(out))
	})
}

func TestMissingOffloadedInputFailsTheTask(t *testing.T) {
	t.Parallel()
	b := storetest.Backends()[0]
	ctx := context.Background()
	bd := setup(t, b, setupOpts{})
	q, err := queue.Open(ctx, bd.s, queue.Options{OffloadThreshold: 16})
	require.NoError(t, err)
	w := New(q, bd.opts(t))
	w.Handle("big", echoHandler)
	task, _, err := q.Submit(ctx, queue.SubmitRequest{Type: "big", Input: json.RawMessage(`{"blob":"0123456789abcdef"}`)})
	require.NoError(t, err)
	// A reference that no longer matches what is stored (a hand-edited
	// object, an unversioned bucket overwritten by someone else).
	task.InputRef.SHA256 = strings.Repeat("0", 64)
	body, err := queue.EncodeTask(task)
	require.NoError(t, err)
	_, err = bd.s.Put(ctx, task.Key(), body, store.Condition{})
	require.NoError(t, err)

	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(runCtx) }()
	got := bd.waitStatus(t, task.ID, queue.StatusFailed)
	cancel()
	require.NoError(t, <-done)
	require.Contains(t, got.LastError, "sha256", "a payload that does not match fails the task at once, naming why")
	require.Equal(t, 1, got.Attempt, "no retries: retrying cannot fix it")
}
