package httpapi

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/store/storetest"
)

func TestControlEndpoints(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		e := newEnv(t, be, Options{})
		e.calls(t, []call{
			{"GET", "/api/control", "/api/control", "", 200, func(t *testing.T, v map[string]any) { require.Equal(t, false, v["paused"]) }},
			{"POST", "/api/pause", "/api/pause", `{"type":"email","reason":"provider down"}`, 200, func(t *testing.T, v map[string]any) {
				require.Contains(t, v["paused_types"], "email")
			}},
			{"POST", "/api/pause", "/api/pause", `{"reason":"migration"}`, 200, func(t *testing.T, v map[string]any) { require.Equal(t, true, v["paused"]) }},
			{"POST", "/api/pause", "/api/pause", `{"type":"a b"}`, 400, nil},
			{"POST", "/api/pause", "/api/pause", `{"kind":"x"}`, 400, nil},
			{"POST", "/api/resume", "/api/resume", ``, 200, func(t *testing.T, v map[string]any) { require.Equal(t, false, v["paused"]) }},
			{"POST", "/api/resume", "/api/resume", `{"type":"email","reason":"x"}`, 400, nil},
		})
		c, err := e.q.Control(context.Background())
		require.NoError(t, err)
		require.Equal(t, []string{"email"}, c.PausedTypes(), "the API wrote the bucket")
	})
}
