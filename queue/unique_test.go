package queue_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store/memstore"
	"github.com/qo-queue/qo/store/storetest"
)

// A key held while active returns its task while the task waits, is
// pending or runs, and makes a new task once it ended.
func TestUniqueWhileActive(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		b := setup(t, be)
		req := queue.SubmitRequest{Type: "refresh", IdempotencyKey: "customer-42", UniqueWhileActive: true}
		first, created, err := b.q.Submit(b.ctx, req)
		require.NoError(t, err)
		require.True(t, created)
		require.Equal(t, &queue.UniqueWindow{WhileActive: true}, first.Unique)

		again, created, err := b.q.Submit(b.ctx, req)
		require.NoError(t, err)
		require.False(t, created, "pending: the first task")
		require.Equal(t, first.ID, again.ID)

		l := b.claim(t, first, "w1")
		again, created, err = b.q.Submit(b.ctx, req)
		require.NoError(t, err)
		require.False(t, created, "running: the first task")
		require.Equal(t, first.ID, again.ID)
		_, err = b.q.Complete(b.ctx, l, nil)
		require.NoError(t, err)

		second, created, err := b.q.Submit(b.ctx, req)
		require.NoError(t, err)
		require.True(t, created, "ended: a new task")
		require.NotEqual(t, first.ID, second.ID)
		id, err := b.q.LookupKey(b.ctx, "refresh", "customer-42")
		require.NoError(t, err)
		require.Equal(t, second.ID, id, "the key names the new task")

		// A key held for good stays with its task after it ended.
		perm := queue.SubmitRequest{Type: "refresh", IdempotencyKey: "forever"}
		p1, _, err := b.q.Submit(b.ctx, perm)
		require.NoError(t, err)
		_, err = b.q.Complete(b.ctx, b.claim(t, p1, "w1"), nil)
		require.NoError(t, err)
		p2, created, err := b.q.Submit(b.ctx, perm)
		require.NoError(t, err)
		require.False(t, created)
		require.Equal(t, p1.ID, p2.ID)
	})
}

// A key held for a window returns its task until the window passed,
// whatever the task's status, then makes a new one.
func TestUniqueFor(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		b := setup(t, be)
		req := queue.SubmitRequest{Type: "digest", IdempotencyKey: "daily", UniqueFor: 10 * time.Minute}
		first, created, err := b.q.Submit(b.ctx, req)
		require.NoError(t, err)
		require.True(t, created)
		_, err = b.q.Complete(b.ctx, b.claim(t, first, "w1"), nil)
		require.NoError(t, err)

		b.clock.Advance(9 * time.Minute)
		again, created, err := b.q.Submit(b.ctx, req)
		require.NoError(t, err)
		require.False(t, created, "within the window, ended or not: the first task")
		require.Equal(t, first.ID, again.ID)

		b.clock.Advance(time.Minute)
		second, created, err := b.q.Submit(b.ctx, req)
		require.NoError(t, err)
		require.True(t, created, "the window passed: a new task")
		require.NotEqual(t, first.ID, second.ID)
	})
}

func TestUniqueValidation(t *testing.T) {
	t.Parallel()
	b := setup(t, storetest.Backends()[0])
	for _, tc := range []struct {
		req queue.SubmitRequest
		msg string
	}{
		{queue.SubmitRequest{Type: "t", UniqueWhileActive: true}, `need "idempotency_key"`},
		{queue.SubmitRequest{Type: "t", UniqueFor: time.Minute}, `need "idempotency_key"`},
		{queue.SubmitRequest{Type: "t", IdempotencyKey: "k", UniqueFor: -time.Minute}, "negative"},
		{queue.SubmitRequest{Type: "t", IdempotencyKey: "k", UniqueFor: time.Minute, UniqueWhileActive: true}, "exclude each other: give one"},
	} {
		_, _, err := b.q.Submit(b.ctx, tc.req)
		require.ErrorIs(t, err, queue.ErrInvalidInput)
		require.ErrorContains(t, err, tc.msg)
	}
}

// Submitters racing for a key whose task ended make exactly one new task,
// and all of them get it.
func TestUniqueTakeoverRace(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		b := setup(t, be)
		req := queue.SubmitRequest{Type: "sync", IdempotencyKey: "acct-1", UniqueWhileActive: true}
		first, _, err := b.q.Submit(b.ctx, req)
		require.NoError(t, err)
		_, err = b.q.Complete(b.ctx, b.claim(t, first, "w1"), nil)
		require.NoError(t, err)

		// Slow marker reads widen the window between read and takeover.
		b.s.set(func(f *faultStore) {
			f.slowGet = func(k string) bool { return strings.HasPrefix(k, queue.IdempotencyPrefix) }
		})
		const n = 8
		var (
			wg      sync.WaitGroup
			tasks   [n]*queue.Task
			created [n]bool
			errs    [n]error
		)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				tasks[i], created[i], errs[i] = b.q.Submit(b.ctx, req)
			}()
		}
		wg.Wait()
		made := 0
		for i := range n {
			require.NoError(t, errs[i])
			require.Equal(t, tasks[0].ID, tasks[i].ID, "every submitter gets the one new task")
			if created[i] {
				made++
			}
		}
		require.NotEqual(t, first.ID, tasks[0].ID)
		require.Equal(t, 1, made, "exactly one submit created it")
		require.Len(t, b.keys(t, queue.ReadyPrefix), 1)
	})
}

// A takeover whose response was lost is settled by reading the marker:
// the submit makes its task once, and a repeat returns it.
func TestUniqueTakeoverLostResponse(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		b := setup(t, be)
		req := queue.SubmitRequest{Type: "sync", IdempotencyKey: "acct-2", UniqueWhileActive: true}
		first, _, err := b.q.Submit(b.ctx, req)
		require.NoError(t, err)
		_, err = b.q.Complete(b.ctx, b.claim(t, first, "w1"), nil)
		require.NoError(t, err)

		b.s.set(func(f *faultStore) {
			f.dropPut = func(k string) bool { return strings.HasPrefix(k, queue.IdempotencyPrefix) }
		})
		second, created, err := b.q.Submit(b.ctx, req)
		require.NoError(t, err)
		require.True(t, created)
		require.NotEqual(t, first.ID, second.ID)
		b.s.set(func(f *faultStore) { f.dropPut = nil })

		again, created, err := b.q.Submit(b.ctx, req)
		require.NoError(t, err)
		require.False(t, created)
		require.Equal(t, second.ID, again.ID)
		require.Len(t, b.keys(t, queue.ReadyPrefix), 1)
		id, err := b.q.LookupKey(b.ctx, "sync", "acct-2")
		require.NoError(t, err)
		require.Equal(t, second.ID, id)
	})
}

// Under a retention, replaying a task whose windowed key moved on to a new
// task does not take the key back (its marker rewrite is conditional).
func TestUniqueReplayKeepsTheNewBinding(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := storetest.NewClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	s := memstore.New(memstore.WithClock(clock))
	_, err := queue.InitWithOptions(ctx, s, queue.InitOptions{ShardChars: 1, TasksRetentionDays: 30, Clock: clock})
	require.NoError(t, err)
	q, err := queue.Open(ctx, s, queue.Options{Clock: clock})
	require.NoError(t, err)
	req := queue.SubmitRequest{Type: "job", IdempotencyKey: "k", UniqueWhileActive: true}
	first, _, err := q.Submit(ctx, req)
	require.NoError(t, err)
	_, err = q.Cancel(ctx, first.ID, "not now")
	require.NoError(t, err)
	second, created, err := q.Submit(ctx, req)
	require.NoError(t, err)
	require.True(t, created)

	replayed, err := q.Replay(ctx, first.ID)
	require.NoError(t, err)
	require.Equal(t, queue.StatusPending, replayed.Status)
	id, err := q.LookupKey(ctx, "job", "k")
	require.NoError(t, err)
	require.Equal(t, second.ID, id, "the key stays with the new task")
}
