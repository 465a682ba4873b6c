package httpapi

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store/storetest"
)

func TestFeatureEndpoints(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		e := newEnv(t, be, Options{})
		ctx := context.Background()
		// An expired task: not started before its deadline.
		exp, _, err := e.q.Submit(ctx, queue.SubmitRequest{Type: "email", ExpiresAt: e.q.Now().Add(time.Second)})
		require.NoError(t, err)
		e.clock.Advance(2 * time.Second)
		_, _, err = e.q.Sweep(ctx, "", 0, 0)
		require.NoError(t, err)
		expPath := "/api/tasks/" + exp.ID.String()
		big := `{"blob":"` + strings.Repeat("x", queue.DefaultOffloadThreshold) + `"}`
		var bigID string
		tests := []struct {
			method, path, pattern, body string
			status                      int
			check                       func(t *testing.T, v map[string]any)
		}{
			// Priorities and expiry on submit.
			{"POST", "/api/tasks", "/api/tasks", `{"type":"email","priority":"high","expires_in":"10m"}`, 201, func(t *testing.T, v map[string]any) {
				require.Equal(t, "high", v["priority"])
				require.NotNil(t, v["expires_at"])
			}},
			{"POST", "/api/tasks", "/api/tasks", `{"type":"email","priority":"urgent"}`, 400, func(t *testing.T, v map[string]any) {
				require.Contains(t, v["error"].(map[string]any)["message"], "high, normal, low")
			}},
			{"POST", "/api/tasks", "/api/tasks", `{"type":"email","expires_in":"1m","expires_at":"2030-01-01T00:00:00Z"}`, 400, nil},
			{"POST", "/api/tasks", "/api/tasks", `{"type":"email","delay":"1h","expires_at":"2000-01-01T00:00:00Z"}`, 400, nil},
			{"GET", "/api/tasks?status=expired", "/api/tasks", "", 200, func(t *testing.T, v map[string]any) { require.Len(t, v["tasks"], 1) }},
			{"POST", expPath + "/replay", "/api/tasks/{id}/replay", "", 200, func(t *testing.T, v map[string]any) {
				require.Equal(t, "pending", v["status"])
				require.Nil(t, v["expires_at"], "the passed deadline is cleared")
			}},
			{"POST", expPath + "/archive", "/api/tasks/{id}/archive", "", 409, nil},
			{"POST", "/api/tasks/" + e.tasks["failed"].ID.String() + "/archive", "/api/tasks/{id}/archive", "", 200, func(t *testing.T, v map[string]any) {
				require.Equal(t, "archived", v["status"])
			}},
			{"POST", "/api/tasks/" + e.tasks["done"].ID.String() + "/replay", "/api/tasks/{id}/replay", "", 409, nil},
			{"POST", "/api/tasks/nope/archive", "/api/tasks/{id}/archive", "", 400, nil},
			// A payload over the threshold: stored apart, returned whole.
			{"POST", "/api/tasks", "/api/tasks", `{"type":"big","input":` + big + `}`, 201, func(t *testing.T, v map[string]any) {
				require.Nil(t, v["input"])
				require.NotNil(t, v["input_ref"])
				bigID = v["id"].(string)
			}},
			// Pause switches.
			{"GET", "/api/control", "/api/control", "", 200, func(t *testing.T, v map[string]any) { require.Equal(t, false, v["paused"]) }},
			{"POST", "/api/pause", "/api/pause", `{"type":"email","reason":"provider down"}`, 200, func(t *testing.T, v map[string]any) {
				require.Contains(t, v["paused_types"], "email")
			}},
			{"POST", "/api/pause", "/api/pause", `{"reason":"migration"}`, 200, func(t *testing.T, v map[string]any) { require.Equal(t, true, v["paused"]) }},
			{"POST", "/api/pause", "/api/pause", `{"type":"a b"}`, 400, nil},
			{"POST", "/api/pause", "/api/pause", `{"kind":"x"}`, 400, nil},
			{"POST", "/api/resume", "/api/resume", ``, 200, func(t *testing.T, v map[string]any) { require.Equal(t, false, v["paused"]) }},
			{"POST", "/api/resume", "/api/resume", `{"type":"email","reason":"x"}`, 400, nil},
			// Schedules.
			{"GET", "/api/schedules", "/api/schedules", "", 200, func(t *testing.T, v map[string]any) { require.Empty(t, v["schedules"]) }},
			{"POST", "/api/schedules", "/api/schedules", `{"name":"nightly","cron":"30 2 * * *","timezone":"Europe/Berlin","task":{"task_type":"report","input":{"k":1},"priority":"low"}}`, 201, func(t *testing.T, v map[string]any) {
				require.Equal(t, true, v["enabled"])
				require.NotNil(t, v["next_due"])
			}},
			{"POST", "/api/schedules", "/api/schedules", `{"name":"nightly","cron":"@daily","task":{"task_type":"report"}}`, 409, nil},
			{"POST", "/api/schedules", "/api/schedules", `{"name":"bad","cron":"every day","task":{"task_type":"report"}}`, 400, func(t *testing.T, v map[string]any) {
				require.Contains(t, v["error"].(map[string]any)["message"], "5 fields")
			}},
			{"POST", "/api/schedules", "/api/schedules", `{"name":"bad","cron":"@daily","timezone":"Mars/Base","task":{"task_type":"report"}}`, 400, nil},
			{"GET", "/api/schedules", "/api/schedules", "", 200, func(t *testing.T, v map[string]any) { require.Len(t, v["schedules"], 1) }},
			{"GET", "/api/schedules/nightly", "/api/schedules/{name}", "", 200, func(t *testing.T, v map[string]any) { require.Equal(t, "30 2 * * *", v["cron"]) }},
			{"GET", "/api/schedules/nope", "/api/schedules/{name}", "", 404, nil},
			{"POST", "/api/schedules/nightly/disable", "/api/schedules/{name}/disable", "", 200, func(t *testing.T, v map[string]any) {
				require.Equal(t, false, v["enabled"])
				require.Nil(t, v["next_due"])
			}},
			{"POST", "/api/schedules/nightly/enable", "/api/schedules/{name}/enable", "", 200, func(t *testing.T, v map[string]any) { require.Equal(t, true, v["enabled"]) }},
			{"POST", "/api/schedules/nightly/trigger", "/api/schedules/{name}/trigger", "", 201, func(t *testing.T, v map[string]any) {
				require.Equal(t, "report", v["task_type"])
				require.Equal(t, "low", v["priority"])
			}},
			{"POST", "/api/schedules/nope/trigger", "/api/schedules/{name}/trigger", "", 404, nil},
			{"DELETE", "/api/schedules/nightly", "/api/schedules/{name}", "", 204, nil},
			{"DELETE", "/api/schedules/nightly", "/api/schedules/{name}", "", 404, nil},
		}
		for _, tt := range tests {
			status, body, _ := e.do(t, tt.method, tt.path, tt.body)
			require.Equal(t, tt.status, status, "%s %s %s: %v", tt.method, tt.path, tt.body, body)
			e.documented(t, tt.method, tt.pattern, status, body)
			if tt.check != nil {
				tt.check(t, body.(map[string]any))
			}
		}

		status, body, _ := e.do(t, "GET", "/api/tasks/"+bigID, "")
		require.Equal(t, 200, status)
		e.documented(t, "GET", "/api/tasks/{id}", status, body)
		v := body.(map[string]any)
		require.Equal(t, strings.Repeat("x", queue.DefaultOffloadThreshold), v["input"].(map[string]any)["blob"], "the offloaded input is loaded")
		require.NotNil(t, v["input_ref"])

		c, err := e.q.Control(ctx)
		require.NoError(t, err)
		require.Equal(t, []string{"email"}, c.PausedTypes(), "the API wrote the bucket")
		_, err = e.q.GetSchedule(ctx, "nightly")
		require.ErrorIs(t, err, queue.ErrNotFound)
	})
}
