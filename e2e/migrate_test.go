//go:build unix

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store"
)

// An operator upgrading from layout 2: every command refuses the bucket and
// names qo migrate; `qo migrate` rewrites the ready and lease entries
// without reading the finished tasks; a worker of this version then runs
// the pending tasks and takes back the one the old worker held.
func TestMigrateUpgradesLayout2Bucket(t *testing.T) {
	t.Parallel()
	e := wkSetup(t)
	ctx := context.Background()
	var pending []string
	for range 3 {
		pending = append(pending, e.submit(t, "echo", `{"n":1}`, time.Minute, 3).String())
	}
	held := e.submit(t, "echo", `{"n":2}`, time.Minute, 3)
	e.waitTask(t, held, "pending", func(task *queue.Task) bool { return task.Status == queue.StatusPending })
	entries, _, err := e.q.ListReady(ctx, queue.ReadyQuery{})
	require.NoError(t, err)
	for _, en := range entries {
		if en.ID == held {
			_, err := e.q.Claim(ctx, en, "old-worker")
			require.NoError(t, err)
		}
	}
	// Layout 2 wrote the same entries with a "/" between their fields.
	rewrite := func(prefix string, layout2 func(key string) string) {
		page, err := e.s.List(ctx, store.ListParams{Prefix: prefix})
		require.NoError(t, err)
		for _, o := range page.Objects {
			_, err := e.s.Put(ctx, layout2(o.Key), nil, store.Condition{})
			require.NoError(t, err)
			require.NoError(t, e.s.Delete(ctx, o.Key, store.Condition{}))
		}
	}
	rewrite(queue.ReadyPrefix, func(k string) string {
		r, err := queue.ParseReadyKey(k)
		require.NoError(t, err)
		return fmt.Sprintf("ready/%s/%013d/%s/%s/%s", r.Shard, r.Rank.UnixMilli(), r.Type, r.Priority, r.ID)
	})
	rewrite(queue.LeasesPrefix, func(k string) string {
		l, err := queue.ParseLeaseKey(k)
		require.NoError(t, err)
		return fmt.Sprintf("leases/%s/%013d/%s/%s/%s/%s", l.Shard, l.ExpiresAt.UnixMilli(), l.Type, l.ID, l.LeaseID, l.WorkerID)
	})
	_, err = e.s.Put(ctx, queue.ConfigKey, []byte(`{"format":2,"shard_chars":1,"created_at":"2026-01-01T00:00:00Z"}`), store.Condition{})
	require.NoError(t, err)

	r := qo(t, e.env, "list", "--status", "pending")
	require.NotZero(t, r.code, "an old bucket is refused: %s", r)
	require.Contains(t, r.stderr, "qo migrate")

	var res struct {
		From        int `json:"from"`
		To          int `json:"to"`
		ReadyMoved  int `json:"ready_moved"`
		LeasesMoved int `json:"leases_moved"`
		OldRemoved  int `json:"old_removed"`
		Repair      struct {
			Scanned int `json:"scanned"`
		} `json:"repair"`
	}
	require.NoError(t, json.Unmarshal([]byte(e.cli(t, "migrate", "--json")), &res))
	require.Equal(t, 2, res.From)
	require.Equal(t, queue.LayoutVersion, res.To)
	require.Equal(t, 3, res.ReadyMoved)
	require.Equal(t, 1, res.LeasesMoved)
	require.Equal(t, 4, res.OldRemoved)
	require.Zero(t, res.Repair.Scanned, "no pass over the history")

	var listed struct {
		Tasks []struct {
			ID string `json:"id"`
		} `json:"tasks"`
	}
	require.NoError(t, json.Unmarshal([]byte(e.cli(t, "list", "--status", "pending", "--json")), &listed))
	var ids []string
	for _, task := range listed.Tasks {
		ids = append(ids, task.ID)
	}
	require.ElementsMatch(t, pending, ids)

	// The old worker is gone: its task runs again once its lease expires.
	e.start(t, "worker", workerArgs("new-worker", "--builtins", "--dead-after", "2s", "--heartbeat-interval", "500ms")...)
	for _, id := range append(pending, held.String()) {
		e.waitTask(t, uuid.MustParse(id), "completed", func(task *queue.Task) bool { return task.Status == queue.StatusCompleted })
	}
}
