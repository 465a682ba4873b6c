//go:build unix

package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	cdpruntime "github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/internal/testutil"
	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/queue/control"
	"github.com/qo-queue/qo/queue/schedule"
)

const chromiumPath = "/usr/bin/chromium"

// uiLink starts qo ui serve on e's bucket and returns a link to it with
// operator credentials from MinIO's STS in its fragment (qo ui url
// --operator): one that may be opened again, in other tabs. What qo ui
// serve itself prints (a one-time code) is tested on its own.
func uiLink(t *testing.T, e *wkEnv, extra ...string) string {
	t.Helper()
	link, p := uiServe(t, e, "--no-credentials")
	base, _, _ := strings.Cut(link, "#")
	r := qo(t, e.env, append([]string{"ui", "url", "--base", base, "--operator"}, extra...)...)
	require.Equal(t, 0, r.code, "%s\nqo ui serve:\n%s", r.String(), p)
	return strings.TrimSpace(r.stdout)
}

// uiServe runs qo ui serve with args on a free loopback port and returns
// the link it prints and its stderr.
func uiServe(t *testing.T, e *wkEnv, args ...string) (string, *testutil.Buffer) {
	t.Helper()
	cmd := exec.Command(wkBinary(t), append([]string{"ui", "serve", "--addr", "127.0.0.1:0"}, args...)...)
	cmd.Env = e.env
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	var stderr testutil.Buffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	link, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err, stderr.String())
	testutil.Poll{Limit: 10 * time.Second, Every: 20 * time.Millisecond}.Until(t,
		func() bool { return strings.Contains(stderr.String(), "serving the web UI") },
		"the serving line on stderr; it holds:\n%s", &stderr)
	return strings.TrimSpace(link), &stderr
}

// browser starts headless Chromium (Debian's) and returns a context for
// chromedp actions; JavaScript dialogs (confirm) are accepted.
func browser(t *testing.T) context.Context {
	t.Helper()
	// Not t.TempDir: Chromium may still write its profile for a moment
	// after the browser is told to stop, which fails t.TempDir's check.
	profile, err := os.MkdirTemp("", "qo-chromium-")
	require.NoError(t, err)
	return browserIn(t, profile)
}

// browserIn is browser with its profile in the directory profile, which
// it removes at the end of the test.
func browserIn(t *testing.T, profile string) context.Context {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err != nil {
		if os.Getenv("QO_TEST_REQUIRE_S3") == "1" {
			t.Fatalf("chromium is not installed at %s (scripts/test.sh installs it)", chromiumPath)
		}
		t.Skip("chromium is not installed")
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck, chromedp.UserDataDir(profile), chromedp.WindowSize(1280, 720),
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	// chromedp logs DOM events it does not know; the page's <dialog>
	// (the top layer) sends one it need not know about.
	ctx, cancelCtx := chromedp.NewContext(actx, chromedp.WithErrorf(func(format string, args ...any) {
		if msg := fmt.Sprintf(format, args...); !strings.Contains(msg, "EventTopLayerElementsUpdated") {
			log.Print(msg)
		}
	}))
	ctx, cancelTimeout := context.WithTimeout(ctx, 3*time.Minute)
	t.Cleanup(func() {
		cancelTimeout()
		cancelCtx()
		cancelAlloc()
		for i := 0; i < 50 && os.RemoveAll(profile) != nil; i++ {
			time.Sleep(100 * time.Millisecond)
		}
	})
	chromedp.ListenTarget(ctx, func(ev any) {
		if _, ok := ev.(*page.EventJavascriptDialogOpening); ok {
			go func() { _ = chromedp.Run(ctx, page.HandleJavaScriptDialog(true)) }()
		}
	})
	// The window's size includes what headless Chromium keeps of its
	// frame: set the page's viewport itself (the size of the screenshots).
	require.NoError(t, chromedp.Run(ctx, chromedp.EmulateViewport(1280, 720))) // starts the browser
	return ctx
}

// artifacts is where screenshots go: $QO_TEST_ARTIFACTS or a temp dir.
func artifacts(t *testing.T) string {
	dir := os.Getenv("QO_TEST_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "qo-test-artifacts")
	}
	require.NoError(t, os.MkdirAll(dir, 0o755))
	return dir
}

// docScreenshots are the screenshots docs/webui.md shows, by name and
// file in docs/images, taken by the test run so they show the page as it
// is: with QO_UPDATE_SCREENSHOTS=1, screenshot writes them there too (the
// viewport only, to keep them small); without it, never. (The task
// detail keeps the name the README links to.)
var docScreenshots = map[string]string{
	"overview": "webui-overview.png", "tasks": "webui-tasks.png", "task": "webui.png", "dead-bulk": "webui-dead-bulk.png",
	"search": "webui-search.png", "workers": "webui-workers.png", "schedules": "webui-schedules.png",
	"phone": "webui-phone.png", "dark": "webui-dark.png", "workflow": "webui-workflow.png",
}

func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	screenshotAt(t, ctx, name, "window.scrollTo(0, 0)")
}

// screenshotAt is screenshot with the page scrolled by the JavaScript
// scroll first, for the docs' viewport-sized picture.
func screenshotAt(t *testing.T, ctx context.Context, name, scroll string) {
	t.Helper()
	var png []byte
	require.NoError(t, chromedp.Run(ctx, chromedp.FullScreenshot(&png, 100)))
	path := filepath.Join(artifacts(t), "webui-"+name+".png")
	require.NoError(t, os.WriteFile(path, png, 0o644))
	t.Logf("screenshot: %s", path)
	if file := docScreenshots[name]; file != "" && os.Getenv("QO_UPDATE_SCREENSHOTS") == "1" {
		var shot []byte
		require.NoError(t, chromedp.Run(ctx, chromedp.Evaluate(scroll, nil), chromedp.CaptureScreenshot(&shot)))
		require.NoError(t, os.WriteFile(filepath.Join("..", "docs", "images", file), shot, 0o644))
	}
}

// TestWebUIInChromium serves the UI with the real binary and drives it in
// headless Chromium against MinIO, with tasks in every state and a live
// worker: list, detail, timeline, a replay seen through qo status, the
// workers view, and task input shown as text, never as markup.
func TestWebUIInChromium(t *testing.T) {
	t.Parallel()
	ctx := browser(t)
	e := wkSetup(t)
	bg := context.Background()
	submit := func(typ, input string, mod func(*queue.SubmitRequest)) *queue.Task {
		req := queue.SubmitRequest{Type: typ, Input: json.RawMessage(input)}
		if mod != nil {
			mod(&req)
		}
		task, _, err := e.q.Submit(bg, req)
		require.NoError(t, err)
		return task
	}
	done := submit("report", `{"month":"2030-01"}`, nil)
	_, err := e.q.Complete(bg, claimNow(t, e, done), json.RawMessage(`{"rows":3}`))
	require.NoError(t, err)
	failed := submit("report", `{"month":"bad"}`, nil)
	_, err = e.q.Fail(bg, claimNow(t, e, failed), "report: no such month")
	require.NoError(t, err)
	cancelled := submit("report", `{}`, nil)
	_, err = e.q.Cancel(bg, cancelled.ID, "not needed")
	require.NoError(t, err)
	archived := submit("report", `{}`, nil)
	_, err = e.q.Complete(bg, claimNow(t, e, archived), nil)
	require.NoError(t, err)
	_, err = e.q.Archive(bg, archived.ID)
	require.NoError(t, err)
	submit("report", `{}`, func(r *queue.SubmitRequest) { r.AvailableAt = time.Now().Add(time.Hour) }) // pending, later
	evil := submit("report", `{"html":"<script>window.pwned=1</script><img src=x onerror=window.pwned=2>"}`,
		func(r *queue.SubmitRequest) { r.AvailableAt = time.Now().Add(time.Hour) })
	slow := submit("sleep", `{"ms":60000}`, nil)   // the worker will be running it
	_, err = control.SetLimit(bg, e.q, "sleep", 3) // the worker holds its share of it
	require.NoError(t, err)

	workerID := "ui-worker-" + uuid.NewString()[:6]
	e.start(t, "worker", workerArgs(workerID, "--builtins", "--types", "sleep")...)
	e.waitTask(t, slow.ID, "running", func(t *queue.Task) bool { return t.Status == queue.StatusRunning })

	link := uiLink(t, e)
	require.Contains(t, link, "endpoint=")
	require.Contains(t, link, "st=", "short-lived credentials with a session token")

	short := func(task *queue.Task) string { return queue.ShortID(task.ID) }
	var text string
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Navigate(link+"&view=tasks"),
		chromedp.WaitVisible(row(failed), chromedp.ByQuery),
		chromedp.Text("#tasks", &text, chromedp.ByQuery),
	))
	for _, task := range []*queue.Task{done, failed, cancelled, slow} {
		require.Contains(t, text, short(task))
	}
	require.NotContains(t, text, short(archived), "archived tasks are hidden by default")
	require.Contains(t, text, "lease", "the running task shows its lease countdown")
	require.Contains(t, text, "runs in", "the delayed task shows its countdown")
	var location string
	require.NoError(t, chromedp.Run(ctx, chromedp.Location(&location)))
	require.NotContains(t, location, "sk=", "the credentials leave the address bar")
	require.NoError(t, chromedp.Run(ctx, chromedp.Text("#expiry", &text, chromedp.ByQuery)))
	require.Contains(t, text, "credentials expire in", "the page shows when its credentials expire")
	screenshot(t, ctx, "tasks")

	// The failed task: detail, timeline, diff, replay.
	require.NoError(t, chromedp.Run(ctx,
		clickRow(failed),
		chromedp.WaitVisible("#timeline tr.version", chromedp.ByQuery),
		chromedp.Text("#detail", &text, chromedp.ByQuery),
	))
	require.Contains(t, text, "report: no such month")
	require.Contains(t, text, "Timeline (3 versions)")
	for _, ev := range []string{"enqueued", "claimed", "failed"} {
		require.Contains(t, text, ev)
	}
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Click(`#timeline tr.version:nth-of-type(2) input`, chromedp.ByQuery),
		chromedp.Click(`#timeline tr.version:nth-of-type(4) input`, chromedp.ByQuery),
		chromedp.Click("#diff-btn", chromedp.ByQuery),
		chromedp.WaitVisible("#diff", chromedp.ByQuery),
		chromedp.Text("#diff", &text, chromedp.ByQuery),
	))
	require.Contains(t, text, `+   "status": "failed"`)
	screenshotAt(t, ctx, "task", `document.querySelector('#diff').scrollIntoView({block: 'end'})`)
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Click("#act-replay", chromedp.ByQuery),
		chromedp.Poll(`document.querySelector('#status').textContent.length > 0`, nil, chromedp.WithPollingTimeout(30*time.Second)),
		chromedp.Text("#status", &text, chromedp.ByQuery),
	))
	require.Contains(t, text, "is now pending")
	r := qo(t, e.env, "status", failed.ID.String(), "--json")
	require.Equal(t, 0, r.code, r.String())
	var got queue.Task
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &got))
	require.Equal(t, queue.StatusPending, got.Status, "qo status sees the replay")
	require.Equal(t, "replayed", got.LastEvent)
	entries, _, err := e.q.ListReady(bg, queue.ReadyQuery{Types: []string{"report"}})
	require.NoError(t, err)
	found := false
	for _, en := range entries {
		found = found || en.ID == failed.ID
	}
	require.True(t, found, "the replay wrote the ready index entry, as the Go code does")

	// Task input is text, never markup.
	var pwned bool
	var scripts int
	require.NoError(t, chromedp.Run(ctx,
		clickRow(evil),
		chromedp.Poll(`document.querySelector('#detail h2')?.textContent === `+"'"+evil.ID.String()+"'", nil,
			chromedp.WithPollingTimeout(30*time.Second)),
		chromedp.Sleep(300*time.Millisecond), // time for injected markup to run, were there any
		chromedp.Text("#data", &text, chromedp.ByQuery),
		chromedp.Evaluate(`Boolean(window.pwned)`, &pwned),
		chromedp.Evaluate(`document.querySelectorAll('#detail script, #detail img').length`, &scripts),
	))
	require.Contains(t, text, "<script>window.pwned=1</script>")
	require.False(t, pwned, "task input ran as script")
	require.Zero(t, scripts, "task input became elements")

	// The workers view shows the running worker.
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Click("#tab-workers", chromedp.ByQuery),
		chromedp.WaitVisible("#workers tr.worker", chromedp.ByQuery),
		chromedp.Text("#workers", &text, chromedp.ByQuery),
	))
	require.Contains(t, text, workerID)
	require.Contains(t, text, "active")
	require.Contains(t, text, "sleep 3 of its cap", "its share of the fleet-wide cap")
	screenshot(t, ctx, "workers")
}

// TestWebUITaskDetailsPauseAndSchedules: priorities, the expired status, a payload stored in
// its own object, the pause banner and the schedules view, in Chromium.
func TestWebUITaskDetailsPauseAndSchedules(t *testing.T) {
	t.Parallel()
	ctx := browser(t)
	e := wkSetup(t)
	bg := context.Background()
	later := time.Now().Add(time.Hour)
	high, _, err := e.q.Submit(bg, queue.SubmitRequest{Type: "report", Priority: queue.PriorityHigh, AvailableAt: later})
	require.NoError(t, err)
	big := `{"blob":"` + strings.Repeat("q", queue.DefaultOffloadThreshold) + `"}`
	offloaded, _, err := e.q.Submit(bg, queue.SubmitRequest{Type: "report", Input: json.RawMessage(big), AvailableAt: later})
	require.NoError(t, err)
	require.NotNil(t, offloaded.InputRef)
	_, err = control.Pause(bg, e.q, "report", "month end")
	require.NoError(t, err)
	_, err = schedule.Create(bg, e.q, schedule.Spec{Name: "nightly", Cron: "30 2 * * *", Timezone: "Europe/Berlin", Task: schedule.Task{Type: "report"}})
	require.NoError(t, err)

	var tasks, banner, data string
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Navigate(uiLink(t, e)+"&view=tasks"),
		chromedp.WaitVisible(row(high), chromedp.ByQuery),
		chromedp.WaitVisible("#paused", chromedp.ByQuery),
		chromedp.Text("#tasks", &tasks, chromedp.ByQuery),
		chromedp.Text("#paused", &banner, chromedp.ByQuery),
		clickRow(offloaded),
		chromedp.WaitVisible("#data .offloaded", chromedp.ByQuery),
		chromedp.Text("#data", &data, chromedp.ByQuery),
	))
	require.Contains(t, tasks, "high", "the list shows priorities")
	require.Contains(t, banner, "report (month end)", "the paused type is named with its reason")
	require.Contains(t, data, "offloaded: ", "the detail says where the input lives")
	require.Contains(t, data, strings.Repeat("q", 100), "and shows it, loaded from its own object")

	var schedules string
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Click("#tab-schedules", chromedp.ByQuery),
		chromedp.WaitVisible("#schedules tr.schedule", chromedp.ByQuery),
		chromedp.Text("#schedules", &schedules, chromedp.ByQuery),
	))
	require.Contains(t, schedules, "nightly")
	require.Contains(t, schedules, "Europe/Berlin")
	screenshot(t, ctx, "schedules")
}

// claimNow claims a task for a made-up worker, as a worker would.
func claimNow(t *testing.T, e *wkEnv, task *queue.Task) *queue.Lease {
	t.Helper()
	entry, err := queue.ParseReadyKey(queue.ReadyKey(task))
	require.NoError(t, err)
	var l *queue.Lease
	testutil.Poll{Limit: 10 * time.Second, Every: 50 * time.Millisecond}.Until(t,
		func() bool { l, err = e.q.Claim(context.Background(), entry, "e2e-setup"); return err == nil },
		"a claim of %s (last: %s)", task.ID, testutil.Lazy(func() string { return fmt.Sprint(err) }))
	return l
}

// row selects a task's row in the task list.
func row(task *queue.Task) string { return `tr[data-id="` + task.ID.String() + `"]` }

// clickRow clicks a task's row, again when the list re-rendered between
// finding the row and clicking it (auto-refresh replaces the rows).
func clickRow(t *queue.Task) chromedp.ActionFunc {
	return func(ctx context.Context) error {
		var err error
		for range 5 {
			if err = chromedp.Click(row(t), chromedp.ByQuery).Do(ctx); err == nil || !strings.Contains(err.Error(), "Could not find node") {
				return err
			}
			time.Sleep(100 * time.Millisecond)
		}
		return err
	}
}

// TestWebUISecondLink opens a second link (another bucket, other
// credentials) in a tab already on the page: the page switches to the new
// bucket with the new credentials and clears the address bar again.
func TestWebUISecondLink(t *testing.T) {
	t.Parallel()
	ctx := browser(t)
	first, second := wkSetup(t), wkSetup(t)
	bg := context.Background()
	later := time.Now().Add(time.Hour)
	inFirst, _, err := first.q.Submit(bg, queue.SubmitRequest{Type: "first-bucket", AvailableAt: later})
	require.NoError(t, err)
	inSecond, _, err := second.q.Submit(bg, queue.SubmitRequest{Type: "second-bucket", AvailableAt: later})
	require.NoError(t, err)

	link := uiLink(t, first)
	base, _, _ := strings.Cut(link, "#")
	r := qo(t, second.env, "ui", "url", "--base", base)
	require.Equal(t, 0, r.code, r.String())
	link2 := strings.TrimSpace(r.stdout)
	require.NotEqual(t, link, link2)
	require.Contains(t, link2, "bucket="+second.s.Bucket())

	require.NoError(t, chromedp.Run(ctx,
		chromedp.Navigate(link+"&view=tasks"),
		chromedp.WaitVisible(row(inFirst), chromedp.ByQuery),
	))
	// Same page, new fragment: the browser does not reload, it fires
	// hashchange.
	js, err := json.Marshal(link2 + "&view=tasks")
	require.NoError(t, err)
	wait, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var where, tasks, location string
	require.NoError(t, chromedp.Run(wait,
		chromedp.Evaluate(`location.href = `+string(js), nil),
		chromedp.WaitVisible(row(inSecond), chromedp.ByQuery),
		chromedp.Text("#where", &where, chromedp.ByQuery),
		chromedp.Text("#tasks", &tasks, chromedp.ByQuery),
		chromedp.Location(&location),
	), "the page did not switch to the second link's bucket")
	require.Contains(t, where, second.s.Bucket())
	require.NotContains(t, tasks, queue.ShortID(inFirst.ID), "the first bucket's tasks are gone")
	// The address keeps where the queue is and the view, no credential.
	require.True(t, strings.HasPrefix(location, base+"#"), location)
	require.Contains(t, location, "bucket="+second.s.Bucket()+"&")
	require.Contains(t, location, "view=tasks")
	for _, secret := range []string{"ak=", "sk=", "st=", "exp="} {
		require.NotContains(t, location, secret, "the second link's credentials leave the address bar too")
	}
}

// TestWebUIThroughAPI opens the link qo serve prints (its token in the
// fragment) in Chromium: the page lists tasks through the API, the token
// leaves the address bar, and a replay (a write without a body) passes the
// API's write rules.
func TestWebUIThroughAPI(t *testing.T) {
	t.Parallel()
	ctx := browser(t)
	e := wkSetup(t)
	bg := context.Background()
	failed, _, err := e.q.Submit(bg, queue.SubmitRequest{Type: "report", Input: json.RawMessage(`{"month":"bad"}`)})
	require.NoError(t, err)
	_, err = e.q.Fail(bg, claimNow(t, e, failed), "report: no such month")
	require.NoError(t, err)

	s := startServe(t, e)
	require.NotEmpty(t, s.token, s.p.out.String())
	require.Contains(t, s.ui, "#api=/&code=")
	console := watchConsole(t, ctx)
	var text, location string
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Navigate(s.ui+"&view=tasks"),
		chromedp.WaitVisible(row(failed), chromedp.ByQuery),
		chromedp.Location(&location),
	))
	require.NotContains(t, location, "code=", "the one-time code leaves the address bar")
	require.NoError(t, chromedp.Run(ctx,
		clickRow(failed),
		chromedp.WaitVisible("#act-replay", chromedp.ByQuery),
		chromedp.Click("#act-replay", chromedp.ByQuery),
		chromedp.Poll(`document.querySelector('#status').textContent.length > 0`, nil, chromedp.WithPollingTimeout(30*time.Second)),
		chromedp.Text("#status", &text, chromedp.ByQuery),
	))
	require.Contains(t, text, "is now pending", s.p.out.String())
	got, err := e.q.Get(bg, failed.ID)
	require.NoError(t, err)
	require.Equal(t, queue.StatusPending, got.Status, "the replay went through the API")

	// The page qo serve sends may talk to this API only: its own origin,
	// without a violation, and nowhere else.
	require.Equal(t, "", evalString(ctx, t, `window.__csp.join('\n')`), "no CSP violation")
	require.Empty(t, console.matching("exception: "))
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Evaluate(`fetch('http://127.0.0.1:9/x').catch(() => {}); 0`, nil),
		chromedp.Poll(`window.__csp.some((v) => v.startsWith('connect-src'))`, nil, chromedp.WithPollingTimeout(30*time.Second)),
	))
}

// TestServeRefusesCrossSitePages: a page of another site the operator
// visits sends simple no-cors POSTs (text/plain bodies, no preflight) to qo
// serve on 127.0.0.1, even one without a token (--no-auth): the API
// refuses them and the queue is untouched.
func TestServeRefusesCrossSitePages(t *testing.T) {
	t.Parallel()
	ctx := browser(t)
	e := wkSetup(t)
	s := startServe(t, e, "--no-auth")
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = w.Write([]byte(`<!doctype html><title>cat pictures</title>`))
	}))
	t.Cleanup(evil.Close)
	// localhost is another site than 127.0.0.1.
	site := strings.Replace(evil.URL, "127.0.0.1", "localhost", 1)
	attack := `(async () => {
	  const out = [];
	  for (const [path, body] of [['/api/pause', '{"reason":"pwned"}'], ['/api/tasks', '{"type":"echo","input":{"pwned":1}}'], ['/api/resume', '']]) {
	    try { await fetch('` + s.base + `' + path, { method: 'POST', mode: 'no-cors', body }); out.push('sent'); }
	    catch (e) { out.push(String(e)); }
	  }
	  return out.join(',');
	})()`
	var res string
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Navigate(site),
		chromedp.Evaluate(attack, &res, func(p *cdpruntime.EvaluateParams) *cdpruntime.EvaluateParams { return p.WithAwaitPromise(true) }),
	))
	require.Equal(t, "sent,sent,sent", res)
	// The requests reached the server and were refused.
	for _, path := range []string{"/api/pause", "/api/tasks", "/api/resume"} {
		testutil.Poll{Limit: 10 * time.Second, Every: 20 * time.Millisecond}.Until(t, func() bool {
			return strings.Contains(s.p.out.String(), `"method":"POST","path":"`+path+`","status":403`)
		}, "POST %s refused with 403; output:\n%s", path, s.p.out)
	}
	c, err := control.Read(context.Background(), e.q)
	require.NoError(t, err)
	require.False(t, c.Paused, "the page paused the queue")
	entries, _, err := e.q.ListReady(context.Background(), queue.ReadyQuery{Types: []string{"echo"}})
	require.NoError(t, err)
	require.Empty(t, entries, "the page submitted a task")
}

// TestWebUIOverview opens the page on its landing view, reading the bucket
// directly and through qo serve, with tasks of two types: the counts and
// the per-type table, a pause of one type from its toggle (seen in
// control.json through the queue API) and its resume, the views by
// keyboard, and a #task=ID deep link pasted into the tab.
func TestWebUIOverview(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"S3", "API"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			ctx := browser(t)
			e := wkSetup(t)
			bg := context.Background()
			submit := func(typ string) *queue.Task {
				task, _, err := e.q.Submit(bg, queue.SubmitRequest{Type: typ, Input: json.RawMessage(`{}`)})
				require.NoError(t, err)
				return task
			}
			// email: 3 waiting and 1 failed; resize: 2 waiting and 1 running.
			failed := submit("email")
			_, err := e.q.Fail(bg, claimNow(t, e, failed), "smtp: 550")
			require.NoError(t, err)
			claimNow(t, e, submit("resize"))
			for range 3 {
				submit("email")
			}
			for range 2 {
				submit("resize")
			}

			link := uiLink(t, e)
			if mode == "API" {
				link = startServe(t, e).ui
			}
			cell := func(typ, class string) string {
				return `document.querySelector('#types tr[data-type="` + typ + `"] .` + class + `')?.textContent`
			}
			var counts, location string
			require.NoError(t, chromedp.Run(ctx,
				chromedp.Navigate(link),
				chromedp.WaitVisible(`#types tr[data-type="resize"]`, chromedp.ByQuery),
				chromedp.Poll(`document.querySelector('#refreshed').textContent.startsWith('last refreshed')`, nil, chromedp.WithPollingTimeout(30*time.Second)),
				chromedp.Text("#counts", &counts, chromedp.ByQuery),
				chromedp.Location(&location),
			))
			require.Contains(t, location, "view=overview", "the page opens on the overview and says so in the address")
			require.NotContains(t, location, "token=")
			require.NotContains(t, location, "&sk=")
			for status, want := range map[string]string{"pending": "5", "running": "1", "failed": "1"} {
				var got string
				require.NoError(t, chromedp.Run(ctx, chromedp.Text(`#counts [data-count="`+status+`"] .big`, &got, chromedp.ByQuery)))
				require.Equal(t, want, got, status)
			}
			for typ, want := range map[string][3]string{"email": {"3", "0", "1"}, "resize": {"2", "1", "0"}} {
				var got [3]string
				require.NoError(t, chromedp.Run(ctx,
					chromedp.Evaluate(cell(typ, "pending"), &got[0]), chromedp.Evaluate(cell(typ, "running"), &got[1]),
					chromedp.Evaluate(cell(typ, "failed"), &got[2])))
				require.Equal(t, want, got, "%s: pending, running, failed", typ)
			}
			var shards, bars int
			require.NoError(t, chromedp.Run(ctx,
				chromedp.Evaluate(`document.querySelectorAll('#shardmap .shard').length`, &shards),
				chromedp.Evaluate(`document.querySelectorAll('#chart svg g.minute').length`, &bars),
			))
			require.Equal(t, 16, shards, "one cell per shard")
			// The stats hold the whole last hour (last_hour: the monitor's
			// rollup merged with the heartbeats, zeros for minutes nobody
			// saw), so every minute of the chart is drawn.
			require.Equal(t, 60, bars, "minutes drawn")
			screenshot(t, ctx, "overview-"+strings.ToLower(mode))

			// Pause email from its row: the switch lands in control.json.
			var status string
			err = chromedp.Run(ctx,
				chromedp.Click(`#types tr[data-type="email"] button.toggle`, chromedp.ByQuery),
				chromedp.Poll(cell("email", "pause-state")+`?.startsWith('paused')`, nil, chromedp.WithPollingTimeout(30*time.Second)),
			)
			_ = chromedp.Run(ctx, chromedp.Evaluate(`document.querySelector("#status").textContent + " / " + document.querySelector("#refreshed").textContent + " / " + document.querySelector("#types").textContent`, &status))
			require.NoError(t, err, "status line: %s", status)
			c, err := control.Read(bg, e.q)
			require.NoError(t, err)
			require.True(t, c.IsPaused("email"))
			require.False(t, c.IsPaused("resize"))
			require.Equal(t, "from the web UI", c.Types["email"].Reason)
			var toggle, resizeState string
			require.NoError(t, chromedp.Run(ctx,
				chromedp.Text(`#types tr[data-type="email"] button.toggle`, &toggle, chromedp.ByQuery),
				chromedp.Evaluate(cell("resize", "pause-state"), &resizeState),
			))
			require.Equal(t, "Resume", toggle)
			require.Equal(t, "active", resizeState)
			err = chromedp.Run(ctx,
				chromedp.Click(`#types tr[data-type="email"] button.toggle`, chromedp.ByQuery),
				chromedp.Poll(cell("email", "pause-state")+` === 'active'`, nil, chromedp.WithPollingTimeout(30*time.Second)),
			)
			_ = chromedp.Run(ctx, chromedp.Evaluate(`document.querySelector("#status").textContent + " / " + document.querySelector("#refreshed").textContent + " / " + document.querySelector("#types").textContent`, &status))
			require.NoError(t, err, "status line: %s", status)
			c, err = control.Read(bg, e.q)
			require.NoError(t, err)
			require.False(t, c.IsPaused("email"), "resumed")
			// By now (a second after the submits, more than the page's
			// clock estimate can be off) every type has tasks waiting.
			for _, typ := range []string{"email", "resize"} {
				require.NoError(t, chromedp.Run(ctx, chromedp.Poll(`/^\d+s$/.test(`+cell(typ, "oldest")+`)`, nil,
					chromedp.WithPollingTimeout(30*time.Second))), "%s has tasks waiting", typ)
			}

			// Keys: 3 opens the dead letters, g o the overview again.
			require.NoError(t, chromedp.Run(ctx,
				chromedp.KeyEvent("3"),
				chromedp.WaitVisible(row(failed), chromedp.ByQuery),
				chromedp.Location(&location),
			))
			require.Contains(t, location, "view=dead")
			require.NoError(t, chromedp.Run(ctx,
				chromedp.KeyEvent("g"), chromedp.KeyEvent("o"),
				chromedp.WaitVisible("#overview-view", chromedp.ByQuery),
			))

			// A deep link to the failed task, pasted into this tab: the
			// connection (and its credentials or token) stays, the detail
			// opens, and the address is the link to share.
			var title, data string
			require.NoError(t, chromedp.Run(ctx,
				chromedp.Evaluate(`location.hash = '#task=`+failed.ID.String()+`'`, nil),
				chromedp.Poll(`document.querySelector('#detail h2')?.textContent === '`+failed.ID.String()+`'`, nil, chromedp.WithPollingTimeout(30*time.Second)),
				chromedp.Text("#detail h2", &title, chromedp.ByQuery),
				chromedp.Text("#detail", &data, chromedp.ByQuery),
				chromedp.Location(&location),
			))
			require.Contains(t, data, "smtp: 550")
			require.Contains(t, location, "view=tasks&task="+failed.ID.String())
			require.NotContains(t, location, "token=")
			require.NotContains(t, location, "&sk=")

			// A link to the task loaded in a new tab (here the printed link,
			// which holds the credentials, with the task added).
			tab, closeTab := chromedp.NewContext(ctx)
			defer closeTab()
			require.NoError(t, chromedp.Run(tab,
				chromedp.Navigate(link+"&task="+failed.ID.String()),
				chromedp.Poll(`document.querySelector('#detail h2')?.textContent === '`+failed.ID.String()+`'`, nil, chromedp.WithPollingTimeout(30*time.Second)),
			))
		})
	}
}
