//go:build unix

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
)

// historyOf closes the browser of ctx (Chromium writes its history
// database on the way out) and returns the bytes of the profile's History
// files: the database and its journal, if any.
func historyOf(t *testing.T, ctx context.Context, profile string) []byte {
	t.Helper()
	require.NoError(t, chromedp.Cancel(ctx))
	var all []byte
	for _, name := range []string{"History", "History-journal", "History-wal"} {
		b, err := os.ReadFile(filepath.Join(profile, "Default", name))
		if name == "History" {
			require.NoError(t, err, "Chromium's history database")
		}
		all = append(all, b...)
	}
	return all
}

// linkCode is the one-time code of a printed link.
func linkCode(t *testing.T, link string) string {
	t.Helper()
	_, frag, _ := strings.Cut(link, "#")
	for _, kv := range strings.Split(frag, "&") {
		if v, ok := strings.CutPrefix(kv, "code="); ok {
			return v
		}
	}
	t.Fatalf("no code in %s", link)
	return ""
}

// TestLinksLeaveNothingInHistory opens the links qo serve and qo ui serve
// print in Chromium with a fresh profile, uses the page, closes the
// browser and reads its History database: it holds neither the API token
// nor the link's credentials, and the one-time code it does hold (the
// address the browser first loaded) is worthless, having been used.
func TestLinksLeaveNothingInHistory(t *testing.T) {
	t.Parallel()
	e := wkSetup(t)
	bg := context.Background()
	failed, _, err := e.q.Submit(bg, queue.SubmitRequest{Type: "report", Input: json.RawMessage(`{"month":"bad"}`)})
	require.NoError(t, err)
	_, err = e.q.Fail(bg, claimNow(t, e, failed), "report: no such month")
	require.NoError(t, err)

	t.Run("qo serve", func(t *testing.T) {
		profile, err := os.MkdirTemp("", "qo-chromium-")
		require.NoError(t, err)
		ctx := browserIn(t, profile)
		s := startServe(t, e)
		code := linkCode(t, s.ui)
		var location string
		require.NoError(t, chromedp.Run(ctx,
			chromedp.Navigate(s.ui+"&view=tasks"),
			chromedp.WaitVisible(row(failed), chromedp.ByQuery),
			clickRow(failed),
			chromedp.WaitVisible("#act-replay", chromedp.ByQuery),
			chromedp.Location(&location),
		))
		require.NotContains(t, location, code, "the code leaves the address bar")
		history := historyOf(t, ctx, profile)
		require.True(t, bytes.Contains(history, []byte(code)), "the history database holds the address first loaded: it was read")
		require.False(t, bytes.Contains(history, []byte(s.token)), "no API token in the browser's history")

		// The code in the history is worthless: it was spent.
		status, body := httpDo(t, "POST", s.base+"/api/session", `{"code":"`+code+`"}`, "")
		require.Equal(t, 401, status, body)
		require.Contains(t, body, "used, expired or unknown")
	})

	t.Run("qo ui serve", func(t *testing.T) {
		profile, err := os.MkdirTemp("", "qo-chromium-")
		require.NoError(t, err)
		ctx := browserIn(t, profile)
		link, stderr := uiServe(t, e) // read-only: the default
		code := linkCode(t, link)
		for _, k := range []string{"ak=", "sk=", "st="} {
			require.NotContains(t, link, k, "the printed link carries no credentials")
		}
		// The page's code exchange, seen from the browser's side: the
		// credentials it received, to look for in the history.
		var mu sync.Mutex
		var exchange network.RequestID
		chromedp.ListenTarget(ctx, func(ev any) {
			if r, ok := ev.(*network.EventResponseReceived); ok && strings.HasSuffix(r.Response.URL, "/session") {
				mu.Lock()
				exchange = r.RequestID
				mu.Unlock()
			}
		})
		var creds map[string]string
		require.NoError(t, chromedp.Run(ctx,
			network.Enable(),
			chromedp.Navigate(link+"&view=tasks"),
			chromedp.WaitVisible(row(failed), chromedp.ByQuery),
			clickRow(failed),
			// A read-only link: the page offers no action and says why.
			chromedp.WaitVisible("#act-readonly", chromedp.ByQuery),
			chromedp.WaitVisible("#readonly", chromedp.ByQuery),
			chromedp.ActionFunc(func(ctx context.Context) error {
				mu.Lock()
				id := exchange
				mu.Unlock()
				body, err := network.GetResponseBody(id).Do(ctx)
				if err != nil {
					return err
				}
				return json.Unmarshal(body, &creds)
			}),
		), "qo ui serve:\n%s", stderr)
		var replays int
		require.NoError(t, chromedp.Run(ctx, chromedp.Evaluate(`document.querySelectorAll('#act-replay').length`, &replays)))
		require.Zero(t, replays, "no replay button under a read-only link")
		require.NotEmpty(t, creds["sk"], "the exchange answered the credentials: %v", creds)
		require.Equal(t, "1", creds["ro"])

		history := historyOf(t, ctx, profile)
		require.True(t, bytes.Contains(history, []byte(code)), "the history database holds the address first loaded: it was read")
		for _, k := range []string{"sk", "st"} {
			require.False(t, bytes.Contains(history, []byte(creds[k])), "the link's %s is not in the browser's history", k)
		}
		for _, k := range []string{"&ak=", "&sk=", "&st="} {
			require.False(t, bytes.Contains(history, []byte(k)), "no %s in the browser's history", k)
		}

		// The code in the history is worthless: it was spent.
		base, _, _ := strings.Cut(link, "#")
		status, body := httpDo(t, "POST", base+"session", `{"code":"`+code+`"}`, "")
		require.Equal(t, 401, status, body)
	})
}
