package queuetest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/queuetest"
	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/worker"
)

type mail struct {
	To string `json:"to"`
}

func submit(t *testing.T, q *queuetest.Queue, req queue.SubmitRequest) *queue.Task {
	t.Helper()
	task, _, err := q.Submit(context.Background(), req)
	require.NoError(t, err)
	return task
}

func TestSubmitted(t *testing.T) {
	t.Parallel()
	q := queuetest.New(t)
	for _, to := range []string{"ada", "bob"} {
		submit(t, q, queue.SubmitRequest{Type: "mail", Input: json.RawMessage(`{"to":"` + to + `"}`)})
	}
	submit(t, q, queue.SubmitRequest{Type: "other", Input: json.RawMessage(`[1]`)})
	// A duplicate of an idempotency key is one task.
	for range 2 {
		submit(t, q, queue.SubmitRequest{Type: "mail", Input: json.RawMessage(`{"to":"cy"}`), IdempotencyKey: "k"})
	}
	require.Equal(t, []mail{{"ada"}, {"bob"}, {"cy"}}, queuetest.Submitted[mail](t, q, "mail"))
	require.Equal(t, [][]int{{1}}, queuetest.Submitted[[]int](t, q, "other"))
	require.Len(t, q.Tasks(""), 4)
	require.Empty(t, queuetest.Submitted[mail](t, q, "none"))
}

// RunUntilIdle: retries after backoff, delayed tasks and tasks a handler
// submits all run, without waiting for the backoffs' real time.
func TestRunUntilIdle(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	q := queuetest.New(t)
	var attempts atomic.Int32
	w := q.NewWorker(worker.Options{})
	w.Handle("flaky", func(ctx context.Context, task *queue.Task) (json.RawMessage, error) {
		if attempts.Add(1) < 4 {
			return nil, errors.New("not yet")
		}
		// A follow-up task, a day later.
		_, _, err := q.Submit(ctx, queue.SubmitRequest{Type: "later", AvailableAt: q.Now().Add(24 * time.Hour)})
		return json.RawMessage(`"ok"`), err
	})
	w.Handle("later", func(context.Context, *queue.Task) (json.RawMessage, error) { return nil, nil })
	w.Handle("broken", func(context.Context, *queue.Task) (json.RawMessage, error) {
		return nil, worker.Permanent(errors.New("bad input"))
	})
	three := 3
	// Backoffs of an hour: 3 retries would take hours of real time.
	slow := &queue.RetryPolicy{InitialIntervalMS: 3_600_000, MaxIntervalMS: 3_600_000, Multiplier: 1}
	flaky := submit(t, q, queue.SubmitRequest{Type: "flaky", MaxRetries: &three, RetryPolicy: slow})
	broken := submit(t, q, queue.SubmitRequest{Type: "broken"})
	unserved := submit(t, q, queue.SubmitRequest{Type: "nobody"})
	start := q.Now()

	q.RunUntilIdle(ctx, t, w)

	got := q.Get(t, flaky.ID)
	require.Equal(t, queue.StatusCompleted, got.Status)
	require.Equal(t, 4, got.Attempt)
	require.Equal(t, queue.StatusFailed, q.Get(t, broken.ID).Status)
	require.Equal(t, queue.StatusPending, q.Get(t, unserved.ID).Status, "a type the worker does not serve is left alone")
	later := q.Tasks("later")
	require.Len(t, later, 1)
	require.Equal(t, queue.StatusCompleted, q.Get(t, later[0].ID).Status)
	require.False(t, q.Now().Before(start.Add(27*time.Hour)), "the clock jumped over 3 backoffs and the delay: %s", q.Now().Sub(start))
}

func TestWork(t *testing.T) {
	t.Parallel()
	q := queuetest.New(t)
	task := submit(t, q, queue.SubmitRequest{Type: "echo", Input: json.RawMessage(`{"a":1}`)})
	q.Work(context.Background(), t, worker.Builtins())
	got := q.Get(t, task.ID)
	require.Equal(t, queue.StatusCompleted, got.Status)
	require.JSONEq(t, `{"a":1}`, string(got.Output))
}

func TestByHand(t *testing.T) {
	t.Parallel()
	q := queuetest.New(t)
	one := 1

	done := q.Complete(t, submit(t, q, queue.SubmitRequest{Type: "x"}).ID, map[string]int{"n": 2})
	require.Equal(t, queue.StatusCompleted, done.Status)
	require.JSONEq(t, `{"n":2}`, string(done.Output))

	failed := q.Fail(t, submit(t, q, queue.SubmitRequest{Type: "x", MaxRetries: &one}).ID, "boom")
	require.Equal(t, queue.StatusFailed, failed.Status)
	require.Equal(t, "boom", failed.LastError)

	exp := submit(t, q, queue.SubmitRequest{Type: "x", ExpiresAt: q.Now().Add(time.Hour)})
	require.Equal(t, queue.StatusExpired, q.Expire(t, exp.ID).Status)
	require.Equal(t, queue.StatusExpired, q.Get(t, exp.ID).Status)

	// A lease that expires: retried while retries remain, then failed.
	lease := submit(t, q, queue.SubmitRequest{Type: "x", MaxRetries: &one, Timeout: time.Minute})
	got := q.ExpireLease(t, lease.ID)
	require.Equal(t, queue.StatusPending, got.Status)
	require.Equal(t, 1, got.RetryCount)
	q.Clock.Advance(got.AvailableAt.Sub(q.Now()))
	got = q.ExpireLease(t, lease.ID)
	require.Equal(t, queue.StatusFailed, got.Status)
	require.Contains(t, got.LastError, "lease expired")
}

// The kit's failures name the problem and the fix.
func TestByHandRefusals(t *testing.T) {
	t.Parallel()
	q := queuetest.New(t)
	later := submit(t, q, queue.SubmitRequest{Type: "x", AvailableAt: q.Now().Add(time.Hour)})
	plain := submit(t, q, queue.SubmitRequest{Type: "x"})
	for _, tc := range []struct {
		name string
		fn   func(t queuetest.T)
		want string
	}{
		{"complete a delayed task", func(t queuetest.T) { q.Complete(t, later.ID, nil) }, "move it with q.Clock.Advance"},
		{"expire without expires_at", func(t queuetest.T) { q.Expire(t, plain.ID) }, "set SubmitRequest.ExpiresAt"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recorder{}
			done := make(chan struct{})
			go func() { defer close(done); tc.fn(rec) }()
			<-done
			require.True(t, rec.failed)
			require.Contains(t, rec.msg, tc.want)
		})
	}
}

// recorder catches a Fatalf (which ends its goroutine).
type recorder struct {
	failed bool
	msg    string
}

func (r *recorder) Helper()               {}
func (r *recorder) Errorf(string, ...any) {}
func (r *recorder) Fatalf(format string, args ...any) {
	r.failed = true
	r.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// A reader that lists a ready entry written before its task's PUT (the
// index rule's order) keeps it: the bucket's clock is the queue's, so the
// entry is fresh, not years old.
func TestFreshEntryKeptByReaders(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	q := queuetest.New(t)
	task := submit(t, q, queue.SubmitRequest{Type: "mail"})
	e, err := queue.ParseReadyKey(queue.ReadyKey(task))
	require.NoError(t, err)
	_, err = q.Claim(ctx, e, "w1")
	require.NoError(t, err)
	// The entry a retry writes first, while the task still reads running.
	retry := task.Clone()
	retry.AvailableAt = q.Now().Add(time.Second)
	key := queue.ReadyKey(retry)
	_, err = q.Store.Put(ctx, key, nil, store.Condition{})
	require.NoError(t, err)
	page, err := q.List(ctx, queue.ListQuery{Status: queue.StatusPending})
	require.NoError(t, err)
	require.Equal(t, []string{key}, page.Stale, "the entry is listed as not matching its task")
	_, err = q.Store.Get(ctx, key)
	require.NoError(t, err, "a fresh entry must outlive a reader: its task's PUT may be on its way")
}
