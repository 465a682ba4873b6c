//go:build unix

package e2e

// The page qo ui deploy puts in the bucket runs under its
// Content-Security-Policy (a meta element: a bucket sends no such header)
// without a violation, the policy blocks a request to anywhere else, and
// framed, the page refuses to run.

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/page"
	cdpruntime "github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
)

// consoleLog collects what the browser logs (CSP violations among it)
// and the page's uncaught exceptions.
type consoleLog struct {
	mu      sync.Mutex
	entries []string
}

func (l *consoleLog) add(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.entries = append(l.entries, s)
}

func (l *consoleLog) matching(sub string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, e := range l.entries {
		if strings.Contains(e, sub) {
			out = append(out, e)
		}
	}
	return out
}

func watchConsole(t *testing.T, ctx context.Context) *consoleLog {
	t.Helper()
	l := &consoleLog{}
	chromedp.ListenTarget(ctx, func(ev any) {
		switch e := ev.(type) {
		case *cdplog.EventEntryAdded:
			l.add(string(e.Entry.Source) + ": " + e.Entry.Text)
		case *cdpruntime.EventExceptionThrown:
			l.add("exception: " + e.ExceptionDetails.Error())
		}
	})
	require.NoError(t, chromedp.Run(ctx, cdplog.Enable(), cdpruntime.Enable(),
		// Before any script of the page: record every violation the page
		// meets (a CDP script is not subject to the page's policy).
		chromedp.ActionFunc(func(ctx context.Context) error {
			_, err := page.AddScriptToEvaluateOnNewDocument(`window.__csp = []; document.addEventListener('securitypolicyviolation', (e) => window.__csp.push(e.violatedDirective + ' ' + e.blockedURI));`).Do(ctx)
			return err
		})))
	return l
}

func TestWebUIDeployedUnderCSPAndNotFramed(t *testing.T) {
	t.Parallel()
	ctx := browser(t)
	e := wkSetup(t)
	bg := context.Background()
	task, _, err := e.q.Submit(bg, queue.SubmitRequest{Type: "report"})
	require.NoError(t, err)

	r := qo(t, e.env, "ui", "deploy")
	require.Equal(t, 0, r.code, "%s", r)
	base := strings.TrimSpace(r.stdout)
	r = qo(t, e.env, "ui", "url", "--deployed")
	require.Equal(t, 0, r.code, "%s", r)
	link := strings.TrimSpace(r.stdout)
	require.True(t, strings.HasPrefix(link, base+"#"), "%s is a link to %s", link, base)

	console := watchConsole(t, ctx)
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Navigate(link+"&view=tasks"),
		poll(`!!document.querySelector('`+row(task)+`')`),
		noAutoRefresh(),
	))
	csp := evalString(ctx, t, `document.querySelector('meta[http-equiv="Content-Security-Policy"]')?.content`)
	require.Contains(t, csp, "script-src 'self';")
	require.Contains(t, csp, "connect-src 'self' "+strings.TrimRight(e.s.Endpoint(), "/")+";", "the S3 endpoint only")
	// A task's detail and the workers view load too.
	require.NoError(t, chromedp.Run(ctx,
		clickRow(task),
		poll(`document.querySelector('#detail h2')?.textContent === '`+task.ID.String()+`'`),
		chromedp.Click("#tab-workers", chromedp.ByQuery),
		poll(`document.querySelector('#workers-view')?.hidden === false`),
		chromedp.Click("#tab-overview", chromedp.ByQuery),
		poll(`document.querySelector('#overview-view')?.hidden === false`),
	))
	require.Equal(t, "", evalString(ctx, t, `window.__csp.join('\n')`), "no CSP violation on load, the task list, a task, the workers and the overview")
	require.Empty(t, console.matching("Content Security Policy"), "nothing in the console about the policy")
	require.Empty(t, console.matching("exception: "))

	// The policy holds: a request to another origin is refused.
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Evaluate(`fetch('http://127.0.0.1:9/x').catch(() => {}); 0`, nil),
		poll(`window.__csp.some((v) => v.startsWith('connect-src'))`),
	))

	// Framed (here by a page of the same origin, which could read it),
	// the page shows its refusal and runs nothing: no login form, no
	// request to the bucket.
	_, frag, _ := strings.Cut(link, "#")
	framer := `<!doctype html><title>framer</title><iframe id="f" src="index.html#` + frag + `" width="800" height="400"></iframe>`
	_, err = e.s.Client().PutObject(bg, &s3.PutObjectInput{Bucket: aws.String(e.s.Bucket()), Key: aws.String("ui/framer.html"),
		Body: bytes.NewReader([]byte(framer)), ContentType: aws.String("text/html")})
	require.NoError(t, err)
	// Leave the page first: a refresh it had in flight must not count as
	// the framed page's.
	require.NoError(t, chromedp.Run(ctx, chromedp.Navigate("about:blank")))
	log := recordS3(t, ctx, e.s.Bucket())
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Navigate(strings.TrimSuffix(base, "index.html")+"framer.html"),
		poll(`!!document.getElementById('f').contentDocument?.getElementById('framed')`),
	))
	require.Equal(t, "This page refuses to run inside a frame: open it in its own tab.",
		evalString(ctx, t, `document.getElementById('f').contentDocument.getElementById('framed').textContent`))
	require.Equal(t, "false", evalString(ctx, t, `!!document.getElementById('f').contentDocument.querySelector('#login, header, #tasks')`))
	for _, req := range log.since(0) {
		require.True(t, strings.HasPrefix(req, "GET ui/"), "the framed page sent %s", req)
	}
}
