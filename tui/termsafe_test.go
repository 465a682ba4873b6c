package tui

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/charmbracelet/x/exp/golden"
	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/internal/termsafe/termsafetest"
	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/queue/control"
	"github.com/qo-queue/qo/queue/registry"
	"github.com/qo-queue/qo/queue/schedule"
	"github.com/qo-queue/qo/store"
)

// hostileData adds tasks, a worker, a pause and a schedule whose text
// holds control characters; failed is the task with the hostile error.
func (h *harness) hostileData() (failed *queue.Task) {
	t := h.t
	submit := func(key, input string) *queue.Task {
		task, _, err := h.q.Submit(h.ctx, queue.SubmitRequest{Type: "hostile", Input: json.RawMessage(input), IdempotencyKey: key, Timeout: time.Minute})
		require.NoError(t, err)
		return task
	}
	claim := func(task *queue.Task) *queue.Lease {
		e, err := queue.ParseReadyKey(queue.ReadyKey(task))
		require.NoError(t, err)
		l, err := h.q.Claim(h.ctx, e, "worker-a")
		require.NoError(t, err)
		return l
	}
	failed = submit("k\u009b1", `{"note":"in\u009bput \u007f \u202eevil"}`)
	_, err := h.q.Fail(h.ctx, claim(failed), termsafetest.Hostile)
	require.NoError(t, err)
	// A version written from outside qo: the event unchecked (a bad worker
	// id makes the object malformed, see queue.DecodeTask).
	obj, err := h.raw.Get(h.ctx, failed.Key())
	require.NoError(t, err)
	var doc map[string]any
	require.NoError(t, json.Unmarshal(obj.Body, &doc))
	doc["last_event"] = "failed\x1b]0;pwned\x07"
	body, err := json.Marshal(doc)
	require.NoError(t, err)
	_, err = h.raw.Put(h.ctx, failed.Key(), body, store.Condition{})
	require.NoError(t, err)

	done := submit("k2", `{}`)
	_, err = h.q.Complete(h.ctx, claim(done), json.RawMessage("{\"out\":\"\u009b2J \\u001b]0;x\\u0007\",\r\n\"n\":1}"))
	require.NoError(t, err)
	cancelled := submit("k3", `{}`)
	_, err = h.q.Cancel(h.ctx, cancelled.ID, termsafetest.Hostile)
	require.NoError(t, err)
	_, err = control.Pause(h.ctx, h.q, "hostile", termsafetest.Hostile)
	require.NoError(t, err)
	_, err = control.Pause(h.ctx, h.q, "", termsafetest.Hostile)
	require.NoError(t, err)
	require.NoError(t, registry.Put(h.ctx, h.q, &queue.WorkerInfo{ID: "a-hostile-worker", LastHeartbeat: h.clock.Now(), StartedAt: h.clock.Now(),
		Host: termsafetest.Hostile, Version: termsafetest.Hostile, CurrentTasks: []string{termsafetest.Hostile}, Shards: []string{"\x1b[2J"}}))
	_, err = schedule.Create(h.ctx, h.q, schedule.Spec{Name: "a-hostile", Cron: "30 2 * * *",
		Task: schedule.Task{Type: "hostile", Input: json.RawMessage(`{"x":"\u009b2J"}`)}})
	require.NoError(t, err)
	got, err := h.q.Get(h.ctx, failed.ID)
	require.NoError(t, err)
	return got
}

// Control characters in task data are drawn as visible escapes on every
// screen of the console, never sent to the terminal.
func TestHostileTextIsEscaped(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil, Options{}).seed()
	failed := h.hostileData()
	screens := []struct {
		name string
		opts Options
		keys []string
	}{
		{"overview", Options{}, nil},
		{"tasks", Options{Screen: "tasks", Type: "hostile"}, nil},
		{"failed detail", Options{Screen: "tasks", Status: queue.StatusFailed, Type: "hostile"}, []string{"enter"}},
		{"failed tree", Options{Screen: "tasks", Status: queue.StatusFailed, Type: "hostile"}, []string{"enter", "tab"}},
		{"failed diff", Options{Screen: "tasks", Status: queue.StatusFailed, Type: "hostile"}, []string{"enter", "d"}},
		{"completed detail", Options{Screen: "tasks", Status: queue.StatusCompleted, Type: "hostile"}, []string{"enter"}},
		{"cancelled detail", Options{Screen: "tasks", Status: queue.StatusCancelled, Type: "hostile"}, []string{"enter"}},
		{"replay confirm", Options{Screen: "tasks", Status: queue.StatusFailed, Type: "hostile"}, []string{"R"}},
		{"workers", Options{Screen: "workers"}, nil},
		{"schedules", Options{Screen: "schedules"}, nil},
		{"schedule confirm", Options{Screen: "schedules"}, []string{"X"}},
	}
	for _, s := range screens {
		h.newModel(s.opts)
		h.init()
		h.press(s.keys...)
		v := h.view()
		// The views render without colour: any escape in them came from the data.
		termsafetest.RequireNoControl(t, s.name, v)
		requireFits(t, v, 100, 30)
	}
	// The failed task's detail, as an operator sees it.
	h.newModel(Options{Screen: "tasks", Status: queue.StatusFailed, Type: "hostile"})
	h.init()
	h.press("enter")
	require.Equal(t, failed.ID, h.m.detail.task.ID)
	v := h.view()
	require.Contains(t, v, `boom \x1b]0;pwned\a \x1b[2J hidden \u009b31m end`, "escaped, not dropped")
	golden.RequireEqual(t, []byte(v))
}
