package httpapi

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store/storetest"
)

// TestBulk: POST /api/tasks/bulk plans (dry_run) and runs an action on
// tasks by filter or by id, skipping with the reason what it does not
// apply to.
func TestBulk(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		e := newEnv(t, be, Options{})
		pending, failed, failed2, done := e.tasks["pending"], e.tasks["failed"], e.tasks["failed2"], e.tasks["done"]
		get := func(task *queue.Task) *queue.Task {
			got, err := e.q.Get(t.Context(), task.ID)
			require.NoError(t, err)
			return got
		}
		e.calls(t, []call{
			{"POST", "/api/tasks/bulk", "/api/tasks/bulk", `{"op":"replay","filter":{"status":["failed"],"type":"email"},"dry_run":true}`, 200, func(t *testing.T, v map[string]any) {
				require.Equal(t, true, v["dry_run"])
				require.Equal(t, []any{failed.ID.String()}, v["done"])
				require.Contains(t, v["plan"], "replay 1 task: ")
				require.Contains(t, v["plan"], "finding them took 1 LIST + 1 GET")
			}},
			{"POST", "/api/tasks/bulk", "/api/tasks/bulk", `{"op":"cancel","ids":["` + pending.ID.String() + `","` + done.ID.String() + `"]}`, 200, func(t *testing.T, v map[string]any) {
				require.Equal(t, false, v["dry_run"])
				require.Equal(t, []any{pending.ID.String()}, v["done"])
				require.Equal(t, []any{map[string]any{"id": done.ID.String(), "status": "completed",
					"reason": "completed: only waiting, pending or running tasks can be cancelled"}}, v["skipped"])
			}},
			{"POST", "/api/tasks/bulk", "/api/tasks/bulk", `{"op":"archive","filter":{"status":["failed"]}}`, 200, func(t *testing.T, v map[string]any) {
				require.Len(t, v["done"], 2, "the dry run replayed nothing")
			}},
			{"POST", "/api/tasks/bulk", "/api/tasks/bulk", `{"op":"requeue","ids":["` + pending.ID.String() + `"]}`, 400, nil},
			{"POST", "/api/tasks/bulk", "/api/tasks/bulk", `{"op":"cancel"}`, 400, nil},
			{"POST", "/api/tasks/bulk", "/api/tasks/bulk", `{"op":"cancel","filter":{"status":["bogus"]}}`, 400, nil},
			{"POST", "/api/tasks/bulk", "/api/tasks/bulk", `{"op":"cancel","ids":["nope"]}`, 400, nil},
		})
		require.Equal(t, queue.StatusCancelled, get(pending).Status)
		require.Equal(t, "cancelled through the HTTP API", get(pending).CancelReason)
		require.Equal(t, queue.StatusArchived, get(failed).Status)
		require.Equal(t, queue.StatusArchived, get(failed2).Status)
	})
}
