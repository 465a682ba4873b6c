//go:build unix

package e2e

// The web UI's dashboard in Chromium against MinIO: bulk actions on dead
// letters, search, the fleet's request rate, a phone's width and the dark
// theme. Each reads the outcome back through the Go queue API.

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/internal/testutil"
	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/queue/schedule"
)

// failMany submits n tasks of typ and fails each for good (a dead letter).
func failMany(t *testing.T, e *wkEnv, typ string, n int) []*queue.Task {
	t.Helper()
	bg := context.Background()
	var out []*queue.Task
	for i := range n {
		task, _, err := e.q.Submit(bg, queue.SubmitRequest{Type: typ, Input: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))})
		require.NoError(t, err)
		_, err = e.q.Fail(bg, claimNow(t, e, task), typ+": failed for good")
		require.NoError(t, err)
		out = append(out, task)
	}
	return out
}

// pageLink is the link that opens e's queue in the page: reading the
// bucket (S3) or through qo serve (API).
func pageLink(t *testing.T, e *wkEnv, mode string) string {
	t.Helper()
	if mode == "API" {
		return startServe(t, e).ui
	}
	return uiLink(t, e)
}

// poll waits (30 s at most) until the JavaScript expression is true.
func poll(expr string) chromedp.QueryAction {
	return chromedp.Poll(expr, nil, chromedp.WithPollingTimeout(30*time.Second))
}

// noAutoRefresh turns the page's auto-refresh off, so what the page sends
// is what the test asks of it.
func noAutoRefresh() chromedp.Action {
	return chromedp.Evaluate(`(() => { const s = document.querySelector('#interval'); s.value = '0'; s.dispatchEvent(new Event('change')); })()`, nil)
}

// text reads an element's text ("" when there is none).
func text(ctx context.Context, t *testing.T, sel string) string {
	t.Helper()
	var s string
	require.NoError(t, chromedp.Run(ctx, chromedp.Evaluate(`document.querySelector(`+jsString(sel)+`)?.textContent ?? ''`, &s)))
	return s
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestWebUIBulkReplay: every failed task of a type (50 of them) replayed
// from the dead letters, reading the bucket and through qo serve: the
// confirmation states the requests, the run reports 50 of 50 and sends
// what it planned, and each task is pending (replayed) through the queue
// API, the failed tasks of another type untouched.
func TestWebUIBulkReplay(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"S3", "API"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			ctx := browser(t)
			e := wkSetup(t)
			email := failMany(t, e, "email", 50)
			resize := failMany(t, e, "resize", 2)
			require.NoError(t, chromedp.Run(ctx,
				chromedp.Navigate(pageLink(t, e, mode)+"&view=dead&type=email"),
				poll(`document.querySelectorAll('#tasks tr.row').length === 50 && !document.querySelector('#bulk-replay-type').hidden`),
				noAutoRefresh(),
				chromedp.Click("#bulk-replay-type", chromedp.ByQuery),
				chromedp.WaitVisible("#bulk-dialog[open]", chromedp.ByQuery),
			))
			require.Equal(t, "Replay every failed task of type email?", text(ctx, t, "#bulk-title"))
			cost := text(ctx, t, "#bulk-cost")
			if mode == "S3" {
				require.Contains(t, cost, "replay 50 tasks: 50 GET + 100 PUT + 50 DELETE; finding them took 1 LIST")
				require.Contains(t, cost, "about $0.0005 at S3 Standard prices")
				screenshot(t, ctx, "dead-bulk")
			} else {
				// qo serve plans with the queue's bulk action: the tasks
				// are listed and read once, and written with that ETag.
				require.Contains(t, cost, "50 tasks. Requests: 1 POST to qo serve, which plans: replay 50 tasks: 100 PUT + 50 DELETE (finding them took 1 LIST + 50 GET)")
			}
			require.Equal(t, "Replay 50 tasks", text(ctx, t, "#bulk-go"))

			require.NoError(t, chromedp.Run(ctx,
				chromedp.Click("#bulk-go", chromedp.ByQuery),
				chromedp.Poll(`document.querySelector('#bulk-status')?.textContent === 'Done: 50 of 50'`, nil, chromedp.WithPollingTimeout(90*time.Second)),
			))
			progress := text(ctx, t, "#bulk-progress")
			require.Contains(t, progress, "50 replayed · 0 failed")
			if mode == "S3" {
				require.Contains(t, text(ctx, t, "#bulk-made"), "Sent 50 GET + 100 PUT + 50 DELETE (planned: replay 50 tasks: 50 GET + 100 PUT + 50 DELETE", "the run sent what the confirmation said")
			} else {
				require.Contains(t, text(ctx, t, "#bulk-made"), "Sent 1 POST to qo serve")
			}
			require.NoError(t, chromedp.Run(ctx, poll(`document.querySelector('#status').textContent === 'replay: 50 of 50 replayed'`)))

			bg := context.Background()
			for _, task := range email {
				got, err := e.q.Get(bg, task.ID)
				require.NoError(t, err)
				require.Equal(t, queue.StatusPending, got.Status, task.ID)
				require.Equal(t, "replayed", got.LastEvent)
				require.Equal(t, task.Rev+3, got.Rev, "claimed, failed, replayed: one write each")
			}
			for _, task := range resize {
				got, err := e.q.Get(bg, task.ID)
				require.NoError(t, err)
				require.Equal(t, queue.StatusFailed, got.Status, "another type is left alone")
			}
			page, err := e.q.List(bg, queue.ListQuery{Status: queue.StatusFailed, Type: "email"})
			require.NoError(t, err)
			require.Empty(t, page.Tasks, "no email dead letter left")
			pending, err := e.q.List(bg, queue.ListQuery{Status: queue.StatusPending, Type: "email", Limit: 100})
			require.NoError(t, err)
			require.Len(t, pending.Tasks, 50, "each has its ready entry, as qo replay writes it")
			require.Empty(t, pending.Stale)
		})
	}
}

// TestWebUIBulkArchiveSelection: three checked dead letters archived, one
// of which another operator replays after it was checked: that one is
// reported (changed meanwhile) and stays pending, never forced to archived;
// the unchecked ones stay failed.
func TestWebUIBulkArchiveSelection(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"S3", "API"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			ctx := browser(t)
			e := wkSetup(t)
			bg := context.Background()
			rep := failMany(t, e, "report", 5)
			checkbox := func(task *queue.Task) string { return `tr[data-id="` + task.ID.String() + `"] td.check input` }
			require.NoError(t, chromedp.Run(ctx,
				chromedp.Navigate(pageLink(t, e, mode)+"&view=dead"),
				poll(`document.querySelectorAll('#tasks tr.row').length === 5`),
				noAutoRefresh(),
				chromedp.Click(checkbox(rep[0]), chromedp.ByQuery),
				chromedp.Click(checkbox(rep[1]), chromedp.ByQuery),
				chromedp.Click(checkbox(rep[2]), chromedp.ByQuery),
				poll(`document.querySelector('#bulk-checked').textContent === '3 checked'`),
			))
			require.Empty(t, text(ctx, t, "#detail h2"), "checking a task does not open it")

			// Another operator replays one of the checked tasks.
			_, err := e.q.Replay(bg, rep[1].ID)
			require.NoError(t, err)

			require.NoError(t, chromedp.Run(ctx,
				chromedp.Click("#bulk-archive-checked", chromedp.ByQuery),
				chromedp.WaitVisible("#bulk-dialog[open]", chromedp.ByQuery),
			))
			require.Equal(t, "Archive the 3 checked tasks?", text(ctx, t, "#bulk-title"))
			if mode == "S3" {
				// The page plans from the tasks as it last read them; the
				// run finds the change.
				require.Contains(t, text(ctx, t, "#bulk-cost"), "archive 3 tasks: 3 GET + 3 PUT + 3 DELETE")
				require.NoError(t, chromedp.Run(ctx,
					chromedp.Click("#bulk-go", chromedp.ByQuery),
					poll(`document.querySelector('#bulk-status')?.textContent === 'Done: 3 of 3'`),
				))
				require.Contains(t, text(ctx, t, "#bulk-progress"), "2 archived · 1 failed")
				failure := text(ctx, t, `#bulk-failures li[data-id="`+rep[1].ID.String()+`"]`)
				require.Contains(t, failure, "changed meanwhile (now pending): left as it is")
			} else {
				// qo serve plans from the tasks as they are now: the
				// replayed one is skipped, saying why.
				require.Contains(t, text(ctx, t, "#bulk-cost"), "archive 2 tasks: 2 PUT + 2 DELETE (finding them took 3 GET)")
				require.Contains(t, text(ctx, t, "#bulk-skipped"), "pending: only completed, failed, cancelled or expired tasks can be archived")
				require.NoError(t, chromedp.Run(ctx,
					chromedp.Click("#bulk-go", chromedp.ByQuery),
					poll(`document.querySelector('#bulk-status')?.textContent === 'Done: 2 of 2'`),
				))
				require.Contains(t, text(ctx, t, "#bulk-progress"), "2 archived · 0 failed")
			}

			for i, want := range []queue.Status{queue.StatusArchived, queue.StatusPending, queue.StatusArchived, queue.StatusFailed, queue.StatusFailed} {
				got, err := e.q.Get(bg, rep[i].ID)
				require.NoError(t, err)
				require.Equal(t, want, got.Status, "task %d", i)
			}
			got, err := e.q.Get(bg, rep[1].ID)
			require.NoError(t, err)
			require.Equal(t, "replayed", got.LastEvent, "the other operator's replay stands")
			// The page reloads the dead letters: the two unchecked remain.
			require.NoError(t, chromedp.Run(ctx, poll(`document.querySelectorAll('#tasks tr.row').length === 2`)))
		})
	}
}

// TestWebUIBulkCancelPending: every pending task of the task list's filter
// cancelled from the page, reading the bucket and through qo serve: the
// confirmation states the count and the requests, a running task and the
// dead letters are left alone, and the dead letters show their last error.
func TestWebUIBulkCancelPending(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"S3", "API"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			ctx := browser(t)
			e := wkSetup(t)
			bg := context.Background()
			var pending []*queue.Task
			for i := range 30 {
				task, _, err := e.q.Submit(bg, queue.SubmitRequest{Type: "email", Input: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))})
				require.NoError(t, err)
				pending = append(pending, task)
			}
			running, _, err := e.q.Submit(bg, queue.SubmitRequest{Type: "email"})
			require.NoError(t, err)
			claimNow(t, e, running)
			dead := failMany(t, e, "resize", 1)
			require.NoError(t, chromedp.Run(ctx,
				chromedp.Navigate(pageLink(t, e, mode)+"&view=tasks"),
				poll(`document.querySelectorAll('#tasks tr.row').length === 32`),
				noAutoRefresh(),
				chromedp.SetValue("#statusf", "pending", chromedp.ByQuery),
				chromedp.Evaluate(`document.querySelector('#statusf').dispatchEvent(new Event('change'))`, nil),
				poll(`document.querySelectorAll('#tasks tr.row').length === 30 && !document.querySelector('#bulk-cancel-type').hidden`),
				chromedp.Click("#bulk-cancel-type", chromedp.ByQuery),
				chromedp.WaitVisible("#bulk-dialog[open]", chromedp.ByQuery),
			))
			require.Equal(t, "Cancel every task in this filter (status pending)?", text(ctx, t, "#bulk-title"))
			cost := text(ctx, t, "#bulk-cost")
			// Finding them reads every ready entry's task (a claimed task's
			// entry may linger until its reader drops it).
			if mode == "S3" {
				require.Regexp(t, `^30 tasks\. Requests: cancel 30 tasks: 30 GET \+ 30 PUT \+ 30 DELETE; finding them took 1 LIST \+ 3\d GET;`, cost)
			} else {
				require.Regexp(t, `^30 tasks\. Requests: 1 POST to qo serve, which plans: cancel 30 tasks: 30 PUT \+ 30 DELETE \(finding them took 1 LIST \+ 3\d GET\);`, cost)
			}
			require.Contains(t, cost, "at S3 Standard prices")
			require.Equal(t, "Cancel 30 tasks", text(ctx, t, "#bulk-go"))
			require.NoError(t, chromedp.Run(ctx,
				chromedp.Click("#bulk-go", chromedp.ByQuery),
				chromedp.Poll(`document.querySelector('#bulk-status')?.textContent === 'Done: 30 of 30'`, nil, chromedp.WithPollingTimeout(90*time.Second)),
			))
			require.Contains(t, text(ctx, t, "#bulk-progress"), "30 cancelled · 0 failed")
			for _, task := range pending {
				got, err := e.q.Get(bg, task.ID)
				require.NoError(t, err)
				require.Equal(t, queue.StatusCancelled, got.Status, task.ID)
				require.Equal(t, task.Rev+1, got.Rev, "one write each")
			}
			got, err := e.q.Get(bg, running.ID)
			require.NoError(t, err)
			require.Equal(t, queue.StatusRunning, got.Status)
			require.False(t, got.CancelRequested, "the filter was pending: a running task is left alone")
			got, err = e.q.Get(bg, dead[0].ID)
			require.NoError(t, err)
			require.Equal(t, queue.StatusFailed, got.Status)
			page, err := e.q.List(bg, queue.ListQuery{Status: queue.StatusPending, Limit: 100})
			require.NoError(t, err)
			require.Empty(t, page.Tasks, "no ready entry left behind")

			require.NoError(t, chromedp.Run(ctx,
				chromedp.Click("#tab-dead", chromedp.ByQuery),
				poll(`document.querySelectorAll('#tasks tr.row').length === 1 && document.querySelector('#tasks td.last-error') !== null`),
			))
			require.Equal(t, "resize: failed for good", text(ctx, t, row(dead[0])+" td.last-error"), "a dead letter shows its last error")
		})
	}
}

// TestWebUISearch: the search box (reached with /) by id prefix, by task
// type and by idempotency key, reading the bucket and through qo serve:
// results open the task detail, the view says what the search cost (and
// the page's count of what it sent matches), and #search= links work.
func TestWebUISearch(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"S3", "API"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			ctx := browser(t)
			e := wkSetup(t)
			bg := context.Background()
			failed := failMany(t, e, "email", 2)
			keyed, _, err := e.q.Submit(bg, queue.SubmitRequest{Type: "email", IdempotencyKey: "order-42", Input: json.RawMessage(`{"order":42}`),
				Metadata: map[string]string{"tenant": "acme", "batch": "7"}})
			require.NoError(t, err)
			resize, _, err := e.q.Submit(bg, queue.SubmitRequest{Type: "resize", AvailableAt: time.Now().Add(time.Hour)})
			require.NoError(t, err)
			done, _, err := e.q.Submit(bg, queue.SubmitRequest{Type: "email"})
			require.NoError(t, err)
			_, err = e.q.Complete(bg, claimNow(t, e, done), nil)
			require.NoError(t, err)

			link := pageLink(t, e, mode)
			search := func(query string) {
				t.Helper()
				require.NoError(t, chromedp.Run(ctx,
					chromedp.Evaluate(`document.querySelector('#search-info').replaceChildren()`, nil),
					chromedp.KeyEvent("/"),
					poll(`document.activeElement?.id === 'search'`),
					chromedp.Evaluate(`document.querySelector('#search').value = ''`, nil),
					chromedp.SendKeys("#search", query+kb.Enter, chromedp.ByQuery),
					poll(`(document.querySelector('#search-summary')?.textContent ?? '').includes(' found by ')`),
				), "search %q", query)
			}
			var location string
			require.NoError(t, chromedp.Run(ctx,
				chromedp.Navigate(link),
				chromedp.WaitVisible(`#types tr[data-type="email"]`, chromedp.ByQuery),
				noAutoRefresh(),
			))

			// An id's beginning: one task found, opened in the detail.
			id := keyed.ID.String()
			search(id[:23])
			require.NoError(t, chromedp.Run(ctx,
				poll(`document.querySelector('#detail h2')?.textContent === '`+id+`'`),
				chromedp.Location(&location),
			))
			require.Equal(t, "1 task found by id prefix.", text(ctx, t, "#search-summary"))
			cost := text(ctx, t, "#search-cost")
			if mode == "S3" {
				require.Equal(t, "Cost: 16 LIST (one per shard) + 1 GET per task shown (at most 20); when no id starts with it, 5 LIST for the ids ending with it (the short ids of the lists); this search sent 16 LIST + 1 GET.", cost)
			} else {
				require.Equal(t, "Cost: 1 request to qo serve (it makes 16 LIST (one per shard) + 1 GET per task shown (at most 20); when no id starts with it, 5 LIST for the ids ending with it (the short ids of the lists)); this search sent 1 GET to qo serve.", cost)
			}
			require.Contains(t, location, "view=search&search="+id[:23]+"&task="+id, "the address is a link to the search and its task")
			require.Contains(t, text(ctx, t, "#detail"), "order-42", "the detail shows the idempotency key")
			require.Contains(t, text(ctx, t, "#detail"), "batch=7 tenant=acme", "the detail shows the metadata")

			// A type: its pending, running and failed tasks, not the completed one.
			search("type:email")
			require.Equal(t, "3 tasks found by task type. dead letters of email", text(ctx, t, "#search-summary"))
			rows := text(ctx, t, "#tasks")
			for _, task := range append(failed, keyed) {
				require.Contains(t, rows, queue.ShortID(task.ID))
			}
			require.NotContains(t, rows, queue.ShortID(done.ID), "finished tasks are not found by type")
			require.Contains(t, text(ctx, t, "#search-note"), "finished and waiting tasks are not found by type")
			if mode == "S3" {
				require.Contains(t, text(ctx, t, "#search-cost"), "this search sent 3 LIST + 3 GET.")
				require.NoError(t, chromedp.Run(ctx, clickRow(failed[0]), poll(`document.querySelector('#detail h2')?.textContent === '`+failed[0].ID.String()+`'`)))
				screenshot(t, ctx, "search")
			}

			// An idempotency key: the task it made.
			search("key:email/order-42")
			require.NoError(t, chromedp.Run(ctx, poll(`document.querySelector('#detail h2')?.textContent === '`+id+`'`)))
			require.Equal(t, "1 task found by idempotency key.", text(ctx, t, "#search-summary"))
			if mode == "S3" {
				require.Contains(t, text(ctx, t, "#search-cost"), "this search sent 2 GET.")
			}
			search("key:resize/order-42")
			require.Equal(t, "0 tasks found by idempotency key.", text(ctx, t, "#search-summary"), "a key belongs to its type")

			// The short id the lists show is the id's end: it finds its task,
			// looked for in the id's shard only (16 LIST for the prefix, then
			// 5), and the detail copies the full id.
			search(queue.ShortID(failed[1].ID))
			require.NoError(t, chromedp.Run(ctx, poll(`document.querySelector('#detail h2')?.textContent === '`+failed[1].ID.String()+`'`)))
			require.Equal(t, "1 task found by id prefix.", text(ctx, t, "#search-summary"))
			if mode == "S3" {
				require.Contains(t, text(ctx, t, "#search-cost"), "this search sent 21 LIST + 1 GET.")
			}
			search("0000beef")
			require.Equal(t, "0 tasks found by id prefix.", text(ctx, t, "#search-summary"))
			require.Contains(t, text(ctx, t, "#search-note"), "ends with it")

			// A link to a search, pasted into the tab, and opened in a new one.
			require.NoError(t, chromedp.Run(ctx,
				chromedp.Evaluate(`location.hash = '#search=type:resize'`, nil),
				chromedp.WaitVisible(row(resize), chromedp.ByQuery),
			))
			tab, closeTab := chromedp.NewContext(ctx)
			defer closeTab()
			require.NoError(t, chromedp.Run(tab,
				chromedp.Navigate(link+"&search=key:email/order-42"),
				poll(`document.querySelector('#detail h2')?.textContent === '`+id+`'`),
			))
		})
	}
}

// TestWebUIFleetRate: the overview shows the workers' S3 request rate and
// what an hour of it costs, from the counters in their heartbeats, as qo
// tui does, reading the bucket and through qo serve.
func TestWebUIFleetRate(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"S3", "API"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			ctx := browser(t)
			e := wkSetup(t)
			bg := context.Background()
			var echo, fail []*queue.Task
			for i := range 30 {
				task, _, err := e.q.Submit(bg, queue.SubmitRequest{Type: "echo", Input: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))})
				require.NoError(t, err)
				echo = append(echo, task)
			}
			zero := 0
			for range 3 {
				task, _, err := e.q.Submit(bg, queue.SubmitRequest{Type: "fail", MaxRetries: &zero})
				require.NoError(t, err)
				fail = append(fail, task)
			}
			for range 4 {
				_, _, err := e.q.Submit(bg, queue.SubmitRequest{Type: "report", AvailableAt: time.Now().Add(time.Hour)})
				require.NoError(t, err)
			}
			slow, _, err := e.q.Submit(bg, queue.SubmitRequest{Type: "sleep", Input: json.RawMessage(`{"ms":120000}`)})
			require.NoError(t, err)
			e.start(t, "worker", workerArgs("fleet-"+uuid.NewString()[:6], "--builtins", "--types", "echo,sleep,fail", "--concurrency", "4")...)
			e.waitTask(t, slow.ID, "running", func(t *queue.Task) bool { return t.Status == queue.StatusRunning })
			for _, task := range echo {
				e.waitTask(t, task.ID, "completed", func(t *queue.Task) bool { return t.Status == queue.StatusCompleted })
			}
			for _, task := range fail {
				e.waitTask(t, task.ID, "failed", func(t *queue.Task) bool { return t.Status == queue.StatusFailed })
			}

			// Two refreshes a little apart give a rate: refresh until it shows.
			rate := `#counts [data-count="requests"]`
			err = chromedp.Run(ctx,
				chromedp.Navigate(pageLink(t, e, mode)),
				chromedp.WaitVisible(rate, chromedp.ByQuery),
				chromedp.Poll(`(document.querySelector('#refresh-now').click(), /^\d+\.\d req\/s$/.test(document.querySelector('`+rate+` .big').textContent))`,
					nil, chromedp.WithPollingInterval(1500*time.Millisecond), chromedp.WithPollingTimeout(60*time.Second)),
				poll(`document.querySelector('#counts [data-count="failed"] .big').textContent === '3'`),
			)
			require.NoError(t, err, "counts: %s; status: %s", text(ctx, t, "#counts"), text(ctx, t, "#status"))
			card := text(ctx, t, rate)
			m := regexp.MustCompile(`^(\d+\.\d) req/sS3 requests≈ \$(\d+\.\d+)/hour$`).FindStringSubmatch(card)
			require.NotNil(t, m, "the rate card: %q", card)
			require.NotEqual(t, "0.0", m[1], "a polling worker sends requests")
			var title string
			require.NoError(t, chromedp.Run(ctx, chromedp.Evaluate(`document.querySelector('`+rate+`').title`, &title)))
			require.Contains(t, title, "heartbeats")
			require.Contains(t, title, "S3 Standard")
			if mode == "S3" {
				screenshot(t, ctx, "overview")
			}
		})
	}
}

// wide lists what sticks out of the screen (outside the tables and
// graphs that scroll in their own box).
const wide = `(() => {
  const w = document.documentElement.clientWidth;
  const out = [];
  for (const el of document.querySelectorAll('body *')) {
    if (el.closest('.scroll') || el.closest('[hidden]') || el.closest('dialog:not([open])')) continue;
    const r = el.getBoundingClientRect();
    if (r.width > 0 && r.right > w + 1) out.push((el.id ? '#' + el.id : el.tagName.toLowerCase() + '.' + el.className) + ' ' + Math.round(r.right));
  }
  return (document.documentElement.scrollWidth > w ? ['page ' + document.documentElement.scrollWidth + ' > ' + w] : []).concat(out.slice(0, 5)).join(', ');
})()`

// TestWebUIPhoneAndTheme: at a phone's width (390 px) no view is wider
// than the screen, and the page is dark when the system asks for it
// (prefers-color-scheme), light otherwise.
func TestWebUIPhoneAndTheme(t *testing.T) {
	t.Parallel()
	ctx := browser(t)
	e := wkSetup(t)
	bg := context.Background()
	failed := failMany(t, e, "send_email", 2)
	for range 3 {
		_, _, err := e.q.Submit(bg, queue.SubmitRequest{Type: "thumbnail.resize", AvailableAt: time.Now().Add(time.Hour), Priority: queue.PriorityHigh})
		require.NoError(t, err)
	}
	_, err := schedule.Create(bg, e.q, schedule.Spec{Name: "nightly-report", Cron: "30 2 * * *", Timezone: "Europe/Berlin", Task: schedule.Task{Type: "report"}})
	require.NoError(t, err)
	slow, _, err := e.q.Submit(bg, queue.SubmitRequest{Type: "sleep", Input: json.RawMessage(`{"ms":120000}`)})
	require.NoError(t, err)
	e.start(t, "worker", workerArgs("phone-worker-"+uuid.NewString()[:6], "--builtins", "--types", "sleep")...)
	e.waitTask(t, slow.ID, "running", func(t *queue.Task) bool { return t.Status == queue.StatusRunning })
	link := uiLink(t, e)

	require.NoError(t, chromedp.Run(ctx,
		chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile),
		chromedp.Navigate(link),
		chromedp.WaitVisible(`#types tr[data-type="send_email"]`, chromedp.ByQuery),
		poll(`document.querySelector('#refreshed').textContent.startsWith('last refreshed')`),
	))
	on := func(tab string) string { return `document.querySelector('#tab-` + tab + `').classList.contains('on')` }
	views := []struct{ name, hash, ready string }{
		{"overview", "#view=overview", on("overview") + ` && !!document.querySelector('#types tr[data-type="send_email"]')`},
		{"tasks", "#view=tasks", on("tasks") + ` && !!document.querySelector('` + row(failed[0]) + `')`},
		{"task detail", "#view=tasks&task=" + failed[0].ID.String(), `document.querySelector('#detail h2')?.textContent === '` + failed[0].ID.String() + `' && !!document.querySelector('#timeline tr.version')`},
		{"dead letters", "#view=dead&type=send_email", on("dead") + ` && !document.querySelector('#bulk-replay-type').hidden && !!document.querySelector('` + row(failed[0]) + `')`},
		{"search", "#search=type:send_email", `(document.querySelector('#search-summary')?.textContent ?? '').startsWith('2 tasks found')`},
		{"workers", "#view=workers", on("workers") + ` && !!document.querySelector('#workers tr.worker')`},
		{"schedules", "#view=schedules", on("schedules") + ` && !!document.querySelector('#schedules tr.schedule')`},
	}
	for _, v := range views {
		var over string
		require.NoError(t, chromedp.Run(ctx,
			chromedp.Evaluate(`location.hash = `+jsString(v.hash), nil),
			poll(v.ready),
			chromedp.Evaluate(wide, &over),
		), v.name)
		require.Empty(t, over, "%s is wider than a 390 px screen", v.name)
		if v.name == "overview" {
			screenshot(t, ctx, "phone")
		}
	}
	// The bulk confirmation fits too.
	var over string
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Evaluate(`location.hash = '#view=dead&type=send_email'`, nil),
		chromedp.WaitVisible(`#bulk-replay-type:not([hidden])`, chromedp.ByQuery),
		chromedp.Click("#bulk-replay-type", chromedp.ByQuery),
		chromedp.WaitVisible("#bulk-dialog[open]", chromedp.ByQuery),
		chromedp.Evaluate(wide, &over),
		chromedp.Click("#bulk-cancel", chromedp.ByQuery),
	))
	require.Empty(t, over, "the bulk confirmation is wider than a 390 px screen")

	// The theme follows prefers-color-scheme.
	background := func(scheme string) string {
		var bgColor string
		require.NoError(t, chromedp.Run(ctx,
			emulation.SetEmulatedMedia().WithFeatures([]*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}}),
			chromedp.Evaluate(`getComputedStyle(document.body).backgroundColor`, &bgColor),
		))
		return bgColor
	}
	require.NoError(t, chromedp.Run(ctx,
		chromedp.EmulateViewport(1280, 720),
		chromedp.Evaluate(`location.hash = '#view=dead&task=`+failed[0].ID.String()+`'`, nil),
		poll(`document.querySelector('#detail h2')?.textContent === '`+failed[0].ID.String()+`'`),
	))
	require.Equal(t, "rgb(13, 17, 23)", background("dark"), "dark when the system asks for it")
	var fg string
	require.NoError(t, chromedp.Run(ctx, chromedp.Evaluate(`getComputedStyle(document.body).color`, &fg)))
	require.Equal(t, "rgb(230, 237, 243)", fg)
	screenshot(t, ctx, "dark")
	require.Equal(t, "rgb(255, 255, 255)", background("light"), "light otherwise")
}

// TestWebUISelectionAndCopyID: in Chromium, the selected task stays
// selected (by id) when a refresh brings newer tasks above it, the cancel
// button acts on it, and the detail copies its full id.
func TestWebUISelectionAndCopyID(t *testing.T) {
	t.Parallel()
	ctx := browser(t)
	e := wkSetup(t)
	bg := context.Background()
	var tasks []*queue.Task
	submit := func() {
		task, _, err := e.q.Submit(bg, queue.SubmitRequest{Type: "resize", Input: json.RawMessage(fmt.Sprintf(`{"n":%d}`, len(tasks)))})
		require.NoError(t, err)
		tasks = append(tasks, task)
	}
	for range 4 {
		submit()
	}
	chosen := tasks[1]
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Navigate(uiLink(t, e)),
		chromedp.WaitVisible(`#types tr[data-type="resize"]`, chromedp.ByQuery),
		noAutoRefresh(),
		chromedp.Click("#tab-tasks", chromedp.ByQuery),
		chromedp.WaitVisible(row(chosen), chromedp.ByQuery),
		clickRow(chosen),
		poll(`document.querySelector('#detail h2')?.textContent === '`+chosen.ID.String()+`'`),
	))
	for range 3 {
		submit()
	}
	require.NoError(t, chromedp.Run(ctx,
		chromedp.KeyEvent("r"),
		chromedp.WaitVisible(row(tasks[6]), chromedp.ByQuery),
		poll(`document.querySelector('#tasks tr.sel')?.dataset.id === '`+chosen.ID.String()+`'`),
		chromedp.Evaluate(`navigator.clipboard.writeText = async (s) => { window.copied = s; }`, nil),
		chromedp.Click("#copy-id", chromedp.ByQuery),
		poll(`window.copied === '`+chosen.ID.String()+`'`),
		chromedp.Click("#act-cancel", chromedp.ByQuery), // the confirm() is accepted by browser()
	))
	testutil.Poll{Limit: 30 * time.Second, Every: 100 * time.Millisecond}.Until(t, func() bool {
		got, err := e.q.Get(bg, chosen.ID)
		return err == nil && got.Status == queue.StatusCancelled
	}, "the chosen task to be cancelled")
	for _, task := range tasks {
		if task.ID != chosen.ID {
			got, err := e.q.Get(bg, task.ID)
			require.NoError(t, err)
			require.Equal(t, queue.StatusPending, got.Status, "only the chosen task is cancelled")
		}
	}
}

// TestWebUIReadOnlyServer: through qo serve --readonly the page says it is
// read-only and offers no action; the server refuses one sent anyway.
func TestWebUIReadOnlyServer(t *testing.T) {
	t.Parallel()
	ctx := browser(t)
	e := wkSetup(t)
	failed := failMany(t, e, "email", 1)[0]
	srv := startServe(t, e, "--readonly")
	var shown, actions, toggles, checks int
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Navigate(srv.ui),
		chromedp.WaitVisible(`#types tr[data-type="email"]`, chromedp.ByQuery),
		noAutoRefresh(),
		poll(`!document.querySelector('#readonly-note').hidden`),
		chromedp.Evaluate(`[...document.querySelectorAll('#types button.toggle, #pause-all')].filter((b) => b.offsetParent !== null).length`, &toggles),
		chromedp.Click("#tab-dead", chromedp.ByQuery),
		chromedp.WaitVisible(row(failed), chromedp.ByQuery),
		chromedp.Evaluate(`[...document.querySelectorAll('td.check, #bulk-replay-checked')].filter((b) => b.offsetParent !== null).length`, &checks),
		clickRow(failed),
		poll(`document.querySelector('#detail h2')?.textContent === '`+failed.ID.String()+`'`),
		chromedp.Evaluate(`document.querySelectorAll('#detail [id^="act-"]').length`, &shown),
		chromedp.Evaluate(`[...document.querySelectorAll('#detail [id^="act-"]')].filter((b) => b.offsetParent !== null).length`, &actions),
	))
	require.Contains(t, text(ctx, t, "#readonly-note"), "READ-ONLY")
	require.Positive(t, shown, "the actions are drawn (a failed task may be replayed)...")
	require.Zero(t, actions, "...but none is offered")
	require.Zero(t, toggles, "no pause switch")
	require.Zero(t, checks, "no bulk action")
	screenshot(t, ctx, "readonly")
}
