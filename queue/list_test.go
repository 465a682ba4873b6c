package queue_test

import (
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/store/storetest"
)

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
		// call stopped: every entry comes, each partition's (type and
		// shard) in time order, and the walk always makes progress (it is
		// fair: at most one page of a partition per walk, so it may take
		// several walks).
		seen := map[uuid.UUID]int{}
		last := map[string]time.Time{}
		qry := queue.ReadyQuery{Limit: 7}
		for walks := 0; len(seen) < n; {
			es, next, err := b.q.ListReady(b.ctx, qry)
			require.NoError(t, err)
			for _, e := range es {
				if seen[e.ID] == 0 {
					require.False(t, e.AvailableAt.Before(last[e.Partition()]), "time order within a partition")
					last[e.Partition()] = e.AvailableAt
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

// List of one shard's pending tasks walks every type's partition of that
// shard: a page that ends in another shard's backlog is followed by a
// LIST that begins at the wanted shard of that type, or past the type,
// never one LIST per 1,000 keys of the other shards. Those entries are
// not read (their key says their shard).
func TestListPendingOfOneShard(t *testing.T) {
	t.Parallel()
	b := setup(t, storetest.Backends()[0])
	var want []uuid.UUID
	for i := range 48 {
		task := b.submit(t, []string{"a", "m", "z"}[i%3], `{}`)
		if task.Shard == "3" {
			want = append(want, task.ID)
		}
	}
	require.NotEmpty(t, want)
	// 8,000 entries of each type in the other shards (no task objects).
	var keys []string
	for _, typ := range []string{"a", "m", "z"} {
		for i := range 8000 {
			id := queue.NewIDAt(b.clock.Now().Add(-time.Duration(i) * time.Millisecond))
			if queue.ShardOf(id, 1) == "3" {
				continue
			}
			keys = append(keys, queue.ReadyKey(&queue.Task{ID: id, Type: typ, Shard: queue.ShardOf(id, 1), Priority: queue.PriorityNormal, AvailableAt: b.clock.Now()}))
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		_, err := b.raw.Put(b.ctx, k, nil, store.Condition{})
		require.NoError(t, err)
	}
	before := b.counts()
	var got []uuid.UUID
	qry := queue.ListQuery{Status: queue.StatusPending, Shard: "3", Limit: 100, MaxScan: 100000}
	for {
		page, err := b.q.List(b.ctx, qry)
		require.NoError(t, err)
		for _, task := range page.Tasks {
			got = append(got, task.ID)
		}
		if page.Cursor == "" {
			break
		}
		qry.Cursor = page.Cursor
	}
	require.ElementsMatch(t, want, got)
	d := b.counts().Sub(before)
	require.Equal(t, int64(len(want)), d.Total(store.OpGet), "only the shard's tasks are read")
	require.LessOrEqual(t, d.Total(store.OpList), int64(2*3+1), "a LIST or two per type, not one per 1,000 keys of its other shards: %s", d)
}
