package webui

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store/memstore"
	"github.com/qo-queue/qo/store/storetest"
)

// workflowCase is one shared workflow case: a record and its steps' tasks
// as stored, and the report queue.WorkflowView.Report makes of them. The
// page builds the same report from the same objects in direct-to-S3 mode
// (test/workflow.test.js).
type workflowCase struct {
	Name     string               `json:"name"`
	Workflow *queue.Workflow      `json:"workflow"`
	Tasks    []*queue.Task        `json:"tasks"` // by step; null when missing
	Report   queue.WorkflowReport `json:"report"`
}

// TestWorkflowCases writes testdata/workflows.json: a workflow read at
// several points of its life (running, failed, incomplete, completed).
func TestWorkflowCases(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := storetest.NewClock(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC))
	s := memstore.New(memstore.WithClock(clock)) // objects stamped on the queue's clock
	_, err := queue.Init(ctx, s, 1)
	require.NoError(t, err)
	q, err := queue.Open(ctx, s, queue.Options{Clock: clock, NewID: queue.SequentialIDs("webui-workflows")})
	require.NoError(t, err)
	spec, err := queue.DecodeWorkflow([]byte(`{"name": "etl", "idempotency_key": "day-1", "steps": [
		{"name": "extract", "type": "extract"},
		{"name": "clean", "type": "transform", "input_from": {"rows": "extract.output.rows"}},
		{"name": "score", "type": "transform", "after": ["extract"]},
		{"name": "load", "type": "load", "after": ["clean", "score"], "on_parent_failure": "run"}]}`), queue.DefaultSubmitDefaults)
	require.NoError(t, err)
	w, _, err := q.Workflows().Submit(ctx, spec)
	require.NoError(t, err)

	var cases []workflowCase
	snap := func(name string, drop ...string) {
		v, err := q.Workflows().Read(ctx, w.ID.String())
		require.NoError(t, err)
		c := workflowCase{Name: name, Workflow: v.Workflow, Tasks: append([]*queue.Task(nil), v.Tasks...)}
		for i, s := range v.Workflow.Steps {
			for _, d := range drop {
				if s.Name == d { // as if its task were missing
					c.Tasks[i] = nil
					v.Tasks[i] = nil
					v.Problems[s.Name] = "missing"
				}
			}
		}
		if len(drop) > 0 {
			v = queue.SummarizeWorkflow(v.Workflow, v.Tasks, v.Problems)
		}
		c.Report = v.Report()
		// Request and lease ids are random: fixed here so the file is stable.
		for i, task := range c.Tasks {
			if task != nil {
				task = task.Clone()
				task.RequestID = "request"
				if task.LeaseID != "" {
					task.LeaseID = "6f1c2d3e-4b5a-4c6d-8e7f-9a0b1c2d3e40"
				}
				c.Tasks[i] = task
			}
		}
		cases = append(cases, c)
	}
	step := func(name string) *queue.Task {
		s, ok := w.Step(name)
		require.True(t, ok)
		task, err := q.Get(ctx, s.TaskID)
		require.NoError(t, err)
		return task
	}
	claim := func(name string) *queue.Lease {
		e, err := queue.ParseReadyKey(queue.ReadyKey(step(name)))
		require.NoError(t, err)
		l, err := q.Claim(ctx, e, "w1")
		require.NoError(t, err)
		return l
	}
	snap("submitted")
	snap("incomplete", "load")
	clock.Advance(time.Second)
	_, err = q.Complete(ctx, claim("extract"), json.RawMessage(`{"rows": [1, 2]}`))
	require.NoError(t, err)
	clean := claim("clean")
	snap("running")
	clock.Advance(time.Second)
	_, err = q.Fail(ctx, claim("score"), "boom")
	require.NoError(t, err)
	snap("a step failed, another runs")
	_, err = q.Complete(ctx, clean, nil)
	require.NoError(t, err)
	clock.Advance(time.Second)
	_, err = q.Complete(ctx, claim("load"), json.RawMessage(`{"loaded": 2}`))
	require.NoError(t, err)
	snap("ended with a failed step")
	_, err = q.Replay(ctx, step("score").ID)
	require.NoError(t, err)
	_, err = q.Workflows().Cancel(ctx, w.ID.String(), "stop")
	require.NoError(t, err)
	snap("the replayed step cancelled")
	requireFile(t, filepath.Join("testdata", "workflows.json"), cases)
}
