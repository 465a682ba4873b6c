package httpapi

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/store/storetest"
)

func TestWorkflowEndpoints(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		e := newEnv(t, be, Options{})
		flow := `{"name": "etl", "idempotency_key": "day-1", "steps": [
			{"name": "extract", "type": "extract"},
			{"name": "load", "type": "load", "input_from": {"rows": "extract.output.rows"}}]}`
		var id string
		e.calls(t, []call{
			{"GET", "/api/workflows", "/api/workflows", "", 200, func(t *testing.T, v map[string]any) { require.Empty(t, v["workflows"]) }},
			{"POST", "/api/workflows", "/api/workflows", flow, 201, func(t *testing.T, v map[string]any) {
				require.Equal(t, "running", v["status"])
				steps := v["steps"].([]any)
				require.Len(t, steps, 2)
				require.Equal(t, "extract", steps[0].(map[string]any)["name"])
				require.Equal(t, "waiting", steps[1].(map[string]any)["status"])
				id = v["id"].(string)
			}},
			{"POST", "/api/workflows", "/api/workflows", flow, 200, func(t *testing.T, v map[string]any) { require.Equal(t, id, v["id"]) }},
			{"POST", "/api/workflows", "/api/workflows", `{"idempotency_key": "day-1", "steps": [{"name": "a", "type": "x"}]}`, 409, nil},
			{"POST", "/api/workflows", "/api/workflows", `{"steps": [{"name": "a", "type": "x", "after": ["a"]}]}`, 400, func(t *testing.T, v map[string]any) {
				require.Contains(t, v["error"].(map[string]any)["message"], "runs after itself")
			}},
			{"GET", "/api/workflows/etl", "/api/workflows/{ref}", "", 200, func(t *testing.T, v map[string]any) {
				require.Equal(t, id, v["id"])
				require.Equal(t, map[string]any{"pending": 1.0, "waiting": 1.0}, v["counts"])
			}},
			{"GET", "/api/workflows/nope", "/api/workflows/{ref}", "", 404, nil},
			{"GET", "/api/workflows", "/api/workflows", "", 200, func(t *testing.T, v map[string]any) { require.Len(t, v["workflows"], 1) }},
			{"POST", "/api/workflows/etl/cancel", "/api/workflows/{ref}/cancel", `{"reason": "not today"}`, 200, func(t *testing.T, v map[string]any) {
				require.Equal(t, 2.0, v["cancelled"])
			}},
			{"GET", "/api/workflows/etl", "/api/workflows/{ref}", "", 200, func(t *testing.T, v map[string]any) {
				require.Equal(t, "cancelled", v["status"])
				require.Equal(t, "not today", v["steps"].([]any)[1].(map[string]any)["cancel_reason"])
			}},
		})
	})
}

// A workflow file of 20,000 steps (about 660 KB, within the body limit)
// once cost about 60,000 requests: it is refused with 400 before any
// write.
func TestWorkflowSubmitBounded(t *testing.T) {
	t.Parallel()
	e := newEnv(t, storetest.Backends()[0], Options{})
	var steps []string
	for i := range 20000 {
		steps = append(steps, fmt.Sprintf(`{"name":"s%d","type":"x"}`, i))
	}
	body := `{"steps":[` + strings.Join(steps, ",") + `]}`
	require.Less(t, len(body), int(DefaultMaxBody))
	before := e.raw.(store.Counted).Requests().Snapshot()
	status, v, _ := e.do(t, "POST", "/api/workflows", body)
	require.Equal(t, 400, status)
	require.Contains(t, v.(map[string]any)["error"].(map[string]any)["message"], "20000 steps (at most 1000)")
	after := e.raw.(store.Counted).Requests().Snapshot().Sub(before)
	require.Zero(t, after.Total(store.OpPut), "nothing written")
}
