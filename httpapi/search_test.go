package httpapi

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/queue/registry"
	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/store/storetest"
	"github.com/qo-queue/qo/worker/bench"
)

// TestSearch: GET /api/search by id prefix (with or without dashes, a full
// id, a limit), by idempotency key, and its refusals.
func TestSearch(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		e := newEnv(t, be, Options{})
		ctx := context.Background()
		keyed, _, err := e.q.Submit(ctx, queue.SubmitRequest{Type: "email", IdempotencyKey: "order 42/confirmation"})
		require.NoError(t, err)
		ids := func(v any) []string {
			var out []string
			for _, task := range v.(map[string]any)["tasks"].([]any) {
				out = append(out, task.(map[string]any)["id"].(string))
			}
			return out
		}
		get := func(query string, want int) map[string]any {
			t.Helper()
			status, body, _ := e.do(t, "GET", "/api/search?"+query, "")
			require.Equal(t, want, status, "%s: %v", query, body)
			e.documented(t, "GET", "/api/search", status, body)
			return body.(map[string]any)
		}
		pending := e.tasks["pending"].ID.String()

		body := get("id_prefix="+pending[:13], 200)
		require.Contains(t, ids(body), pending)
		require.Equal(t, false, body["more"])
		require.Equal(t, ids(body), ids(get("id_prefix="+strings.ToUpper(strings.ReplaceAll(pending[:13], "-", "")), 200)), "dashes and case do not matter")
		require.Equal(t, []string{pending}, ids(get("id_prefix="+pending, 200)), "a full id finds its task")
		require.Empty(t, ids(get("id_prefix=00000000-0000-4000-8000-000000000000", 200)), "no such task: nothing found")
		require.Equal(t, []string{pending}, ids(get("id_prefix="+queue.ShortID(e.tasks["pending"].ID), 200)), "the short id lists show (the id's end) finds its task")

		// The clock stands still: every task of newEnv has the same first
		// 12 digits (its creation millisecond).
		body = get("id_prefix="+pending[:8]+"&limit=2", 200)
		require.Len(t, ids(body), 2)
		require.Equal(t, true, body["more"])
		all := ids(get("id_prefix="+pending[:8], 200))
		require.Len(t, all, 5, "the four tasks of newEnv and the keyed one")
		require.IsIncreasing(t, all, "oldest first")

		require.Equal(t, []string{keyed.ID.String()}, ids(get("type=email&idempotency_key=order+42%2Fconfirmation", 200)))
		require.Empty(t, ids(get("type=resize&idempotency_key=order+42%2Fconfirmation", 200)), "a key belongs to its type")

		for _, bad := range []string{"", "id_prefix=xyz", "id_prefix=" + pending + "0", "type=email", "idempotency_key=k",
			"type=a/b&idempotency_key=k", "id_prefix=0&type=email&idempotency_key=k", "id_prefix=0&limit=0", "id_prefix=0&colour=red"} {
			status, body, _ := e.do(t, "GET", "/api/search?"+bad, "")
			require.Equal(t, 400, status, "%s: %v", bad, body)
			e.spec.check(t, bad, schema{Ref: "#/components/schemas/Error"}, body)
		}
	})
}

// TestSearchCost: a search costs what it returns, the same beside 0 or
// 3,000 finished tasks: a LIST per shard and a GET per task for a prefix,
// one GET for a full id, two for an idempotency key.
func TestSearchCost(t *testing.T) {
	t.Parallel()
	costs := map[int][]string{}
	for _, history := range []int{0, 3000} {
		ctx := context.Background()
		s := storetest.Backends()[0].New(t)
		_, err := queue.Init(ctx, s, 1)
		require.NoError(t, err)
		clock := storetest.NewClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
		q, err := queue.Open(ctx, s, queue.Options{Clock: clock, NewID: queue.SequentialIDs("search")})
		require.NoError(t, err)
		require.NoError(t, bench.SeedFinished(ctx, s, q, bench.Seed{Tasks: history, Before: clock.Now().Add(-time.Hour)}))
		task, _, err := q.Submit(ctx, queue.SubmitRequest{Type: "email", IdempotencyKey: "k1"})
		require.NoError(t, err)
		e := &env{q: q, raw: s, spec: loadSpec(t)}
		e.srv = httptest.NewServer(New(q, Options{}))
		t.Cleanup(e.srv.Close)
		counted := s.(store.Counted).Requests()
		for _, query := range []string{"id_prefix=" + task.ID.String()[:13], "id_prefix=" + task.ID.String(), "type=email&idempotency_key=k1"} {
			before := counted.Snapshot()
			status, body, _ := e.do(t, "GET", "/api/search?"+query, "")
			require.Equal(t, 200, status, "%v", body)
			require.Len(t, body.(map[string]any)["tasks"], 1)
			d := counted.Snapshot().Sub(before)
			costs[history] = append(costs[history], fmt.Sprintf("%s: LIST=%d GET=%d", query[:strings.Index(query, "=")], d.Total(store.OpList), d.Total(store.OpGet)))
		}
	}
	require.Equal(t, costs[0], costs[3000], "the cost does not depend on history")
	require.Equal(t, []string{"id_prefix: LIST=16 GET=1", "id_prefix: LIST=0 GET=1", "type: LIST=0 GET=2"}, costs[0])
}

// TestStatsWorkerRequests: GET /api/stats carries each worker's request
// counters from its heartbeat, for the page's fleet request rate.
func TestStatsWorkerRequests(t *testing.T) {
	t.Parallel()
	e := newEnv(t, storetest.Backends()[0], Options{})
	counts := store.Counts{OK: map[store.Op]int64{store.OpGet: 40, store.OpPut: 7}, Failed: map[store.Op]int64{store.OpPut: 1}}
	require.NoError(t, registry.Put(context.Background(), e.q, &queue.WorkerInfo{ID: "w2", StartedAt: e.q.Now(), LastHeartbeat: e.q.Now(), Requests: &counts}))
	status, body, _ := e.do(t, "GET", "/api/stats", "")
	require.Equal(t, 200, status)
	e.documented(t, "GET", "/api/stats", status, body)
	got := body.(map[string]any)["worker_requests"].(map[string]any)
	require.Equal(t, map[string]any{"w2": map[string]any{
		"ok": map[string]any{"GET": 40.0, "PUT": 7.0}, "failed": map[string]any{"PUT": 1.0},
	}}, got, "w1 publishes no counters")
}

// TestStatsReadModel: GET /api/stats names a type nobody serves, measures
// the request rate between heartbeats, and GET /api/workers shows a
// worker silent past the monitor's bound as dead.
func TestStatsReadModel(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t, storetest.Backends()[0], Options{StatsMaxAge: time.Second})
	_, _, err := e.q.Submit(ctx, queue.SubmitRequest{Type: "orphan"})
	require.NoError(t, err)
	e.clock.Advance(30 * time.Second) // w1, registered by newEnv, is dead by now
	now := e.q.Now()
	counts := func(n int64) *store.Counts { return &store.Counts{OK: map[store.Op]int64{store.OpGet: n}} }
	require.NoError(t, registry.Put(ctx, e.q, &queue.WorkerInfo{ID: "w2", LastHeartbeat: now.Add(-10 * time.Second), Types: []string{"other"}, Requests: counts(100)}))
	require.NoError(t, registry.Put(ctx, e.q, &queue.WorkerInfo{ID: "silent", LastHeartbeat: now.Add(-30 * time.Second), Types: []string{"orphan"}}))
	status, body, _ := e.do(t, "GET", "/api/stats", "")
	require.Equal(t, 200, status)
	e.documented(t, "GET", "/api/stats", status, body)
	st := body.(map[string]any)
	require.Contains(t, st["unserved"], map[string]any{"type": "orphan", "pending": 1.0, "reason": "no live worker serves it"},
		"the only worker serving orphan is dead by the monitor's rule")
	require.Nil(t, st["request_rate"], "one heartbeat seen: no rate yet")
	require.Len(t, st["last_hour"], 60)
	require.Len(t, st["last_day"], 24)

	e.clock.Advance(2 * time.Second) // past StatsMaxAge: a new answer
	require.NoError(t, registry.Put(ctx, e.q, &queue.WorkerInfo{ID: "w2", LastHeartbeat: now, Types: []string{"other"}, Requests: counts(350)}))
	_, body, _ = e.do(t, "GET", "/api/stats", "")
	rate := body.(map[string]any)["request_rate"].(map[string]any)
	require.InDelta(t, 25.0, rate["per_second"], 1e-9, "250 GETs between heartbeats 10 s apart")

	status, body, _ = e.do(t, "GET", "/api/workers", "")
	require.Equal(t, 200, status)
	e.documented(t, "GET", "/api/workers", status, body)
	states := map[string]any{}
	for _, w := range body.(map[string]any)["workers"].([]any) {
		states[w.(map[string]any)["worker_id"].(string)] = w.(map[string]any)["state"]
	}
	require.Equal(t, "dead", states["silent"], "32 s without a heartbeat: the monitor has taken its tasks back")
	require.Equal(t, "active", states["w2"])
	require.Equal(t, 22.0, body.(map[string]any)["dead_after_seconds"])
}
