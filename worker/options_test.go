package worker

import (
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/internal/testutil"
	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store/storetest"
)

// A kill grace that does not fit the margins keeping two attempts of a
// task apart is refused, naming the bound and the fix; the default fits
// every liveness bound.
func TestKillGraceBound(t *testing.T) {
	t.Parallel()
	bd := setup(t, storetest.Backends()[0], setupOpts{})
	tests := []struct {
		name      string
		killGrace time.Duration
		deadAfter time.Duration
		want      string // "" when accepted
		effective time.Duration
	}{
		{name: "defaults", effective: DefaultKillGrace},
		{name: "a quarter of the bound", killGrace: 5 * time.Second, deadAfter: 20 * time.Second, effective: 5 * time.Second},
		{name: "the timeout margin", killGrace: 10 * time.Second, deadAfter: time.Minute, effective: 10 * time.Second},
		{name: "default under a short bound", deadAfter: 2 * time.Second, effective: 500 * time.Millisecond},
		{name: "past the liveness margin", killGrace: 6 * time.Second,
			want: "KillGrace 6s is more than 5s, the most DeadAfter 20s allows"},
		{name: "past the liveness margin, fixable", killGrace: 6 * time.Second,
			want: "raise DeadAfter to at least 24s"},
		{name: "past both margins", killGrace: 30 * time.Second,
			want: "lower KillGrace to at most 5s (at most 10s with DeadAfter 40s or more)"},
		{name: "past the timeout margin", killGrace: 11 * time.Second, deadAfter: 10 * time.Minute,
			want: "KillGrace 11s is more than 10s, the most any DeadAfter allows"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o := bd.opts(t)
			o.KillGrace, o.DeadAfter, o.HandlerGrace = tc.killGrace, tc.deadAfter, 0
			if tc.deadAfter > 0 {
				o.HeartbeatInterval = tc.deadAfter / 2
			}
			w := New(bd.q, o)
			w.Handle("echo", echoHandler)
			err := w.Validate()
			if tc.want == "" {
				require.NoError(t, err)
				require.Equal(t, tc.effective, w.Options().KillGrace)
				require.Equal(t, tc.effective+2*time.Second, w.Options().HandlerGrace, "the handler grace follows the kill grace")
				return
			}
			require.ErrorIs(t, err, ErrKillGrace)
			require.ErrorContains(t, err, tc.want)
		})
	}
	for _, d := range []time.Duration{time.Second, 20 * time.Second, 40 * time.Second, time.Hour} {
		most, _ := MaxKillGrace(d)
		require.LessOrEqual(t, most, d/4, "dead after %s", d)
		require.LessOrEqual(t, most, queue.LeaseGrace-queue.MaxClockSkew, "dead after %s", d)
	}
}

// TestStartLineNamesTheBucket: the worker's first log line says which
// bucket at which endpoint it serves (the store's description when the
// store has no bucket), so a deployment pointed at the wrong place shows
// it at once.
func TestStartLineNamesTheBucket(t *testing.T) {
	t.Parallel()
	for _, b := range storetest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			bd := setup(t, b, setupOpts{})
			logs := &testutil.Buffer{}
			o := bd.opts(t)
			o.Logger = slog.New(slog.NewJSONHandler(logs, nil))
			w := New(bd.q, o)
			RegisterBuiltins(w)
			start(t, w)
			testutil.Eventually(t, func() bool { return strings.Contains(logs.String(), "worker started") }, "the start line")
			first, _, _ := strings.Cut(logs.String(), "\n")
			var line map[string]any
			require.NoError(t, json.Unmarshal([]byte(first), &line))
			require.Equal(t, "worker started", line["msg"], "the first line")
			if s, ok := bd.s.(interface {
				Bucket() string
				Endpoint() string
			}); ok {
				require.Equal(t, s.Bucket(), line["bucket"])
				require.Equal(t, s.Endpoint(), line["endpoint"])
				require.NotEmpty(t, line["endpoint"])
			} else {
				require.Contains(t, line["store"], "memstore")
			}
		})
	}
}
