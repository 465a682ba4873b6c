//go:build unix

package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/internal/testutil"
	"github.com/qo-queue/qo/queue"
)

// probe is one answer of /healthz or /readyz.
type probe struct {
	status int
	Ready  bool   `json:"ready"`
	Alive  bool   `json:"alive"`
	Reason string `json:"reason"`
	Since  string `json:"since"`
}

func getProbe(t *testing.T, url string) (probe, error) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		return probe{}, err
	}
	defer resp.Body.Close()
	var p probe
	if err := json.NewDecoder(resp.Body).Decode(&p); err != nil {
		return probe{}, err
	}
	p.status = resp.StatusCode
	return p, nil
}

// waitProbe polls url until it answers status with a reason starting with
// prefix, and returns that answer.
func waitProbe(t *testing.T, url string, status int, prefix string, p *wkProc) probe {
	t.Helper()
	var last probe
	var err error
	testutil.Poll{Every: 50 * time.Millisecond}.Until(t, func() bool {
		last, err = getProbe(t, url)
		return err == nil && last.status == status && strings.HasPrefix(last.Reason, prefix)
	}, "%s to answer %d %q; last %s; output:\n%s", url, status, prefix,
		testutil.Lazy(func() string { return fmt.Sprintf("%+v (err %v)", last, err) }), p.out)
	return last
}

// A worker configured by environment variables only, as in a container,
// answers the liveness and readiness probes on QO_METRICS_ADDR: ready while
// it reaches the bucket, not ready while the bucket is down and ready again
// once it is back, and on SIGTERM not ready (nor alive) while it drains,
// then out within QO_SHUTDOWN_TIMEOUT with the running task released.
func TestWorkerHealthProbes(t *testing.T) {
	t.Parallel()
	e := wkSetup(t)
	f := newFaultChain(t, e.s.Endpoint())
	addr := testutil.FreeAddr(t)
	const shutdownTimeout = 2 * time.Second
	e.env = append(e.env,
		"S3_ENDPOINT="+f.Endpoint(),
		"QO_WORKER_ID=w-probes",
		"QO_METRICS_ADDR="+addr,
		"QO_SHUTDOWN_TIMEOUT="+shutdownTimeout.String(),
		"QO_HEARTBEAT_INTERVAL=500ms",
		"QO_POLL_MIN=20ms", "QO_POLL_MAX=200ms",
	)
	w := e.start(t, "worker", "worker")
	healthz, readyz := "http://"+addr+"/healthz", "http://"+addr+"/readyz"

	waitProbe(t, readyz, http.StatusOK, "claiming", w)
	alive, err := getProbe(t, healthz)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, alive.status)
	require.True(t, alive.Alive)

	f.Down()
	down := waitProbe(t, readyz, http.StatusServiceUnavailable, "", w)
	require.False(t, down.Ready)
	require.NotEmpty(t, down.Since, "since when")
	require.True(t, strings.HasPrefix(down.Reason, "poll failing: ") || strings.HasPrefix(down.Reason, "bucket unreachable: "), down.Reason)
	waitProbe(t, readyz, http.StatusServiceUnavailable, "bucket unreachable: no heartbeat has landed", w)
	alive, err = getProbe(t, healthz)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, alive.status, "alive while the bucket is down")

	f.Up()
	waitProbe(t, readyz, http.StatusOK, "claiming", w)

	id := e.submit(t, "sleep", `{"ms":600000}`, time.Minute, 3)
	e.waitTask(t, id, "running", func(task *queue.Task) bool { return task.Status == queue.StatusRunning })
	w.signal(t, syscall.SIGTERM)
	sent := time.Now()
	waitProbe(t, readyz, http.StatusServiceUnavailable, "shutting down", w)
	if p, err := getProbe(t, healthz); err == nil { // the process may be gone already
		require.Equal(t, http.StatusServiceUnavailable, p.status)
		require.False(t, p.Alive)
	}
	require.Equal(t, 0, w.wait(t))
	require.Less(t, time.Since(sent), shutdownTimeout+10*time.Second, "out within the shutdown timeout and a margin")
	got := e.waitTask(t, id, "released", func(task *queue.Task) bool { return task.Status == queue.StatusPending })
	require.Zero(t, got.RetryCount, "released, not retried")
	require.False(t, e.registered(t, "w-probes"))
}

// qo serve answers /healthz without asking the bucket and /readyz from a
// bucket check: not ready while the bucket is down, ready once it is back;
// /health?check=s3 follows the same check.
func TestServeHealthProbes(t *testing.T) {
	t.Parallel()
	e := wkSetup(t)
	f := newFaultChain(t, e.s.Endpoint())
	addr := testutil.FreeAddr(t)
	e.env = append(e.env, "S3_ENDPOINT="+f.Endpoint(), "QO_API_TOKEN=e2e-token", "QO_API_ADDR="+addr)
	srv := e.start(t, "serve", "serve")
	base := "http://" + addr

	waitProbe(t, base+"/readyz", http.StatusOK, "bucket reachable", srv)
	f.Down()
	down := waitProbe(t, base+"/readyz", http.StatusServiceUnavailable, "bucket unreachable", srv)
	require.NotEmpty(t, down.Since)
	require.Equal(t, "bucket unreachable (the error is in the log)", down.Reason, "no S3 error text for a caller without a token")
	status, body := httpDo(t, "GET", base+"/health?check=s3", "", "")
	require.Equal(t, http.StatusServiceUnavailable, status, body)
	require.JSONEq(t, `{"status": "unavailable", "s3": "unavailable"}`, body, "a status only")
	require.Contains(t, srv.out.String(), "bucket check failed", "the error goes to qo serve's log")
	alive, err := getProbe(t, base+"/healthz")
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, alive.status, "alive while the bucket is down")
	f.Up()
	waitProbe(t, base+"/readyz", http.StatusOK, "bucket reachable", srv)
	srv.signal(t, syscall.SIGTERM)
	require.Equal(t, 0, srv.wait(t))
}
