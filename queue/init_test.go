package queue_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/store/doctor"
	"github.com/qo-queue/qo/store/memstore"
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
		require.True(t, strings.HasPrefix(queue.ReadyKey(task), "ready/t/"+task.Shard+"/"))

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

// lyingStore is a server that answers success but ignores what it is told
// (s3rver, rclone serve s3 and fauxqs each do some of this).
type lyingStore struct {
	*memstore.Store
	ignoreIfNoneMatch, ignoreIfMatch  bool
	ignoreVersioning, ignoreLifecycle bool
}

func (s *lyingStore) Put(ctx context.Context, key string, body []byte, cond store.Condition) (store.PutResult, error) {
	if s.ignoreIfNoneMatch {
		cond.IfNoneMatch = false
	}
	if s.ignoreIfMatch {
		cond.IfMatch = ""
	}
	return s.Store.Put(ctx, key, body, cond)
}

func (s *lyingStore) EnableVersioning(ctx context.Context) error {
	if s.ignoreVersioning {
		return nil
	}
	return s.Store.EnableVersioning(ctx)
}

func (s *lyingStore) SetLifecycle(ctx context.Context, rules []store.LifecycleRule) error {
	if s.ignoreLifecycle {
		return nil
	}
	return s.Store.SetLifecycle(ctx, rules)
}

func TestInitRefusesAServerThatIgnoresRequests(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		s      lyingStore
		is     error
		detail string
	}{
		{"ignores If-None-Match", lyingStore{ignoreIfNoneMatch: true}, doctor.ErrUnsafe, "ignored If-None-Match"},
		{"ignores If-Match", lyingStore{ignoreIfMatch: true}, doctor.ErrUnsafe, "ignores If-Match"},
		{"ignores enabling versioning", lyingStore{ignoreVersioning: true}, store.ErrNotSupported, "versioning is still off"},
		{"ignores lifecycle rules", lyingStore{ignoreLifecycle: true}, store.ErrNotSupported, "does not list the rules qo-expire-old-ready"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			opts := []memstore.Option{}
			if tc.s.ignoreVersioning {
				opts = append(opts, memstore.WithoutVersioning())
			}
			s := tc.s
			s.Store = memstore.New(opts...)
			_, err := queue.InitWithOptions(t.Context(), &s, queue.InitOptions{ShardChars: 1, SettleTime: time.Millisecond})
			require.ErrorIs(t, err, tc.is)
			require.ErrorContains(t, err, tc.detail)
			require.ErrorContains(t, err, "docs/providers.md", "the error points to the servers tested with qo")
			if errors.Is(err, doctor.ErrUnsafe) {
				_, err := s.Get(t.Context(), queue.ConfigKey)
				require.ErrorIs(t, err, store.ErrNotFound, "no queue is created on an unsafe server")
			}
		})
	}
}

// The probe key gains no version once it exists, however often queues
// are initialised and probed, also at once.
func TestInitProbeLeavesNoHistory(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		s := be.New(t)
		ctx := t.Context()
		for range 3 {
			_, err := queue.Init(ctx, s, 1)
			require.NoError(t, err)
		}
		var wg sync.WaitGroup
		errs := make([]error, 8)
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = doctor.Probe(ctx, s, queue.ProbeKey)
			}()
		}
		wg.Wait()
		for _, err := range errs {
			require.NoError(t, err)
		}
		vs, err := s.ListVersions(ctx, queue.ProbeKey)
		require.NoError(t, err)
		require.Len(t, vs, 1, "only the first probe wrote")
	})
}
