package queue_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
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

		var said []string
		res, err := queue.Migrate(b.ctx, b.raw, queue.Options{Clock: b.clock}, func(m string) { said = append(said, m) })
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
		exp, _, err := q.ListExpired(b.ctx, 0, "")
		require.NoError(t, err)
		require.Len(t, exp, 1, "the old worker's lease is found by the expiry check")
		page, err := q.List(b.ctx, queue.ListQuery{Status: queue.StatusFailed})
		require.NoError(t, err)
		require.Len(t, page.Tasks, 1)

		// Running it again changes nothing.
		res, err = queue.Migrate(b.ctx, b.raw, queue.Options{Clock: b.clock}, nil)
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

		res, err := queue.Migrate(b.ctx, b.raw, queue.Options{Clock: b.clock}, nil)
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
		exp, _, err := q.ListExpired(b.ctx, 0, "")
		require.NoError(t, err)
		require.Len(t, exp, 1, "the old worker's lease is found by the expiry check")
		require.Equal(t, running.Task.ID, exp[0].ID)

		res, err = queue.Migrate(b.ctx, b.raw, queue.Options{Clock: b.clock}, nil)
		require.NoError(t, err)
		require.True(t, res.AlreadyCurrent)
	})
}
