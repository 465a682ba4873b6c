package worker

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/internal/testutil"
	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store/storetest"
)

type hookKey struct{}

// recordingHook records each attempt as the hook saw it.
type recordingHook struct {
	mu       sync.Mutex
	attempts map[uuid.UUID][]hookAttempt
}

type hookAttempt struct {
	claimedStatus queue.Status
	claimBegan    time.Time
	ranWithValue  bool // the handler's context carried what Claimed put in
	finishedWith  queue.Status
	outcome       Outcome
	handlerErr    error
	finishedValue bool
}

func (h *recordingHook) Claimed(ctx context.Context, t *queue.Task, began time.Time) context.Context {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.attempts[t.ID] = append(h.attempts[t.ID], hookAttempt{claimedStatus: t.Status, claimBegan: began})
	return context.WithValue(ctx, hookKey{}, t.Attempt)
}

func (h *recordingHook) Run(ctx context.Context, t *queue.Task, next HandlerFunc) (json.RawMessage, error) {
	h.mu.Lock()
	a := h.attempts[t.ID]
	a[len(a)-1].ranWithValue = ctx.Value(hookKey{}) == t.Attempt
	h.mu.Unlock()
	return next(ctx, t)
}

func (h *recordingHook) Finished(ctx context.Context, t *queue.Task, o Outcome, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	a := h.attempts[t.ID]
	last := &a[len(a)-1]
	last.finishedWith, last.outcome, last.handlerErr = t.Status, o, err
	last.finishedValue = ctx.Value(hookKey{}) == t.Attempt
}

func (h *recordingHook) of(id uuid.UUID) []hookAttempt {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]hookAttempt(nil), h.attempts[id]...)
}

// The attempt hook follows every attempt from its claim to its recorded
// end: the context it returns reaches the handler and Finished, which
// gets the task as written and the handler's error.
func TestAttemptHook(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, b storetest.Backend) {
		bd := setup(t, b, setupOpts{})
		hook := &recordingHook{attempts: map[uuid.UUID][]hookAttempt{}}
		opts := bd.opts(t)
		opts.AttemptHook = hook
		w := New(bd.q, opts)
		boom := errors.New("boom")
		w.Handle("ok", func(context.Context, *queue.Task) (json.RawMessage, error) { return json.RawMessage(`1`), nil })
		w.Handle("flaky", func(_ context.Context, t *queue.Task) (json.RawMessage, error) {
			if t.Attempt == 1 {
				return nil, boom
			}
			return nil, nil
		})
		ok := bd.submit(t, "ok", `{}`)
		flaky := bd.submit(t, "flaky", `{}`, func(r *queue.SubmitRequest) {
			r.RetryPolicy = &queue.RetryPolicy{Multiplier: 1}
		})
		before := time.Now()
		start(t, w)
		bd.waitStatus(t, ok.ID, queue.StatusCompleted)
		bd.waitStatus(t, flaky.ID, queue.StatusCompleted)
		testutil.Eventually(t, func() bool {
			a := hook.of(flaky.ID)
			return len(hook.of(ok.ID)) == 1 && len(a) == 2 && a[1].outcome != ""
		}, "both attempts finished")

		got := hook.of(ok.ID)[0]
		require.Equal(t, queue.StatusRunning, got.claimedStatus)
		require.False(t, got.claimBegan.Before(before))
		require.True(t, got.ranWithValue)
		require.True(t, got.finishedValue)
		require.Equal(t, queue.StatusCompleted, got.finishedWith, "Finished gets the task as written")
		require.Equal(t, OutcomeCompleted, got.outcome)
		require.NoError(t, got.handlerErr)

		a := hook.of(flaky.ID)
		require.Equal(t, OutcomeRetried, a[0].outcome)
		require.Equal(t, queue.StatusPending, a[0].finishedWith)
		require.ErrorIs(t, a[0].handlerErr, boom)
		require.Equal(t, OutcomeCompleted, a[1].outcome)
	})
}
