package worker

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/store/storetest"
)

// blockHandler runs until its task is cancelled.
func blockHandler(ctx context.Context, _ *queue.Task) (json.RawMessage, error) {
	<-ctx.Done()
	return nil, context.Cause(ctx)
}

func runningTypes(w *Worker) map[string]int {
	out := map[string]int{}
	for _, rt := range w.snapshotRunning() {
		out[rt.typ]++
	}
	return out
}

func TestPauseStopsClaiming(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		bd := setup(t, b, setupOpts{})
		o := bd.opts(t)
		o.Concurrency = 10
		o.ControlRefresh = time.Nanosecond // re-read the switches on every poll
		w := New(bd.q, o)
		w.Handle("a", blockHandler)
		w.Handle("b", blockHandler)
		prepared(t, w)
		for range 2 {
			bd.submit(t, "a", `{}`)
			bd.submit(t, "b", `{}`)
		}

		_, err := bd.q.Pause(ctx, "", "maintenance")
		require.NoError(t, err)
		r := w.poll(ctx, 10)
		require.NoError(t, r.err)
		require.Zero(t, r.claimed, "the switches are read before claiming what the listing found")
		before := counts(bd.s)
		r = w.poll(ctx, 10)
		require.NoError(t, r.err)
		require.Zero(t, r.claimed)
		require.Zero(t, counts(bd.s).Sub(before).Total(store.OpList), "a worker that knows it is paused does not even list")

		_, err = bd.q.Resume(ctx, "")
		require.NoError(t, err)
		_, err = bd.q.Pause(ctx, "a", "")
		require.NoError(t, err)
		r = w.poll(ctx, 10)
		require.NoError(t, r.err)
		require.Equal(t, 2, r.claimed)
		require.Equal(t, map[string]int{"b": 2}, runningTypes(w), "only the type that is not paused")

		_, err = bd.q.Resume(ctx, "a")
		require.NoError(t, err)
		require.Equal(t, 2, w.poll(ctx, 10).claimed)
		require.Equal(t, map[string]int{"a": 2, "b": 2}, runningTypes(w))
	})
}

func TestPerTypeLimit(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		bd := setup(t, b, setupOpts{})
		o := bd.opts(t)
		o.Concurrency = 10
		o.Limits = map[string]int{"email": 2}
		w := New(bd.q, o)
		w.Handle("email", blockHandler)
		w.Handle("resize", blockHandler)
		prepared(t, w)
		for range 5 {
			bd.submit(t, "email", `{}`)
		}
		for range 3 {
			bd.submit(t, "resize", `{}`)
		}
		for range 3 {
			require.NoError(t, w.poll(ctx, 10-len(w.snapshotRunning())).err)
		}
		require.Equal(t, map[string]int{"email": 2, "resize": 3}, runningTypes(w))

		bad := New(bd.q, Options{Limits: map[string]int{"other": 1}})
		bad.Handle("email", blockHandler)
		require.ErrorContains(t, bad.prepare(), `does not serve`)
		zero := New(bd.q, Options{Limits: map[string]int{"email": 0}})
		zero.Handle("email", blockHandler)
		require.ErrorContains(t, zero.prepare(), "qo pause email")
	})
}

func TestHigherPriorityClaimedFirst(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		bd := setup(t, b, setupOpts{fake: true})
		w := New(bd.q, bd.opts(t))
		w.Handle("p", blockHandler)
		prepared(t, w)
		prio := func(p queue.Priority) func(*queue.SubmitRequest) {
			return func(r *queue.SubmitRequest) { r.Priority = p }
		}
		var order []string
		low := bd.submit(t, "p", `"low"`, prio(queue.PriorityLow))
		normal := bd.submit(t, "p", `"normal"`, prio(queue.PriorityNormal))
		high := bd.submit(t, "p", `"high"`, prio(queue.PriorityHigh))
		for range 3 {
			require.Equal(t, 1, w.poll(ctx, 1).claimed)
			for _, rt := range w.snapshotRunning() {
				if !strings.Contains(strings.Join(order, ","), rt.id.String()) {
					order = append(order, rt.id.String())
				}
			}
		}
		require.Equal(t, []string{high.ID.String(), normal.ID.String(), low.ID.String()}, order)
	})
}

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
		out, err := q.LoadOutput(ctx, got)
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
