package httpapi

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/queue/schedule"
	"github.com/qo-queue/qo/store/storetest"
)

func TestScheduleEndpoints(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		e := newEnv(t, be, Options{})
		e.calls(t, []call{
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
			// A task every run's submit would refuse is refused at create,
			// as POST /api/tasks refuses it.
			{"POST", "/api/schedules", "/api/schedules", "{\"name\":\"latin1\",\"cron\":\"@daily\",\"task\":{\"task_type\":\"report\",\"input\":\"caf\xe9\"}}", 400, func(t *testing.T, v map[string]any) {
				require.Contains(t, v["error"].(map[string]any)["message"], "not valid UTF-8")
			}},
			{"POST", "/api/tasks", "/api/tasks", "{\"type\":\"report\",\"input\":\"caf\xe9\"}", 400, func(t *testing.T, v map[string]any) {
				require.Contains(t, v["error"].(map[string]any)["message"], "not valid UTF-8")
			}},
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
		})
		_, err := schedule.Get(context.Background(), e.q, "nightly")
		require.ErrorIs(t, err, queue.ErrNotFound)
	})
}
