package queue_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/store/memstore"
	"github.com/qo-queue/qo/store/storetest"
)

// TestRetention: with a retention, every task version is tagged, finished
// ones (and their offloaded outputs) so that the lifecycle rule qo init
// installs expires them; dead letters are not; init again changes it.
func TestRetention(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		ctx := context.Background()
		s := be.New(t)
		res, err := queue.InitWithOptions(ctx, s, queue.InitOptions{ShardChars: 1, TasksRetentionDays: 30})
		require.NoError(t, err)
		require.Equal(t, 30, res.Config.TasksRetentionDays)
		require.Equal(t, "installed", res.Lifecycle)
		rules, err := s.(store.Admin).Lifecycle(ctx)
		require.NoError(t, err)
		require.Contains(t, rules, store.LifecycleRule{ID: "qo-expire-finished-tasks", Prefix: queue.TasksPrefix, Tag: queue.RetentionTag, ExpirationDays: 30})

		q, err := queue.Open(ctx, s, queue.Options{OffloadThreshold: 16})
		require.NoError(t, err)
		tg := s.(store.Tagger)
		tagOf := func(key string) string {
			tags, err := tg.Tags(ctx, key)
			require.NoError(t, err)
			for _, tag := range tags {
				if tag.Key == queue.RetentionTag.Key {
					return tag.Value
				}
			}
			return ""
		}
		claim := func(typ string) *queue.Lease {
			task, _, err := q.Submit(ctx, queue.SubmitRequest{Type: typ})
			require.NoError(t, err)
			require.Equal(t, "live", tagOf(task.Key()))
			l, err := q.Claim(ctx, queue.ReadyEntry{Key: queue.ReadyKey(task), ID: task.ID, Shard: task.Shard, Type: typ}, "w1")
			require.NoError(t, err)
			require.Equal(t, "live", tagOf(task.Key()))
			return l
		}
		done, err := q.Complete(ctx, claim("ok"), json.RawMessage(`{"big":"`+strings.Repeat("x", 64)+`"}`))
		require.NoError(t, err)
		require.Equal(t, "finished", tagOf(done.Key()))
		require.NotNil(t, done.OutputRef)
		require.Equal(t, "finished", tagOf(done.OutputRef.Key), "an offloaded output expires with its task")
		failed, err := q.Fail(ctx, claim("bad"), "boom")
		require.NoError(t, err)
		require.Equal(t, "live", tagOf(failed.Key()), "dead letters are kept")
		archived, err := q.Archive(ctx, failed.ID)
		require.NoError(t, err)
		require.Equal(t, "finished", tagOf(archived.Key()))

		// Init again without a retention: recorded, and the rules go.
		res, err = queue.InitWithOptions(ctx, s, queue.InitOptions{ShardChars: 1})
		require.NoError(t, err)
		require.Zero(t, res.Config.TasksRetentionDays)
		q, err = queue.Open(ctx, s, queue.Options{})
		require.NoError(t, err)
		require.Zero(t, q.Config().TasksRetentionDays)
		rules, err = s.(store.Admin).Lifecycle(ctx)
		require.NoError(t, err)
		for _, r := range rules {
			require.NotEqual(t, "qo-expire-finished-tasks", r.ID)
		}
	})
}

// TestIdempotencyMarkerLivesWithItsTask: under a retention an idempotency
// marker expires only once its task finished, and no sooner than the
// task: a keyed task that stays alive (delayed, a dead letter, replayed)
// keeps a marker no lifecycle rule expires, so a resubmit with its key
// returns it however late; the write that finishes it rewrites the marker
// tagged finished (1 PUT), so both expire N days after the end. A
// workflow's marker never expires, as its record does not.
func TestIdempotencyMarkerLivesWithItsTask(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := storetest.NewClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	s := memstore.New(memstore.WithClock(clock))
	const days = 30
	retention := days * 24 * time.Hour
	_, err := queue.InitWithOptions(ctx, s, queue.InitOptions{ShardChars: 1, TasksRetentionDays: days, Clock: clock})
	require.NoError(t, err)
	q, err := queue.Open(ctx, s, queue.Options{Clock: clock})
	require.NoError(t, err)
	rules, err := s.Lifecycle(ctx)
	require.NoError(t, err)

	// expiresAt is when the installed rules expire the current version of
	// key (zero: never), as S3 reads them: days after its last write, for
	// a rule whose prefix (and tag, when it names one) it matches.
	expiresAt := func(key string) time.Time {
		t.Helper()
		obj, err := s.Get(ctx, key)
		require.NoError(t, err)
		tags, err := s.Tags(ctx, key)
		require.NoError(t, err)
		var at time.Time
		for _, r := range rules {
			if r.ExpirationDays == 0 || !strings.HasPrefix(key, r.Prefix) || (r.Tag.Key != "" && !slices.Contains(tags, r.Tag)) {
				continue
			}
			if when := obj.LastModified.Add(time.Duration(r.ExpirationDays) * 24 * time.Hour); at.IsZero() || when.Before(at) {
				at = when
			}
		}
		return at
	}
	submit := func(key string, req queue.SubmitRequest) (*queue.Task, bool) {
		t.Helper()
		req.Type, req.IdempotencyKey = "job", key
		task, created, err := q.Submit(ctx, req)
		require.NoError(t, err)
		return task, created
	}
	marker := func(task *queue.Task) string { return queue.IdempotencyKey(task.Type, task.IdempotencyKey) }
	claim := func(task *queue.Task) *queue.Lease {
		t.Helper()
		got, err := q.Get(ctx, task.ID)
		require.NoError(t, err)
		l, err := q.Claim(ctx, readyEntryOf(got), "w1")
		require.NoError(t, err)
		return l
	}
	requireKept := func(task *queue.Task, why string) {
		t.Helper()
		require.Zero(t, expiresAt(marker(task)), "%s: no rule expires the marker", why)
	}
	// requireExpiresWith: the marker expires, and no sooner than its task.
	requireExpiresWith := func(task *queue.Task, why string) {
		t.Helper()
		at := expiresAt(marker(task))
		require.False(t, at.IsZero(), "%s: the marker expires", why)
		require.Equal(t, clock.Now().Add(retention), at, "%s: the marker expires N days after the task finished", why)
		require.Equal(t, expiresAt(task.Key()), at, "%s: with its task", why)
	}

	// A task delayed past the retention: its marker outlives the
	// retention, and a resubmit then returns the task.
	delayed, created := submit("delayed", queue.SubmitRequest{AvailableAt: clock.Now().Add(2 * retention)})
	require.True(t, created)
	requireKept(delayed, "a pending task")
	clock.Advance(2*retention + time.Minute)
	again, created := submit("delayed", queue.SubmitRequest{})
	require.False(t, created, "a resubmit while the task lives returns it")
	require.Equal(t, delayed.ID, again.ID)
	l := claim(delayed)
	requireKept(delayed, "a running task")
	before := s.Requests().Snapshot()
	_, err = q.Complete(ctx, l, nil)
	require.NoError(t, err)
	d := s.Requests().Snapshot().Sub(before)
	require.Equal(t, int64(2), d.Total(store.OpPut), "the task and its marker (%s)", d)
	require.Equal(t, int64(1), d.Total(store.OpDelete), "%s", d)
	requireExpiresWith(delayed, "completed")
	again, created = submit("delayed", queue.SubmitRequest{})
	require.False(t, created, "a finished task still answers its key")
	require.Equal(t, delayed.ID, again.ID)

	// A dead letter stays, and its marker with it, until archived.
	dead, _ := submit("dead", queue.SubmitRequest{MaxRetries: new(int)})
	_, err = q.Fail(ctx, claim(dead), "boom")
	require.NoError(t, err)
	clock.Advance(2 * retention)
	requireKept(dead, "a dead letter")
	again, created = submit("dead", queue.SubmitRequest{MaxRetries: new(int)})
	require.False(t, created)
	require.Equal(t, dead.ID, again.ID)
	_, err = q.Archive(ctx, dead.ID)
	require.NoError(t, err)
	requireExpiresWith(dead, "archived")

	// A cancelled task replayed lives again, and so does its marker.
	cancelled, _ := submit("replayed", queue.SubmitRequest{})
	_, err = q.Cancel(ctx, cancelled.ID, "not now")
	require.NoError(t, err)
	requireExpiresWith(cancelled, "cancelled")
	clock.Advance(retention / 2)
	_, err = q.Replay(ctx, cancelled.ID)
	require.NoError(t, err)
	requireKept(cancelled, "replayed")
	clock.Advance(2 * retention)
	again, created = submit("replayed", queue.SubmitRequest{})
	require.False(t, created)
	require.Equal(t, cancelled.ID, again.ID)

	// A workflow's marker stays with its record, which never expires.
	w, created, err := q.Workflows().Submit(ctx, decodeFlow(t, `{"idempotency_key": "nightly", "steps": [{"name": "a", "type": "job"}]}`))
	require.NoError(t, err)
	require.True(t, created)
	keys, err := s.List(ctx, store.ListParams{Prefix: queue.IdempotencyPrefix})
	require.NoError(t, err)
	var workflowMarker string
	for _, o := range keys.Objects {
		if body, err := s.Get(ctx, o.Key); err == nil && strings.Contains(string(body.Body), w.ID.String()) {
			workflowMarker = o.Key
		}
	}
	require.NotEmpty(t, workflowMarker)
	require.Zero(t, expiresAt(workflowMarker), "a workflow's marker is never expired")
}
