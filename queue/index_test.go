package queue_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/store/storetest"
)

// staleMargin is how far past IndexGrace the fake clock moves for an
// entry to count as old: on MinIO the entries' ages come from the server's
// own clock, which runs on while the test's clock stands still (it starts
// up to a second behind, truncated), so a second is not enough on a busy
// machine.
const staleMargin = 10 * time.Second

func TestIndexOrphansAreHarmless(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		b := setup(t, be)

		// A ready entry left behind for a completed task (its DELETE failed).
		done := b.submit(t, "orphan", `{}`)
		b.s.set(func(f *faultStore) {
			f.failDel = func(k string) bool { return strings.HasPrefix(k, queue.ReadyPrefix) }
		})
		l := b.claim(t, done, "w1")
		b.s.set(func(f *faultStore) { f.failDel = nil })
		_, err := b.q.Complete(b.ctx, l, nil)
		require.NoError(t, err)
		require.Equal(t, []string{queue.ReadyKey(done)}, b.keys(t, queue.ReadyPrefix))

		// Listing pending reports it as stale and shows nothing.
		page, err := b.q.List(b.ctx, queue.ListQuery{Status: queue.StatusPending})
		require.NoError(t, err)
		require.Empty(t, page.Tasks)
		require.Equal(t, []string{queue.ReadyKey(done)}, page.Stale)

		// A worker meeting it gets a conflict (nothing runs twice) and, once
		// the entry is older than IndexGrace (younger ones may belong to a
		// write in flight), removes it.
		entries := b.readyEntries(t, queue.ReadyQuery{})
		require.Len(t, entries, 1)
		_, err = b.q.Claim(b.ctx, entries[0], "w2")
		require.ErrorIs(t, err, queue.ErrConflict)
		require.Len(t, b.keys(t, queue.ReadyPrefix), 1, "young: kept")
		b.clock.Advance(queue.IndexGrace + staleMargin)
		before := b.counts()
		entries = b.readyEntries(t, queue.ReadyQuery{})
		require.Len(t, entries, 1)
		_, err = b.q.Claim(b.ctx, entries[0], "w2")
		require.ErrorIs(t, err, queue.ErrConflict)
		require.Zero(t, b.counts().Sub(before).Total(store.OpPut))
		require.Empty(t, b.keys(t, queue.ReadyPrefix))
		require.Equal(t, queue.StatusCompleted, b.get(t, done).Status)

		// A lease entry left for a finished task: the monitor drops it.
		b.s.set(func(f *faultStore) {
			f.failDel = func(k string) bool { return strings.HasPrefix(k, queue.LeasesPrefix) }
		})
		d2 := b.submit(t, "orphan", `{}`)
		l2 := b.claim(t, d2, "w1")
		_, err = b.q.Complete(b.ctx, l2, nil)
		require.NoError(t, err)
		b.s.set(func(f *faultStore) { f.failDel = nil })
		b.clock.Advance(time.Hour)
		exp, _, err := b.q.Recovery().ListLeases(b.ctx, queue.ExpiredLeases, 0, "")
		require.NoError(t, err)
		require.Len(t, exp, 1)
		_, err = b.q.Recovery().ExpireLease(b.ctx, exp[0])
		require.ErrorIs(t, err, queue.ErrConflict)
		require.Empty(t, b.keys(t, queue.LeasesPrefix))
		require.Equal(t, queue.StatusCompleted, b.get(t, d2).Status)

		// A duplicate entry (older time) for a delayed task: not claimable,
		// the duplicate is removed, the canonical entry stays.
		delayed, _, err := b.q.Submit(b.ctx, queue.SubmitRequest{Type: "orphan", AvailableAt: b.clock.Now().Add(time.Hour)})
		require.NoError(t, err)
		dup := fmt.Sprintf("ready/orphan/%s/%013d~normal~%s", delayed.Shard, b.clock.Now().Add(-time.Minute).UnixMilli(), delayed.ID)
		_, err = b.raw.Put(b.ctx, dup, nil, store.Condition{})
		require.NoError(t, err)
		b.clock.Advance(queue.IndexGrace + staleMargin)
		entries = b.readyEntries(t, queue.ReadyQuery{})
		require.Len(t, entries, 1)
		require.Equal(t, dup, entries[0].Key)
		_, err = b.q.Claim(b.ctx, entries[0], "w1")
		require.ErrorIs(t, err, queue.ErrConflict)
		require.Equal(t, []string{queue.ReadyKey(delayed)}, b.keys(t, queue.ReadyPrefix))
		// Once available, a duplicate entry still claims it once and both go.
		b.clock.Advance(time.Hour)
		_, err = b.raw.Put(b.ctx, dup, nil, store.Condition{})
		require.NoError(t, err)
		b.clock.Advance(queue.IndexGrace + staleMargin)
		entries = b.readyEntries(t, queue.ReadyQuery{})
		require.Len(t, entries, 2)
		_, err = b.q.Claim(b.ctx, entries[0], "w1")
		require.NoError(t, err)
		_, err = b.q.Claim(b.ctx, entries[1], "w2")
		require.ErrorIs(t, err, queue.ErrConflict)
		require.Empty(t, b.keys(t, queue.ReadyPrefix))

		// A ready entry for a task that never existed.
		ghost := queue.NewID()
		ghostKey := fmt.Sprintf("ready/orphan/%s/%013d~normal~%s", queue.ShardOf(ghost, b.q.Config().ShardChars), b.clock.Now().UnixMilli(), ghost)
		_, err = b.raw.Put(b.ctx, ghostKey, nil, store.Condition{})
		require.NoError(t, err)
		e, err := queue.ParseReadyKey(ghostKey)
		require.NoError(t, err)
		_, err = b.q.Claim(b.ctx, e, "w1")
		require.ErrorIs(t, err, queue.ErrConflict)
		require.Equal(t, []string{ghostKey}, b.keys(t, queue.ReadyPrefix), "age unknown (not from a listing): kept")
		b.clock.Advance(queue.IndexGrace + staleMargin)
		entries = b.readyEntries(t, queue.ReadyQuery{})
		require.Len(t, entries, 1)
		_, err = b.q.Claim(b.ctx, entries[0], "w1")
		require.ErrorIs(t, err, queue.ErrConflict)
		require.Empty(t, b.keys(t, queue.ReadyPrefix))
	})
}

func TestIndexEntriesWrittenFirstAndRepair(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		b := setup(t, be)
		// An entry that cannot be written fails the operation, and the
		// task is not touched: no task ever exists without its entry.
		b.s.set(func(f *faultStore) {
			f.failPut = func(k string) bool { return hasPrefixAny(k, queue.ReadyPrefix, queue.LeasesPrefix, queue.DeadPrefix) }
		})
		_, _, err := b.q.Submit(b.ctx, queue.SubmitRequest{Type: "lost"})
		require.ErrorContains(t, err, "write index entry")
		require.Empty(t, b.keys(t, queue.TasksPrefix), "nothing submitted")
		b.s.set(func(f *faultStore) { f.failPut = nil })

		var tasks []*queue.Task
		for i := 0; i < 5; i++ {
			tasks = append(tasks, b.submit(t, "lost", `{}`))
		}
		b.s.set(func(f *faultStore) {
			f.failPut = func(k string) bool { return hasPrefixAny(k, queue.LeasesPrefix) }
		})
		_, err = b.q.Claim(b.ctx, readyEntryOf(tasks[0]), "w1")
		require.ErrorContains(t, err, "write index entry")
		require.Equal(t, queue.StatusPending, b.get(t, tasks[0]).Status, "nothing claimed")
		b.s.set(func(f *faultStore) { f.failPut = nil })

		// Entries can still go missing by hand (or a restored backup):
		// Repair walks the task objects and writes them back.
		l := b.claim(t, tasks[0], "w1")
		l2 := b.claim(t, tasks[1], "w1")
		failed, err := b.q.Fail(b.ctx, l2, "boom")
		require.NoError(t, err)
		require.Equal(t, []string{queue.DeadKey(failed)}, b.keys(t, queue.DeadPrefix))
		for _, prefix := range []string{queue.ReadyPrefix, queue.LeasesPrefix, queue.DeadPrefix} {
			for _, k := range b.keys(t, prefix) {
				require.NoError(t, b.raw.Delete(b.ctx, k, store.Condition{}))
			}
		}
		require.Empty(t, b.readyEntries(t, queue.ReadyQuery{}), "invisible to workers until repaired")

		var total queue.SweepResult
		for _, shard := range b.q.Shards() {
			cursor := ""
			for {
				res, next, err := b.q.Recovery().Repair(b.ctx, shard, 2, cursor)
				require.NoError(t, err)
				total.Scanned += res.Scanned
				total.ReadyRepaired += res.ReadyRepaired
				total.LeasesRepaired += res.LeasesRepaired
				total.DeadRepaired += res.DeadRepaired
				require.Empty(t, res.Malformed)
				if next == "" {
					break
				}
				cursor = next
			}
		}
		require.Equal(t, 5, total.Scanned)
		require.Equal(t, 3, total.ReadyRepaired)
		require.Equal(t, 1, total.LeasesRepaired)
		require.Equal(t, 1, total.DeadRepaired)
		require.Len(t, b.readyEntries(t, queue.ReadyQuery{}), 3)
		require.Equal(t, []string{l.LeaseKey}, b.keys(t, queue.LeasesPrefix))
		require.Equal(t, []string{queue.DeadKey(failed)}, b.keys(t, queue.DeadPrefix))

		// A second pass repairs nothing and writes nothing.
		before := b.counts()
		for _, shard := range b.q.Shards() {
			res, _, err := b.q.Recovery().Repair(b.ctx, shard, 100, "")
			require.NoError(t, err)
			require.Zero(t, res.ReadyRepaired+res.LeasesRepaired+res.DeadRepaired)
		}
		require.Zero(t, b.counts().Sub(before).Total(store.OpPut))

		_, _, err = b.q.Recovery().Repair(b.ctx, "g", 10, "")
		require.ErrorIs(t, err, queue.ErrInvalidInput)
		_, _, err = b.q.Recovery().Repair(b.ctx, "0", 10, "tasks/1/x")
		require.ErrorIs(t, err, queue.ErrInvalidInput)
	})
}

// A ready entry naming another type or priority than its task's (never a
// key qo wrote: one written by hand or restored from elsewhere) is not
// claimed through: Claim refuses it with ErrEntryMismatch, removes it at
// once and leaves the task pending with its own entry, written again when
// the foreign one was its only entry.
func TestClaimRefusesForeignEntry(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		b := setup(t, be)
		tests := []struct {
			name       string
			typ        string
			prio       queue.Priority
			onlyForged bool // the task's own entry is gone
		}{
			{"another type", "echo", queue.PriorityNormal, false},
			{"another type, the only entry", "echo", queue.PriorityNormal, true},
			{"another priority", "other", queue.PriorityHigh, false},
			{"another priority, the only entry", "other", queue.PriorityHigh, true},
		}
		for _, tt := range tests {
			task := b.submit(t, "other", `{}`)
			own := queue.ReadyKey(task)
			forged := fmt.Sprintf("ready/%s/%s/%013d~%s~%s", tt.typ, task.Shard, b.clock.Now().UnixMilli(), tt.prio, task.ID)
			_, err := b.raw.Put(b.ctx, forged, nil, store.Condition{})
			require.NoError(t, err)
			if tt.onlyForged {
				require.NoError(t, b.raw.Delete(b.ctx, own, store.Condition{}))
			}
			e, err := queue.ParseReadyKey(forged)
			require.NoError(t, err)
			_, err = b.q.Claim(b.ctx, e, "w1")
			require.ErrorIs(t, err, queue.ErrEntryMismatch, tt.name)
			require.ErrorIs(t, err, queue.ErrConflict, tt.name)
			require.ErrorContains(t, err, `type "other"`, tt.name)
			got := b.get(t, task)
			require.Equal(t, queue.StatusPending, got.Status, tt.name)
			require.EqualValues(t, 1, got.Rev, "%s: the task was not written", tt.name)
			var mine []string
			for _, k := range b.keys(t, queue.ReadyPrefix) {
				if strings.HasSuffix(k, task.ID.String()) {
					mine = append(mine, k)
				}
			}
			require.Equal(t, []string{own}, mine, "%s: the forged entry is gone, the task's own one is there", tt.name)
			// Its own entry claims it as usual.
			l := b.claim(t, task, "w1")
			require.Equal(t, "other", l.Task.Type)
		}
	})
}

// A read that stays torn (store.ErrTornRead) is a lost race: Claim and Get
// answer ErrConflict, nothing is written, and the task is claimed as usual
// once its reads are whole again.
func TestTornReadIsConflict(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		b := setup(t, be)
		task := b.submit(t, "other", `{}`)
		b.s.set(func(f *faultStore) { f.tornGet = func(key string) bool { return key == task.Key() } })
		_, err := b.q.Claim(b.ctx, readyEntryOf(task), "w1")
		require.ErrorIs(t, err, queue.ErrConflict)
		require.ErrorIs(t, err, store.ErrPreconditionFailed)
		_, err = b.q.Get(b.ctx, task.ID)
		require.ErrorIs(t, err, queue.ErrConflict)
		b.s.set(func(f *faultStore) { f.tornGet = nil })
		got := b.get(t, task)
		require.Equal(t, queue.StatusPending, got.Status)
		require.EqualValues(t, 1, got.Rev, "nothing was written")
		l := b.claim(t, task, "w1")
		require.Equal(t, queue.StatusRunning, l.Task.Status)
	})
}
