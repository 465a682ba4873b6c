package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/internal/testutil"
	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/store/memstore"
)

// pingStore is a store whose bucket check fails while down is set, and
// counts the checks.
type pingStore struct {
	store.Store
	down  atomic.Bool
	pings atomic.Int64
}

func (p *pingStore) Ping(context.Context) error {
	p.pings.Add(1)
	if p.down.Load() {
		return errors.New("connection refused")
	}
	return nil
}

func TestProbes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ps := &pingStore{Store: memstore.New()}
	_, err := queue.Init(ctx, ps, 1)
	require.NoError(t, err)
	q, err := queue.Open(ctx, ps, queue.Options{})
	require.NoError(t, err)
	var stopping atomic.Bool
	var logs testutil.Buffer
	srv := httptest.NewServer(New(q, Options{Token: "secret", S3CheckMaxAge: time.Nanosecond, ShuttingDown: stopping.Load,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))}))
	t.Cleanup(srv.Close)

	tests := []struct {
		name       string
		down, stop bool
		path       string
		status     int
		want       map[string]any
	}{
		{name: "alive", path: "/healthz", status: 200, want: map[string]any{"alive": true}},
		{name: "ready", path: "/readyz", status: 200, want: map[string]any{"ready": true, "reason": "bucket reachable"}},
		{name: "health s3", path: "/health?check=s3", status: 200, want: map[string]any{"status": "ok", "s3": "ok"}},
		{name: "alive while the bucket is down", down: true, path: "/healthz", status: 200, want: map[string]any{"alive": true}},
		{name: "not ready while the bucket is down", down: true, path: "/readyz", status: 503,
			want: map[string]any{"ready": false, "reason": "bucket unreachable (the error is in the log)"}},
		{name: "health s3 while the bucket is down", down: true, path: "/health?check=s3", status: 503, want: map[string]any{"status": "unavailable", "s3": "unavailable"}},
		{name: "shutting down", stop: true, path: "/healthz", status: 503, want: map[string]any{"alive": false, "reason": "shutting down"}},
		{name: "not ready while shutting down", stop: true, path: "/readyz", status: 503, want: map[string]any{"ready": false, "reason": "shutting down"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ps.down.Store(tc.down)
			stopping.Store(tc.stop)
			resp, err := http.Get(srv.URL + tc.path) // no token: probes are public
			require.NoError(t, err)
			defer resp.Body.Close()
			require.Equal(t, tc.status, resp.StatusCode)
			raw, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			// The probes need no token: no S3 error text in what they answer.
			require.NotContains(t, string(raw), "connection refused")
			require.NotContains(t, string(raw), "check the bucket")
			var body map[string]any
			require.NoError(t, json.Unmarshal(raw, &body))
			for k, v := range tc.want {
				require.Equal(t, v, body[k], k)
			}
			if tc.path == "/readyz" && tc.down {
				require.NotEmpty(t, body["since"], "since when the bucket fails")
			}
			if tc.down && tc.path != "/healthz" {
				require.Contains(t, logs.String(), "check the bucket: connection refused", "the error goes to the log")
			}
		})
	}
}

// A bucket check is reused for its max age, however many probes ask.
func TestS3CheckReused(t *testing.T) {
	t.Parallel()
	ps := &pingStore{Store: memstore.New()}
	c := NewS3Check(ps, time.Hour)
	for range 5 {
		_, _, err := c.Check(context.Background())
		require.NoError(t, err)
	}
	require.Equal(t, int64(1), ps.pings.Load())
}
