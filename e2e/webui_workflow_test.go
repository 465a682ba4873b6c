//go:build unix

package e2e

// The web UI's workflow view in Chromium against MinIO, reading the
// bucket and through qo serve: the graph of a 3-level workflow with each
// step's status, a replay of its failed step (its cancelled child waits
// again), "Cancel the rest", a step's task detail (its workflow link,
// parents, children and input_from), and a parent cancelled in the page
// telling its children, a wide fan-in's last parent cancelled in the page
// releasing the join, each read back through the Go API.

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store"
)

func TestWebUIWorkflow(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"S3", "API"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			ctx := browser(t)
			e := wkSetup(t)
			bg := context.Background()
			name := "nightly-" + uuid.NewString()[:6]
			// extract -> clean, score -> load (after both); publish after
			// clean: three levels.
			spec, err := queue.DecodeWorkflow([]byte(`{"name": "`+name+`", "steps": [
				{"name": "extract", "type": "extract", "input": {"source": "orders"}},
				{"name": "clean", "type": "transform", "input": {"op": "clean"}, "input_from": {"rows": "extract.output.rows"}},
				{"name": "score", "type": "transform", "input": {"op": "score"}, "after": ["extract"]},
				{"name": "load", "type": "load", "after": ["clean", "score"]},
				{"name": "publish", "type": "publish", "after": ["clean"]}
			]}`), queue.SubmitDefaults{})
			require.NoError(t, err)
			wf, _, err := e.q.Workflows().Submit(bg, spec)
			require.NoError(t, err)
			step := map[string]uuid.UUID{}
			for _, s := range wf.Steps {
				step[s.Name] = s.TaskID
			}
			get := func(name string) *queue.Task {
				task, err := e.q.Get(bg, step[name])
				require.NoError(t, err)
				return task
			}
			pending := func(name string) *queue.Task {
				return e.waitTask(t, step[name], "pending", func(t *queue.Task) bool { return t.Status == queue.StatusPending })
			}
			// extract and clean complete; score fails, which cancels load;
			// publish is pending (no worker runs).
			_, err = e.q.Complete(bg, claimNow(t, e, get("extract")), json.RawMessage(`{"rows":[1,2,3]}`))
			require.NoError(t, err)
			_, err = e.q.Complete(bg, claimNow(t, e, pending("clean")), json.RawMessage(`{"rows":3}`))
			require.NoError(t, err)
			_, err = e.q.Fail(bg, claimNow(t, e, pending("score")), "score: model missing")
			require.NoError(t, err)
			e.waitTask(t, step["load"], "cancelled", func(t *queue.Task) bool { return t.Status == queue.StatusCancelled })
			pending("publish")

			statusOf := func(name string) string {
				return `document.querySelector('#wf-graph g.step[data-step="` + name + `"]')?.dataset.status`
			}
			want := map[string]string{"extract": "completed", "clean": "completed", "score": "failed", "load": "cancelled", "publish": "pending"}
			require.NoError(t, chromedp.Run(ctx,
				chromedp.Navigate(pageLink(t, e, mode)+"&view=workflow&workflow="+name),
				poll(statusOf("publish")+` === 'pending'`),
				noAutoRefresh(),
			))
			for s, st := range want {
				require.Equal(t, st, evalString(ctx, t, statusOf(s)), s)
				box := text(ctx, t, `#wf-graph g.step[data-step="`+s+`"]`)
				require.Contains(t, box, s)
				require.Contains(t, box, st, "the box says the status")
			}
			require.Contains(t, text(ctx, t, `#wf-graph g.step[data-step="score"] title`), "last error: score: model missing", "the failed step's tooltip")
			var edges, arrows int
			require.NoError(t, chromedp.Run(ctx,
				chromedp.Evaluate(`document.querySelectorAll('#wf-graph path.edge').length`, &edges),
				chromedp.Evaluate(`document.querySelectorAll('#wf-graph path.edge[marker-end]').length`, &arrows),
			))
			require.Equal(t, 5, edges, "one edge per after")
			require.Equal(t, 5, arrows, "each with its arrowhead")
			require.Equal(t, "running", text(ctx, t, "#wf-status"), "publish has not ended")
			require.Contains(t, text(ctx, t, "#wf-head"), name)
			require.Contains(t, text(ctx, t, "#wf-head"), wf.ID.String())
			require.Contains(t, text(ctx, t, "#wf-counts"), "5 steps: 1 pending, 2 completed, 1 failed, 1 cancelled")
			if mode == "S3" {
				require.Contains(t, text(ctx, t, "#wf-cost"), "Each refresh: 7 GET (1 per step, +1 for the record, +1 for the name); the last sent 7 GET.")
				screenshot(t, ctx, "workflow")
			} else {
				require.Contains(t, text(ctx, t, "#wf-cost"), "Each refresh: 1 GET to qo serve, which makes 7 GET")
			}

			// A step opens its task: the workflow link, its parent with its
			// recorded end, its children, and the value input_from took.
			require.NoError(t, chromedp.Run(ctx,
				chromedp.Evaluate(`document.querySelector('#wf-graph g.step[data-step="clean"]').dispatchEvent(new MouseEvent('click', {bubbles: true}))`, nil),
				poll(`document.querySelector('#detail h2')?.textContent === '`+step["clean"].String()+`'`),
				poll(`!!document.querySelector('#wf-detail #detail')`),
			))
			require.Equal(t, "workflow "+name+" · step clean", text(ctx, t, "#wf-link"))
			require.Contains(t, text(ctx, t, `#parents li[data-id="`+step["extract"].String()+`"]`), "extract")
			require.Contains(t, text(ctx, t, `#parents li[data-id="`+step["extract"].String()+`"]`), "completed", "the parent's recorded end")
			require.NotEmpty(t, text(ctx, t, `#children li[data-id="`+step["load"].String()+`"]`))
			require.NotEmpty(t, text(ctx, t, `#children li[data-id="`+step["publish"].String()+`"]`))
			require.Equal(t, "rows = extract.output.rows: [1,2,3]", text(ctx, t, `#input-from li[data-field="rows"]`))
			var location string
			require.NoError(t, chromedp.Run(ctx, chromedp.Location(&location)))
			require.Contains(t, location, "view=workflow&workflow="+name+"&task="+step["clean"].String(), "the address links to the step")

			// Replay the failed step: pending again, and load, which its
			// failure cancelled, waits again (clean completed: 1 of 2).
			require.NoError(t, chromedp.Run(ctx,
				chromedp.Click(`#wf-steps button[data-replay="score"]`, chromedp.ByQuery),
				poll(`document.querySelector('#status').textContent === 'replay: step score is now pending'`),
				poll(statusOf("load")+` === 'waiting'`),
			))
			require.Equal(t, queue.StatusPending, get("score").Status)
			load := get("load")
			require.Equal(t, queue.StatusWaiting, load.Status, "the child the failure cancelled waits again")
			require.Equal(t, "1 of 2 parents", load.WaitingFor())
			require.Contains(t, text(ctx, t, `#wf-graph g.step[data-step="load"]`), "after 1 of 2 parents")
			require.Equal(t, "running", text(ctx, t, "#wf-status"))

			// The waiting step's task offers what the transition table
			// allows a waiting task: a cancel, no replay or archive.
			require.NoError(t, chromedp.Run(ctx,
				chromedp.Evaluate(`document.querySelector('#wf-graph g.step[data-step="load"]').dispatchEvent(new MouseEvent('click', {bubbles: true}))`, nil),
				poll(`document.querySelector('#detail h2')?.textContent === '`+step["load"].String()+`'`),
			))
			require.Equal(t, "act-cancel", evalString(ctx, t, `[...document.querySelectorAll('#detail .actions button')].map((b) => b.id).filter((id) => id !== 'copy-id').join(' ')`),
				"the actions besides Copy id")

			// Cancel the rest: every step that has not ended is cancelled.
			require.NoError(t, chromedp.Run(ctx,
				chromedp.Click("#wf-cancel", chromedp.ByQuery),
				poll(`document.querySelector('#status').textContent === 'cancelled 3 steps of workflow `+name+`'`),
				poll(`document.querySelector('#wf-status').textContent === 'cancelled'`),
				poll(`document.querySelector('#wf-cancel').disabled`),
			))
			for _, s := range []string{"score", "load", "publish"} {
				task := get(s)
				require.Equal(t, queue.StatusCancelled, task.Status, s)
				require.Equal(t, "from the web UI", task.CancelReason, "%s carries the operator's reason (children were cancelled first)", s)
			}
			for _, s := range []string{"extract", "clean"} {
				require.Equal(t, queue.StatusCompleted, get(s).Status, "%s had ended: left as it was", s)
			}
			entries, err := e.s.List(bg, store.ListParams{Prefix: queue.WaitingPrefix})
			require.NoError(t, err)
			require.Empty(t, entries.Objects, "no waiting entry is left")

			// From the task list, a step's detail links to its workflow.
			require.NoError(t, chromedp.Run(ctx,
				chromedp.Evaluate(`location.hash = '#view=tasks&task=`+step["load"].String()+`'`, nil),
				poll(`document.querySelector('#detail h2')?.textContent === '`+step["load"].String()+`' && !!document.querySelector('#wf-link')`),
			))
			require.Equal(t, "workflow "+name+" · step load", text(ctx, t, "#wf-link"))
			for _, p := range []string{"clean", "score"} {
				require.NotEmpty(t, text(ctx, t, `#parents li[data-id="`+step[p].String()+`"]`), p)
			}
			require.Contains(t, text(ctx, t, `#parents li[data-id="`+step["clean"].String()+`"]`), "completed")
			require.NoError(t, chromedp.Run(ctx,
				// The detail is redrawn as it refreshes: click the link as
				// it is now, in one step, not a node found a moment before.
				chromedp.Evaluate(`document.querySelector('#wf-link').click()`, nil),
				// The workflow view drawn earlier is still in the page: wait
				// for the link's navigation before reading it.
				poll(`location.hash.includes('view=workflow') && `+statusOf("load")+` === 'cancelled'`),
				chromedp.Location(&location),
			))
			require.Contains(t, location, "view=workflow&workflow="+wf.ID.String()+"&task="+step["load"].String())

			// The list of names, from the nav.
			require.NoError(t, chromedp.Run(ctx,
				chromedp.Click("#tab-workflow", chromedp.ByQuery),
				poll(`!!document.querySelector('#wf-names tr.wf-name[data-name="`+name+`"]')`),
			))
			require.Contains(t, text(ctx, t, `#wf-names tr[data-name="`+name+`"]`), queue.ShortID(wf.ID))

			if mode == "S3" {
				// A phone's width: the graph scrolls in its box, the page
				// does not.
				var over string
				require.NoError(t, chromedp.Run(ctx,
					chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile),
					chromedp.Evaluate(`location.hash = '#view=workflow&workflow=`+name+`'`, nil),
					poll(statusOf("load")+` === 'cancelled'`),
					chromedp.Evaluate(wide, &over),
				))
				require.Empty(t, over, "the workflow view is wider than a 390 px screen")
			}
		})
	}
}

// evalString evaluates a JavaScript expression to a string ("" for
// undefined).
func evalString(ctx context.Context, t *testing.T, expr string) string {
	t.Helper()
	var s string
	require.NoError(t, chromedp.Run(ctx, chromedp.Evaluate(`String(`+expr+` ?? '')`, &s)))
	return s
}

// TestWebUICancelTellsChildren: a pending parent cancelled in the page
// tells its waiting children, as queue.Cancel does: a child of the
// default rule is cancelled naming the parent (and its own child in
// turn), a child that runs anyway is released with its ready entry, and
// no waiting entry is left. Read back through the Go API.
func TestWebUICancelTellsChildren(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"S3", "API"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			ctx := browser(t)
			e := wkSetup(t)
			bg := context.Background()
			submit := func(policy queue.ParentFailure, after ...uuid.UUID) uuid.UUID {
				task, _, err := e.q.Submit(bg, queue.SubmitRequest{Type: "report", After: after, OnParentFailure: policy})
				require.NoError(t, err)
				return task.ID
			}
			parent := submit("")
			child := submit(queue.ParentFailureCancel, parent)
			runs := submit(queue.ParentFailureRun, parent)
			grandchild := submit(queue.ParentFailureCancel, child)

			require.NoError(t, chromedp.Run(ctx,
				chromedp.Navigate(pageLink(t, e, mode)+"&view=tasks&task="+parent.String()),
				poll(`!!document.querySelector('#act-cancel')`),
				noAutoRefresh(),
				chromedp.Click("#act-cancel", chromedp.ByQuery),
				poll(`document.querySelector('#status').textContent === 'cancel: task `+parent.String()+` is now cancelled'`),
			))
			get := func(id uuid.UUID) *queue.Task {
				task, err := e.q.Get(bg, id)
				require.NoError(t, err)
				return task
			}
			require.Equal(t, queue.StatusCancelled, get(parent).Status)
			for id, p := range map[uuid.UUID]uuid.UUID{child: parent, grandchild: child} {
				task := get(id)
				require.Equal(t, queue.StatusCancelled, task.Status, "a child of the default rule is cancelled")
				require.Equal(t, "parent "+p.String()+" cancelled", task.CancelReason)
				require.Equal(t, []queue.Parent{{ID: p, Done: queue.StatusCancelled}}, task.Parents, "the parent's end is recorded")
			}
			released := get(runs)
			require.Equal(t, queue.StatusPending, released.Status, "a child that runs anyway is released")
			require.Equal(t, queue.EventReleased, released.LastEvent)
			// The entries as listed (not ListReady, which leaves out an
			// entry not due yet by this process's clock).
			entries, err := e.s.List(bg, store.ListParams{Prefix: queue.ReadyPrefix})
			require.NoError(t, err)
			var ready []uuid.UUID
			for _, o := range entries.Objects {
				en, err := queue.ParseReadyKey(o.Key)
				require.NoError(t, err)
				ready = append(ready, en.ID)
			}
			require.Equal(t, []uuid.UUID{runs}, ready, "the released child's ready entry, and the parent's is gone")
			waiting, err := e.s.List(bg, store.ListParams{Prefix: queue.WaitingPrefix})
			require.NoError(t, err)
			require.Empty(t, waiting.Objects, "no waiting entry is left")
		})
	}
}

// TestWebUIWideFanIn: a workflow whose join step waits for more parents
// than queue.EdgeFanIn, and runs whatever they end in. Workers' ends of
// all parents but one reach it as edge objects; the last parent is
// cancelled in the page, which finds those edges as qo does, records
// every end in one write and releases the join, its edges removed.
func TestWebUIWideFanIn(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"S3", "API"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			ctx := browser(t)
			console := watchConsole(t, ctx)
			e := wkSetup(t)
			bg := context.Background()
			fanIn := queue.EdgeFanIn + 2
			var steps, names []string
			for i := range fanIn {
				names = append(names, fmt.Sprintf(`"p%d"`, i))
				steps = append(steps, fmt.Sprintf(`{"name": "p%d", "type": "part"}`, i))
			}
			steps = append(steps, `{"name": "join", "type": "join", "on_parent_failure": "run", "after": [`+strings.Join(names, ", ")+`]}`)
			spec, err := queue.DecodeWorkflow([]byte(`{"name": "fan-in-`+uuid.NewString()[:6]+`", "steps": [`+strings.Join(steps, ",\n")+`]}`), queue.SubmitDefaults{})
			require.NoError(t, err)
			wf, _, err := e.q.Workflows().Submit(bg, spec)
			require.NoError(t, err)
			step := map[string]uuid.UUID{}
			for _, s := range wf.Steps {
				step[s.Name] = s.TaskID
			}
			get := func(id uuid.UUID) *queue.Task {
				task, err := e.q.Get(bg, id)
				require.NoError(t, err)
				return task
			}
			for i := 1; i < fanIn; i++ {
				_, err := e.q.Complete(bg, claimNow(t, e, get(step[fmt.Sprintf("p%d", i)])), nil)
				require.NoError(t, err)
			}
			require.NoError(t, e.q.Settle(bg))
			edges, err := e.s.List(bg, store.ListParams{Prefix: queue.EdgesPrefix})
			require.NoError(t, err)
			require.Len(t, edges.Objects, fanIn-1, "the workers' ends are edge objects")
			raw := rawTask(t, e.s, e.q, step["join"])
			require.Equal(t, fanIn, raw.ParentsLeft(), "the join's object records none of them")

			last := step["p0"].String()
			require.NoError(t, chromedp.Run(ctx,
				chromedp.Navigate(pageLink(t, e, mode)+"&view=tasks&task="+last),
				poll(`!!document.querySelector('#act-cancel')`),
				noAutoRefresh(),
				chromedp.Click("#act-cancel", chromedp.ByQuery),
				poll(`document.querySelector('#status').textContent === 'cancel: task `+last+` is now cancelled'`),
			))
			join := rawTask(t, e.s, e.q, step["join"])
			require.Equal(t, queue.StatusPending, join.Status, "the last end released the join (console: %v)", console.matching(""))
			require.Equal(t, queue.EventReleased, join.LastEvent)
			require.Zero(t, join.ParentsLeft(), "every end is recorded on the join")
			edges, err = e.s.List(bg, store.ListParams{Prefix: queue.EdgesPrefix})
			require.NoError(t, err)
			require.Empty(t, edges.Objects, "the released join's edges are removed")
		})
	}
}

// rawTask reads a task's object as it is in the bucket, without the ends
// its edge objects add (queue.Get adds them).
func rawTask(t *testing.T, s store.Store, q *queue.Queue, id uuid.UUID) *queue.Task {
	t.Helper()
	key := q.TaskKey(id)
	obj, err := s.Get(context.Background(), key)
	require.NoError(t, err)
	task, err := queue.DecodeTask(key, obj.Body)
	require.NoError(t, err)
	return task
}
