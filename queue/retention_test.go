package queue_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store"
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
