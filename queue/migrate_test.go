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
