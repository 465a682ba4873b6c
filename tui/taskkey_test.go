package tui

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
)

// The task detail shows the task's key.
func TestDetailShowsTaskKey(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil, Options{})
	_, _, err := h.q.Submit(h.ctx, queue.SubmitRequest{Type: "sync", Key: "customer-42"})
	require.NoError(t, err)
	h.newModel(Options{Screen: "tasks", Type: "sync"})
	h.init()
	h.press("enter")
	require.Contains(t, h.view(), "key customer-42")
}
