package queue_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/store/storetest"
)

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
