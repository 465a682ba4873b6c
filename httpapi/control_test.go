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

// POST /api/limit sets what qo limit sets, per-key caps and rates too, and
// GET /api/control shows them.
func TestLimitEndpointPerKey(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		e := newEnv(t, be, Options{})
		keyLimit := func(v map[string]any, typ string) map[string]any {
			t.Helper()
			kl, ok := v["key_limits"].(map[string]any)
			require.True(t, ok, "key_limits in %v", v)
			l, ok := kl[typ].(map[string]any)
			require.True(t, ok, "key_limits[%s] in %v", typ, kl)
			return l
		}
		e.calls(t, []call{
			{"POST", "/api/limit", "/api/limit", `{"type":"sync","concurrency":1,"per_key":true}`, 200, func(t *testing.T, v map[string]any) {
				require.Equal(t, float64(1), keyLimit(v, "sync")["concurrency"])
				fl, _ := v["limits"].(map[string]any)
				_, fleet := fl["sync"]
				require.False(t, fleet, "a per-key cap is no fleet-wide cap")
			}},
			{"POST", "/api/limit", "/api/limit", `{"type":"sync","rate":"2/s","burst":3,"per_key":true}`, 200, func(t *testing.T, v map[string]any) {
				l := keyLimit(v, "sync")
				require.Equal(t, []any{float64(1), float64(2), "s", float64(3)}, []any{l["concurrency"], l["rate"], l["per"], l["burst"]})
			}},
			{"POST", "/api/limit", "/api/limit", `{"type":"sync","concurrency":4,"rate":"600/m"}`, 200, func(t *testing.T, v map[string]any) {
				l := v["limits"].(map[string]any)["sync"].(map[string]any)
				require.Equal(t, []any{float64(4), float64(600), "m"}, []any{l["concurrency"], l["rate"], l["per"]})
				require.Equal(t, float64(1), keyLimit(v, "sync")["concurrency"], "the per-key cap stays")
			}},
			{"GET", "/api/control", "/api/control", "", 200, func(t *testing.T, v map[string]any) {
				require.Equal(t, float64(2), keyLimit(v, "sync")["rate"])
			}},
			{"GET", "/api/stats", "/api/stats", "", 200, func(t *testing.T, v map[string]any) {
				require.Equal(t, map[string]any{"sync": float64(1)}, v["key_limits"])
				require.Equal(t, map[string]any{"sync": "2/s burst 3"}, v["key_rates"])
				require.Equal(t, map[string]any{"sync": "600/m burst 10"}, v["rates"])
			}},
			{"POST", "/api/limit", "/api/limit", `{"type":"other","concurrency":2,"per_key":true}`, 200, nil},
			{"POST", "/api/limit", "/api/limit", `{"type":"other","clear":true}`, 200, func(t *testing.T, v map[string]any) {
				kl, _ := v["key_limits"].(map[string]any)
				_, kept := kl["other"]
				require.False(t, kept, "clear removes per-key limits too")
			}},
		})
	})
}

// POST /api/limit refuses a bad body with a message naming the fix, and
// writes nothing: not even the cap of a body whose rate is bad.
func TestLimitEndpointRefuses(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		e := newEnv(t, be, Options{})
		for _, tc := range []struct{ body, want string }{
			{`{"type":"api","concurrency":5,"rate":"20/h"}`, `write it as 20/s or 600/m`},
			{`{"type":"api","rate":"20/h","per_key":true}`, `write it as 20/s or 600/m`},
			{`{"type":"api","concurrency":5,"rate":"5/s","burst":-1}`, `"burst" -1 is not between 1`},
			{`{"type":"api","concurrency":-3,"per_key":true}`, `"concurrency" -3 is not between 1`},
			{`{"type":"api","concurrency":0}`, `"clear": true`},
			{`{"type":"api","per_key":true}`, `"per_key" goes with "concurrency" or "rate"`},
			{`{"type":"api","per_key":true,"clear":true}`, `"per_key" goes with`},
			{`{"type":"api","burst":2,"concurrency":3}`, `"burst" goes with "rate"`},
			{`{"type":"api","concurrency":3,"clear":true}`, `not both`},
			{`{"type":"api"}`, `"concurrency": N`},
		} {
			status, body, _ := e.do(t, "POST", "/api/limit", tc.body)
			require.Equal(t, 400, status, "%s: %v", tc.body, body)
			e.documented(t, "POST", "/api/limit", status, body)
			require.Contains(t, body.(map[string]any)["error"].(map[string]any)["message"], tc.want, tc.body)
		}
		c, err := control.Read(context.Background(), e.q)
		require.NoError(t, err)
		require.Empty(t, c.LimitedTypes(), "a refused body writes nothing")
	})
}
