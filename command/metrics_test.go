package command

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/httpapi"
)

// The probes of --metrics-addr: /readyz answers "starting" until a check is
// installed, then the check's answer; once the shutdown starts both are 503.
func TestProbes(t *testing.T) {
	t.Parallel()
	since := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name     string
		check    *httpapi.Readiness
		stopping bool
		path     string
		status   int
		want     map[string]any
	}{
		{name: "alive", path: "/healthz", status: 200, want: map[string]any{"alive": true}},
		{name: "no check yet", path: "/readyz", status: 503, want: map[string]any{"ready": false, "reason": "starting: not connected to the bucket yet"}},
		{name: "ready", check: &httpapi.Readiness{Ready: true, Reason: "claiming"}, path: "/readyz", status: 200,
			want: map[string]any{"ready": true, "reason": "claiming"}},
		{name: "not ready", check: &httpapi.Readiness{Reason: "bucket unreachable: refused", Since: since}, path: "/readyz", status: 503,
			want: map[string]any{"ready": false, "reason": "bucket unreachable: refused", "since": "2030-01-02T03:04:05Z"}},
		{name: "stopping", stopping: true, path: "/healthz", status: 503, want: map[string]any{"alive": false, "reason": "shutting down"}},
		{name: "ready check while stopping", check: &httpapi.Readiness{Ready: true, Reason: "claiming"}, stopping: true, path: "/readyz", status: 503,
			want: map[string]any{"ready": false, "reason": "shutting down"}},
		{name: "the check's own reason while stopping", check: &httpapi.Readiness{Reason: "shutting down: 1 running tasks"}, stopping: true, path: "/readyz", status: 503,
			want: map[string]any{"ready": false, "reason": "shutting down: 1 running tasks"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := &probes{}
			if tc.check != nil {
				p.setReady(func(context.Context) httpapi.Readiness { return *tc.check })
			}
			if tc.stopping {
				p.setStopping()
			}
			mux := http.NewServeMux()
			mux.HandleFunc("GET /healthz", p.healthz)
			mux.HandleFunc("GET /readyz", p.readyz)
			rec := httptest.NewRecorder()
			mux.ServeHTTP(rec, httptest.NewRequest("GET", tc.path, nil))
			require.Equal(t, tc.status, rec.Code)
			var body map[string]any
			require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &body))
			require.Equal(t, tc.want, body)
		})
	}
	var none *probes // no --metrics-addr: the setters do nothing
	none.setReady(nil)
	none.setStopping()
}
