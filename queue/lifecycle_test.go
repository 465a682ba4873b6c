package queue_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/store/storetest"
)

func TestSubmitClaimComplete(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		b := setup(t, be)

		before := b.counts()
		task := b.submit(t, "send_email", `{"to": "a@example.com"}`)
		requireCounts(t, "submit", before, b.counts(), map[store.Op]int64{store.OpPut: 2})

		require.Equal(t, queue.StatusPending, task.Status)
		require.Equal(t, 1, task.Format)
		require.Equal(t, task.ID.String()[35:], task.Shard, "the last character of a v7 id")
		require.Equal(t, int64(1), task.Rev)
		require.Equal(t, queue.EventEnqueued, task.LastEvent)
		require.Equal(t, 300, task.TimeoutSeconds)
		require.Equal(t, 3, task.MaxRetries)
		require.Equal(t, queue.DefaultRetryPolicy, task.RetryPolicy)
		require.JSONEq(t, `{"to":"a@example.com"}`, string(task.Input))
		require.Equal(t, []string{queue.ReadyKey(task)}, b.keys(t, queue.ReadyPrefix))

		entries := b.readyEntries(t, queue.ReadyQuery{})
		require.Len(t, entries, 1)
		require.Equal(t, task.ID, entries[0].ID)
		require.Equal(t, "send_email", entries[0].Type)

		before = b.counts()
		l, err := b.q.Claim(b.ctx, entries[0], "w1")
		require.NoError(t, err)
		requireCounts(t, "claim", before, b.counts(), map[store.Op]int64{store.OpGet: 1, store.OpPut: 2, store.OpDelete: 1})
		require.Equal(t, queue.StatusRunning, l.Task.Status)
		require.Equal(t, "w1", l.Task.WorkerID)
		require.Equal(t, 1, l.Task.Attempt)
		require.NotEmpty(t, l.Task.LeaseID)
		require.Equal(t, b.clock.Now().Add(300*time.Second+queue.LeaseGrace), *l.Task.LeaseExpiresAt)
		require.Empty(t, b.keys(t, queue.ReadyPrefix))
		require.Equal(t, []string{l.LeaseKey}, b.keys(t, queue.LeasesPrefix))

		before = b.counts()
		done, err := b.q.Complete(b.ctx, l, json.RawMessage(`{"sent":true}`))
		require.NoError(t, err)
		requireCounts(t, "complete", before, b.counts(), map[store.Op]int64{store.OpPut: 1, store.OpDelete: 1})
		require.Equal(t, queue.StatusCompleted, done.Status)
		require.JSONEq(t, `{"sent":true}`, string(done.Output))
		require.Empty(t, done.LeaseID)
		require.Nil(t, done.LeaseExpiresAt)
		require.NotNil(t, done.CompletedAt)
		require.Equal(t, int64(3), done.Rev)
		require.Empty(t, b.keys(t, queue.LeasesPrefix))

		got := b.get(t, task)
		require.Equal(t, done.RequestID, got.RequestID)
		require.Equal(t, queue.StatusCompleted, got.Status)
	})
}

func TestConcurrentClaimExactlyOneWins(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		b := setup(t, be)
		task := b.submit(t, "race", `{}`)
		e := readyEntryOf(task)

		const racers = 20
		var wg sync.WaitGroup
		leases := make([]*queue.Lease, racers)
		errs := make([]error, racers)
		start := make(chan struct{})
		for i := 0; i < racers; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				leases[i], errs[i] = b.q.Claim(b.ctx, e, fmt.Sprintf("w%d", i))
			}()
		}
		close(start)
		wg.Wait()
		winners := 0
		var winner *queue.Lease
		for i := range errs {
			if errs[i] == nil {
				winners++
				winner = leases[i]
				continue
			}
			require.ErrorIs(t, errs[i], queue.ErrConflict)
		}
		require.Equal(t, 1, winners)
		got := b.get(t, task)
		require.Equal(t, winner.Task.LeaseID, got.LeaseID)
		require.Equal(t, 1, got.Attempt)
		require.Equal(t, int64(2), got.Rev)
		// The winner can finish; nobody else holds anything.
		_, err := b.q.Complete(b.ctx, winner, nil)
		require.NoError(t, err)
	})
}

func TestRetryExhaustionFails(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		b := setup(t, be)
		retries := 2
		task, _, err := b.q.Submit(b.ctx, queue.SubmitRequest{Type: "flaky", MaxRetries: &retries})
		require.NoError(t, err)

		for attempt := 1; attempt <= 3; attempt++ {
			b.clock.Advance(time.Hour) // past any backoff
			entries := b.readyEntries(t, queue.ReadyQuery{})
			require.Len(t, entries, 1, "attempt %d", attempt)
			l, err := b.q.Claim(b.ctx, entries[0], "w1")
			require.NoError(t, err)
			require.Equal(t, attempt, l.Task.Attempt)
			got, err := b.q.Retry(b.ctx, l, fmt.Sprintf("boom %d", attempt), 0)
			require.NoError(t, err)
			if attempt <= retries {
				require.Equal(t, queue.StatusPending, got.Status)
				require.Equal(t, attempt, got.RetryCount)
				require.Equal(t, queue.EventRetried, got.LastEvent)
			} else {
				require.Equal(t, queue.StatusFailed, got.Status)
				require.Equal(t, queue.EventFailed, got.LastEvent)
				require.Equal(t, retries, got.RetryCount)
				require.Equal(t, "boom 3", got.LastError)
				require.NotNil(t, got.CompletedAt)
			}
		}
		b.clock.Advance(time.Hour)
		require.Empty(t, b.readyEntries(t, queue.ReadyQuery{}))
		require.Empty(t, b.keys(t, queue.LeasesPrefix))
		require.Equal(t, queue.StatusFailed, b.get(t, task).Status)
	})
}

func TestBackoffViaAvailableAt(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		b := setup(t, be)
		policy := queue.RetryPolicy{InitialIntervalMS: 10_000, MaxIntervalMS: 60_000, Multiplier: 3, JitterPercent: 0.25}
		retries := 5
		task, _, err := b.q.Submit(b.ctx, queue.SubmitRequest{Type: "slow", RetryPolicy: &policy, MaxRetries: &retries})
		require.NoError(t, err)

		for n, base := range []time.Duration{10 * time.Second, 30 * time.Second, 60 * time.Second} {
			entries := b.readyEntries(t, queue.ReadyQuery{})
			require.Len(t, entries, 1)
			l, err := b.q.Claim(b.ctx, entries[0], "w1")
			require.NoError(t, err)
			now := b.clock.Now()
			got, err := b.q.Retry(b.ctx, l, "try later", 0)
			require.NoError(t, err)
			require.Equal(t, n+1, got.RetryCount)
			delay := got.AvailableAt.Sub(now)
			lo := time.Duration(float64(base) * 0.75)
			hi := min(time.Duration(float64(base)*1.25), 60*time.Second)
			require.True(t, delay >= lo && delay <= hi, "retry %d: delay %s not in [%s, %s]", n+1, delay, lo, hi)

			// Not claimable before available_at; nobody slept.
			require.Empty(t, b.readyEntries(t, queue.ReadyQuery{}))
			_, err = b.q.Claim(b.ctx, readyEntryOf(got), "w2")
			require.ErrorIs(t, err, queue.ErrConflict)
			b.clock.Advance(delay - time.Millisecond)
			require.Empty(t, b.readyEntries(t, queue.ReadyQuery{}))
			b.clock.Advance(time.Millisecond)
		}
		// An explicit delay overrides the policy.
		entries := b.readyEntries(t, queue.ReadyQuery{})
		require.Len(t, entries, 1)
		l, err := b.q.Claim(b.ctx, entries[0], "w1")
		require.NoError(t, err)
		got, err := b.q.Retry(b.ctx, l, "rate limited", 42*time.Second)
		require.NoError(t, err)
		require.Equal(t, b.clock.Now().Add(42*time.Second), got.AvailableAt)
		require.Equal(t, task.ID, got.ID)
	})
}

func TestDelayedSubmit(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		b := setup(t, be)
		at := b.clock.Now().Add(time.Minute)
		task, _, err := b.q.Submit(b.ctx, queue.SubmitRequest{Type: "later", AvailableAt: at})
		require.NoError(t, err)
		require.Equal(t, at, task.AvailableAt)
		require.Empty(t, b.readyEntries(t, queue.ReadyQuery{}))
		b.clock.Advance(time.Minute)
		entries := b.readyEntries(t, queue.ReadyQuery{})
		require.Len(t, entries, 1)

		// RequeueNow makes a delayed task available at once.
		t2, _, err := b.q.Submit(b.ctx, queue.SubmitRequest{Type: "later", AvailableAt: b.clock.Now().Add(time.Hour)})
		require.NoError(t, err)
		got, err := b.q.RequeueNow(b.ctx, t2.ID)
		require.NoError(t, err)
		require.Equal(t, queue.EventRequeued, got.LastEvent)
		require.Equal(t, b.clock.Now(), got.AvailableAt)
		require.Len(t, b.readyEntries(t, queue.ReadyQuery{}), 2)
		require.Len(t, b.keys(t, queue.ReadyPrefix), 2, "the old entry is gone")
		// Already available: no write.
		before := b.counts()
		_, err = b.q.RequeueNow(b.ctx, t2.ID)
		require.NoError(t, err)
		require.Zero(t, b.counts().Sub(before).Total(store.OpPut))
	})
}

func TestVersionHistory(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		b := setup(t, be)
		retries := 1
		task, _, err := b.q.Submit(b.ctx, queue.SubmitRequest{Type: "h", Input: json.RawMessage(`1`), MaxRetries: &retries, Timeout: 10 * time.Second})
		require.NoError(t, err)

		l := b.claim(t, task, "w1")                                                  // claimed
		require.NoError(t, b.q.Extend(b.ctx, l))                                     // lease_extended
		b.clock.Advance(11*time.Second + queue.LeaseGrace)                           // lease runs out
		exp, _, err := b.q.Recovery().ListLeases(b.ctx, queue.ExpiredLeases, 10, "") //
		require.NoError(t, err)
		require.Len(t, exp, 1)
		got, err := b.q.Recovery().ExpireLease(b.ctx, exp[0]) // timed_out -> pending
		require.NoError(t, err)
		require.Equal(t, queue.StatusPending, got.Status)
		b.clock.Advance(time.Hour)
		l2 := b.claim(t, got, "w2") // claimed
		_, err = b.q.Retry(b.ctx, l2, "nope", 0)
		require.NoError(t, err) // failed (retries exhausted)
		_, err = b.q.Replay(b.ctx, task.ID)
		require.NoError(t, err) // replayed
		cur := b.get(t, task)
		l3 := b.claim(t, cur, "w3") // claimed
		_, err = b.q.Cancel(b.ctx, task.ID, "operator")
		require.NoError(t, err) // cancel_requested
		err = b.q.Extend(b.ctx, l3)
		require.ErrorIs(t, err, queue.ErrCancelRequested) // lease_extended
		_, err = b.q.AckCancel(b.ctx, l3)
		require.NoError(t, err) // cancelled
		_, err = b.q.Archive(b.ctx, task.ID)
		require.NoError(t, err) // archived

		events, err := b.q.History(b.ctx, task.ID)
		require.NoError(t, err)
		want := []struct {
			name    string
			status  queue.Status
			worker  string
			attempt int
		}{
			{queue.EventEnqueued, queue.StatusPending, "", 0},
			{queue.EventClaimed, queue.StatusRunning, "w1", 1},
			{queue.EventLeaseExtended, queue.StatusRunning, "w1", 1},
			{queue.EventTimedOut, queue.StatusPending, "w1", 1},
			{queue.EventClaimed, queue.StatusRunning, "w2", 2},
			{queue.EventFailed, queue.StatusFailed, "w2", 2},
			{queue.EventReplayed, queue.StatusPending, "", 2},
			{queue.EventClaimed, queue.StatusRunning, "w3", 3},
			{queue.EventCancelRequested, queue.StatusRunning, "w3", 3},
			{queue.EventLeaseExtended, queue.StatusRunning, "w3", 3},
			{queue.EventCancelled, queue.StatusCancelled, "w3", 3},
			{queue.EventArchived, queue.StatusArchived, "w3", 3},
		}
		require.Len(t, events, len(want))
		for i, w := range want {
			ev := events[i]
			require.NoError(t, ev.Err)
			require.Equal(t, w.name, ev.Name, "event %d", i)
			require.Equal(t, w.status, ev.Status, "event %d", i)
			require.Equal(t, w.worker, ev.WorkerID, "event %d (%s)", i, w.name)
			require.Equal(t, w.attempt, ev.Attempt, "event %d", i)
			require.Equal(t, int64(i+1), ev.Rev, "event %d", i)
			require.NotEmpty(t, ev.VersionID)
			require.False(t, ev.At.IsZero())
		}
	})
}

func TestExpireLease(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		b := setup(t, be)
		zero := 0
		retry, _, err := b.q.Submit(b.ctx, queue.SubmitRequest{Type: "t", Timeout: 5 * time.Second})
		require.NoError(t, err)
		final, _, err := b.q.Submit(b.ctx, queue.SubmitRequest{Type: "t", Timeout: 5 * time.Second, MaxRetries: &zero})
		require.NoError(t, err)
		cancel, _, err := b.q.Submit(b.ctx, queue.SubmitRequest{Type: "t", Timeout: 5 * time.Second})
		require.NoError(t, err)
		extended, _, err := b.q.Submit(b.ctx, queue.SubmitRequest{Type: "t", Timeout: 5 * time.Second})
		require.NoError(t, err)
		lr := b.claim(t, retry, "w1")
		lf := b.claim(t, final, "w1")
		lc := b.claim(t, cancel, "w1")
		le := b.claim(t, extended, "w1")
		_, err = b.q.Cancel(b.ctx, cancel.ID, "stop")
		require.NoError(t, err)

		exp, _, err := b.q.Recovery().ListLeases(b.ctx, queue.ExpiredLeases, 0, "")
		require.NoError(t, err)
		require.Empty(t, exp, "nothing expired yet")

		b.clock.Advance(3 * time.Second)
		require.NoError(t, b.q.Extend(b.ctx, le)) // now runs to +8s (and the grace)
		b.clock.Advance(3*time.Second + queue.LeaseGrace)

		exp, next, err := b.q.Recovery().ListLeases(b.ctx, queue.ExpiredLeases, 0, "")
		require.NoError(t, err)
		require.Empty(t, next)
		require.Len(t, exp, 3)
		results := map[string]*queue.Task{}
		for _, e := range exp {
			got, err := b.q.Recovery().ExpireLease(b.ctx, e)
			require.NoError(t, err)
			results[got.ID.String()] = got
		}
		r := results[retry.ID.String()]
		require.Equal(t, queue.StatusPending, r.Status)
		require.Equal(t, queue.EventTimedOut, r.LastEvent)
		require.Equal(t, 1, r.RetryCount)
		require.True(t, r.AvailableAt.After(b.clock.Now()), "backoff applies to timeouts")
		require.Contains(t, r.LastError, "lease expired")
		f := results[final.ID.String()]
		require.Equal(t, queue.StatusFailed, f.Status)
		require.Equal(t, queue.EventTimedOut, f.LastEvent)
		c := results[cancel.ID.String()]
		require.Equal(t, queue.StatusCancelled, c.Status)

		// The stale workers are fenced off.
		for _, l := range []*queue.Lease{lr, lf, lc} {
			_, err := b.q.Complete(b.ctx, l, nil)
			require.ErrorIs(t, err, queue.ErrLeaseLost)
		}
		// Only the extended lease's entry is left.
		require.Equal(t, []string{le.LeaseKey}, b.keys(t, queue.LeasesPrefix))
		// An expired entry for a task that moved on is removed as stale.
		_, err = b.q.Recovery().ExpireLease(b.ctx, exp[0])
		require.ErrorIs(t, err, queue.ErrConflict)
	})
}

func TestExpireLeaseMovesEntryOfExtendedLease(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		b := setup(t, be)
		task, _, err := b.q.Submit(b.ctx, queue.SubmitRequest{Type: "t", Timeout: 5 * time.Minute})
		require.NoError(t, err)
		l := b.claim(t, task, "w1")
		oldKey := l.LeaseKey
		// The extension cannot delete the old entry: it stays behind.
		b.s.set(func(f *faultStore) { f.failDel = func(k string) bool { return hasPrefixAny(k, queue.LeasesPrefix) } })
		b.clock.Advance(4 * time.Minute)
		require.NoError(t, b.q.Extend(b.ctx, l))
		b.s.set(func(f *faultStore) { f.failDel = nil })
		b.clock.Advance(2 * time.Minute)

		exp, _, err := b.q.Recovery().ListLeases(b.ctx, queue.ExpiredLeases, 0, "")
		require.NoError(t, err)
		require.Len(t, exp, 1)
		require.Equal(t, oldKey, exp[0].Key)
		_, err = b.q.Recovery().ExpireLease(b.ctx, exp[0])
		require.ErrorIs(t, err, queue.ErrConflict)
		require.Equal(t, []string{l.LeaseKey}, b.keys(t, queue.LeasesPrefix), "the leftover is removed, the live entry stays")
		require.Equal(t, queue.StatusRunning, b.get(t, task).Status)
	})
}

func TestOperatorActions(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		b := setup(t, be)

		// Cancel a pending task: immediate, ready entry removed.
		p := b.submit(t, "op", `{}`)
		got, err := b.q.Cancel(b.ctx, p.ID, "not needed")
		require.NoError(t, err)
		require.Equal(t, queue.StatusCancelled, got.Status)
		require.Equal(t, "not needed", got.CancelReason)
		require.True(t, got.CancelRequested)
		require.Empty(t, b.keys(t, queue.ReadyPrefix))

		// Replay it: pending again, cancellation cleared, ready entry back.
		got, err = b.q.Replay(b.ctx, p.ID)
		require.NoError(t, err)
		require.Equal(t, queue.StatusPending, got.Status)
		require.False(t, got.CancelRequested)
		require.Equal(t, []string{queue.ReadyKey(got)}, b.keys(t, queue.ReadyPrefix))

		// Cancel running: requested; a second cancel writes nothing.
		l := b.claim(t, got, "w1")
		got, err = b.q.Cancel(b.ctx, p.ID, "stop")
		require.NoError(t, err)
		require.Equal(t, queue.StatusRunning, got.Status)
		require.True(t, got.CancelRequested)
		before := b.counts()
		_, err = b.q.Cancel(b.ctx, p.ID, "stop again")
		require.NoError(t, err)
		require.Zero(t, b.counts().Sub(before).Total(store.OpPut))
		// The worker acks after Extend tells it.
		require.ErrorIs(t, b.q.Extend(b.ctx, l), queue.ErrCancelRequested)
		got, err = b.q.AckCancel(b.ctx, l)
		require.NoError(t, err)
		require.Equal(t, queue.StatusCancelled, got.Status)
		require.Empty(t, b.keys(t, queue.LeasesPrefix))

		// Archive it.
		got, err = b.q.Archive(b.ctx, p.ID)
		require.NoError(t, err)
		require.Equal(t, queue.StatusArchived, got.Status)

		// RequeueNow a running task: the worker loses its lease.
		r := b.submit(t, "op", `{}`)
		lr := b.claim(t, r, "w1")
		got, err = b.q.RequeueNow(b.ctx, r.ID)
		require.NoError(t, err)
		require.Equal(t, queue.StatusPending, got.Status)
		require.Equal(t, 0, got.RetryCount)
		_, err = b.q.Complete(b.ctx, lr, nil)
		require.ErrorIs(t, err, queue.ErrLeaseLost)
		require.Empty(t, b.keys(t, queue.LeasesPrefix))
		require.Equal(t, []string{queue.ReadyKey(got)}, b.keys(t, queue.ReadyPrefix))

		// Release (shutdown): pending now, no retry counted, reason kept.
		lr = b.claim(t, got, "w2")
		got, err = b.q.Release(b.ctx, lr, "shutdown")
		require.NoError(t, err)
		require.Equal(t, queue.StatusPending, got.Status)
		require.Equal(t, queue.EventRequeued, got.LastEvent)
		require.Equal(t, 0, got.RetryCount)
		require.Equal(t, "released: shutdown", got.LastError)
		require.Equal(t, b.clock.Now(), got.AvailableAt)

		// Fail: permanent.
		lr = b.claim(t, got, "w2")
		got, err = b.q.Fail(b.ctx, lr, "bad input")
		require.NoError(t, err)
		require.Equal(t, queue.StatusFailed, got.Status)
		require.Equal(t, 0, got.RetryCount)
		require.Equal(t, "bad input", got.LastError)

		// Missing task.
		_, err = b.q.Cancel(b.ctx, queue.NewID(), "")
		require.ErrorIs(t, err, queue.ErrNotFound)
		require.ErrorIs(t, err, store.ErrNotFound)
	})
}

func TestIdempotencyKeys(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		b := setup(t, be)
		req := queue.SubmitRequest{Type: "charge", Input: json.RawMessage(`{"amount": 5, "user": "u1"}`), IdempotencyKey: "order-17"}
		before := b.counts()
		first, created, err := b.q.Submit(b.ctx, req)
		require.NoError(t, err)
		require.True(t, created)
		requireCounts(t, "keyed submit", before, b.counts(), map[store.Op]int64{store.OpPut: 3})
		id, err := b.q.LookupKey(b.ctx, "charge", "order-17")
		require.NoError(t, err)
		require.Equal(t, first.ID, id)
		_, ok := queue.IDTime(first.ID)
		require.True(t, ok, "a keyed task has a time-ordered id like any other")
		require.Equal(t, "order-17", first.IdempotencyKey)
		_, err = b.q.LookupKey(b.ctx, "charge", "order-18")
		require.ErrorIs(t, err, queue.ErrNotFound)

		// Same key, same input (other key order and spacing): the first task.
		req.Input = json.RawMessage(`{"user":"u1","amount":5}`)
		before = b.counts()
		again, created, err := b.q.Submit(b.ctx, req)
		require.NoError(t, err)
		require.False(t, created)
		require.Equal(t, first.ID, again.ID)
		require.Equal(t, first.RequestID, again.RequestID)
		require.Equal(t, int64(2), b.counts().Sub(before).OK[store.OpGet], "the marker, then the task")
		require.Equal(t, []string{queue.ReadyKey(first)}, b.keys(t, queue.ReadyPrefix), "a pending duplicate's entry is written again")

		// The duplicate still finds the task after it moved on.
		l := b.claim(t, first, "w1")
		again, created, err = b.q.Submit(b.ctx, req)
		require.NoError(t, err)
		require.False(t, created)
		require.Equal(t, queue.StatusRunning, again.Status)
		_, err = b.q.Complete(b.ctx, l, nil)
		require.NoError(t, err)

		// Same key, different input: a clear mismatch, nothing written.
		req.Input = json.RawMessage(`{"amount": 6, "user": "u1"}`)
		before = b.counts()
		_, _, err = b.q.Submit(b.ctx, req)
		require.ErrorIs(t, err, queue.ErrIdempotencyMismatch)
		require.Contains(t, err.Error(), "order-17")
		require.Zero(t, b.counts().Sub(before).OK[store.OpPut])
		require.Empty(t, b.keys(t, queue.ReadyPrefix))

		// A submit that died between its marker and its task is finished
		// by the retry, under the id the marker gave out.
		b.s.set(func(f *faultStore) {
			f.failPut = func(k string) bool { return strings.HasPrefix(k, queue.TasksPrefix) }
		})
		crash := queue.SubmitRequest{Type: "charge", IdempotencyKey: "order-99"}
		_, _, err = b.q.Submit(b.ctx, crash)
		require.Error(t, err)
		b.s.set(func(f *faultStore) { f.failPut = nil })
		id, err = b.q.LookupKey(b.ctx, "charge", "order-99")
		require.NoError(t, err)
		retried, created, err := b.q.Submit(b.ctx, crash)
		require.NoError(t, err)
		require.True(t, created)
		require.Equal(t, id, retried.ID)
		require.Contains(t, b.keys(t, queue.ReadyPrefix), queue.ReadyKey(retried))

		// Same key, other type: another task.
		req.Type = "refund"
		other, created, err := b.q.Submit(b.ctx, req)
		require.NoError(t, err)
		require.True(t, created)
		require.NotEqual(t, first.ID, other.ID)
	})
}

func TestSubmitValidation(t *testing.T) {
	t.Parallel()
	b := setup(t, storetest.Backends()[0])
	neg := -1
	tests := []struct {
		name string
		req  queue.SubmitRequest
		msg  string
	}{
		{"empty type", queue.SubmitRequest{}, `missing "type"`},
		{"bad type", queue.SubmitRequest{Type: "a/b"}, `contains "/"`},
		{"long type", queue.SubmitRequest{Type: string(make([]byte, 65))}, "at most 64"},
		{"bad json", queue.SubmitRequest{Type: "t", Input: json.RawMessage(`{nope`)}, "not valid JSON"},
		{"short timeout", queue.SubmitRequest{Type: "t", Timeout: time.Millisecond}, "1s minimum"},
		{"negative retries", queue.SubmitRequest{Type: "t", MaxRetries: &neg}, "negative"},
		{"bad policy", queue.SubmitRequest{Type: "t", RetryPolicy: &queue.RetryPolicy{InitialIntervalMS: 10, MaxIntervalMS: 5, Multiplier: 2}}, "max_interval_ms"},
		{"long key", queue.SubmitRequest{Type: "t", IdempotencyKey: string(make([]byte, 300))}, `"idempotency_key" is 300 bytes long`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := b.counts()
			_, _, err := b.q.Submit(b.ctx, tc.req)
			require.ErrorIs(t, err, queue.ErrInvalidInput)
			require.Contains(t, err.Error(), tc.msg)
			require.Zero(t, b.counts().Sub(before).Total(store.OpPut))
		})
	}
	task, _, err := b.q.Submit(b.ctx, queue.SubmitRequest{Type: "t", Timeout: 1500 * time.Millisecond})
	require.NoError(t, err)
	require.Equal(t, 2, task.TimeoutSeconds, "rounded up to whole seconds")
	require.Nil(t, task.Input)
}

func TestHistoryNotFound(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		b := setup(t, be)
		_, err := b.q.History(b.ctx, uuid.New())
		require.ErrorIs(t, err, queue.ErrNotFound)
		_, err = b.q.Get(b.ctx, uuid.New())
		require.ErrorIs(t, err, queue.ErrNotFound)
	})
}

// TestSnoozeKeepsRetriesAndIsBounded: a snooze puts the task back after its
// delay without using a retry, and the snooze past MaxSnoozes fails it.
func TestSnoozeKeepsRetriesAndIsBounded(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		b := setup(t, be)
		retries := 0
		task, _, err := b.q.Submit(b.ctx, queue.SubmitRequest{Type: "throttled", MaxRetries: &retries})
		require.NoError(t, err)

		l := b.claim(t, task, "w1")
		_, err = b.q.Snooze(b.ctx, l, queue.MaxSnoozeDelay+time.Second, "")
		require.ErrorIs(t, err, queue.ErrInvalidInput)
		_, err = b.q.Release(b.ctx, l, "")
		require.NoError(t, err)

		for n := 1; n <= queue.MaxSnoozes+1; n++ {
			entries := b.readyEntries(t, queue.ReadyQuery{})
			require.Len(t, entries, 1, "snooze %d", n)
			l, err := b.q.Claim(b.ctx, entries[0], "w1")
			require.NoError(t, err)
			now := b.clock.Now()
			got, err := b.q.Snooze(b.ctx, l, time.Minute, "rate limited")
			require.NoError(t, err)
			require.Zero(t, got.RetryCount, "a snooze uses no retry")
			if n <= queue.MaxSnoozes {
				require.Equal(t, queue.StatusPending, got.Status)
				require.Equal(t, queue.EventSnoozed, got.LastEvent)
				require.Equal(t, n, got.SnoozeCount)
				require.Equal(t, "snoozed: rate limited", got.LastError)
				require.Equal(t, now.Add(time.Minute).Truncate(time.Millisecond), got.AvailableAt)
				require.Empty(t, b.readyEntries(t, queue.ReadyQuery{}), "not ready before its delay")
				b.clock.Advance(time.Minute)
				continue
			}
			require.Equal(t, queue.StatusFailed, got.Status)
			require.Equal(t, queue.EventFailed, got.LastEvent)
			require.Equal(t, queue.ErrSnoozeLimit.Error(), got.LastError)
		}
		require.Empty(t, b.keys(t, queue.LeasesPrefix))
		require.Equal(t, queue.StatusFailed, b.get(t, task).Status)
	})
}
