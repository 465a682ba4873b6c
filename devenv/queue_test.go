package devenv

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/store/memstore"
)

// corsStore records SetCORS calls and answers with err.
type corsStore struct {
	*memstore.Store
	err     error
	origins []string
}

func (s *corsStore) SetCORS(ctx context.Context, origins []string) error {
	s.origins = origins
	return s.err
}

func TestPrepareQueue(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		corsErr error
		wantErr string
	}{
		{"cors set", nil, ""},
		{"cors not supported", fmt.Errorf("put bucket cors: %w", store.ErrNotSupported), ""},
		{"cors failed", errors.New("boom"), "set CORS"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s := &corsStore{Store: memstore.New(), err: tt.corsErr}
			log := slog.New(slog.DiscardHandler)
			q, err := prepareQueue(ctx, s, "qo-dev", log)
			require.Equal(t, []string{"*"}, s.origins)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, 1, q.Config().ShardChars)
			task, _, err := q.Submit(ctx, queue.SubmitRequest{Type: "echo"})
			require.NoError(t, err)

			// A restart opens the same queue.
			again, err := prepareQueue(ctx, s, "qo-dev", log)
			require.NoError(t, err)
			got, err := again.Get(ctx, task.ID)
			require.NoError(t, err)
			require.Equal(t, queue.StatusPending, got.Status)
		})
	}
}

// A dev environment whose data an older qo wrote is converted in place.
func TestPrepareQueueMigrates(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := &corsStore{Store: memstore.New()}
	_, err := s.Put(ctx, queue.ConfigKey, []byte(`{"format":1,"shard_chars":1,"created_at":"2026-01-01T00:00:00Z"}`), store.Condition{})
	require.NoError(t, err)
	q, err := prepareQueue(ctx, s, "qo-dev", slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	require.Equal(t, queue.LayoutVersion, q.Config().Format)
}
