package httpapi

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue/control"
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
		c, err := control.Read(context.Background(), e.q)
		require.NoError(t, err)
		require.Equal(t, []string{"email"}, c.PausedTypes(), "the API wrote the bucket")
	})
}

// POST /api/limit sets and clears a fleet-wide cap and rate, refusing bad bodies;
// GET /api/control and /api/stats show it.
func TestLimitEndpoint(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		e := newEnv(t, be, Options{})
		e.calls(t, []call{
			{"POST", "/api/limit", "/api/limit", `{"type":"api","concurrency":5}`, 200, func(t *testing.T, v map[string]any) {
				require.Equal(t, float64(5), v["limits"].(map[string]any)["api"].(map[string]any)["concurrency"])
			}},
			{"POST", "/api/limit", "/api/limit", `{"type":"other","concurrency":2}`, 200, nil},
			{"POST", "/api/limit", "/api/limit", `{"type":"other","clear":true}`, 200, func(t *testing.T, v map[string]any) {
				require.NotContains(t, v["limits"], "other")
			}},
			{"POST", "/api/limit", "/api/limit", `{"type":"rated","rate":"20/s","burst":5}`, 200, func(t *testing.T, v map[string]any) {
				l := v["limits"].(map[string]any)["rated"].(map[string]any)
				require.Equal(t, []any{float64(20), "s", float64(5)}, []any{l["rate"], l["per"], l["burst"]})
			}},
			{"GET", "/api/stats", "/api/stats", "", 200, func(t *testing.T, v map[string]any) {
				require.Equal(t, map[string]any{"api": float64(5)}, v["limits"])
				require.Equal(t, map[string]any{"rated": "20/s burst 5"}, v["rates"])
			}},
			{"POST", "/api/limit", "/api/limit", `{"type":"rated","rate":"20"}`, 400, nil},
			{"POST", "/api/limit", "/api/limit", `{"type":"rated","burst":3}`, 400, nil},
			{"POST", "/api/limit", "/api/limit", `{"type":"rated","rate":"5/s","clear":true}`, 400, nil},
			{"POST", "/api/limit", "/api/limit", `{"type":"api"}`, 400, nil},
			{"POST", "/api/limit", "/api/limit", `{"type":"api","concurrency":-1}`, 400, nil},
			{"POST", "/api/limit", "/api/limit", `{"type":"api","concurrency":3,"clear":true}`, 400, nil},
			{"POST", "/api/limit", "/api/limit", `{"type":"a b","concurrency":3}`, 400, nil},
		})
		c, err := control.Read(context.Background(), e.q)
		require.NoError(t, err)
		n, ok := c.ConcurrencyCap("api")
		require.True(t, ok)
		require.Equal(t, 5, n, "the API wrote the bucket")
	})
}
