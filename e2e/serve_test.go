//go:build unix

package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/internal/testutil"
	"github.com/qo-queue/qo/queue"
)

// httpDo sends a request (a body as JSON) and returns the status and
// body; hdr are more header name, value pairs ("Host" sets the Host).
func httpDo(t *testing.T, method, url, body, token string, hdr ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i] == "Host" {
			req.Host = hdr[i+1]
		} else {
			req.Header.Set(hdr[i], hdr[i+1])
		}
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// waitHTTP polls url until it answers.
func waitHTTP(t *testing.T, url string, p *wkProc) {
	t.Helper()
	testutil.Poll{Limit: 30 * time.Second, Every: 50 * time.Millisecond}.Until(t, func() bool {
		resp, err := http.Get(url)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return true
	}, "%s to answer; output:\n%s", url, p.out)
}

// TestServeAndMetrics runs qo serve and a worker with --metrics-addr: a
// task submitted over HTTP is run by the worker, read back over HTTP, and
// both processes' metrics show it.
func TestServeAndMetrics(t *testing.T) {
	t.Parallel()
	e := wkSetup(t)
	apiAddr, metricsAddr := testutil.FreeAddr(t), testutil.FreeAddr(t)
	const token = "e2e-token"
	e.env = append(e.env, "QO_API_TOKEN="+token)
	srv := e.start(t, "serve", "serve", "--addr", apiAddr)
	base := "http://" + apiAddr
	waitHTTP(t, base+"/health", srv)
	wk := e.start(t, "worker", workerArgs("metrics-worker", "--builtins", "--metrics-addr", metricsAddr)...)
	waitHTTP(t, "http://"+metricsAddr+"/metrics", wk)

	status, body := httpDo(t, "GET", base+"/api/stats", "", "")
	require.Equal(t, 401, status, body)

	status, body = httpDo(t, "POST", base+"/api/tasks", `{"type":"echo","input":{"hello":"api"}}`, token)
	require.Equal(t, 201, status, body)
	var task queue.Task
	require.NoError(t, json.Unmarshal([]byte(body), &task))
	e.waitTask(t, task.ID, "completed", func(t *queue.Task) bool { return t.Status == queue.StatusCompleted })

	status, body = httpDo(t, "GET", base+"/api/tasks/"+task.ID.String(), "", token)
	require.Equal(t, 200, status, body)
	require.Contains(t, body, `"status": "completed"`)
	require.Contains(t, body, `"hello": "api"`)

	status, body = httpDo(t, "GET", base+"/api/tasks/"+task.ID.String()+"/history", "", token)
	require.Equal(t, 200, status, body)
	require.Contains(t, body, `"event": "succeeded"`)

	status, body = httpDo(t, "POST", base+"/api/tasks", `{"type":"echo","input":`, token)
	require.Equal(t, 400, status, body)
	require.Contains(t, body, `"code": "invalid_input"`)

	status, body = httpDo(t, "GET", base+"/metrics", "", token)
	require.Equal(t, 200, status)
	require.Contains(t, body, `qo_tasks_submitted_total{type="echo"} 1`)
	require.Contains(t, body, `qo_s3_requests_total{op="PUT",outcome="ok"}`)

	_, body = httpDo(t, "GET", "http://"+metricsAddr+"/metrics", "", "")
	require.Contains(t, body, `qo_tasks_claimed_total{type="echo"} 1`)
	require.Contains(t, body, `qo_tasks_finished_total{outcome="completed",type="echo"} 1`)
	require.Contains(t, body, `qo_handler_duration_seconds_count{outcome="completed",type="echo"} 1`)
}

// TestServeRefusesOpenAddressWithoutToken: beyond loopback, no token, no
// server.
func TestServeRefusesOpenAddressWithoutToken(t *testing.T) {
	t.Parallel()
	e := wkSetup(t)
	for _, kv := range e.env {
		require.False(t, strings.HasPrefix(kv, "QO_API_TOKEN="), "the test environment must not carry a token")
	}
	p := e.start(t, "serve", "serve", "--addr", "0.0.0.0:0")
	require.Equal(t, 2, p.wait(t), p.out.String())
	require.Contains(t, p.out.String(), "refusing to serve the API on 0.0.0.0:0 without a token")
}

// TestServeDefaults: qo serve with nothing configured makes a token and
// prints it with the web UI link; without it nothing is answered; a page
// on another site cannot submit even with the token in hand, and a DNS
// name rebound to 127.0.0.1 is refused; --no-auth is refused beyond
// loopback.
func TestServeDefaults(t *testing.T) {
	t.Parallel()
	e := wkSetup(t)
	addr := testutil.FreeAddr(t)
	srv := e.start(t, "serve", "serve", "--addr", addr)
	base := "http://" + addr
	waitHTTP(t, base+"/health", srv)
	m := regexp.MustCompile(`API token \(made for this run[^)]*\): ([0-9a-f]{32})`).FindStringSubmatch(srv.out.String())
	require.NotNil(t, m, "the token is printed: %s", srv.out.String())
	token := m[1]
	require.Contains(t, srv.out.String(), "/#api=/&token="+token)

	status, body := httpDo(t, "POST", base+"/api/tasks", `{"type":"echo"}`, "")
	require.Equal(t, 401, status, body)
	status, body = httpDo(t, "POST", base+"/api/tasks", `{"type":"echo"}`, token, "Origin", "https://evil.example", "Sec-Fetch-Site", "cross-site")
	require.Equal(t, 403, status, body)
	status, body = httpDo(t, "GET", base+"/api/stats", "", token, "Host", "rebound.example")
	require.Equal(t, 421, status, body)
	status, body = httpDo(t, "POST", base+"/api/tasks", `{"type":"echo"}`, token, "Origin", base, "Sec-Fetch-Site", "same-origin")
	require.Equal(t, 201, status, body)
	status, body = httpDo(t, "GET", base+"/api/stats", "", token, "Host", "localhost:"+strings.Split(addr, ":")[1])
	require.Equal(t, 200, status, body)
	page, err := e.q.List(context.Background(), queue.ListQuery{Type: "echo", Status: queue.StatusPending})
	require.NoError(t, err)
	require.Len(t, page.Tasks, 1, "only the same-origin submit landed")

	p := e.start(t, "serve-open", "serve", "--addr", "0.0.0.0:0", "--no-auth")
	require.Equal(t, 2, p.wait(t), p.out.String())
}

// servedAPI is a running qo serve: its base URL, the token it printed and
// the web UI link that carries it.
type servedAPI struct {
	base, token, ui string
	p               *wkProc
}

var (
	servedToken = regexp.MustCompile(`API token \(made for this run[^)]*\): ([0-9a-f]{32})`)
	servedUI    = regexp.MustCompile(`web UI through this API: (\S+)`)
)

// startServe runs qo serve on a free loopback port with args.
func startServe(t *testing.T, e *wkEnv, args ...string) servedAPI {
	t.Helper()
	addr := testutil.FreeAddr(t)
	p := e.start(t, "serve", append([]string{"serve", "--addr", addr}, args...)...)
	s := servedAPI{base: "http://" + addr, p: p}
	waitHTTP(t, s.base+"/health", p)
	out := p.out.String()
	if m := servedToken.FindStringSubmatch(out); m != nil {
		s.token = m[1]
	}
	if m := servedUI.FindStringSubmatch(out); m != nil {
		s.ui = m[1]
	}
	return s
}
