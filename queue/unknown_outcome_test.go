package queue_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/store/storetest"
)

// requireIndexed checks the rule of doc.go, "Index entries are written
// first": whatever state the task is in, the entry that state needs exists.
func requireIndexed(t *testing.T, b *bundle, task *queue.Task, what string) {
	t.Helper()
	obj, err := b.raw.Get(b.ctx, task.Key())
	if errors.Is(err, store.ErrNotFound) {
		return // the write never landed: nothing to index
	}
	require.NoError(t, err, what)
	cur, err := queue.DecodeTask(task.Key(), obj.Body)
	require.NoError(t, err, what)
	for _, want := range queue.IndexKeys(cur) {
		_, err = b.raw.Get(b.ctx, want)
		require.NoError(t, err, "%s: the task is %s but its entry %s is missing", what, cur.Status, want)
	}
}

// loseTaskPut arms one task PUT that lands with its response lost, and
// fails every task re-read after it, until disarm is called.
func loseTaskPut(b *bundle) (disarm func()) {
	return loseTaskPutOf(b, func(string) bool { return true })
}

// loseTaskPutOf is loseTaskPut for the first PUT of a task key that lose
// selects.
func loseTaskPutOf(b *bundle, lose func(key string) bool) (disarm func()) {
	isTask := func(k string) bool { return strings.HasPrefix(k, queue.TasksPrefix) }
	armed := false
	b.s.set(func(f *faultStore) {
		f.dropPut = func(k string) bool {
			if isTask(k) && !armed && lose(k) {
				armed = true
				return true
			}
			return false
		}
		f.failGet = func(k string) bool { return armed && isTask(k) }
	})
	return func() { b.s.set(func(f *faultStore) { f.dropPut, f.failGet = nil, nil }) }
}

// TestUnknownOutcomesKeepEntries: every operation whose task PUT landed but
// whose response was lost, and whose re-read failed too, leaves the task
// with the entry its state needs, without waiting for any sweep.
func TestUnknownOutcomesKeepEntries(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		b := setup(t, be)
		lose := func() (disarm func()) { return loseTaskPut(b) }
		running := func(typ string) *queue.Lease {
			return b.claim(t, b.submit(t, typ, `{}`), "w1")
		}
		failed := func() *queue.Task {
			task, err := b.q.Fail(b.ctx, running("x"), "boom")
			require.NoError(t, err)
			return task
		}
		tests := []struct {
			name string
			op   func() (*queue.Task, error)
		}{
			{"submit", func() (*queue.Task, error) {
				task, _, err := b.q.Submit(b.ctx, queue.SubmitRequest{Type: "x", Timeout: time.Minute})
				return task, err
			}},
			{"submit with a key", func() (*queue.Task, error) {
				task, _, err := b.q.Submit(b.ctx, queue.SubmitRequest{Type: "x", IdempotencyKey: "k-" + b.q.Now().String()})
				return task, err
			}},
			{"claim", func() (*queue.Task, error) {
				task := b.submit(t, "x", `{}`)
				defer lose()()
				_, err := b.q.Claim(b.ctx, readyEntryOf(task), "w1")
				return task, err
			}},
			{"retry", func() (*queue.Task, error) {
				l := running("x")
				defer lose()()
				_, err := b.q.Retry(b.ctx, l, "again", 0)
				return l.Task, err
			}},
			{"fail", func() (*queue.Task, error) {
				l := running("x")
				defer lose()()
				_, err := b.q.Fail(b.ctx, l, "boom")
				return l.Task, err
			}},
			{"release", func() (*queue.Task, error) {
				l := running("x")
				defer lose()()
				_, err := b.q.Release(b.ctx, l, "shutdown")
				return l.Task, err
			}},
			{"extend", func() (*queue.Task, error) {
				l := running("x")
				b.clock.Advance(time.Second)
				defer lose()()
				return l.Task, b.q.Extend(b.ctx, l)
			}},
			{"replay", func() (*queue.Task, error) {
				task := failed()
				defer lose()()
				_, err := b.q.Replay(b.ctx, task.ID)
				return task, err
			}},
			{"requeue a running task", func() (*queue.Task, error) {
				l := running("x")
				defer lose()()
				_, err := b.q.RequeueNow(b.ctx, l.Task.ID)
				return l.Task, err
			}},
			{"expire a lease", func() (*queue.Task, error) {
				l := running("x")
				b.clock.Advance(time.Hour)
				exp, _, err := b.q.Recovery().ListLeases(b.ctx, queue.ExpiredLeases, 0, "")
				require.NoError(t, err)
				require.NotEmpty(t, exp)
				defer lose()()
				var last error
				for _, e := range exp {
					if e.ID == l.Task.ID {
						_, last = b.q.Recovery().ExpireLease(b.ctx, e)
					}
				}
				return l.Task, last
			}},
		}
		for _, tt := range tests {
			var task *queue.Task
			var err error
			if strings.HasPrefix(tt.name, "submit") {
				func() {
					defer lose()()
					task, err = tt.op()
				}()
			} else {
				task, err = tt.op()
			}
			require.Error(t, err, "%s: the outcome is unknown, and the caller is told", tt.name)
			if task != nil {
				requireIndexed(t, b, task, tt.name)
			}
		}
		// Every running task, whatever happened to it, is found by the
		// expiry check once its lease runs out.
		b.clock.Advance(2 * time.Hour)
		exp, _, err := b.q.Recovery().ListLeases(context.Background(), queue.ExpiredLeases, 0, "")
		require.NoError(t, err)
		found := map[string]bool{}
		for _, e := range exp {
			found[e.ID.String()] = true
		}
		for _, k := range b.keys(t, queue.TasksPrefix) {
			obj, err := b.raw.Get(b.ctx, k)
			require.NoError(t, err)
			cur, err := queue.DecodeTask(k, obj.Body)
			require.NoError(t, err)
			if cur.Status == queue.StatusRunning {
				require.True(t, found[cur.ID.String()], "running task %s is not found by the expiry check", cur.ID)
			}
		}
	})
}

// TestUnknownOutcomesOfDependencies: each write dependencies add (the
// child's create, child_added on a running parent, the child's release)
// landing with its response lost and its re-read failing leaves every task
// with the entry its state needs: a waiting child its waiting entry, a
// running parent its lease entry, a released child its ready entry.
func TestUnknownOutcomesOfDependencies(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		b := setup(t, be)
		after := func(parent *queue.Task) (*queue.Task, error) {
			task, _, err := b.q.Submit(b.ctx, queue.SubmitRequest{Type: "c", After: []uuid.UUID{parent.ID}})
			return task, err
		}

		// The child's create (Submit cannot say which task it made).
		p := b.submit(t, "p", `{}`)
		disarm := loseTaskPut(b)
		_, err := after(p)
		disarm()
		require.Error(t, err)
		waiting := b.keys(t, queue.WaitingPrefix)
		require.Len(t, waiting, 1, "the child landed, and waits")
		_, id, err := queue.ParseWaitingKey(waiting[0])
		require.NoError(t, err)
		requireIndexed(t, b, b.get(t, &queue.Task{ID: id}), "a waiting child's create")

		// child_added on a running parent.
		l := b.claim(t, b.submit(t, "p", `{}`), "w1")
		disarm = loseTaskPutOf(b, func(k string) bool { return k == l.Task.Key() })
		_, err = after(l.Task)
		disarm()
		require.Error(t, err)
		requireIndexed(t, b, l.Task, "child_added on a running parent")

		// The child's release, written after its parent completed.
		p = b.submit(t, "p", `{}`)
		c := b.after(t, "c", "", p)
		l = b.claim(t, p, "w1")
		disarm = loseTaskPutOf(b, func(k string) bool { return k == c.Key() })
		_, err = b.q.Complete(b.ctx, l, nil)
		disarm()
		require.NoError(t, err, "the parent's own write landed")
		requireIndexed(t, b, c, "a child's release")
		requireIndexed(t, b, p, "the completed parent")
	})
}

// TestLeaseOpRepeatedAfterUnknownOutcome: a worker whose write's response
// was lost (and whose re-read failed) calls the same operation again on
// the same lease. The repeat recognises its own earlier write (the request
// id lives for the whole operation): it succeeds with the version that
// landed instead of reporting the lease lost, and every index entry is
// right at once.
func TestLeaseOpRepeatedAfterUnknownOutcome(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		b := setup(t, be)
		tests := []struct {
			name string
			op   func(l *queue.Lease) (*queue.Task, error)
			want queue.Status
		}{
			{"complete", func(l *queue.Lease) (*queue.Task, error) { return b.q.Complete(b.ctx, l, []byte(`{"ok":true}`)) }, queue.StatusCompleted},
			{"retry", func(l *queue.Lease) (*queue.Task, error) { return b.q.Retry(b.ctx, l, "again", 0) }, queue.StatusPending},
			{"fail", func(l *queue.Lease) (*queue.Task, error) { return b.q.Fail(b.ctx, l, "boom") }, queue.StatusFailed},
			{"release", func(l *queue.Lease) (*queue.Task, error) { return b.q.Release(b.ctx, l, "shutdown") }, queue.StatusPending},
		}
		for _, tt := range tests {
			l := b.claim(t, b.submit(t, "x", `{}`), "w1")
			leaseKey := l.LeaseKey
			disarm := loseTaskPut(b)
			_, err := tt.op(l)
			disarm()
			require.Error(t, err, "%s: first call: the outcome is unknown", tt.name)
			b.clock.Advance(10 * time.Millisecond) // the repeat computes another version

			got, err := tt.op(l)
			require.NoError(t, err, "%s: the repeat must recognise its own write", tt.name)
			require.Equal(t, tt.want, got.Status, tt.name)
			stored := b.get(t, got)
			require.Equal(t, stored.Rev, got.Rev, "%s: the version returned is the one stored", tt.name)
			require.Equal(t, stored.UpdatedAt, got.UpdatedAt, tt.name)
			requireIndexed(t, b, got, tt.name)
			_, err = b.raw.Get(b.ctx, leaseKey)
			require.ErrorIs(t, err, store.ErrNotFound, "%s: the lease entry goes", tt.name)
			for _, k := range b.keys(t, queue.LeasesPrefix) {
				require.NotContains(t, k, got.ID.String(), "%s: no lease entry remains", tt.name)
			}
			if tt.want == queue.StatusPending {
				ready := 0
				for _, k := range b.keys(t, queue.ReadyPrefix) {
					if strings.Contains(k, got.ID.String()) {
						ready++
						require.Equal(t, queue.ReadyKey(stored), k, "%s: only the stored version's entry", tt.name)
					}
				}
				require.Equal(t, 1, ready, tt.name)
			}
		}
	})
}

func TestLostResponseIdempotency(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		b := setup(t, be)
		dropTasks := func(f *faultStore) {
			f.dropPut = func(k string) bool { return strings.HasPrefix(k, queue.TasksPrefix) }
		}
		b.s.set(dropTasks)

		// Submit: the create landed, the response was lost.
		before := b.counts()
		task, created, err := b.q.Submit(b.ctx, queue.SubmitRequest{Type: "lost"})
		require.NoError(t, err)
		require.True(t, created)
		d := b.counts().Sub(before)
		require.Equal(t, int64(2), d.Total(store.OpPut), "no second task write: %s", d)
		require.Equal(t, int64(1), d.Total(store.OpGet))
		require.Equal(t, task.RequestID, b.get(t, task).RequestID)

		// Claim.
		before = b.counts()
		l := b.claim(t, task, "w1")
		d = b.counts().Sub(before)
		require.Equal(t, int64(2), d.Total(store.OpPut), "%s", d)
		require.Equal(t, int64(2), d.Total(store.OpGet), "%s", d)
		cur := b.get(t, task)
		require.Equal(t, l.Task.RequestID, cur.RequestID)
		require.Equal(t, 1, cur.Attempt)
		require.Equal(t, int64(2), cur.Rev)

		// Extend: ETag learned from the re-read keeps the lease usable.
		require.NoError(t, b.q.Extend(b.ctx, l))
		require.Equal(t, int64(3), b.get(t, task).Rev)

		// Complete: one task PUT only.
		before = b.counts()
		done, err := b.q.Complete(b.ctx, l, json.RawMessage(`1`))
		require.NoError(t, err)
		d = b.counts().Sub(before)
		require.Equal(t, int64(1), d.Total(store.OpPut), "%s", d)
		require.Equal(t, int64(1), d.Total(store.OpGet), "%s", d)
		require.Equal(t, queue.StatusCompleted, done.Status)
		require.Equal(t, int64(4), b.get(t, task).Rev, "rev counted once")

		events, err := b.q.History(b.ctx, task.ID)
		require.NoError(t, err)
		require.Len(t, events, 4)

		// A PUT that failed before reaching the server is re-sent once with
		// the same request_id.
		b.s.set(func(f *faultStore) { f.dropPut = nil })
		t2 := b.submit(t, "lost", `{}`)
		l2 := b.claim(t, t2, "w1")
		failures := 1
		b.s.set(func(f *faultStore) {
			f.failPut = func(k string) bool {
				if strings.HasPrefix(k, queue.TasksPrefix) && failures > 0 {
					failures--
					return true
				}
				return false
			}
		})
		done, err = b.q.Complete(b.ctx, l2, nil)
		require.NoError(t, err)
		require.Equal(t, int64(3), done.Rev)
		require.Equal(t, done.RequestID, b.get(t, t2).RequestID)
	})
}

// TestResolveUnknownClaim: a claim whose task PUT landed with its response
// lost and its re-read failing says so (ErrOutcomeUnknown, with the claim
// to resolve), and ResolveClaim, once the store answers, returns its lease
// (which releases the task at once) or, for a claim that did not land,
// ErrConflict.
func TestResolveUnknownClaim(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		b := setup(t, be)
		task := b.submit(t, "x", `{}`)
		disarm := loseTaskPut(b)
		_, err := b.q.Claim(b.ctx, readyEntryOf(task), "w1")
		require.ErrorIs(t, err, queue.ErrOutcomeUnknown)
		var u *queue.UnknownClaimError
		require.ErrorAs(t, err, &u)
		require.Equal(t, task.ID, u.Claim.TaskID)
		_, err = b.q.ResolveClaim(b.ctx, u.Claim)
		require.Error(t, err, "the store still fails the re-read")
		require.NotErrorIs(t, err, queue.ErrConflict)
		disarm()

		l, err := b.q.ResolveClaim(b.ctx, u.Claim)
		require.NoError(t, err, "the claim landed")
		require.Equal(t, queue.StatusRunning, l.Task.Status)
		require.Equal(t, "w1", l.Task.WorkerID)
		released, err := b.q.Release(b.ctx, l, "the claim's outcome was unknown")
		require.NoError(t, err)
		require.Equal(t, queue.StatusPending, released.Status)
		requireIndexed(t, b, released, "released after an unknown claim")

		// The claim's lease is gone now: another claim's lease is not it.
		l2 := b.claim(t, released, "w2")
		_, err = b.q.ResolveClaim(b.ctx, u.Claim)
		require.ErrorIs(t, err, queue.ErrConflict)
		_, err = b.q.Release(b.ctx, l2, "done")
		require.NoError(t, err)

		// A claim that never landed resolves as lost.
		_, err = b.q.ResolveClaim(b.ctx, queue.UnknownClaim{TaskID: task.ID, LeaseID: "never-written"})
		require.ErrorIs(t, err, queue.ErrConflict)
	})
}
