package httpapi

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/queue/registry"
	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/store/storetest"
)

// GET /api/tasks/{id} of a running task carries its handler's latest
// progress, read from the registry entry of the worker its lease names.
func TestTaskProgress(t *testing.T) {
	t.Parallel()
	e := newEnv(t, storetest.Backends()[0], Options{})
	ctx := context.Background()
	task := e.tasks["pending"]
	entry, err := queue.ParseReadyKey(queue.ReadyKey(task))
	require.NoError(t, err)
	l, err := e.q.Claim(ctx, entry, "w-busy")
	require.NoError(t, err)
	id := task.ID.String()

	status, body, _ := e.do(t, "GET", "/api/tasks/"+id, "")
	require.Equal(t, 200, status)
	require.NotContains(t, body, "progress", "no report yet")

	require.NoError(t, registry.Put(ctx, e.q, &queue.WorkerInfo{ID: "w-busy", StartedAt: e.q.Now(), LastHeartbeat: e.q.Now(),
		CurrentTasks: []string{id},
		Progress:     map[string]queue.Progress{id: {Attempt: l.Task.Attempt, Fraction: 0.42, Message: "resized 42 of 100", At: e.q.Now()}}}))
	before := e.raw.(store.Counted).Requests().Snapshot()
	status, body, _ = e.do(t, "GET", "/api/tasks/"+id, "")
	require.Equal(t, 200, status)
	e.documented(t, "GET", "/api/tasks/{id}", status, body)
	p := body.(map[string]any)["progress"].(map[string]any)
	require.Equal(t, 0.42, p["fraction"])
	require.Equal(t, "resized 42 of 100", p["message"])
	used := e.raw.(store.Counted).Requests().Snapshot().Sub(before)
	require.Equal(t, int64(2), used.Total(store.OpGet), "one GET of the task, one of its holder's entry: %v", used)

	// A report of an earlier attempt, or one that breaks the rules, is not
	// shown.
	for _, bad := range []queue.Progress{
		{Attempt: l.Task.Attempt - 1, Fraction: 0.5},
		{Attempt: l.Task.Attempt, Fraction: 7},
		{Attempt: l.Task.Attempt, Fraction: 0.5, Message: "\x1b]0;pwned\x07"},
	} {
		require.NoError(t, registry.Put(ctx, e.q, &queue.WorkerInfo{ID: "w-busy", StartedAt: e.q.Now(), LastHeartbeat: e.q.Now(),
			Progress: map[string]queue.Progress{id: bad}}))
		status, body, _ = e.do(t, "GET", "/api/tasks/"+id, "")
		require.Equal(t, 200, status)
		require.NotContains(t, body, "progress", "%+v", bad)
	}
}
