package queue_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
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
		exp, _, err := b.q.ListExpired(b.ctx, 0, "")
		require.NoError(t, err)
		require.Len(t, exp, 1)
		_, err = b.q.ExpireLease(b.ctx, exp[0])
		require.ErrorIs(t, err, queue.ErrConflict)
		require.Empty(t, b.keys(t, queue.LeasesPrefix))
		require.Equal(t, queue.StatusCompleted, b.get(t, d2).Status)

		// A duplicate entry (older time) for a delayed task: not claimable,
		// the duplicate is removed, the canonical entry stays.
		delayed, _, err := b.q.Submit(b.ctx, queue.SubmitRequest{Type: "orphan", AvailableAt: b.clock.Now().Add(time.Hour)})
		require.NoError(t, err)
		dup := fmt.Sprintf("ready/%s/%013d/orphan/normal/%s", delayed.Shard, b.clock.Now().Add(-time.Minute).UnixMilli(), delayed.ID)
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
		ghostKey := fmt.Sprintf("ready/%s/%013d/orphan/normal/%s", b.q.ShardOf(ghost), b.clock.Now().UnixMilli(), ghost)
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
				res, next, err := b.q.Repair(b.ctx, shard, 2, cursor)
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
			res, _, err := b.q.Repair(b.ctx, shard, 100, "")
			require.NoError(t, err)
			require.Zero(t, res.ReadyRepaired+res.LeasesRepaired+res.DeadRepaired)
		}
		require.Zero(t, b.counts().Sub(before).Total(store.OpPut))

		_, _, err = b.q.Repair(b.ctx, "g", 10, "")
		require.ErrorIs(t, err, queue.ErrInvalidInput)
		_, _, err = b.q.Repair(b.ctx, "0", 10, "tasks/1/x")
		require.ErrorIs(t, err, queue.ErrInvalidInput)
	})
}

func TestReadyPaginationWithoutStarvation(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		b := setup(t, be)
		const n = 40
		want := map[uuid.UUID]bool{}
		for i := 0; i < n; i++ {
			typ := "even"
			if i%2 == 1 {
				typ = "odd"
			}
			task, _, err := b.q.Submit(b.ctx, queue.SubmitRequest{Type: typ})
			require.NoError(t, err)
			want[task.ID] = true
			b.clock.Advance(time.Millisecond) // distinct available_at
		}
		// Walk with a small LIST page, over and over from where the last
		// call stopped: every entry comes, each shard's in time order, and
		// the walk always makes progress (it is fair: at most one page of a
		// shard per walk, so it may take several walks).
		seen := map[uuid.UUID]int{}
		last := map[string]time.Time{}
		qry := queue.ReadyQuery{Limit: 7}
		for walks := 0; len(seen) < n; {
			es, next, err := b.q.ListReady(b.ctx, qry)
			require.NoError(t, err)
			for _, e := range es {
				if seen[e.ID] == 0 {
					require.False(t, e.AvailableAt.Before(last[e.Shard]), "time order within a shard")
					last[e.Shard] = e.AvailableAt
				}
				seen[e.ID]++
			}
			if next == "" {
				walks++
				require.Less(t, walks, n, "the walk must make progress")
				last = map[string]time.Time{}
			} else {
				require.Greater(t, next, qry.StartAfter, "cursor must advance")
			}
			qry.StartAfter = next
		}
		require.Len(t, seen, n)
		for id := range seen {
			require.True(t, want[id])
		}

		// A worker that claims the head of every page never starves the
		// tail: draining page by page empties the queue.
		qry = queue.ReadyQuery{Limit: 5, Types: []string{"odd"}}
		claimed := 0
		for {
			es, next, err := b.q.ListReady(b.ctx, qry)
			require.NoError(t, err)
			for _, e := range es {
				require.Equal(t, "odd", e.Type)
				_, err := b.q.Claim(b.ctx, e, "w1")
				require.NoError(t, err)
				claimed++
			}
			if next == "" {
				break
			}
			qry.StartAfter = next
		}
		require.Equal(t, n/2, claimed)

		// Shard filter: no GETs are needed to skip other shards.
		shard := b.q.Shards()[3]
		before := b.counts()
		es := b.readyEntries(t, queue.ReadyQuery{Shards: []string{shard}})
		require.Zero(t, b.counts().Sub(before).Total(store.OpGet))
		for _, e := range es {
			require.Equal(t, shard, e.Shard)
		}
		// A future entry ends the listing even with a full page.
		_, _, err := b.q.Submit(b.ctx, queue.SubmitRequest{Type: "even", AvailableAt: b.clock.Now().Add(time.Hour)})
		require.NoError(t, err)
		all := b.readyEntries(t, queue.ReadyQuery{Limit: 1})
		require.Len(t, all, n/2)
	})
}

func TestListPagination(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		b := setup(t, be)
		const n = 30
		byStatus := map[queue.Status]map[uuid.UUID]bool{}
		add := func(st queue.Status, id uuid.UUID) {
			if byStatus[st] == nil {
				byStatus[st] = map[uuid.UUID]bool{}
			}
			byStatus[st][id] = true
		}
		for i := 0; i < n; i++ {
			typ := []string{"a", "b", "c"}[i%3]
			task, _, err := b.q.Submit(b.ctx, queue.SubmitRequest{Type: typ})
			require.NoError(t, err)
			switch i % 5 {
			case 0:
				add(queue.StatusPending, task.ID)
			case 1:
				b.claim(t, task, "w1")
				add(queue.StatusRunning, task.ID)
				// A child waits for the running task: listed from the
				// waiting index.
				child, _, err := b.q.Submit(b.ctx, queue.SubmitRequest{Type: typ, After: []uuid.UUID{task.ID}})
				require.NoError(t, err)
				require.Equal(t, queue.StatusWaiting, child.Status)
				add(queue.StatusWaiting, child.ID)
			case 2:
				_, err := b.q.Complete(b.ctx, b.claim(t, task, "w1"), nil)
				require.NoError(t, err)
				add(queue.StatusCompleted, task.ID)
			case 3:
				_, err := b.q.Fail(b.ctx, b.claim(t, task, "w1"), "x")
				require.NoError(t, err)
				add(queue.StatusFailed, task.ID)
			case 4:
				_, err := b.q.Complete(b.ctx, b.claim(t, task, "w1"), nil)
				require.NoError(t, err)
				_, err = b.q.Archive(b.ctx, task.ID)
				require.NoError(t, err)
				add(queue.StatusArchived, task.ID)
			}
		}
		listAll := func(qry queue.ListQuery) []*queue.Task {
			var out []*queue.Task
			seen := map[string]bool{}
			for i := 0; ; i++ {
				require.Less(t, i, 100, "pagination must end")
				page, err := b.q.List(b.ctx, qry)
				require.NoError(t, err)
				require.LessOrEqual(t, len(page.Tasks), qry.Limit)
				require.Empty(t, page.Stale)
				require.Empty(t, page.Malformed)
				out = append(out, page.Tasks...)
				if page.Cursor == "" {
					return out
				}
				require.False(t, seen[page.Cursor], "cursor repeated")
				seen[page.Cursor] = true
				qry.Cursor = page.Cursor
			}
		}
		ids := func(ts []*queue.Task) map[uuid.UUID]bool {
			m := map[uuid.UUID]bool{}
			for _, t := range ts {
				m[t.ID] = true
			}
			return m
		}
		for _, st := range queue.Statuses {
			if st == queue.StatusCancelled || st == queue.StatusExpired {
				continue
			}
			got := listAll(queue.ListQuery{Status: st, Limit: 2})
			require.Len(t, got, len(byStatus[st]), "status %s", st)
			require.Equal(t, byStatus[st], ids(got), "status %s", st)
		}
		// No status: everything but archived, each once, across all shards.
		got := listAll(queue.ListQuery{Limit: 4})
		require.Len(t, got, n+len(byStatus[queue.StatusWaiting])-len(byStatus[queue.StatusArchived]))
		// One shard at a time adds up to the same.
		total := 0
		for _, shard := range b.q.Shards() {
			part := listAll(queue.ListQuery{Shard: shard, Limit: 3})
			for _, task := range part {
				require.Equal(t, shard, task.Shard)
			}
			total += len(part)
		}
		require.Equal(t, n+len(byStatus[queue.StatusWaiting])-len(byStatus[queue.StatusArchived]), total)
		// Type filter, via index and via scan.
		for _, task := range listAll(queue.ListQuery{Type: "b", Status: queue.StatusPending, Limit: 1}) {
			require.Equal(t, "b", task.Type)
		}
		for _, task := range listAll(queue.ListQuery{Type: "c", Limit: 1}) {
			require.Equal(t, "c", task.Type)
		}
		// A selective scan with a small scan budget returns short pages but
		// still reaches the end.
		failed := listAll(queue.ListQuery{Status: queue.StatusFailed, Limit: 100, MaxScan: 3})
		require.Len(t, failed, len(byStatus[queue.StatusFailed]))

		// Bad input.
		_, err := b.q.List(b.ctx, queue.ListQuery{Cursor: "garbage!"})
		require.ErrorIs(t, err, queue.ErrInvalidInput)
		page, err := b.q.List(b.ctx, queue.ListQuery{Limit: 1})
		require.NoError(t, err)
		_, err = b.q.List(b.ctx, queue.ListQuery{Limit: 1, Status: queue.StatusFailed, Cursor: page.Cursor})
		require.ErrorIs(t, err, queue.ErrInvalidInput)
		_, err = b.q.List(b.ctx, queue.ListQuery{Status: "done"})
		require.ErrorIs(t, err, queue.ErrInvalidInput)
		_, err = b.q.List(b.ctx, queue.ListQuery{Shard: "00"})
		require.ErrorIs(t, err, queue.ErrInvalidInput)
	})
}

func TestInvalidTransitionsWriteNothing(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		b := setup(t, be)
		// One task in every status.
		mk := func(st queue.Status) *queue.Task {
			task := b.submit(t, "inv", `{}`)
			switch st {
			case queue.StatusWaiting:
				var err error
				task, _, err = b.q.Submit(b.ctx, queue.SubmitRequest{Type: "inv", After: []uuid.UUID{task.ID}})
				require.NoError(t, err)
			case queue.StatusPending:
			case queue.StatusRunning:
				b.claim(t, task, "w1")
			case queue.StatusCompleted:
				_, err := b.q.Complete(b.ctx, b.claim(t, task, "w1"), nil)
				require.NoError(t, err)
			case queue.StatusFailed:
				_, err := b.q.Fail(b.ctx, b.claim(t, task, "w1"), "x")
				require.NoError(t, err)
			case queue.StatusCancelled:
				_, err := b.q.Cancel(b.ctx, task.ID, "")
				require.NoError(t, err)
			case queue.StatusArchived:
				_, err := b.q.Fail(b.ctx, b.claim(t, task, "w1"), "x")
				require.NoError(t, err)
				_, err = b.q.Archive(b.ctx, task.ID)
				require.NoError(t, err)
			case queue.StatusExpired:
				task = b.expired(t, "inv")
			}
			got := b.get(t, task)
			require.Equal(t, st, got.Status)
			return got
		}
		type op struct {
			name  string
			run   func(id uuid.UUID) error
			valid map[queue.Status]bool
		}
		ops := []op{
			{"cancel", func(id uuid.UUID) error { _, err := b.q.Cancel(b.ctx, id, ""); return err },
				map[queue.Status]bool{queue.StatusWaiting: true, queue.StatusPending: true, queue.StatusRunning: true}},
			{"replay", func(id uuid.UUID) error { _, err := b.q.Replay(b.ctx, id); return err },
				map[queue.Status]bool{queue.StatusFailed: true, queue.StatusCancelled: true, queue.StatusExpired: true}},
			{"archive", func(id uuid.UUID) error { _, err := b.q.Archive(b.ctx, id); return err },
				map[queue.Status]bool{queue.StatusCompleted: true, queue.StatusFailed: true, queue.StatusCancelled: true, queue.StatusExpired: true}},
			{"requeue", func(id uuid.UUID) error { _, err := b.q.RequeueNow(b.ctx, id); return err },
				map[queue.Status]bool{queue.StatusPending: true, queue.StatusRunning: true}},
		}
		for _, o := range ops {
			for _, st := range queue.Statuses {
				if o.valid[st] {
					continue
				}
				task := mk(st)
				before := b.counts()
				err := o.run(task.ID)
				require.ErrorIs(t, err, queue.ErrInvalidTransition, "%s on %s", o.name, st)
				require.Contains(t, err.Error(), string(st), "message names the from status")
				require.Zero(t, b.counts().Sub(before).Total(store.OpPut), "%s on %s wrote", o.name, st)
				require.Zero(t, b.counts().Sub(before).Total(store.OpDelete), "%s on %s deleted", o.name, st)
				require.Equal(t, task.Rev, b.get(t, task).Rev)
			}
		}
		// AckCancel without a cancel request.
		task := b.submit(t, "inv", `{}`)
		l := b.claim(t, task, "w1")
		before := b.counts()
		_, err := b.q.AckCancel(b.ctx, l)
		require.ErrorIs(t, err, queue.ErrInvalidTransition)
		require.Zero(t, b.counts().Sub(before).Total(store.OpPut))
		// A worker op on a lease whose task is not running is fenced, no write.
		for _, st := range []queue.Status{queue.StatusPending, queue.StatusCompleted, queue.StatusFailed} {
			fake := &queue.Lease{Task: mk(st), ETag: "whatever"}
			fake.Task.LeaseID = uuid.NewString()
			before := b.counts()
			_, err := b.q.Complete(b.ctx, fake, nil)
			require.ErrorIs(t, err, queue.ErrLeaseLost)
			require.Zero(t, b.counts().Sub(before).Total(store.OpPut))
		}
	})
}

func TestFencing(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		b := setup(t, be)

		// A stale worker (its lease expired and the task was re-claimed) is
		// rejected on every write, and nothing is written.
		task, _, err := b.q.Submit(b.ctx, queue.SubmitRequest{Type: "f", Timeout: 5 * time.Second})
		require.NoError(t, err)
		stale := b.claim(t, task, "slow")
		b.clock.Advance(6*time.Second + queue.LeaseGrace)
		exp, _, err := b.q.ListExpired(b.ctx, 0, "")
		require.NoError(t, err)
		require.Len(t, exp, 1)
		back, err := b.q.ExpireLease(b.ctx, exp[0])
		require.NoError(t, err)
		b.clock.Advance(time.Hour)
		fresh := b.claim(t, back, "fast")

		staleCopy := *stale
		before := b.counts()
		_, err = b.q.Complete(b.ctx, stale, json.RawMessage(`"late"`))
		require.ErrorIs(t, err, queue.ErrLeaseLost)
		err = b.q.Extend(b.ctx, &staleCopy)
		require.ErrorIs(t, err, queue.ErrLeaseLost)
		_, err = b.q.Retry(b.ctx, &staleCopy, "x", 0)
		require.ErrorIs(t, err, queue.ErrLeaseLost)
		_, err = b.q.Fail(b.ctx, &staleCopy, "x")
		require.ErrorIs(t, err, queue.ErrLeaseLost)
		_, err = b.q.Release(b.ctx, &staleCopy, "x")
		require.ErrorIs(t, err, queue.ErrLeaseLost)
		// Its writes reach at most the index entries it puts first, and
		// each of them is removed again once the task write is refused.
		d := b.counts().Sub(before)
		require.Equal(t, d.OK[store.OpPut], d.OK[store.OpDelete], "a stale worker left entries behind: %s", d)
		require.Equal(t, []string{fresh.LeaseKey}, b.keys(t, queue.LeasesPrefix))
		require.Empty(t, b.keys(t, queue.ReadyPrefix))
		require.Empty(t, b.keys(t, queue.DeadPrefix))
		cur := b.get(t, task)
		require.Equal(t, fresh.Task.LeaseID, cur.LeaseID)
		require.Equal(t, fresh.Task.Rev, cur.Rev)

		// An operator's cancel request changes the ETag but not the lease:
		// the holder still completes (re-read, re-applied).
		_, err = b.q.Cancel(b.ctx, task.ID, "too late")
		require.NoError(t, err)
		before = b.counts()
		done, err := b.q.Complete(b.ctx, fresh, json.RawMessage(`"ok"`))
		require.NoError(t, err)
		requireCounts(t, "complete over a cancel request", before, b.counts(),
			map[store.Op]int64{store.OpPut: 2, store.OpGet: 1, store.OpDelete: 1})
		require.Equal(t, queue.StatusCompleted, done.Status)
		require.True(t, done.CancelRequested)
		require.Equal(t, cur.Rev+2, done.Rev)
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

func TestMalformedObjectsReportedAndSkipped(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		b := setup(t, be)
		good := b.submit(t, "m", `{}`)

		idBadJSON := queue.NewID()
		idFormat := queue.NewID()
		idTypes := queue.NewID()
		idMismatch := queue.NewID()
		other := queue.NewID()
		put := func(id uuid.UUID, body string) string {
			key := b.q.TaskKey(id)
			_, err := b.raw.Put(b.ctx, key, []byte(body), store.Condition{})
			require.NoError(t, err)
			return key
		}
		valid, err := queue.EncodeTask(good)
		require.NoError(t, err)
		bad := map[string]string{
			put(idBadJSON, `{"format":1, "id": `):                                                "unexpected end",
			put(idFormat, strings.Replace(string(valid), `"format":1`, `"format":9`, 1)):         "unknown format version 9",
			put(idTypes, strings.Replace(string(valid), `"attempt":0`, `"attempt":"zero"`, 1)):   "attempt",
			put(idMismatch, strings.Replace(string(valid), good.ID.String(), other.String(), 1)): "key says",
		}
		// Single reads return a *MalformedError.
		_, err = b.q.Get(b.ctx, idFormat)
		var m *queue.MalformedError
		require.ErrorAs(t, err, &m)
		require.Equal(t, b.q.TaskKey(idFormat), m.Key)

		page, err := b.q.List(b.ctx, queue.ListQuery{})
		require.NoError(t, err)
		require.Len(t, page.Tasks, 1)
		require.Equal(t, good.ID, page.Tasks[0].ID)
		require.Len(t, page.Malformed, len(bad))
		for _, mal := range page.Malformed {
			want, ok := bad[mal.Key]
			require.True(t, ok, mal.Key)
			require.Contains(t, mal.Error(), want)
		}

		var malformed int
		for _, shard := range b.q.Shards() {
			res, _, err := b.q.Repair(b.ctx, shard, 100, "")
			require.NoError(t, err)
			malformed += len(res.Malformed)
		}
		require.Equal(t, len(bad), malformed)

		// A malformed ready entry target: claim reports, does not panic.
		_, err = b.q.Claim(b.ctx, queue.ReadyEntry{ID: idTypes, Shard: b.q.ShardOf(idTypes), Type: "m"}, "w1")
		require.ErrorAs(t, err, &m)

		// A history with one bad version among good ones.
		key := good.Key()
		_, err = b.raw.Put(b.ctx, key, []byte(`not json`), store.Condition{})
		require.NoError(t, err)
		_, err = b.raw.Put(b.ctx, key, valid, store.Condition{})
		require.NoError(t, err)
		events, err := b.q.History(b.ctx, good.ID)
		require.NoError(t, err)
		require.Len(t, events, 3)
		require.NoError(t, events[0].Err)
		require.ErrorAs(t, events[1].Err, &m)
		require.Nil(t, events[1].Task)
		require.NoError(t, events[2].Err)

		// Garbage index keys are skipped by the listings.
		for _, k := range []string{"ready/garbage", "ready/0000000000001/zz/t/x", "leases/123/0/x"} {
			_, err := b.raw.Put(b.ctx, k, nil, store.Condition{})
			require.NoError(t, err)
		}
		es, _, err := b.q.ListReady(b.ctx, queue.ReadyQuery{})
		require.NoError(t, err)
		for _, e := range es {
			require.NotEqual(t, uuid.Nil, e.ID)
		}
		_, _, err = b.q.ListExpired(b.ctx, 0, "")
		require.NoError(t, err)
	})
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

func TestWorkersRegistry(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		b := setup(t, be)
		now := b.clock.Now()
		for _, id := range []string{"w-b", "w-a"} {
			require.NoError(t, b.q.PutWorker(b.ctx, &queue.WorkerInfo{ID: id, StartedAt: now, LastHeartbeat: now, Shards: []string{"0"}, Concurrency: 2}))
		}
		_, err := b.raw.Put(b.ctx, queue.WorkerKey("broken"), []byte(`{`), store.Condition{})
		require.NoError(t, err)
		ws, bad, err := b.q.ListWorkersReport(b.ctx)
		require.NoError(t, err)
		require.Len(t, bad, 1)
		require.Len(t, ws, 2)
		ids := []string{ws[0].ID, ws[1].ID}
		sort.Strings(ids)
		require.Equal(t, []string{"w-a", "w-b"}, ids)
		require.Equal(t, 1, ws[0].Format)
		require.NoError(t, b.q.DeleteWorker(b.ctx, "w-a"))
		ws, err = b.q.ListWorkers(b.ctx)
		require.NoError(t, err)
		require.Len(t, ws, 1)
		require.ErrorIs(t, b.q.PutWorker(b.ctx, &queue.WorkerInfo{ID: "a/b"}), queue.ErrInvalidInput)
	})
}

func TestNamedLeases(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		b := setup(t, be)
		key := queue.ShardLeaseKey("3")
		require.Equal(t, "shard-leases/3.json", key)

		_, err := b.q.ReadLease(b.ctx, key)
		require.ErrorIs(t, err, queue.ErrNotFound)

		a, err := b.q.AcquireLease(b.ctx, key, "w-a", 30*time.Second)
		require.NoError(t, err)
		require.Equal(t, "w-a", a.Holder)
		require.Equal(t, b.clock.Now().Add(30*time.Second), a.ExpiresAt)

		_, err = b.q.AcquireLease(b.ctx, key, "w-b", 30*time.Second)
		require.ErrorIs(t, err, queue.ErrConflict)
		require.Contains(t, err.Error(), "w-a")

		// Renewing pushes the expiry; re-acquiring your own lease works.
		b.clock.Advance(20 * time.Second)
		require.NoError(t, b.q.RenewLease(b.ctx, a, 30*time.Second))
		require.Equal(t, b.clock.Now().Add(30*time.Second), a.ExpiresAt)
		b.clock.Advance(20 * time.Second)
		_, err = b.q.AcquireLease(b.ctx, key, "w-b", 30*time.Second)
		require.ErrorIs(t, err, queue.ErrConflict)

		// Expired: another holder takes over; the old one's renewal fails.
		b.clock.Advance(11 * time.Second)
		bl, err := b.q.AcquireLease(b.ctx, key, "w-b", 30*time.Second)
		require.NoError(t, err)
		require.ErrorIs(t, b.q.RenewLease(b.ctx, a, 30*time.Second), queue.ErrLeaseLost)
		require.NoError(t, b.q.ReleaseLease(b.ctx, a), "releasing a lost lease is a no-op")
		got, err := b.q.ReadLease(b.ctx, key)
		require.NoError(t, err)
		require.Equal(t, "w-b", got.Holder)

		// Released: free at once.
		require.NoError(t, b.q.ReleaseLease(b.ctx, bl))
		got, err = b.q.ReadLease(b.ctx, key)
		require.NoError(t, err)
		require.Empty(t, got.Holder)
		c, err := b.q.AcquireLease(b.ctx, key, "w-c", 30*time.Second)
		require.NoError(t, err)
		require.Equal(t, "w-c", c.Holder)

		// Concurrent acquisition of a fresh lease: one winner.
		results := make(chan error, 10)
		for i := 0; i < 10; i++ {
			go func() {
				_, err := b.q.AcquireLease(b.ctx, queue.MonitorLeaderKey, fmt.Sprintf("m%d", i), time.Minute)
				results <- err
			}()
		}
		wins := 0
		for i := 0; i < 10; i++ {
			if err := <-results; err == nil {
				wins++
			} else {
				require.ErrorIs(t, err, queue.ErrConflict)
			}
		}
		require.Equal(t, 1, wins)

		// A corrupted lease object can be taken over.
		_, err = b.raw.Put(b.ctx, queue.ShardLeaseKey("9"), []byte("garbage"), store.Condition{})
		require.NoError(t, err)
		_, err = b.q.ReadLease(b.ctx, queue.ShardLeaseKey("9"))
		var m *queue.MalformedError
		require.ErrorAs(t, err, &m)
		_, err = b.q.AcquireLease(b.ctx, queue.ShardLeaseKey("9"), "w-a", time.Minute)
		require.NoError(t, err)

		_, err = b.q.AcquireLease(b.ctx, "tasks/0/x.json", "w-a", time.Minute)
		require.ErrorIs(t, err, queue.ErrInvalidInput)
	})
}

func TestInitAndOpen(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		s := be.New(t)
		ctx := t.Context()
		_, err := queue.Open(ctx, s, queue.Options{})
		require.ErrorIs(t, err, queue.ErrNotInitialized)

		_, err = queue.Init(ctx, s, 3)
		require.ErrorIs(t, err, queue.ErrInvalidInput)

		res, err := queue.InitWithOptions(ctx, s, queue.InitOptions{ShardChars: 2, TasksRetentionDays: 30})
		require.NoError(t, err)
		require.True(t, res.Created)
		require.Equal(t, 2, res.Config.ShardChars)
		require.Equal(t, "installed", res.Lifecycle)

		rules, err := s.(store.Admin).Lifecycle(ctx)
		require.NoError(t, err)
		prefixes := map[string]int{}
		for _, r := range rules {
			prefixes[r.Prefix] = max(prefixes[r.Prefix], r.NoncurrentDays)
		}
		for _, p := range []string{"ready/", "leases/", "dead/", "workers/", "shard-leases/", "monitor/"} {
			require.Equal(t, 1, prefixes[p], p)
		}
		require.Equal(t, 30, prefixes["tasks/"])

		// Idempotent; a different width is refused.
		cfg, err := queue.Init(ctx, s, 2)
		require.NoError(t, err)
		require.Equal(t, res.Config.CreatedAt, cfg.CreatedAt)
		_, err = queue.Init(ctx, s, 1)
		require.ErrorIs(t, err, queue.ErrConflict)
		require.Contains(t, err.Error(), "--shard-chars 2")

		q, err := queue.Open(ctx, s, queue.Options{})
		require.NoError(t, err)
		require.Len(t, q.Shards(), 256)
		require.Equal(t, "00", q.Shards()[0])
		require.Equal(t, "ff", q.Shards()[255])
		task, _, err := q.Submit(ctx, queue.SubmitRequest{Type: "t"})
		require.NoError(t, err)
		require.Equal(t, task.ID.String()[34:], task.Shard)
		require.True(t, strings.HasPrefix(queue.ReadyKey(task), "ready/"+task.Shard+"/"))

	})
}

func TestInitKeepsForeignLifecycleRules(t *testing.T) {
	t.Parallel()
	s := storetest.Backends()[0].New(t)
	ctx := t.Context()
	admin := s.(store.Admin)
	require.NoError(t, admin.SetLifecycle(ctx, []store.LifecycleRule{{ID: "mine", Prefix: "data/", NoncurrentDays: 7}}))
	_, err := queue.Init(ctx, s, 1)
	require.NoError(t, err)
	rules, err := admin.Lifecycle(ctx)
	require.NoError(t, err)
	ids := map[string]bool{}
	for _, r := range rules {
		ids[r.ID] = true
	}
	require.True(t, ids["mine"])
	require.True(t, ids["qo-expire-old-ready"])
	require.False(t, ids["qo-expire-old-tasks"], "task history kept by default")
}

// noLifecycleStore is a provider without lifecycle support.
type noLifecycleStore struct{ store.Store }

func (s noLifecycleStore) CreateBucket(ctx context.Context) error { return nil }
func (s noLifecycleStore) Versioning(ctx context.Context) (bool, error) {
	return true, nil
}
func (s noLifecycleStore) EnableVersioning(ctx context.Context) error { return nil }
func (s noLifecycleStore) SetLifecycle(ctx context.Context, rules []store.LifecycleRule) error {
	return fmt.Errorf("set lifecycle: %w", store.ErrNotSupported)
}
func (s noLifecycleStore) Lifecycle(ctx context.Context) ([]store.LifecycleRule, error) {
	return nil, fmt.Errorf("get lifecycle: %w", store.ErrNotSupported)
}
func (s noLifecycleStore) SetCORS(ctx context.Context, origins []string) error { return nil }

func TestInitWithoutLifecycleSupportWarns(t *testing.T) {
	t.Parallel()
	s := noLifecycleStore{storetest.Backends()[0].New(t)}
	var logs strings.Builder
	res, err := queue.InitWithOptions(t.Context(), s, queue.InitOptions{
		ShardChars: 1, Logger: slog.New(slog.NewTextHandler(&logs, nil)),
	})
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(res.Lifecycle, "not supported"), res.Lifecycle)
	require.Contains(t, logs.String(), "lifecycle")
	_, err = queue.Open(t.Context(), s, queue.Options{})
	require.NoError(t, err)
}
