//go:build unix

package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
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
// (stderr being no terminal) writes it to --token-out only; without it nothing is answered; a page
// on another site cannot submit even with the token in hand, and a DNS
// name rebound to 127.0.0.1 is refused; --no-auth is refused beyond
// loopback.
func TestServeDefaults(t *testing.T) {
	t.Parallel()
	e := wkSetup(t)
	addr := testutil.FreeAddr(t)
	tokenFile := filepath.Join(t.TempDir(), "token")
	srv := e.start(t, "serve", "serve", "--addr", addr, "--token-out", tokenFile)
	base := "http://" + addr
	waitHTTP(t, base+"/health", srv)
	b, err := os.ReadFile(tokenFile)
	require.NoError(t, err)
	token := strings.TrimSpace(string(b))
	require.Regexp(t, `^[0-9a-f]{32}$`, token)
	require.NotContains(t, srv.out.String(), token, "the token goes to the file only")
	require.Contains(t, srv.out.String(), "written to "+tokenFile)

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

var servedUI = regexp.MustCompile(`web UI through this API: (\S+)`)

// startServe runs qo serve on a free loopback port with args. Unless
// args turn the token off, qo makes one and writes it to a file
// (--token-out), and ui is a one-time link to the web UI made with it
// (POST /api/login-codes).
func startServe(t *testing.T, e *wkEnv, args ...string) servedAPI {
	t.Helper()
	addr := testutil.FreeAddr(t)
	tokenFile := ""
	if !slices.Contains(args, "--no-auth") {
		tokenFile = filepath.Join(t.TempDir(), "token")
		args = append(args, "--token-out", tokenFile)
	}
	p := e.start(t, "serve", append([]string{"serve", "--addr", addr}, args...)...)
	s := servedAPI{base: "http://" + addr, p: p}
	waitHTTP(t, s.base+"/health", p)
	if tokenFile == "" {
		if m := servedUI.FindStringSubmatch(p.out.String()); m != nil {
			s.ui = m[1]
		}
		return s
	}
	b, err := os.ReadFile(tokenFile)
	require.NoError(t, err, p.out.String())
	s.token = strings.TrimSpace(string(b))
	s.ui = s.base + loginCode(t, s.base, s.token)["link"]
	return s
}

// loginCode asks qo serve for a one-time login code: {code, link, ...}.
func loginCode(t *testing.T, base, token string) map[string]string {
	t.Helper()
	status, body := httpDo(t, "POST", base+"/api/login-codes", "", token)
	require.Equal(t, 201, status, body)
	var got map[string]string
	require.NoError(t, json.Unmarshal([]byte(body), &got))
	return got
}

// TestServePrintsNoConfiguredToken: a token given to qo serve is never
// printed nor logged, nor is one qo made when stderr is no terminal (it
// says how to set one); neither link printed carries a token or a code.
func TestServePrintsNoConfiguredToken(t *testing.T) {
	t.Parallel()
	e := wkSetup(t)
	token := "5f0c4e9a1b7d3c2e8f6a0b9d4c1e7f3a"
	configured := *e
	configured.env = append(slices.Clone(e.env), "QO_API_TOKEN="+token)
	for name, env := range map[string]*wkEnv{"configured": &configured, "made": e} {
		addr := testutil.FreeAddr(t)
		p := env.start(t, "serve-"+name, "serve", "--addr", addr, "--log-level", "debug")
		waitHTTP(t, "http://"+addr+"/health", p)
		status, body := httpDo(t, "GET", "http://"+addr+"/api/stats", "", token)
		if name == "configured" {
			require.Equal(t, 200, status, body)
		}
		out := p.out.String()
		require.NotContains(t, out, token, "%s: the token is not printed", name)
		require.NotContains(t, out, "API token (made", "%s: no token at all", name)
		require.NotContains(t, out, "code=", "%s: no login code off a terminal", name)
		require.Contains(t, out, "web UI through this API: http://"+addr+"/#api=/ ", name)
		if name == "made" {
			require.Contains(t, out, "it is not printed, as stderr is not a terminal: set QO_API_TOKEN")
		}
	}
}
