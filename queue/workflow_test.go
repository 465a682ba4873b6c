package queue_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/store/storetest"
)

// etlFlow is the README's example: extract, three transforms that take
// its rows, and a load that takes theirs.
const etlFlow = `{
  "name": "nightly-etl",
  "steps": [
    {"name": "extract", "type": "extract", "input": {"source": "orders"}},
    {"name": "clean", "type": "transform", "input": {"op": "clean"}, "input_from": {"rows": "extract.output.rows"}},
    {"name": "enrich", "type": "transform", "input": {"op": "enrich"}, "input_from": {"rows": "extract.output.rows"}},
    {"name": "score", "type": "transform", "input": {"op": "score"}, "input_from": {"rows": "extract.output.rows", "first": "extract.output.rows.0"}},
    {"name": "load", "type": "load", "after": ["clean", "enrich", "score"],
     "input_from": {"clean": "clean.output", "enrich": "enrich.output.n", "score": "score.output.n"}}
  ]
}`

func decodeFlow(t *testing.T, doc string) *queue.WorkflowSpec {
	t.Helper()
	spec, err := queue.DecodeWorkflow([]byte(doc), queue.DefaultSubmitDefaults)
	require.NoError(t, err)
	return spec
}

// step returns the task of a workflow's step, as stored now.
func (b *bundle) step(t *testing.T, w *queue.Workflow, name string) *queue.Task {
	t.Helper()
	s, ok := w.Step(name)
	require.True(t, ok, "step %s", name)
	task, err := b.q.Get(b.ctx, s.TaskID)
	require.NoError(t, err)
	return task
}

// run claims and completes the task of step name with output out.
func (b *bundle) run(t *testing.T, w *queue.Workflow, name, out string) *queue.Task {
	t.Helper()
	task := b.step(t, w, name)
	require.Equal(t, queue.StatusPending, task.Status, "step %s is ready", name)
	l := b.claim(t, task, "w1")
	in, err := b.q.HandlerInput(b.ctx, l.Task)
	require.NoError(t, err)
	_, err = b.q.Complete(b.ctx, l, json.RawMessage(out))
	require.NoError(t, err)
	var got *queue.Task = b.step(t, w, name)
	got.Input = in // what the handler got
	return got
}

func TestWorkflowRunsInOrderAndPassesOutputs(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		b := setup(t, be)
		before := b.counts()
		w, created, err := b.q.Workflows().Submit(b.ctx, decodeFlow(t, etlFlow))
		require.NoError(t, err)
		require.True(t, created)
		// 2 PUTs per step (its index entry and the task), the key's marker,
		// the record and the name: no write per edge.
		requireCounts(t, "submit a workflow of 5 steps", before, b.counts(), map[store.Op]int64{store.OpPut: 5*2 + 3})

		for _, name := range []string{"clean", "enrich", "score", "load"} {
			task := b.step(t, w, name)
			require.Equal(t, queue.StatusWaiting, task.Status, name)
			b.requireIndexed(t, task)
			require.Equal(t, &queue.WorkflowRef{ID: w.ID, Step: name}, task.Workflow)
		}
		require.Len(t, b.readyEntries(t, queue.ReadyQuery{}), 1, "only the root is claimable")
		require.Len(t, b.step(t, w, "extract").Children, 3)

		b.run(t, w, "extract", `{"rows": [1, 2, 3], "other": true}`)
		for _, name := range []string{"clean", "enrich"} {
			got := b.run(t, w, name, fmt.Sprintf(`{"n": %d}`, len(name)))
			require.JSONEq(t, fmt.Sprintf(`{"op": %q, "rows": [1, 2, 3]}`, name), string(got.Input))
		}
		score := b.run(t, w, "score", `{"n": 7}`)
		require.JSONEq(t, `{"op": "score", "rows": [1, 2, 3], "first": 1}`, string(score.Input))
		require.JSONEq(t, `{"source": "orders"}`, string(b.step(t, w, "extract").Input), "the input itself never changes")

		load := b.run(t, w, "load", `null`)
		require.JSONEq(t, `{"clean": {"n": 5}, "enrich": 6, "score": 7}`, string(load.Input))

		v, err := b.q.Workflows().Read(b.ctx, "nightly-etl")
		require.NoError(t, err)
		require.Equal(t, w.ID, v.Workflow.ID)
		require.Equal(t, queue.WorkflowCompleted, v.Status)
		require.Equal(t, map[queue.Status]int{queue.StatusCompleted: 5}, v.Counts)
		require.NotNil(t, v.EndedAt)

		names, err := b.q.Workflows().Names(b.ctx, 0)
		require.NoError(t, err)
		require.Equal(t, []queue.WorkflowSummary{{Name: "nightly-etl", ID: w.ID, CreatedAt: w.CreatedAt}}, names)
	})
}

func TestWorkflowHalfSubmittedIsFinishedByItsKey(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		b := setup(t, be)
		spec := decodeFlow(t, strings.Replace(etlFlow, `"name": "nightly-etl",`, `"name": "nightly-etl", "idempotency_key": "2026-11-25",`, 1))
		// The write of the root's task fails: every other step exists and
		// waits, nothing runs.
		// (Tasks are written children first: the fifth is the root.)
		var tasks atomic.Int32 // steps are written in parallel
		b.s.set(func(f *faultStore) {
			f.failPut = func(key string) bool {
				return strings.HasPrefix(key, queue.TasksPrefix) && tasks.Add(1) >= 5
			}
		})
		_, _, err := b.q.Workflows().Submit(b.ctx, spec)
		b.s.set(func(f *faultStore) { f.failPut = nil })
		require.Error(t, err)
		require.Contains(t, err.Error(), `4 of 5 steps exist`)
		require.Contains(t, err.Error(), `idempotency key "2026-11-25"`)
		for _, e := range b.readyEntries(t, queue.ReadyQuery{}) {
			_, err := b.q.Get(b.ctx, e.ID)
			require.ErrorIs(t, err, queue.ErrNotFound, "nothing is runnable (the root's entry came first, its task never)")
		}
		require.Len(t, b.keys(t, queue.WaitingPrefix), 4)

		v, err := b.q.Workflows().Read(b.ctx, "nightly-etl")
		require.ErrorIs(t, err, queue.ErrNotFound, "the name points at a workflow only once every step exists")
		require.Nil(t, v)

		w, created, err := b.q.Workflows().Submit(b.ctx, spec)
		require.NoError(t, err)
		require.False(t, created)
		v, err = b.q.Workflows().Read(b.ctx, w.ID.String())
		require.NoError(t, err)
		require.Equal(t, queue.WorkflowRunning, v.Status)
		require.Empty(t, v.Problems)

		b.run(t, w, "extract", `{"rows": []}`)
		for _, name := range []string{"clean", "enrich", "score", "load"} {
			b.run(t, w, name, `{}`)
		}
		v, err = b.q.Workflows().Read(b.ctx, "nightly-etl")
		require.NoError(t, err)
		require.Equal(t, queue.WorkflowCompleted, v.Status)

		// The same key with other steps is refused.
		other := decodeFlow(t, `{"idempotency_key": "2026-11-25", "steps": [{"name": "a", "type": "x"}]}`)
		_, _, err = b.q.Workflows().Submit(b.ctx, other)
		require.ErrorIs(t, err, queue.ErrIdempotencyMismatch)
	})
}

func TestWorkflowFailureCancelAndReplay(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		b := setup(t, be)
		w, _, err := b.q.Workflows().Submit(b.ctx, decodeFlow(t, etlFlow))
		require.NoError(t, err)
		b.run(t, w, "extract", `{"rows": [1]}`)
		// clean fails for good: load is cancelled, naming it.
		l := b.claim(t, b.step(t, w, "clean"), "w1")
		_, err = b.q.Fail(b.ctx, l, "bad rows")
		require.NoError(t, err)
		load := b.step(t, w, "load")
		require.Equal(t, queue.StatusCancelled, load.Status)
		require.Contains(t, load.CancelReason, "failed")
		v, err := b.q.Workflows().Read(b.ctx, w.ID.String())
		require.NoError(t, err)
		require.Equal(t, queue.WorkflowRunning, v.Status, "enrich and score still run")

		// Replaying the failed step lets load wait again.
		_, err = b.q.Replay(b.ctx, b.step(t, w, "clean").ID)
		require.NoError(t, err)
		require.Equal(t, queue.StatusWaiting, b.step(t, w, "load").Status)

		// Cancelling the workflow cancels every step that has not ended.
		n, err := b.q.Workflows().Cancel(b.ctx, "nightly-etl", "not tonight")
		require.NoError(t, err)
		require.Equal(t, 4, n)
		v, err = b.q.Workflows().Read(b.ctx, "nightly-etl")
		require.NoError(t, err)
		require.Equal(t, queue.WorkflowCancelled, v.Status)
		require.Equal(t, map[queue.Status]int{queue.StatusCompleted: 1, queue.StatusCancelled: 4}, v.Counts)
	})
}

func TestWorkflowValueTooLargeFailsTheChild(t *testing.T) {
	t.Parallel()
	b := setup(t, storetest.Backends()[0])
	w, _, err := b.q.Workflows().Submit(b.ctx, decodeFlow(t, `{"steps": [
		{"name": "a", "type": "x"},
		{"name": "b", "type": "y", "input_from": {"blob": "a.output.blob"}}]}`))

	require.NoError(t, err)
	b.run(t, w, "a", fmt.Sprintf(`{"blob": %q}`, strings.Repeat("x", queue.MaxFromParent)))
	got := b.step(t, w, "b")
	require.Equal(t, queue.StatusFailed, got.Status)
	require.Contains(t, got.LastError, `input_from "blob": the value is`)
	require.Contains(t, got.LastError, "reference")
}

func TestDecodeWorkflowRefusesBadFiles(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, doc, want string }{
		{"not JSON", `{`, "workflow file"},
		{"no steps", `{"name": "x"}`, `missing "steps"`},
		{"empty steps", `{"steps": []}`, "at least one step"},
		{"unknown field", `{"steps": [{"name": "a", "type": "x"}], "stepz": 1}`, `unknown field "stepz"`},
		{"unnamed step", `{"steps": [{"type": "x"}]}`, `step 1: missing "name"`},
		{"repeated name", `{"steps": [{"name": "a", "type": "x"}, {"name": "a", "type": "y"}]}`, `step "a": the name is used twice`},
		{"unknown parent", `{"steps": [{"name": "a", "type": "x", "after": ["b"]}]}`, `after "b": no such step`},
		{"self", `{"steps": [{"name": "a", "type": "x", "after": ["a"]}]}`, "runs after itself"},
		{"cycle", `{"steps": [{"name": "a", "type": "x", "after": ["c"]}, {"name": "b", "type": "x", "after": ["a"]}, {"name": "c", "type": "x", "after": ["b"]}]}`, "form a cycle"},
		{"cycle through input_from", `{"steps": [{"name": "a", "type": "x", "input_from": {"v": "b.output"}}, {"name": "b", "type": "x", "after": ["a"]}]}`, "form a cycle"},
		{"bad input_from", `{"steps": [{"name": "a", "type": "x"}, {"name": "b", "type": "x", "input_from": {"v": "a.rows"}}]}`, "want STEP.output"},
		{"input_from of unknown step", `{"steps": [{"name": "b", "type": "x", "input_from": {"v": "a.output"}}]}`, `after "a": no such step`},
		{"input not an object", `{"steps": [{"name": "a", "type": "x"}, {"name": "b", "type": "x", "input": [1], "input_from": {"v": "a.output"}}]}`, `"input" must be an object`},
		{"step key", `{"steps": [{"name": "a", "type": "x", "idempotency_key": "k"}]}`, "give the workflow one"},
		{"no type", `{"steps": [{"name": "a"}]}`, `step "a": missing "type"`},
		{"bad name", `{"name": "a/b", "steps": [{"name": "a", "type": "x"}]}`, "workflow name"},
		{"orphan policy", `{"steps": [{"name": "a", "type": "x", "on_parent_failure": "run"}]}`, "without parents"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := queue.DecodeWorkflow([]byte(tc.doc), queue.DefaultSubmitDefaults)
			require.Error(t, err)
			require.True(t, errors.Is(err, queue.ErrInvalidInput), "%v", err)
			require.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestSweepCancelsStepsOfAnAbandonedSubmit(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		b := setup(t, be)
		spec := decodeFlow(t, `{"steps": [{"name": "a", "type": "x"}, {"name": "b", "type": "y", "after": ["a"]}]}`)
		var tasks atomic.Int32
		b.s.set(func(f *faultStore) {
			f.failPut = func(key string) bool {
				// The child's task is written first, the root's second.
				return strings.HasPrefix(key, queue.TasksPrefix) && tasks.Add(1) >= 2
			}
		})
		_, _, err := b.q.Workflows().Submit(b.ctx, spec)
		b.s.set(func(f *faultStore) { f.failPut = nil })
		require.Error(t, err)
		waiting := b.keys(t, queue.WaitingPrefix)
		require.Len(t, waiting, 1)
		_, id, err := queue.ParseWaitingKey(waiting[0])
		require.NoError(t, err)

		// Within the hour the sweep leaves it for the submit's repeat.
		_, _, err = b.q.Recovery().SweepWaiting(b.ctx, "", 100, 0)
		require.NoError(t, err)
		got, err := b.q.Get(b.ctx, id)
		require.NoError(t, err)
		require.Equal(t, queue.StatusWaiting, got.Status)

		b.clock.Advance(queue.OrphanAfter + time.Minute)
		res, _, err := b.q.Recovery().SweepWaiting(b.ctx, "", 100, 0)
		require.NoError(t, err)
		require.Equal(t, 1, res.WaitingDecided)
		got, err = b.q.Get(b.ctx, id)
		require.NoError(t, err)
		require.Equal(t, queue.StatusCancelled, got.Status)
		require.Contains(t, got.CancelReason, "does not exist")
		b.requireIndexed(t, got)
	})
}

// A workflow file over the bounds on steps or edges is refused by the
// decoder, before a submit can write anything: each step costs requests.
func TestDecodeWorkflowRefusesTooLargeFiles(t *testing.T) {
	t.Parallel()
	doc := func(steps []string) []byte { return []byte(`{"steps": [` + strings.Join(steps, ",") + `]}`) }
	chain := func(n int) []string {
		var steps []string
		for i := range n {
			steps = append(steps, fmt.Sprintf(`{"name": "s%d", "type": "x"}`, i))
		}
		return steps
	}
	// At the bound: accepted.
	_, err := queue.DecodeWorkflow(doc(chain(queue.MaxWorkflowSteps)), queue.DefaultSubmitDefaults)
	require.NoError(t, err)
	_, err = queue.DecodeWorkflow(doc(chain(queue.MaxWorkflowSteps+1)), queue.DefaultSubmitDefaults)
	require.ErrorIs(t, err, queue.ErrInvalidInput)
	require.Contains(t, err.Error(), fmt.Sprintf("%d steps (at most %d)", queue.MaxWorkflowSteps+1, queue.MaxWorkflowSteps))

	// 100 roots and 100 steps after each of them: 10,000 edges, then one
	// more.
	var roots []string
	for i := range 100 {
		roots = append(roots, fmt.Sprintf("%q", fmt.Sprintf("s%d", i)))
	}
	after := `"after": [` + strings.Join(roots, ",") + `]`
	steps := chain(100)
	for i := range 100 {
		steps = append(steps, fmt.Sprintf(`{"name": "t%d", "type": "x", %s}`, i, after))
	}
	require.Equal(t, queue.MaxWorkflowEdges, 100*100)
	_, err = queue.DecodeWorkflow(doc(steps), queue.DefaultSubmitDefaults)
	require.NoError(t, err)
	steps = append(steps, `{"name": "u", "type": "x", "after": ["s0"]}`)
	_, err = queue.DecodeWorkflow(doc(steps), queue.DefaultSubmitDefaults)
	require.ErrorIs(t, err, queue.ErrInvalidInput)
	require.Contains(t, err.Error(), fmt.Sprintf("%d edges", queue.MaxWorkflowEdges+1))
}

// A step's on_parent_failure is taken with its parents named by step: the
// task spec's rule that a policy needs parents does not refuse it before
// the names become ids.
func TestWorkflowStepPolicyForItsParents(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		b := setup(t, be)
		w, _, err := b.q.Workflows().Submit(b.ctx, decodeFlow(t, `{"name": "policy", "steps": [
			{"name": "a", "type": "x"},
			{"name": "b", "type": "x", "after": ["a"], "on_parent_failure": "run"}]}`))
		require.NoError(t, err)
		l := b.claim(t, b.step(t, w, "a"), "w1")
		_, err = b.q.Fail(b.ctx, l, "no")
		require.NoError(t, err)
		require.Equal(t, queue.StatusPending, b.step(t, w, "b").Status, "b runs though a failed")
	})
}
