package tui

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/charmbracelet/x/exp/golden"
	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/internal/termsafe/termsafetest"
	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/store/memstore"
)

// etlFlow is a 3-level workflow: extract, three transforms that take its
// rows, and a load that takes theirs.
const etlFlow = `{
  "name": "nightly-etl",
  "steps": [
    {"name": "extract", "type": "extract", "input": {"source": "orders"}},
    {"name": "clean", "type": "transform", "input": {"op": "clean"}, "input_from": {"rows": "extract.output.rows"}},
    {"name": "enrich", "type": "transform", "input": {"op": "enrich"}, "input_from": {"rows": "extract.output.rows"}},
    {"name": "score", "type": "transform", "input": {"op": "score"}, "input_from": {"rows": "extract.output.rows", "first": "extract.output.rows.0"}},
    {"name": "load", "type": "load", "after": ["clean", "enrich", "score"],
     "input_from": {"cleaned": "clean.output.n", "enriched": "enrich.output.n", "scored": "score.output"}}
  ]
}`

// workflow submits etlFlow and runs it part of the way: extract and score
// completed, clean running, and enrich running (load waits for 2 of its 3
// parents) or, with failEnrich, failed (which cancelled load).
func (h *harness) workflow(failEnrich bool) *queue.Workflow {
	t := h.t
	spec, err := queue.DecodeWorkflow([]byte(etlFlow), queue.DefaultSubmitDefaults)
	require.NoError(t, err)
	w, created, err := h.q.Workflows().Submit(h.ctx, spec)
	require.NoError(t, err)
	require.True(t, created)
	step := func(name string) *queue.Task {
		s, ok := w.Step(name)
		require.True(t, ok)
		task, err := h.q.Get(h.ctx, s.TaskID)
		require.NoError(t, err)
		return task
	}
	claim := func(name, worker string) *queue.Lease {
		task := step(name)
		require.Equal(t, queue.StatusPending, task.Status, name)
		e, err := queue.ParseReadyKey(queue.ReadyKey(task))
		require.NoError(t, err)
		l, err := h.q.Claim(h.ctx, e, worker)
		require.NoError(t, err)
		return l
	}
	h.clock.Advance(time.Minute)
	l := claim("extract", "worker-a")
	h.clock.Advance(30 * time.Second)
	_, err = h.q.Complete(h.ctx, l, json.RawMessage(`{"rows":[1,2,3]}`))
	require.NoError(t, err)
	h.clock.Advance(10 * time.Second)
	h.leases["clean"] = claim("clean", "worker-a")
	enrich := claim("enrich", "worker-b")
	score := claim("score", "worker-b")
	h.clock.Advance(40 * time.Second)
	_, err = h.q.Complete(h.ctx, score, json.RawMessage(`{"n":3}`))
	require.NoError(t, err)
	h.clock.Advance(20 * time.Second)
	if failEnrich {
		_, err = h.q.Fail(h.ctx, enrich, "geo lookup: 503 service unavailable")
		require.NoError(t, err)
	} else {
		h.leases["enrich"] = enrich
	}
	h.clock.Advance(25 * time.Second)
	for _, name := range []string{"extract", "clean", "enrich", "score", "load"} {
		h.ids[name] = step(name)
	}
	return w
}

// search types s into the task list's search box and presses enter.
func search(s string) []string {
	return append(append([]string{"/"}, strings.Split(s, "")...), "enter")
}

// TestWorkflowViews renders the detail of a waiting child and the workflow
// it belongs to against golden files.
func TestWorkflowViews(t *testing.T) {
	t.Parallel()
	load := Options{Screen: "tasks", Type: "load"}
	tests := []struct {
		name       string
		opts       Options
		keys       []string
		failEnrich bool
	}{
		{"detail_waiting_child", load, []string{"enter"}, false},
		{"workflow", load, []string{"enter", "w"}, true},
		{"workflow_failed_step", load, []string{"enter", "w", "j", "j"}, true},
		{"workflow_cancel_confirm", load, []string{"enter", "w", "X"}, true},
		{"workflow_waiting_by_name", Options{Screen: "tasks"}, search("wf:nightly-etl"), false},
		{"workflow_unknown", Options{Screen: "tasks"}, search("wf:nope"), true},
	}
	for _, size := range [][2]int{{100, 30}, {80, 24}} {
		for _, tt := range tests {
			name := tt.name
			if size[0] == 80 {
				name += "_80x24"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				h := newHarness(t, nil, Options{})
				h.workflow(tt.failEnrich)
				h.newModel(tt.opts)
				h.m.SetSize(size[0], size[1])
				h.init()
				h.press(tt.keys...)
				v := h.view()
				requireFits(t, v, size[0], size[1])
				golden.RequireEqual(t, []byte(v))
			})
		}
	}
}

// TestWorkflowKeys drives the workflow screen and its actions, and checks
// the tasks through the queue API.
func TestWorkflowKeys(t *testing.T) {
	t.Parallel()
	load := Options{Screen: "tasks", Type: "load"}
	status := func(t *testing.T, h *harness, name string) *queue.Task {
		t.Helper()
		task, err := h.q.Get(h.ctx, h.ids[name].ID)
		require.NoError(t, err)
		return task
	}
	tests := []struct {
		name       string
		failEnrich bool
		opts       Options
		keys       []string
		check      func(t *testing.T, h *harness)
	}{
		{"the detail lists parents, children and input_from", false, load, []string{"enter"}, func(t *testing.T, h *harness) {
			v := h.view()
			require.Contains(t, v, "step load of nightly-etl")
			require.Contains(t, v, "waits for 2 of 3 parents · on parent failure: cancel")
			require.Contains(t, v, queue.ShortID(h.ids["enrich"].ID)+" enrich (transform)")
			require.Contains(t, v, "enriched ← enrich.output.n (not yet)")
			require.Contains(t, v, "scored ← score.output = {\"n\":3}")
		}},
		{"w opens the workflow from the detail", false, load, []string{"enter", "w"}, func(t *testing.T, h *harness) {
			require.Equal(t, scrWorkflow, h.m.screen)
			require.Equal(t, queue.WorkflowRunning, h.m.wf.view.Status)
			require.Contains(t, h.view(), "└─ load")
		}},
		{"w opens the workflow from the task list", false, load, []string{"w"}, func(t *testing.T, h *harness) {
			require.Equal(t, scrWorkflow, h.m.screen)
		}},
		{"w on a task of no workflow says so", false, Options{Screen: "tasks", Type: "other"}, []string{"w"}, func(t *testing.T, h *harness) {
			require.Equal(t, scrTasks, h.m.screen)
			require.Contains(t, h.m.flash, "not a step of a workflow")
		}},
		{"a full workflow id in the search opens it", false, Options{Screen: "tasks"}, nil, func(t *testing.T, h *harness) {
			h.press(search(h.ids["load"].Workflow.ID.String())...)
			require.Equal(t, scrWorkflow, h.m.screen)
			require.Equal(t, h.ids["load"].Workflow.ID, h.m.wf.view.Workflow.ID)
			h.press("q")
			require.Equal(t, scrTasks, h.m.screen)
		}},
		{"enter opens the step and q goes back to the workflow", false, load, []string{"enter", "w", "j", "j", "enter"}, func(t *testing.T, h *harness) {
			require.Equal(t, scrDetail, h.m.screen)
			require.Equal(t, h.ids["enrich"].ID, h.m.detail.task.ID)
			h.press("q")
			require.Equal(t, scrWorkflow, h.m.screen)
			require.Equal(t, 2, h.m.wf.sel, "the cursor stays")
			h.press("q")
			require.Equal(t, scrDetail, h.m.screen)
			require.Equal(t, h.ids["load"].ID, h.m.detail.task.ID)
			h.press("q")
			require.Equal(t, scrTasks, h.m.screen)
			h.press("q")
			require.True(t, h.quit)
		}},
		{"R then y replays the failed step; its cancelled child waits again", true, load, []string{"enter", "w", "j", "j", "R"}, func(t *testing.T, h *harness) {
			require.Equal(t, queue.StatusCancelled, status(t, h, "load").Status, "enrich's failure cancelled it")
			require.NotNil(t, h.m.confirm)
			require.Contains(t, h.m.confirm.text, "Replay task "+h.ids["enrich"].ID.String())
			h.press("y")
			require.Equal(t, queue.StatusPending, status(t, h, "enrich").Status)
			require.Equal(t, queue.StatusWaiting, status(t, h, "load").Status)
			require.Contains(t, h.m.flash, "pending again")
			_, sel := h.m.wf.selected()
			require.Equal(t, queue.StatusPending, sel.Status, "the workflow is read again")
			require.Equal(t, 1, h.m.wf.view.Counts[queue.StatusWaiting])
		}},
		{"R then n replays nothing", true, load, []string{"enter", "w", "j", "j", "R", "n"}, func(t *testing.T, h *harness) {
			require.Equal(t, queue.StatusFailed, status(t, h, "enrich").Status)
		}},
		{"X then y cancels the steps not ended", false, load, []string{"enter", "w", "X", "y"}, func(t *testing.T, h *harness) {
			clean := status(t, h, "clean")
			require.Equal(t, queue.StatusRunning, clean.Status)
			require.True(t, clean.CancelRequested, "a running step is asked to stop")
			require.True(t, status(t, h, "enrich").CancelRequested)
			require.Equal(t, queue.StatusCancelled, status(t, h, "load").Status)
			require.Equal(t, queue.StatusCompleted, status(t, h, "extract").Status)
			require.Equal(t, queue.StatusCompleted, status(t, h, "score").Status)
			require.Contains(t, h.m.flash, "cancelled 3 step(s) of workflow nightly-etl")
			require.Equal(t, 1, h.m.wf.view.Counts[queue.StatusCancelled], "the workflow is read again")
		}},
		{"X then n cancels nothing", false, load, []string{"enter", "w", "X", "n"}, func(t *testing.T, h *harness) {
			require.Nil(t, h.m.confirm)
			require.Equal(t, queue.StatusWaiting, status(t, h, "load").Status)
		}},
		{"X on an ended workflow asks nothing", true, load, []string{"enter", "w"}, func(t *testing.T, h *harness) {
			_, err := h.q.Complete(h.ctx, h.leases["clean"], nil)
			require.NoError(t, err)
			h.press("r", "X")
			require.Equal(t, queue.WorkflowFailed, h.m.wf.view.Status)
			require.Nil(t, h.m.confirm)
			require.Contains(t, h.m.flash, "no step left to cancel")
		}},
		{"C on a step asks to cancel that task only", false, load, []string{"enter", "w", "G", "C", "y"}, func(t *testing.T, h *harness) {
			require.Equal(t, queue.StatusCancelled, status(t, h, "load").Status)
			require.False(t, status(t, h, "clean").CancelRequested)
		}},
		{"j, G and g move, clamped", false, load, []string{"enter", "w", "G", "j", "j"}, func(t *testing.T, h *harness) {
			require.Equal(t, 4, h.m.wf.sel)
			h.press("g", "k")
			require.Equal(t, 0, h.m.wf.sel)
		}},
		{"1 leaves the workflow and forgets the way back", false, load, []string{"enter", "w", "1", "q"}, func(t *testing.T, h *harness) {
			require.True(t, h.quit)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, nil, Options{})
			h.workflow(tt.failEnrich)
			other, _, err := h.q.Submit(h.ctx, queue.SubmitRequest{Type: "other"})
			require.NoError(t, err)
			h.ids["other"] = other
			h.newModel(tt.opts)
			h.init()
			h.press(tt.keys...)
			tt.check(t, h)
		})
	}
}

// TestWorkflowBrokenData: a step whose task is gone, a record written by
// hand with a cycle, an unknown step and a repeated name, and a record that
// does not decode are each shown for what they are, never fatal.
func TestWorkflowBrokenData(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil, Options{})
	w := h.workflow(true)
	load, _ := w.Step("load")
	require.NoError(t, h.raw.Delete(h.ctx, h.q.TaskKey(load.TaskID), store.Condition{}))

	h.newModel(Options{Screen: "tasks"})
	h.init()
	h.press(search("wf:" + w.ID.String())...)
	require.Equal(t, scrWorkflow, h.m.screen)
	require.Equal(t, queue.WorkflowIncomplete, h.m.wf.view.Status)
	h.press("G")
	v := h.view()
	require.Contains(t, v, "missing")
	require.Contains(t, v, "its task does not exist")
	require.NoError(t, h.m.loadErr)
	requireFits(t, v, 100, 30)
	golden.RequireEqual(t, []byte(v))
	h.press("enter")
	require.Equal(t, scrWorkflow, h.m.screen, "a step without a task opens nothing")
	require.Contains(t, h.m.flash, "has no task to open")
	h.press("R")
	require.Nil(t, h.m.confirm, "nor is it acted on")

	// A record written by hand.
	id := queue.NewIDAt(epoch)
	task := func(i int) string { return queue.NewIDAt(epoch.Add(time.Duration(i) * time.Second)).String() }
	record := `{"format":1,"id":"` + id.String() + `","idempotency_key":"k","digest":"d","created_at":"2030-01-02T03:04:05Z","steps":[
		{"name":"a","task_type":"x","task_id":"` + task(1) + `","after":["b"]},
		{"name":"b","task_type":"x","task_id":"` + task(2) + `","after":["a"]},
		{"name":"c","task_type":"x\u001b[2J","task_id":"` + task(3) + `","after":["nope","c"]},
		{"name":"c","task_type":"x","task_id":"` + task(4) + `"}]}`
	_, err := h.raw.Put(h.ctx, h.q.Workflows().Key(id), []byte(record), store.Condition{})
	require.NoError(t, err)
	h.press("q", "2")
	h.press(search("wf:" + id.String())...)
	require.Equal(t, scrWorkflow, h.m.screen)
	require.NotNil(t, h.m.wf.view)
	v = h.view()
	requireFits(t, v, 100, 30)
	require.Contains(t, v, "! after nope: no such step (in the workflow's record)")
	require.Contains(t, v, `x\x1b[2J`, "escaped")
	termsafetest.RequireNoControl(t, "hand-written workflow", v)
	h.press("j")
	require.Contains(t, h.view(), "! the name of an earlier step (in the workflow's record)")
	h.press("j")
	require.Contains(t, h.view(), "! in a cycle of after (in the workflow's record)")
	require.Contains(t, h.view(), "↺  b")

	// A record that does not decode, and one that is not there.
	bad := queue.NewIDAt(epoch.Add(time.Hour))
	_, err = h.raw.Put(h.ctx, h.q.Workflows().Key(bad), []byte(`{"format":1,"id":`), store.Condition{})
	require.NoError(t, err)
	h.press("q", "2")
	h.press(search("wf:" + bad.String())...)
	require.Contains(t, h.view(), "! workflow "+bad.String()+": malformed")
	h.press("q", "2")
	gone := queue.NewIDAt(epoch.Add(2 * time.Hour))
	h.press(search("wf:" + gone.String())...)
	require.Contains(t, h.view(), "! no workflow with id "+gone.String())
	require.Nil(t, h.m.wf.view)
	h.press("enter", "R", "X", "j", "G")
	require.Nil(t, h.m.confirm)
}

// getCounter counts the GETs of each key.
type getCounter struct {
	*memstore.Store
	mu   sync.Mutex
	gets map[string]int
}

func (c *getCounter) Get(ctx context.Context, key string) (*store.Object, error) {
	c.mu.Lock()
	c.gets[key]++
	c.mu.Unlock()
	return c.Store.Get(ctx, key)
}

func (c *getCounter) reset() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.gets
	c.gets = map[string]int{}
	return old
}

// TestWorkflowRefreshReadsOnlyStepsNotEnded: the auto-refresh of a workflow
// costs one GET per step that has not ended, and none for the record or
// for steps that ended; r reads it all again.
func TestWorkflowRefreshReadsOnlyStepsNotEnded(t *testing.T) {
	t.Parallel()
	s := &getCounter{Store: memstore.New(), gets: map[string]int{}}
	h := newHarness(t, s, Options{})
	w := h.workflow(false)
	h.newModel(Options{Screen: "tasks", Type: "load"})
	h.init()
	h.press("w")
	require.Equal(t, scrWorkflow, h.m.screen)

	taskGets := func(gets map[string]int) map[string]int {
		out := map[string]int{}
		for _, st := range w.Steps {
			if n := gets[h.q.TaskKey(st.TaskID)]; n > 0 {
				out[st.Name] = n
			}
		}
		if n := gets[h.q.Workflows().Key(w.ID)]; n > 0 {
			out["(record)"] = n
		}
		return out
	}
	tick := func() {
		_, cmd := h.m.Update(refreshMsg{gen: h.m.gen})
		h.run(cmd)
	}
	s.reset()
	tick()
	require.Equal(t, map[string]int{"clean": 1, "enrich": 1, "load": 1}, taskGets(s.reset()))

	h.clock.Advance(time.Second)
	_, err := h.q.Complete(h.ctx, h.leases["clean"], json.RawMessage(`{"n":1}`))
	require.NoError(t, err)
	s.reset()
	tick()
	require.Equal(t, map[string]int{"clean": 1, "enrich": 1, "load": 1}, taskGets(s.reset()))
	require.Equal(t, 3, h.m.wf.view.Counts[queue.StatusCompleted], "the refresh shows the change")
	tick()
	require.Equal(t, map[string]int{"enrich": 1, "load": 1}, taskGets(s.reset()), "clean ended: not read again")

	h.press("r")
	require.Equal(t, map[string]int{"(record)": 1, "extract": 1, "clean": 1, "enrich": 1, "score": 1, "load": 1}, taskGets(s.reset()))
}

// TestLargeWorkflow: a workflow of 10,000 steps is laid out once and only
// the rows on the screen are drawn, wherever the cursor is.
func TestLargeWorkflow(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil, Options{})
	h.newModel(Options{})
	h.init()
	const n, chains = 10000, 100
	w := &queue.Workflow{Format: 1, ID: queue.NewIDAt(epoch), Name: "big", CreatedAt: epoch}
	v := &queue.WorkflowView{Workflow: w, Problems: map[string]string{}, Counts: map[queue.Status]int{}, Status: queue.WorkflowRunning}
	for i := range n {
		st := queue.WorkflowStep{Name: fmt.Sprintf("s%05d", i), Type: "step", TaskID: queue.NewIDAt(epoch.Add(time.Duration(i) * time.Millisecond))}
		status := queue.StatusCompleted
		if i >= chains {
			st.After = []string{fmt.Sprintf("s%05d", i-chains)} // 100 chains of 100 steps
			status = queue.StatusWaiting
		}
		w.Steps = append(w.Steps, st)
		v.Tasks = append(v.Tasks, &queue.Task{ID: st.TaskID, Type: "step", Status: status, CreatedAt: epoch, UpdatedAt: epoch})
		v.Counts[status]++
	}
	h.m.wf = newWorkflowScreen(h.m.st, h.m.keys, w.ID.String())
	h.m.wf.SetSize(h.m.w, h.m.h-4)
	h.m.screen = scrWorkflow
	start := time.Now()
	h.m.Update(workflowMsg{seq: h.m.next("workflow"), view: v})
	h.view()
	t.Logf("laid out and drew %d steps in %s", n, time.Since(start))
	rows := h.m.wf.rows()
	require.Equal(t, rows, h.m.wf.drawn)
	require.Equal(t, 99, h.m.wf.graph.level[n-1], "the last step ends a chain of 100")

	h.press("G")
	out := h.view()
	requireFits(t, out, 100, 30)
	require.Equal(t, rows, h.m.wf.drawn)
	require.Contains(t, out, "    L99 └─ s09999", "deep levels are numbered, not indented further")
	require.Contains(t, out, "step s09999 after s09899 · task", "the selected step's line")
	h.press("pgup", "pgup")
	require.Equal(t, n-1-2*rows, h.m.wf.sel)
	require.Equal(t, rows, h.m.wf.drawn)
}
