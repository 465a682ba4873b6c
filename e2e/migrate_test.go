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
// names qo migrate; `qo migrate` refuses while the old worker is alive in
// the registry, then rewrites the ready and lease entries without reading
// the finished tasks, reporting and leaving a malformed task object; run
// again it converts an entry an old process wrote after the switch; a
// worker of this version then runs the pending tasks and takes back the
// one the old worker held.
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
	// A task object that does not decode, with its ready entry.
	bad := queue.NewID()
	badKey := e.q.TaskKey(bad)
	_, err = e.s.Put(ctx, badKey, []byte(`{"format":1,"id":`), store.Condition{})
	require.NoError(t, err)
	_, err = e.s.Put(ctx, fmt.Sprintf("ready/%s/%013d/echo/normal/%s", queue.ShardOf(bad, 1), time.Now().UnixMilli(), bad), nil, store.Condition{})
	require.NoError(t, err)
	// The old worker is still alive: its registry entry, as layout 2 wrote
	// it (no "layout").
	now := time.Now().UTC().Format(time.RFC3339Nano)
	_, err = e.s.Put(ctx, queue.WorkerKey("old-worker"), fmt.Appendf(nil,
		`{"format":1,"worker_id":"old-worker","host":"old-host","pid":4242,"version":"v0.9.0","started_at":%q,"last_heartbeat":%q,"dead_after_seconds":600}`, now, now), store.Condition{})
	require.NoError(t, err)
	_, err = e.s.Put(ctx, queue.ConfigKey, []byte(`{"format":2,"shard_chars":1,"created_at":"2026-01-01T00:00:00Z"}`), store.Condition{})
	require.NoError(t, err)

	r := qo(t, e.env, "list", "--status", "pending")
	require.NotZero(t, r.code, "an old bucket is refused: %s", r)
	require.Contains(t, r.stderr, "qo migrate")

	r = qo(t, e.env, "migrate", "--json")
	require.Equal(t, 4, r.code, "refused while the old worker lives: %s", r)
	for _, want := range []string{"old-worker", "old-host", "4242", "v0.9.0", "--force"} {
		require.Contains(t, r.stderr, want)
	}
	cfg, err := e.s.Get(ctx, queue.ConfigKey)
	require.NoError(t, err)
	require.Contains(t, string(cfg.Body), `"format":2`, "nothing switched")
	// The old worker stops: it deregisters.
	require.NoError(t, e.s.Delete(ctx, queue.WorkerKey("old-worker"), store.Condition{}))

	var res struct {
		From        int `json:"from"`
		To          int `json:"to"`
		ReadyMoved  int `json:"ready_moved"`
		LeasesMoved int `json:"leases_moved"`
		OldRemoved  int `json:"old_removed"`
		OldLeft     int `json:"old_left"`
		Malformed   []struct {
			Key   string `json:"key"`
			Error string `json:"error"`
		} `json:"malformed"`
		AlreadyCurrent bool `json:"already_current"`
		Repair         struct {
			Scanned int `json:"scanned"`
		} `json:"repair"`
	}
	r = qo(t, e.env, "migrate", "--json")
	require.Equal(t, 0, r.code, "qo migrate: %s", r)
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &res))
	require.Equal(t, 2, res.From)
	require.Equal(t, queue.LayoutVersion, res.To)
	require.Equal(t, 3, res.ReadyMoved)
	require.Equal(t, 1, res.LeasesMoved)
	require.Equal(t, 4, res.OldRemoved)
	require.Equal(t, 1, res.OldLeft, "the malformed task's entry is left")
	require.Len(t, res.Malformed, 1)
	require.Equal(t, badKey, res.Malformed[0].Key)
	require.Contains(t, r.stderr, "skipped malformed object "+badKey)
	require.Zero(t, res.Repair.Scanned, "no pass over the history")
	obj, err := e.s.Get(ctx, badKey)
	require.NoError(t, err)
	require.Equal(t, `{"format":1,"id":`, string(obj.Body), "left as it was")

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

	// A process of layout 2 that outlived the switch released a task: its
	// ready entry has the old shape. qo migrate run again converts it.
	stray := e.submit(t, "echo", `{"n":3}`, time.Minute, 3)
	strayTask, err := e.q.Get(ctx, stray)
	require.NoError(t, err)
	sr, err := queue.ParseReadyKey(queue.ReadyKey(strayTask))
	require.NoError(t, err)
	_, err = e.s.Put(ctx, fmt.Sprintf("ready/%s/%013d/%s/%s/%s", sr.Shard, sr.Rank.UnixMilli(), sr.Type, sr.Priority, sr.ID), nil, store.Condition{})
	require.NoError(t, err)
	require.NoError(t, e.s.Delete(ctx, sr.Key, store.Condition{}))
	res.ReadyMoved, res.Malformed = 0, nil
	require.NoError(t, json.Unmarshal([]byte(e.cli(t, "migrate", "--json")), &res))
	require.True(t, res.AlreadyCurrent)
	require.Equal(t, 1, res.ReadyMoved, "the stray entry is converted")
	require.Len(t, res.Malformed, 1, "the malformed object is reported again")
	pending = append(pending, stray.String())

	// The old worker is gone: its task runs again once its lease expires.
	e.start(t, "worker", workerArgs("new-worker", "--builtins", "--dead-after", "2s", "--heartbeat-interval", "500ms")...)
	for _, id := range append(pending, held.String()) {
		e.waitTask(t, uuid.MustParse(id), "completed", func(task *queue.Task) bool { return task.Status == queue.StatusCompleted })
	}
}
