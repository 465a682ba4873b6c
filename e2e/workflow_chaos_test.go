//go:build unix

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/internal/testutil"
	"github.com/qo-queue/qo/queue"
)

// etlWorkflow is workflow i of the scenario: extract, three transforms
// that each take the extract's rows and id, and a load that takes the
// three transforms' whole outputs. Short timeouts and quick retries, as
// in the other chaos scenarios.
func etlWorkflow(i int) string {
	const opts = `"timeout_seconds": 5, "max_retries": 8, "retry_policy": {"initial_interval_ms": 100, "max_interval_ms": 1000, "multiplier": 2, "jitter_percent": 0.25}`
	step := func(name, typ, input, from string) string {
		s := fmt.Sprintf(`{"name": %q, "type": %q, "input": %s, %s`, name, typ, input, opts)
		if from != "" {
			s += `, "input_from": ` + from
		}
		return s + "}"
	}
	steps := []string{step("extract", "extract", fmt.Sprintf(`{"wf": %d, "rows": [%d, %d, %d]}`, i, 10*i, 10*i+1, 10*i+2), "")}
	for _, tr := range []string{"t1", "t2", "t3"} {
		steps = append(steps, step(tr, "transform", fmt.Sprintf(`{"op": %q}`, tr), `{"rows": "extract.output.got.rows", "source": "extract.output.task"}`))
	}
	steps = append(steps, step("load", "load", fmt.Sprintf(`{"wf": %d}`, i), `{"t1": "t1.output", "t2": "t2.output", "t3": "t3.output"}`))
	doc := fmt.Sprintf(`{"name": "etl-%d", "idempotency_key": "etl-%d", "steps": [`, i, i)
	for j, s := range steps {
		if j > 0 {
			doc += ", "
		}
		doc += s
	}
	return doc + "]}"
}

// stepOutput is what the step handler answers: its task id and the input
// it was handed (its own input with the values taken from its parents).
type stepOutput struct {
	Task uuid.UUID       `json:"task"`
	Got  json.RawMessage `json:"got"`
}

// TestChaosWorkflowsKill9 runs 10 workflows of extract -> 3 transforms ->
// load, with input_from, through 3 real worker processes (each with its
// embedded monitor and the sweeper that repairs missed releases), one of
// them killed with SIGKILL every few seconds and replaced by a new one
// while the others keep running. Every workflow completes; every step got
// the values of its parents (the handler echoes its input); no step was
// claimed before its parents completed; and every task's history is sound
// (checkHistories, dependencies included).
func TestChaosWorkflowsKill9(t *testing.T) {
	t.Parallel()
	c := newChaos(t)
	// The step handler: log the execution, take a moment (0.5-0.9 s), and
	// answer with the task's id and the input it got.
	step := filepath.Join(filepath.Dir(c.script), "step.sh")
	body := fmt.Sprintf("#!/bin/sh\necho \"$QO_TASK_ID\" >> '%s'\nin=$(cat)\nsleep 0.$(( $$ %% 5 + 5 ))\nprintf '{\"task\":\"%%s\",\"got\":%%s}\\n' \"$QO_TASK_ID\" \"$in\"\n", c.log)
	require.NoError(t, os.WriteFile(step, []byte(body), 0o755))
	// Concurrency 2 keeps every worker busy with the 50 steps, so each
	// kill takes running steps down with it. The sweeper runs every 2 s
	// (it reads a waiting task once its entry is a minute old); liveness
	// is 4 s so the survivors take a killed worker's steps back quickly.
	c.args = []string{"--exec", "extract=" + step, "--exec", "transform=" + step, "--exec", "load=" + step,
		"--concurrency", "2", "--dead-after", "4s", "--sweep-interval", "2s"}
	c.renamed = true

	const n = 10
	ctx := context.Background()
	flows := make([]*queue.Workflow, n)
	require.NoError(t, parallelDo(n, n, func(i int) error {
		spec, err := queue.DecodeWorkflow([]byte(etlWorkflow(i)), queue.DefaultSubmitDefaults)
		if err != nil {
			return err
		}
		w, _, err := c.q.Workflows().Submit(ctx, spec)
		flows[i] = w
		return err
	}))
	for _, w := range flows {
		for _, s := range w.Steps {
			c.ids = append(c.ids, s.TaskID)
		}
	}

	ids := []string{"flow-a", "flow-b", "flow-c"}
	procs := make([]*wkProc, len(ids))
	for i, id := range ids {
		procs[i] = c.worker(t, id)
	}
	stop := make(chan struct{})
	kills := make(chan int, 1)
	go func() { kills <- c.killer(t, procs, ids, stop) }()
	start := time.Now()
	views := waitWorkflows(t, c.wkEnv, flows, 110*time.Second)
	close(stop)
	k := <-kills
	took := time.Since(start)

	for i, v := range views {
		require.Equal(t, queue.WorkflowCompleted, v.Status, "workflow %d: %v", i, v.Counts)
	}
	v := checkHistories(t, c.wkEnv, c.ids, c.log)
	v.requireSound(t)
	require.Equal(t, 5*n, v.Completed)

	// What each handler got: its input with its parents' values, exactly.
	for i, view := range views {
		out := map[string]stepOutput{}
		id := map[string]uuid.UUID{}
		for j, s := range view.Workflow.Steps {
			task := view.Tasks[j]
			var o stepOutput
			require.NoError(t, json.Unmarshal(task.Output, &o), "workflow %d step %s: %s", i, s.Name, task.Output)
			require.Equal(t, task.ID, o.Task, "workflow %d step %s answered for another task", i, s.Name)
			out[s.Name], id[s.Name] = o, task.ID
		}
		rows := fmt.Sprintf(`[%d, %d, %d]`, 10*i, 10*i+1, 10*i+2)
		require.JSONEq(t, fmt.Sprintf(`{"wf": %d, "rows": %s}`, i, rows), string(out["extract"].Got))
		transformed := map[string]string{}
		for _, tr := range []string{"t1", "t2", "t3"} {
			got := fmt.Sprintf(`{"op": %q, "rows": %s, "source": %q}`, tr, rows, id["extract"])
			require.JSONEq(t, got, string(out[tr].Got), "workflow %d step %s", i, tr)
			transformed[tr] = fmt.Sprintf(`{"task": %q, "got": %s}`, id[tr], got)
		}
		require.JSONEq(t, fmt.Sprintf(`{"wf": %d, "t1": %s, "t2": %s, "t3": %s}`, i, transformed["t1"], transformed["t2"], transformed["t3"]),
			string(out["load"].Got), "workflow %d: the load got every transform's output", i)
	}

	retried := 0 // steps that a kill made run again
	for _, view := range views {
		for _, task := range view.Tasks {
			if task.Attempt > 1 {
				retried++
			}
		}
	}
	gaps := releaseGaps(t, c.wkEnv, views)
	t.Logf("workflow kill -9 scenario: %d workflows (%d tasks) in %s with %d kills; %d steps claimed again after a kill, %d executions (%d repeated); release after the last parent's end: median %s, max %s",
		n, 5*n, took.Round(time.Second), k, retried, v.Executions, v.Duplicates, gaps[len(gaps)/2].Round(time.Millisecond), gaps[len(gaps)-1].Round(time.Millisecond))
	require.Positive(t, k, "the killer struck while the workflows ran")
}

// waitWorkflows waits until every workflow has ended, re-reading only the
// steps that have not (Refresh).
func waitWorkflows(t *testing.T, e *wkEnv, flows []*queue.Workflow, within time.Duration) []*queue.WorkflowView {
	t.Helper()
	ctx := context.Background()
	views := make([]*queue.WorkflowView, len(flows))
	for i, w := range flows {
		v, err := e.q.Workflows().Read(ctx, w.ID.String())
		require.NoError(t, err)
		views[i] = v
	}
	open := 0
	running := func() string {
		for _, v := range views {
			if !v.Status.Ended() {
				return fmt.Sprintf("%d still running, e.g. %s: %s %v", open, v.Workflow.ID, v.Status, v.Counts)
			}
		}
		return "none running"
	}
	testutil.Poll{Limit: within, Every: 500 * time.Millisecond}.Until(t, func() bool {
		open = 0
		for _, v := range views {
			if !v.Status.Ended() {
				open++
				_ = e.q.Workflows().Refresh(ctx, v) // a failed read is read again next round
			}
		}
		return open == 0
	}, "every workflow to end: %s", testutil.Lazy(running))
	return views
}

// releaseGaps returns, sorted, how long after its last parent's end (by
// the server's clock) each step with parents was released. A gap near a
// minute is a release the sweeper made: the worker that ended the parent
// was killed before it told the step.
func releaseGaps(t *testing.T, e *wkEnv, views []*queue.WorkflowView) []time.Duration {
	t.Helper()
	ctx := context.Background()
	// stored is when the server stored the first version of task id whose
	// event is event, or that completed it (event "").
	stored := func(id uuid.UUID, event string) (time.Time, error) {
		hist, err := e.q.History(ctx, id)
		if err != nil {
			return time.Time{}, err
		}
		versions, err := e.s.ListVersions(ctx, e.q.TaskKey(id))
		if err != nil {
			return time.Time{}, err
		}
		for _, h := range hist {
			if h.Name == event || (event == "" && h.Status == queue.StatusCompleted) {
				for _, v := range versions {
					if v.VersionID == h.VersionID {
						return v.LastModified, nil
					}
				}
			}
		}
		return time.Time{}, fmt.Errorf("task %s has no %q version", id, event)
	}
	var mu sync.Mutex
	var gaps []time.Duration
	for _, v := range views {
		require.NoError(t, parallelDo(len(v.Tasks), 8, func(j int) error {
			task := v.Tasks[j]
			if len(task.Parents) == 0 {
				return nil
			}
			var last time.Time
			for _, p := range task.Parents {
				at, err := stored(p.ID, "")
				if err != nil {
					return err
				}
				if at.After(last) {
					last = at
				}
			}
			released, err := stored(task.ID, queue.EventReleased)
			if err != nil {
				return err
			}
			mu.Lock()
			gaps = append(gaps, released.Sub(last))
			mu.Unlock()
			return nil
		}))
	}
	sort.Slice(gaps, func(i, j int) bool { return gaps[i] < gaps[j] })
	return gaps
}
