package command

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/httpapi"
	"github.com/qo-queue/qo/queue"
)

func TestStatsCommand(t *testing.T) {
	t.Parallel()
	q := newQueueCLI(t)
	code, _, errs := q.run("stats")
	require.Equal(t, exitNotFound, code, "an uninitialised bucket: %s", errs)
	require.Contains(t, errs, "qo init")

	q.ok("init")
	for _, typ := range []string{"mail", "mail", "resize"} {
		q.task("submit", "--type", typ)
	}
	q.task("submit", "--type", "later", "--delay", "1h")

	out := q.ok("stats")
	require.Regexp(t, `pending\s+4 \(1 delayed\)`, out)
	require.Regexp(t, `(?m)^mail\s+2\s+0\s+0$`, out)
	require.Regexp(t, `(?m)^resize\s+1\s+0\s+0$`, out)
	require.Contains(t, out, "workers: 0 active, 0 stale, 0 dead")
	require.Contains(t, out, "UNSERVED mail: 2 pending, no live worker serves it", "pending work nobody serves is named")
	require.Contains(t, out, "UNSERVED resize: 1 pending, no live worker serves it")
	require.Regexp(t, `failed\s+0 \(dead letters\)`, out)
	code, _, errs = q.run("stats", "--worker-health-threshold", "60s")
	require.Equal(t, exitUsage, code)
	require.Contains(t, errs, "monitor's liveness rule", "the removed flag says why and what to do")

	// --json is the shape of GET /api/stats.
	var cli map[string]any
	require.NoError(t, json.Unmarshal([]byte(q.ok("stats", "--json")), &cli))
	qq, err := queue.Open(context.Background(), q.s, queue.Options{})
	require.NoError(t, err)
	srv := httptest.NewServer(httpapi.New(qq, httpapi.Options{}))
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/api/stats")
	require.NoError(t, err)
	defer resp.Body.Close()
	var api map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&api))
	require.Equal(t, keys(api), keys(cli))
	for _, k := range []string{"by_status", "by_type", "by_shard", "counted", "delayed", "workers"} {
		require.Equal(t, api[k], cli[k], k)
	}

	code, _, errs = q.run("stats", "--watch", "--interval", "10ms")
	require.Equal(t, exitUsage, code)
	require.Contains(t, errs, "at least 1s")
}

func keys(m map[string]any) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
