package queue_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/queue/namedlease"
	"github.com/qo-queue/qo/queue/registry"
	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/store/storetest"
)

// layout1Task writes a task as qo of layout 1 did: a random id whose first
// character is the shard, and time-first index keys.
func layout1Task(t *testing.T, b *bundle, status queue.Status, now time.Time) *queue.Task {
	t.Helper()
	id := uuid.New()
	task := &queue.Task{
		Format: queue.FormatVersion, ID: id, Type: "legacy", Shard: id.String()[:1], Status: status,
		AvailableAt: now, Input: json.RawMessage(`{"n":1}`), TimeoutSeconds: 60, MaxRetries: 3, RetryPolicy: queue.DefaultRetryPolicy,
		CreatedAt: now, UpdatedAt: now, Rev: 1, RequestID: uuid.NewString(), LastEvent: queue.EventEnqueued, Priority: queue.PriorityNormal,
	}
	var index string
	switch status {
	case queue.StatusPending:
		index = fmt.Sprintf("ready/%013d/%s/legacy/normal/%s", now.UnixMilli(), task.Shard, id)
	case queue.StatusRunning:
		exp := now.Add(time.Minute)
		task.WorkerID, task.LeaseID, task.LeaseExpiresAt, task.Attempt = "old-worker", uuid.NewString(), &exp, 1
		index = fmt.Sprintf("leases/%013d/%s/%s", exp.UnixMilli(), task.Shard, id)
	case queue.StatusFailed, queue.StatusCompleted:
		done := now
		task.CompletedAt, task.Attempt, task.WorkerID = &done, 1, "old-worker"
		if status == queue.StatusFailed {
			task.LastError = "boom"
		}
	}
	require.NoError(t, queue.CheckInvariants(task))
	body, err := queue.EncodeTask(task)
	require.NoError(t, err)
	_, err = b.raw.Put(b.ctx, task.Key(), body, store.Condition{})
	require.NoError(t, err)
	if index != "" {
		_, err = b.raw.Put(b.ctx, index, nil, store.Condition{})
		require.NoError(t, err)
	}
	return task
}

func TestMigrateFromLayout1(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		b := setup(t, be)
		now := b.q.Now()
		// A layout-1 bucket: queue.json format 1 and its tasks and entries.
		_, err := b.raw.Put(b.ctx, queue.ConfigKey, []byte(`{"format":1,"shard_chars":1,"created_at":"2026-01-01T00:00:00Z"}`), store.Condition{})
		require.NoError(t, err)
		byStatus := map[queue.Status][]*queue.Task{}
		for _, st := range []queue.Status{queue.StatusPending, queue.StatusPending, queue.StatusRunning, queue.StatusFailed, queue.StatusCompleted} {
			byStatus[st] = append(byStatus[st], layout1Task(t, b, st, now))
		}
		// A stale layout-1 entry (its task finished long ago) goes away.
		_, err = b.raw.Put(b.ctx, fmt.Sprintf("ready/%013d/0/legacy/normal/%s", now.UnixMilli(), byStatus[queue.StatusCompleted][0].ID), nil, store.Condition{})
		require.NoError(t, err)

		_, err = queue.Open(b.ctx, b.raw, queue.Options{})
		require.ErrorIs(t, err, queue.ErrLayoutOutdated)
		require.Contains(t, err.Error(), "qo migrate")
		// The entries were written long ago: a stale one younger than
		// IndexGrace would be left (a write may be in flight).
		b.clock.Advance(2 * queue.IndexGrace)

		var said []string
		res, err := queue.Migrate(b.ctx, b.raw, queue.Options{Clock: b.clock}, queue.MigrateOptions{Progress: func(m string) { said = append(said, m) }})
		require.NoError(t, err)
		require.Equal(t, 1, res.From)
		require.Equal(t, queue.LayoutVersion, res.To)
		require.Equal(t, 2, res.ReadyMoved)
		require.Equal(t, 1, res.LeasesMoved)
		require.Equal(t, 4, res.OldRemoved)
		require.Equal(t, 5, res.Repair.Scanned)
		require.Equal(t, 1, res.Repair.DeadRepaired)
		require.NotEmpty(t, said)

		q, err := queue.Open(b.ctx, b.raw, queue.Options{Clock: b.clock})
		require.NoError(t, err)
		want := []string{queue.ReadyKey(byStatus[queue.StatusPending][0]), queue.ReadyKey(byStatus[queue.StatusPending][1])}
		require.ElementsMatch(t, want, b.keys(t, queue.ReadyPrefix))
		require.Equal(t, []string{queue.LeaseKey(byStatus[queue.StatusRunning][0])}, b.keys(t, queue.LeasesPrefix))
		require.Equal(t, []string{queue.DeadKey(byStatus[queue.StatusFailed][0])}, b.keys(t, queue.DeadPrefix))

		// Nothing is lost: every task is where it was, and the converted
		// queue runs them.
		for _, tasks := range byStatus {
			for _, task := range tasks {
				got, err := q.Get(b.ctx, task.ID)
				require.NoError(t, err)
				require.Equal(t, task.Rev, got.Rev)
			}
		}
		es, _, err := q.ListReady(b.ctx, queue.ReadyQuery{})
		require.NoError(t, err)
		require.Len(t, es, 2)
		l, err := q.Claim(b.ctx, es[0], "new-worker")
		require.NoError(t, err)
		_, err = q.Complete(b.ctx, l, nil)
		require.NoError(t, err)
		b.clock.Advance(2 * time.Minute)
		exp, _, err := q.Recovery().ListLeases(b.ctx, queue.ExpiredLeases, 0, "")
		require.NoError(t, err)
		require.Len(t, exp, 1, "the old worker's lease is found by the expiry check")
		page, err := q.List(b.ctx, queue.ListQuery{Status: queue.StatusFailed})
		require.NoError(t, err)
		require.Len(t, page.Tasks, 1)

		// Running it again changes nothing.
		res, err = queue.Migrate(b.ctx, b.raw, queue.Options{Clock: b.clock}, queue.MigrateOptions{})
		require.NoError(t, err)
		require.True(t, res.AlreadyCurrent)
	})
}

// layout2Key is the layout-2 key of a current ready or lease key: the same
// fields, one segment each.
func layout2Key(t *testing.T, key string) string {
	t.Helper()
	if e, err := queue.ParseReadyKey(key); err == nil {
		return fmt.Sprintf("ready/%s/%013d/%s/%s/%s", e.Shard, e.Rank.UnixMilli(), e.Type, e.Priority, e.ID)
	}
	l, err := queue.ParseLeaseKey(key)
	require.NoError(t, err)
	return fmt.Sprintf("leases/%s/%013d/%s/%s/%s/%s", l.Shard, l.ExpiresAt.UnixMilli(), l.Type, l.ID, l.LeaseID, l.WorkerID)
}

func TestMigrateFromLayout2(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		b := setup(t, be)
		submit := func(retries int) *queue.Task {
			task, _, err := b.q.Submit(b.ctx, queue.SubmitRequest{Type: "job", MaxRetries: &retries})
			require.NoError(t, err)
			return task
		}
		claim := func(task *queue.Task) *queue.Lease {
			e, err := queue.ParseReadyKey(queue.ReadyKey(task))
			require.NoError(t, err)
			l, err := b.q.Claim(b.ctx, e, "old-worker")
			require.NoError(t, err)
			return l
		}
		pending := []*queue.Task{submit(3), submit(3)}
		running := claim(submit(3))
		_, err := b.q.Fail(b.ctx, claim(submit(0)), "boom")
		require.NoError(t, err)
		done := submit(3)
		_, err = b.q.Complete(b.ctx, claim(done), nil)
		require.NoError(t, err)
		want := map[string][]string{queue.ReadyPrefix: b.keys(t, queue.ReadyPrefix), queue.LeasesPrefix: b.keys(t, queue.LeasesPrefix)}
		dead := b.keys(t, queue.DeadPrefix)
		require.Len(t, want[queue.ReadyPrefix], 2)
		require.Len(t, want[queue.LeasesPrefix], 1)
		require.Len(t, dead, 1)

		// The same bucket as layout 2 wrote it: a segment per field, and a
		// stale ready entry of a finished task.
		for _, keys := range want {
			for _, k := range keys {
				_, err := b.raw.Put(b.ctx, layout2Key(t, k), nil, store.Condition{})
				require.NoError(t, err)
				require.NoError(t, b.raw.Delete(b.ctx, k, store.Condition{}))
			}
		}
		_, err = b.raw.Put(b.ctx, layout2Key(t, queue.ReadyKey(done)), nil, store.Condition{})
		require.NoError(t, err)
		_, err = b.raw.Put(b.ctx, queue.ConfigKey, []byte(`{"format":2,"shard_chars":1,"created_at":"2026-01-01T00:00:00Z"}`), store.Condition{})
		require.NoError(t, err)
		_, err = queue.Open(b.ctx, b.raw, queue.Options{})
		require.ErrorIs(t, err, queue.ErrLayoutOutdated)
		b.clock.Advance(2 * queue.IndexGrace) // the stale entry is old enough to go

		res, err := queue.Migrate(b.ctx, b.raw, queue.Options{Clock: b.clock}, queue.MigrateOptions{})
		require.NoError(t, err)
		require.Equal(t, 2, res.From)
		require.Equal(t, queue.LayoutVersion, res.To)
		require.Equal(t, 2, res.ReadyMoved)
		require.Equal(t, 1, res.LeasesMoved)
		require.Equal(t, 4, res.OldRemoved)
		require.Zero(t, res.Repair.Scanned, "no pass over the history: the dead-letter index is already there")
		require.ElementsMatch(t, want[queue.ReadyPrefix], b.keys(t, queue.ReadyPrefix))
		require.Equal(t, want[queue.LeasesPrefix], b.keys(t, queue.LeasesPrefix))
		require.Equal(t, dead, b.keys(t, queue.DeadPrefix))

		q, err := queue.Open(b.ctx, b.raw, queue.Options{Clock: b.clock})
		require.NoError(t, err)
		es, _, err := q.ListReady(b.ctx, queue.ReadyQuery{})
		require.NoError(t, err)
		require.ElementsMatch(t, []uuid.UUID{pending[0].ID, pending[1].ID}, []uuid.UUID{es[0].ID, es[1].ID})
		b.clock.Advance(time.Hour)
		exp, _, err := q.Recovery().ListLeases(b.ctx, queue.ExpiredLeases, 0, "")
		require.NoError(t, err)
		require.Len(t, exp, 1, "the old worker's lease is found by the expiry check")
		require.Equal(t, running.Task.ID, exp[0].ID)

		res, err = queue.Migrate(b.ctx, b.raw, queue.Options{Clock: b.clock}, queue.MigrateOptions{})
		require.NoError(t, err)
		require.True(t, res.AlreadyCurrent)
	})
}

// toLayout2 moves the current ready and lease entries of tasks to the
// shape layout 2 wrote (a segment per field), as a worker of layout 2 does.
func toLayout2(t *testing.T, b *bundle, tasks ...*queue.Task) []string {
	t.Helper()
	var old []string
	for _, task := range tasks {
		got := b.get(t, task)
		for _, k := range queue.IndexKeys(got) {
			o := layout2Key(t, k)
			_, err := b.raw.Put(b.ctx, o, nil, store.Condition{})
			require.NoError(t, err)
			require.NoError(t, b.raw.Delete(b.ctx, k, store.Condition{}))
			old = append(old, o)
		}
	}
	return old
}

// setFormat rewrites queue.json with another layout format.
func setFormat(t *testing.T, b *bundle, format int) {
	t.Helper()
	_, err := b.raw.Put(b.ctx, queue.ConfigKey, fmt.Appendf(nil, `{"format":%d,"shard_chars":1,"created_at":"2026-01-01T00:00:00Z"}`, format), store.Condition{})
	require.NoError(t, err)
}

// A task object that does not decode is reported and left; everything
// else is converted and the queue switched.
func TestMigrateReportsMalformedTask(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		b := setup(t, be)
		pending := b.submit(t, "job", `{"n":1}`)
		toLayout2(t, b, pending)
		bad := queue.NewIDAt(b.q.Now())
		badKey := b.q.TaskKey(bad)
		_, err := b.raw.Put(b.ctx, badKey, []byte(`{"format":1,"id":`), store.Condition{})
		require.NoError(t, err)
		badEntry := fmt.Sprintf("ready/%s/%013d/job/normal/%s", queue.ShardOf(bad, 1), b.q.Now().UnixMilli(), bad)
		_, err = b.raw.Put(b.ctx, badEntry, nil, store.Condition{})
		require.NoError(t, err)
		setFormat(t, b, 2)

		res, err := queue.Migrate(b.ctx, b.raw, queue.Options{Clock: b.clock}, queue.MigrateOptions{})
		require.NoError(t, err)
		require.Equal(t, 1, res.ReadyMoved)
		require.Equal(t, 1, res.OldLeft, "the malformed task's entry is left")
		require.Len(t, res.Malformed, 1)
		require.Equal(t, badKey, res.Malformed[0].Key)

		q, err := queue.Open(b.ctx, b.raw, queue.Options{Clock: b.clock})
		require.NoError(t, err, "the switch was made")
		require.ElementsMatch(t, []string{queue.ReadyKey(pending), badEntry}, b.keys(t, queue.ReadyPrefix))
		obj, err := b.raw.Get(b.ctx, badKey)
		require.NoError(t, err)
		require.Equal(t, `{"format":1,"id":`, string(obj.Body), "the object is left as it was")
		page, err := q.List(b.ctx, queue.ListQuery{Status: queue.StatusPending})
		require.NoError(t, err)
		require.Len(t, page.Tasks, 1)
		require.Equal(t, pending.ID, page.Tasks[0].ID)
		l, err := q.Claim(b.ctx, readyEntryOf(pending), "new-worker")
		require.NoError(t, err)
		_, err = q.Complete(b.ctx, l, nil)
		require.NoError(t, err)
		r, _, err := q.Recovery().Repair(b.ctx, queue.ShardOf(bad, 1), 0, "")
		require.NoError(t, err)
		require.Len(t, r.Malformed, 1, "qo repair skips and reports it")
	})
}

// layout2Worker writes the registry entry a worker of layout 2 wrote: no
// "layout" field.
func layout2Worker(t *testing.T, b *bundle, id, host string) {
	t.Helper()
	body := fmt.Sprintf(`{"format":1,"worker_id":%q,"host":%q,"pid":42,"version":"v0.9.0","last_heartbeat":%q,"started_at":%q}`,
		id, host, b.q.Now().Format(time.RFC3339Nano), b.q.Now().Format(time.RFC3339Nano))
	_, err := b.raw.Put(b.ctx, queue.WorkerKey(id), []byte(body), store.Condition{})
	require.NoError(t, err)
}

// layout3Worker writes the registry entry a worker of layout 3 wrote.
func layout3Worker(t *testing.T, b *bundle, id, host string) {
	t.Helper()
	body := fmt.Sprintf(`{"format":1,"layout":3,"worker_id":%q,"host":%q,"pid":42,"version":"v1.4.0","last_heartbeat":%q,"started_at":%q}`,
		id, host, b.q.Now().Format(time.RFC3339Nano), b.q.Now().Format(time.RFC3339Nano))
	_, err := b.raw.Put(b.ctx, queue.WorkerKey(id), []byte(body), store.Condition{})
	require.NoError(t, err)
}

// Migrate refuses while a process of an older layout is alive: it would
// keep writing entries no current process reads.
func TestMigrateRefusesWhileOlderVersionRuns(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		format int // queue.json before
		scene  func(t *testing.T, b *bundle)
		refuse string // "" when Migrate proceeds
	}{
		{"layout-2 worker alive", 2, func(t *testing.T, b *bundle) { layout2Worker(t, b, "old-1", "box-7") }, "worker old-1 on host box-7"},
		{"layout-2 worker alive after the switch", queue.LayoutVersion, func(t *testing.T, b *bundle) { layout2Worker(t, b, "old-1", "box-7") }, "worker old-1 on host box-7"},
		{"layout-3 worker alive", 3, func(t *testing.T, b *bundle) { layout3Worker(t, b, "old-3", "box-9") }, "worker old-3 on host box-9 (pid 42, qo v1.4.0, layout 3"},
		{"layout-3 worker alive after the switch", queue.LayoutVersion, func(t *testing.T, b *bundle) { layout3Worker(t, b, "old-3", "box-9") }, "worker old-3 on host box-9"},
		{"layout-2 worker dead", 2, func(t *testing.T, b *bundle) {
			layout2Worker(t, b, "old-1", "box-7")
			// The heartbeat's time is the entry's LastModified by the
			// server's clock, which on a real server runs on while the
			// test's clock stands: a minute past the bound, not a second.
			b.clock.Advance(queue.DefaultDeadAfter + queue.MaxClockSkew + time.Minute)
		}, ""},
		{"current worker alive", queue.LayoutVersion, func(t *testing.T, b *bundle) {
			require.NoError(t, registry.Put(b.ctx, b.q, &queue.WorkerInfo{ID: "new-1", Host: "box-8"}))
		}, ""},
		{"monitor leading an unconverted bucket", 2, func(t *testing.T, b *bundle) {
			_, err := namedlease.Acquire(b.ctx, b.q, queue.MonitorLeaderKey, "old-monitor", time.Minute)
			require.NoError(t, err)
		}, "monitor old-monitor"},
		{"monitor leading a converted bucket", queue.LayoutVersion, func(t *testing.T, b *bundle) {
			_, err := namedlease.Acquire(b.ctx, b.q, queue.MonitorLeaderKey, "new-monitor", time.Minute)
			require.NoError(t, err)
		}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
				b := setup(t, be)
				task := b.submit(t, "job", `{}`)
				var old []string
				if tc.format == 3 {
					old = toLayout3(t, b, task)
				} else {
					old = toLayout2(t, b, task)
				}
				tc.scene(t, b)
				setFormat(t, b, tc.format)

				res, err := queue.Migrate(b.ctx, b.raw, queue.Options{Clock: b.clock}, queue.MigrateOptions{})
				if tc.refuse == "" {
					require.NoError(t, err)
					require.Equal(t, 1, res.ReadyMoved)
					require.Empty(t, res.OlderRunning)
					return
				}
				require.ErrorIs(t, err, queue.ErrOlderVersionRunning)
				require.Contains(t, err.Error(), tc.refuse)
				require.Contains(t, err.Error(), "--force")
				require.Equal(t, old, b.keys(t, queue.ReadyPrefix), "nothing converted")
				obj, err := b.raw.Get(b.ctx, queue.ConfigKey)
				require.NoError(t, err)
				require.Contains(t, string(obj.Body), fmt.Sprintf(`"format":%d`, tc.format), "nothing switched")

				res, err = queue.Migrate(b.ctx, b.raw, queue.Options{Clock: b.clock}, queue.MigrateOptions{Force: true})
				require.NoError(t, err)
				require.Len(t, res.OlderRunning, 1)
				require.Contains(t, res.OlderRunning[0], tc.refuse)
				require.Equal(t, 1, res.ReadyMoved)
				require.Equal(t, []string{queue.ReadyKey(task)}, b.keys(t, queue.ReadyPrefix))
			})
		})
	}
}

// strayScene is a converted queue beside a worker of layout 2 that still
// runs: it released a task (a ready entry of layout 2) and claimed another
// (a lease entry of layout 2), and left a stale ready entry of layout 2 of
// a task that finished since.
type strayScene struct {
	pending, running, done *queue.Task
	old                    []string
}

func newStrayScene(t *testing.T, b *bundle) strayScene {
	t.Helper()
	var s strayScene
	s.pending = b.submit(t, "job", `{"n":1}`)
	s.running = b.submit(t, "job", `{"n":2}`)
	b.claim(t, s.running, "old-worker")
	s.done = b.submit(t, "job", `{"n":3}`)
	stale := layout2Key(t, queue.ReadyKey(s.done))
	l := b.claim(t, s.done, "new-worker")
	_, err := b.q.Complete(b.ctx, l, nil)
	require.NoError(t, err)
	_, err = b.raw.Put(b.ctx, stale, nil, store.Condition{})
	require.NoError(t, err)
	s.old = append(toLayout2(t, b, s.pending, s.running), stale)
	require.Empty(t, b.readyEntries(t, queue.ReadyQuery{}), "no current ready entry: workers do not see the task")
	return s
}

// The sweeper converts stray ready entries of an older layout: the task
// gets its current entry, a stale one goes.
func TestSweepConvertsOlderLayoutReadyEntries(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		b := setup(t, be)
		s := newStrayScene(t, b)

		res, _, err := b.q.Recovery().Sweep(b.ctx, "", 0, time.Minute)
		require.NoError(t, err)
		require.Zero(t, res.Converted, "entries younger than the idle bound are left (a write may be in flight)")

		b.clock.Advance(2 * time.Minute)
		total := sweepAll(t, b)
		require.Equal(t, 1, total.Converted)
		require.Equal(t, 1, total.StaleRemoved)
		require.Equal(t, []string{queue.ReadyKey(s.pending)}, b.keys(t, queue.ReadyPrefix))
		es := b.readyEntries(t, queue.ReadyQuery{})
		require.Len(t, es, 1)
		require.Equal(t, s.pending.ID, es[0].ID)
		b.claim(t, s.pending, "new-worker")
	})
}

// The lease check reads a lease entry of layout 2 as its own: the task a
// worker of layout 2 claimed is taken back when its lease runs out.
func TestLeaseCheckFindsOlderLayoutLeases(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		b := setup(t, be)
		s := newStrayScene(t, b)
		oldLease := s.old[1]

		es, next, err := b.q.Recovery().ListLeases(b.ctx, queue.AllLeases, 0, "")
		require.NoError(t, err)
		require.Empty(t, next)
		require.Len(t, es, 1)
		require.Equal(t, s.running.ID, es[0].ID)
		require.Equal(t, oldLease, es[0].Key)
		require.Equal(t, "old-worker", es[0].WorkerID)
		exp, _, err := b.q.Recovery().ListLeases(b.ctx, queue.ExpiredLeases, 0, "")
		require.NoError(t, err)
		require.Empty(t, exp, "the lease runs")

		b.clock.Advance(time.Hour)
		exp, _, err = b.q.Recovery().ListLeases(b.ctx, queue.ExpiredLeases, 0, "")
		require.NoError(t, err)
		require.Len(t, exp, 1)
		got, err := b.q.Recovery().ExpireLease(b.ctx, exp[0])
		require.NoError(t, err)
		require.Equal(t, queue.StatusPending, got.Status)
		require.Contains(t, b.keys(t, queue.ReadyPrefix), queue.ReadyKey(got), "the task has its current ready entry")
		require.NotContains(t, b.keys(t, queue.LeasesPrefix), oldLease, "the old entry is gone")
	})
}

// qo migrate run again on a converted queue converts the stray entries of
// an older layout, in one pass of the ready and lease indexes.
func TestMigrateAgainConvertsStrayEntries(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		b := setup(t, be)
		s := newStrayScene(t, b)

		res, err := queue.Migrate(b.ctx, b.raw, queue.Options{Clock: b.clock}, queue.MigrateOptions{})
		require.NoError(t, err)
		require.True(t, res.AlreadyCurrent)
		require.Equal(t, 1, res.ReadyMoved)
		require.Equal(t, 1, res.LeasesMoved)
		require.Equal(t, 2, res.OldRemoved)
		require.Equal(t, 1, res.OldLeft, "the stale entry is younger than IndexGrace")
		require.ElementsMatch(t, []string{queue.ReadyKey(s.pending), s.old[2]}, b.keys(t, queue.ReadyPrefix))
		require.Equal(t, []string{queue.LeaseKey(b.get(t, s.running))}, b.keys(t, queue.LeasesPrefix))

		b.clock.Advance(2 * queue.IndexGrace)
		res, err = queue.Migrate(b.ctx, b.raw, queue.Options{Clock: b.clock}, queue.MigrateOptions{})
		require.NoError(t, err)
		require.Equal(t, 1, res.OldRemoved)
		require.Zero(t, res.OldLeft)
		require.Equal(t, []string{queue.ReadyKey(s.pending)}, b.keys(t, queue.ReadyPrefix))
	})
}

// layout3Key is the layout-3 key of a current ready key: the shard first,
// the type a field of the name.
func layout3Key(t *testing.T, key string) string {
	t.Helper()
	e, err := queue.ParseReadyKey(key)
	require.NoError(t, err)
	k := fmt.Sprintf("ready/%s/%013d~%s~%s~%s", e.Shard, e.Rank.UnixMilli(), e.Type, e.Priority, e.ID)
	if e.TaskKey != "" {
		k += "~" + e.TaskKey
	}
	return k
}

// toLayout3 moves the current ready entries of tasks to the shape layout 3
// wrote, as a worker of layout 3 does (its lease entries are current).
func toLayout3(t *testing.T, b *bundle, tasks ...*queue.Task) []string {
	t.Helper()
	return rewriteReady(t, b, layout3Key, tasks...)
}

// rewriteReady moves the current ready entries of tasks to the keys
// older gives them (an entry older leaves as it is stays), and returns
// those keys.
func rewriteReady(t *testing.T, b *bundle, older func(*testing.T, string) string, tasks ...*queue.Task) []string {
	t.Helper()
	var old []string
	for _, task := range tasks {
		k := queue.ReadyKey(b.get(t, task))
		o := older(t, k)
		if o == k {
			continue
		}
		_, err := b.raw.Put(b.ctx, o, nil, store.Condition{})
		require.NoError(t, err)
		require.NoError(t, b.raw.Delete(b.ctx, k, store.Condition{}))
		old = append(old, o)
	}
	return old
}

// A layout-3 bucket: every ready entry is rewritten under its type, then
// its shard (the new entry first, the old one deleted after), without a
// pass over the history; lease entries are already current. A stale entry
// goes, an entry of a malformed task and a key no layout reads are
// reported and left, and a run interrupted after writing a new entry is
// finished by the next.
func TestMigrateFromLayout3(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		b := setup(t, be)
		pending := []*queue.Task{
			b.submit(t, "job", `{"n":1}`),
			b.submitReq(t, queue.SubmitRequest{Type: "job", Priority: queue.PriorityHigh}),
			b.submitReq(t, queue.SubmitRequest{Type: "sync", Key: "customer-7"}),
			b.submitReq(t, queue.SubmitRequest{Type: "later", Delay: time.Hour}),
		}
		running := b.submit(t, "job", `{"n":2}`)
		b.claim(t, running, "old-worker")
		done := b.submit(t, "job", `{"n":3}`)
		stale := layout3Key(t, queue.ReadyKey(done))
		_, err := b.q.Complete(b.ctx, b.claim(t, done, "old-worker"), nil)
		require.NoError(t, err)
		want := b.keys(t, queue.ReadyPrefix)
		leases, dead := b.keys(t, queue.LeasesPrefix), b.keys(t, queue.DeadPrefix)
		require.Len(t, want, len(pending))

		// The same bucket as layout 3 wrote it, a stale entry of the
		// finished task, an entry of a task object that does not decode,
		// and junk.
		old := toLayout3(t, b, pending...)
		require.Equal(t, "ready/"+pending[2].Shard+"/", old[2][:len("ready/")+len(pending[2].Shard)+1])
		require.True(t, strings.HasSuffix(old[2], "~sync~normal~"+pending[2].ID.String()+"~customer-7"), old[2])
		bad := queue.NewIDAt(b.q.Now())
		badKey := b.q.TaskKey(bad)
		badEntry := fmt.Sprintf("ready/%s/%013d~job~normal~%s", queue.ShardOf(bad, 1), b.q.Now().UnixMilli(), bad)
		junk := "ready/" + pending[0].Shard + "/0000000000001~job~urgent~" + pending[0].ID.String()
		for k, body := range map[string]string{stale: "", badEntry: "", junk: "", badKey: `{"format":1,"id":`} {
			_, err = b.raw.Put(b.ctx, k, []byte(body), store.Condition{})
			require.NoError(t, err)
		}
		// An earlier run stopped after writing the new entry of the first
		// task and before deleting its old one.
		_, err = b.raw.Put(b.ctx, want[0], nil, store.Condition{})
		require.NoError(t, err)
		setFormat(t, b, 3)
		_, err = queue.Open(b.ctx, b.raw, queue.Options{})
		require.ErrorIs(t, err, queue.ErrLayoutOutdated)
		require.Contains(t, err.Error(), "qo migrate")
		require.Contains(t, err.Error(), "format 3")
		b.clock.Advance(2 * queue.IndexGrace) // the stale entry is old enough to go

		res, err := queue.Migrate(b.ctx, b.raw, queue.Options{Clock: b.clock}, queue.MigrateOptions{})
		require.NoError(t, err)
		require.Equal(t, 3, res.From)
		require.Equal(t, queue.LayoutVersion, res.To)
		require.Equal(t, len(pending), res.ReadyMoved)
		require.Zero(t, res.LeasesMoved)
		require.Equal(t, len(pending)+1, res.OldRemoved)
		require.Equal(t, 1, res.OldLeft, "the malformed task's entry is left")
		require.Len(t, res.Malformed, 1)
		require.Equal(t, badKey, res.Malformed[0].Key)
		require.Equal(t, []string{junk}, res.Unreadable)
		require.Zero(t, res.Repair.Scanned, "no pass over the history")
		require.ElementsMatch(t, append(slices.Clone(want), badEntry, junk), b.keys(t, queue.ReadyPrefix))
		require.Equal(t, leases, b.keys(t, queue.LeasesPrefix))
		require.Equal(t, dead, b.keys(t, queue.DeadPrefix))

		q, err := queue.Open(b.ctx, b.raw, queue.Options{Clock: b.clock})
		require.NoError(t, err)
		es, _, err := q.ListReady(b.ctx, queue.ReadyQuery{})
		require.NoError(t, err)
		require.ElementsMatch(t, []uuid.UUID{pending[0].ID, pending[1].ID, pending[2].ID}, []uuid.UUID{es[0].ID, es[1].ID, es[2].ID})
		es, _, err = q.ListReady(b.ctx, queue.ReadyQuery{Types: []string{"sync"}})
		require.NoError(t, err)
		require.Len(t, es, 1)
		require.Equal(t, "customer-7", es[0].TaskKey, "the task key moved with the entry")
		require.Equal(t, queue.PriorityHigh, readyEntryOf(b.get(t, pending[1])).Priority)
		l, err := q.Claim(b.ctx, es[0], "new-worker")
		require.NoError(t, err)
		_, err = q.Complete(b.ctx, l, nil)
		require.NoError(t, err)

		// Running it again converts nothing and reports the same.
		res, err = queue.Migrate(b.ctx, b.raw, queue.Options{Clock: b.clock}, queue.MigrateOptions{})
		require.NoError(t, err)
		require.True(t, res.AlreadyCurrent)
		require.Zero(t, res.ReadyMoved)
		require.Equal(t, 1, res.OldLeft)
		require.Equal(t, []string{junk}, res.Unreadable)
	})
}

// Stray ready entries of layout 3, written by a worker of layout 3 after
// the switch, are converted as those of layout 2 are: by the sweeper once
// SweepIdle old, and by qo migrate run again. Its lease entries are
// current: the lease check reads them.
func TestStrayLayout3ReadyEntriesAreConverted(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		for _, by := range []string{"sweep", "migrate"} {
			b := setup(t, be)
			pending := b.submit(t, "job", `{"n":1}`)
			keyed := b.submitReq(t, queue.SubmitRequest{Type: "sync", Key: "k"})
			done := b.submit(t, "job", `{"n":3}`)
			stale := layout3Key(t, queue.ReadyKey(done))
			_, err := b.q.Complete(b.ctx, b.claim(t, done, "new-worker"), nil)
			require.NoError(t, err)
			_, err = b.raw.Put(b.ctx, stale, nil, store.Condition{})
			require.NoError(t, err)
			toLayout3(t, b, pending, keyed)
			require.Empty(t, b.readyEntries(t, queue.ReadyQuery{}), "no current ready entry: workers do not see the tasks")
			b.clock.Advance(2 * queue.IndexGrace)

			switch by {
			case "sweep":
				total := sweepAll(t, b)
				require.Equal(t, 2, total.Converted, by)
				require.Equal(t, 1, total.StaleRemoved, by)
			case "migrate":
				res, err := queue.Migrate(b.ctx, b.raw, queue.Options{Clock: b.clock}, queue.MigrateOptions{})
				require.NoError(t, err)
				require.True(t, res.AlreadyCurrent)
				require.Equal(t, 2, res.ReadyMoved)
				require.Equal(t, 3, res.OldRemoved)
				require.Empty(t, res.Unreadable)
			}
			require.ElementsMatch(t, []string{queue.ReadyKey(pending), queue.ReadyKey(keyed)}, b.keys(t, queue.ReadyPrefix), by)
			es := b.readyEntries(t, queue.ReadyQuery{Types: []string{"sync"}})
			require.Len(t, es, 1, by)
			require.Equal(t, "k", es[0].TaskKey, by)
			b.claim(t, pending, "new-worker")
		}
	})
}

// sweepAll runs sweep rounds of one page each (idle bound a minute) from
// the start of the indexes to their end, and adds up what they did.
func sweepAll(t *testing.T, b *bundle) queue.SweepResult {
	t.Helper()
	var total queue.SweepResult
	cursor := ""
	for {
		res, next, err := b.q.Recovery().Sweep(b.ctx, cursor, 1, time.Minute)
		require.NoError(t, err)
		total.Add(res)
		if next == "" {
			return total
		}
		cursor = next
	}
}

// layout4Key is the layout-4 key of a current ready key: a task key was
// the last field of the entry's name, in the partition's one run of
// entries.
func layout4Key(t *testing.T, key string) string {
	t.Helper()
	e, err := queue.ParseReadyKey(key)
	require.NoError(t, err)
	k := fmt.Sprintf("ready/%s/%s/%013d~%s~%s", e.Type, e.Shard, e.Rank.UnixMilli(), e.Priority, e.ID)
	if e.TaskKey != "" {
		k += "~" + e.TaskKey
	}
	return k
}

// toLayout4 moves the current ready entries of tasks to the shape layout 4
// wrote, as a worker of layout 4 does (an entry without a key did not
// change).
func toLayout4(t *testing.T, b *bundle, tasks ...*queue.Task) []string {
	t.Helper()
	return rewriteReady(t, b, layout4Key, tasks...)
}

// A layout-4 bucket: the entries of tasks with a key move to their key's
// section of the partition; every other entry stays as it is.
func TestMigrateFromLayout4(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		b := setup(t, be)
		plain := b.submit(t, "sync", `{}`)
		keyed := []*queue.Task{
			b.submitReq(t, queue.SubmitRequest{Type: "sync", Key: "customer-7"}),
			b.submitReq(t, queue.SubmitRequest{Type: "sync", Key: "customer-8", Priority: queue.PriorityHigh}),
		}
		want := b.keys(t, queue.ReadyPrefix)
		old := toLayout4(t, b, append([]*queue.Task{plain}, keyed...)...)
		require.Len(t, old, len(keyed), "only the entries with a key are of another shape")
		require.True(t, strings.HasSuffix(old[0], "~"+keyed[0].ID.String()+"~customer-7"), old[0])
		setFormat(t, b, 4)
		_, err := queue.Open(b.ctx, b.raw, queue.Options{})
		require.ErrorIs(t, err, queue.ErrLayoutOutdated)
		require.Contains(t, err.Error(), "format 4")

		res, err := queue.Migrate(b.ctx, b.raw, queue.Options{Clock: b.clock}, queue.MigrateOptions{})
		require.NoError(t, err)
		require.Equal(t, 4, res.From)
		require.Equal(t, queue.LayoutVersion, res.To)
		require.Equal(t, len(keyed), res.ReadyMoved)
		require.Equal(t, len(keyed), res.OldRemoved)
		require.Empty(t, res.Unreadable)
		require.ElementsMatch(t, want, b.keys(t, queue.ReadyPrefix))

		q, err := queue.Open(b.ctx, b.raw, queue.Options{Clock: b.clock})
		require.NoError(t, err)
		es, _, err := q.ListReady(b.ctx, queue.ReadyQuery{Types: []string{"sync"}})
		require.NoError(t, err)
		got := map[uuid.UUID]string{}
		for _, e := range es {
			got[e.ID] = e.TaskKey
		}
		require.Equal(t, map[uuid.UUID]string{plain.ID: "", keyed[0].ID: "customer-7", keyed[1].ID: "customer-8"}, got)
	})
}

// A ready entry of layout 4, written by a worker of layout 4 after the
// switch for a task with a key, is converted by the sweeper once SweepIdle
// old; until then no worker claims from it.
func TestStrayLayout4ReadyEntriesAreConverted(t *testing.T) {
	t.Parallel()
	b := setup(t, storetest.Backends()[0])
	keyed := b.submitReq(t, queue.SubmitRequest{Type: "sync", Key: "k"})
	toLayout4(t, b, keyed)
	require.Empty(t, b.readyEntries(t, queue.ReadyQuery{}), "no current ready entry: workers do not see the task")
	b.clock.Advance(2 * queue.IndexGrace)
	total := sweepAll(t, b)
	require.Equal(t, 1, total.Converted)
	require.Equal(t, []string{queue.ReadyKey(keyed)}, b.keys(t, queue.ReadyPrefix))
	es := b.readyEntries(t, queue.ReadyQuery{})
	require.Len(t, es, 1)
	require.Equal(t, "k", es[0].TaskKey)
}
