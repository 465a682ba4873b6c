package tui

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/queue/registry"
)

// The detail of a running task shows its handler's latest progress, read
// from its worker's registry entry.
func TestDetailShowsProgress(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil, Options{}).seed()
	running := h.ids["running"]
	ws, err := registry.List(h.ctx, h.q)
	require.NoError(t, err)
	for _, w := range ws {
		if w.ID == running.WorkerID {
			w.Progress = map[string]queue.Progress{running.ID.String(): {Attempt: running.Attempt, Fraction: 0.425, Message: "resized 42 of 100", At: h.clock.Now().Add(-3e9)}}
			require.NoError(t, registry.Put(h.ctx, h.q, w))
		}
	}
	h.newModel(Options{Screen: "tasks", Status: queue.StatusRunning})
	h.init()
	h.press("enter")
	require.Contains(t, h.view(), "progress 42% resized 42 of 100 (reported 3s ago)")
}
