package command

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/devenv"
	"github.com/qo-queue/qo/internal/testutil"
	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store/memstore"
)

// testDevState is the state of a dev environment at endpoint run by pid.
func testDevState(endpoint string, pid int) *devenv.State {
	return &devenv.State{
		Format: devenv.StateFormat, Endpoint: endpoint, Bucket: "qo-dev", Region: "us-east-1",
		AccessKey: "QODEVKEY", SecretKey: "secret", PID: pid,
		StartedAt: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC),
	}
}

func TestDevEnvLines(t *testing.T) {
	t.Parallel()
	st := testDevState("http://127.0.0.1:9470", 1)
	require.Equal(t, []string{
		"export S3_ENDPOINT=http://127.0.0.1:9470 S3_BUCKET=qo-dev AWS_ACCESS_KEY_ID=QODEVKEY AWS_SECRET_ACCESS_KEY=secret AWS_REGION=us-east-1",
	}, devEnvLines(st, "linux"))
	require.Equal(t, []string{
		`$env:S3_ENDPOINT="http://127.0.0.1:9470"`, `$env:S3_BUCKET="qo-dev"`,
		`$env:AWS_ACCESS_KEY_ID="QODEVKEY"`, `$env:AWS_SECRET_ACCESS_KEY="secret"`, `$env:AWS_REGION="us-east-1"`,
	}, devEnvLines(st, "windows"))
}

func TestDevFlagErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"addr without port", []string{"--addr", "127.0.0.1"}, "invalid --addr"},
		{"addr bad port", []string{"--addr", "127.0.0.1:99999"}, "port must be a number"},
		{"bucket", []string{"--bucket", "Bad_Bucket"}, "invalid --bucket"},
		{"concurrency", []string{"--concurrency", "0"}, "invalid --concurrency"},
		{"demo rate zero", []string{"--demo-rate", "0"}, "invalid --demo-rate"},
		{"demo rate too high", []string{"--demo-rate", "1000"}, "invalid --demo-rate"},
		{"exec", []string{"--exec", "noequals"}, "invalid --exec"},
		{"exec twice", []string{"--exec", "a=/bin/true", "--exec", "a=/bin/false"}, "given twice"},
		{"shutdown timeout", []string{"--shutdown-timeout", "soon"}, "invalid --shutdown-timeout"},
		{"argument", []string{"extra"}, "takes no arguments"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var out, errOut bytes.Buffer
			args := append([]string{"qo", "dev", "--data-dir", t.TempDir()}, tt.args...)
			code := runApp(args, &out, &errOut)
			require.Equal(t, exitUsage, code, errOut.String())
			require.Contains(t, errOut.String(), tt.want)
			require.Equal(t, 1, strings.Count(errOut.String(), "\n"), "one line: %q", errOut.String())
		})
	}
}

func TestCheckDevAddrBusy(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	err = checkDevAddr(l.Addr().String())
	require.Error(t, err)
	require.Equal(t, exitConflict, exitCode(err))
	require.Contains(t, err.Error(), "--addr")
	require.Contains(t, err.Error(), "another 'qo dev' may be running")

	require.NoError(t, checkDevAddr(testutil.FreeAddr(t)))
	require.NoError(t, checkDevAddr("127.0.0.1:0"))
}

func TestDevResetRefusesWhileRunning(t *testing.T) {
	dir := t.TempDir()
	// The state names a live process other than this one (our parent).
	state, err := json.Marshal(testDevState("http://127.0.0.1:1", os.Getppid()))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, devenv.StateFile), state, 0o600))
	var out, errOut bytes.Buffer
	code := runApp([]string{"qo", "dev", "--reset", "--yes", "--data-dir", dir, "--addr", "127.0.0.1:0"}, &out, &errOut)
	require.Equal(t, exitConflict, code, errOut.String())
	require.Contains(t, errOut.String(), "stop it before --reset")
	_, err = os.Stat(filepath.Join(dir, devenv.StateFile))
	require.NoError(t, err, "nothing was deleted")
}

func TestCountsLine(t *testing.T) {
	t.Parallel()
	by := func(p, r, c, f, x, a int) map[queue.Status]int {
		return map[queue.Status]int{queue.StatusPending: p, queue.StatusRunning: r, queue.StatusCompleted: c,
			queue.StatusFailed: f, queue.StatusCancelled: x, queue.StatusArchived: a}
	}
	recent := []queue.MinuteCount{{Completed: 3, Failed: 1}, {Completed: 2}}
	tests := []struct {
		name  string
		stats queue.Stats
		want  string
	}{
		{"empty", queue.Stats{ByStatus: by(0, 0, 0, 0, 0, 0), Recent: make([]queue.MinuteCount, 15)},
			"pending 0  running 0  dead letters 0  |  last 15m: completed 0, failed attempts 0"},
		{"delayed", queue.Stats{ByStatus: by(2, 1, 1, 1, 0, 0), Delayed: 1, Recent: recent},
			"pending 2 (1 later)  running 1  dead letters 1  |  last 2m: completed 5, failed attempts 1"},
		{"partial", queue.Stats{ByStatus: by(1, 0, 0, 0, 0, 0), Partial: true, Recent: recent},
			"pending 1  running 0  dead letters 0  |  last 2m: completed 5, failed attempts 1  (lower bounds)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, countsLine(tt.stats))
		})
	}
}

// TestDevRefusesListeningBeyondLoopback: qo dev serves its root keys and
// an open CORS rule, so an address other machines reach needs
// --insecure-listen, and then it says so loudly.
func TestDevRefusesListeningBeyondLoopback(t *testing.T) {
	// Hold the port: should qo dev get past the check it fails at once
	// ("in use") instead of starting a server.
	l, err := net.Listen("tcp", "0.0.0.0:0")
	require.NoError(t, err)
	defer l.Close()
	addr := l.Addr().String() // [::]:PORT or 0.0.0.0:PORT
	_, port, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	addr = "0.0.0.0:" + port

	run := func(args ...string) (int, string) {
		var out, errOut bytes.Buffer
		code := runApp(append([]string{"qo", "dev", "--no-tui", "--data-dir", t.TempDir(), "--addr", addr}, args...), &out, &errOut)
		return code, errOut.String()
	}
	code, stderr := run()
	require.Equal(t, exitUsage, code, stderr)
	require.Contains(t, stderr, "refusing to listen on "+addr)
	require.Contains(t, stderr, "127.0.0.1", "names the fix")
	require.Contains(t, stderr, "--insecure-listen")
	require.Contains(t, stderr, "QO_DEV_INSECURE_LISTEN")
	require.Equal(t, 1, strings.Count(stderr, "\n"), "one line: %q", stderr)

	code, stderr = run("--insecure-listen")
	require.Equal(t, exitConflict, code, "past the check, the held port stops it: %s", stderr)
	require.Contains(t, stderr, "WARNING")
	require.Contains(t, stderr, addr)

	t.Setenv("QO_DEV_INSECURE_LISTEN", "true")
	code, stderr = run()
	require.Equal(t, exitConflict, code, stderr)
	require.Contains(t, stderr, "WARNING")
}

func TestCheckListenAddr(t *testing.T) {
	t.Parallel()
	tests := []struct {
		addr     string
		loopback bool
	}{
		{"127.0.0.1:9470", true},
		{"127.0.0.2:0", true},
		{"localhost:9470", true},
		{"[::1]:9470", true},
		{"0.0.0.0:9470", false},
		{"[::]:9470", false},
		{"192.168.1.20:9470", false},
		{"dev-box.internal:9470", false},
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			t.Parallel()
			warning, err := checkListenAddr("qo dev", tt.addr, false, envDevInsecureListen)
			require.Empty(t, warning)
			if tt.loopback {
				require.NoError(t, err)
			} else {
				require.Error(t, err)
				require.Equal(t, exitUsage, exitCode(err))
				require.Contains(t, err.Error(), "refusing to listen on "+tt.addr)
				require.Contains(t, err.Error(), "--insecure-listen ("+envDevInsecureListen+"=true)")
			}

			warning, err = checkListenAddr("qo dev", tt.addr, true, envDevInsecureListen)
			require.NoError(t, err)
			if tt.loopback {
				require.Empty(t, warning, "loopback needs no warning, flag or not")
			} else {
				require.Contains(t, warning, "WARNING")
				require.Contains(t, warning, tt.addr)
			}
		})
	}
	_, err := checkListenAddr("qo dev", "no-port", false, envDevInsecureListen)
	require.Error(t, err)
}

// TestDevWebUI: qo dev serves the web UI and its link opens the page on
// the dev queue (settings and keys in the fragment); a taken address
// moves it to a free port; off serves nothing. The --no-tui banner shows
// the link.
func TestDevWebUI(t *testing.T) {
	t.Parallel()
	st := testDevState("http://127.0.0.1:9470", os.Getpid())
	log := slog.New(slog.DiscardHandler)
	held, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer held.Close()

	for _, addr := range []string{testutil.FreeAddr(t), held.Addr().String()} {
		link, stop := startDevUI(addr, st, log)
		base, frag, ok := strings.Cut(link, "#")
		require.True(t, ok, "link %q", link)
		if addr == held.Addr().String() {
			require.NotEqual(t, "http://"+addr+"/", base, "a taken address moves to a free port")
		} else {
			require.Equal(t, "http://"+addr+"/", base)
		}
		v, err := url.ParseQuery(frag)
		require.NoError(t, err)
		require.Equal(t, st.Endpoint, v.Get("endpoint"))
		require.Equal(t, st.Bucket, v.Get("bucket"))
		require.Equal(t, st.Region, v.Get("region"))
		require.Equal(t, st.AccessKey, v.Get("ak"))
		require.Equal(t, st.SecretKey, v.Get("sk"))
		resp, err := http.Get(base)
		require.NoError(t, err)
		page, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.Contains(t, string(page), "<html")
		stop()
		_, err = http.Get(base)
		require.Error(t, err, "stopped with qo dev")
	}
	link, stop := startDevUI("", st, log)
	stop()
	require.Empty(t, link, "off")

	ms := memstore.New()
	_, err = queue.Init(t.Context(), ms, 1)
	require.NoError(t, err)
	q, err := queue.Open(t.Context(), ms, queue.Options{})
	require.NoError(t, err)
	var out bytes.Buffer
	ctx, cancel := context.WithCancel(t.Context())
	cancel() // the banner, one status line, and back
	devBannerView(ctx, &devSession{State: st, DataDir: t.TempDir(), Queue: q, Out: &out, WorkerID: "w", UILink: "http://127.0.0.1:8090/#k=v"})
	require.Contains(t, out.String(), "  web UI      http://127.0.0.1:8090/#k=v\n")
}

func TestDevFlagUIAddr(t *testing.T) {
	t.Parallel()
	for _, addr := range []string{"0.0.0.0:8090", "example.com:80", "nonsense"} {
		var out, errOut bytes.Buffer
		code := runApp([]string{"qo", "dev", "--no-tui", "--data-dir", t.TempDir(), "--ui-addr", addr}, &out, &errOut)
		require.Equal(t, exitUsage, code, errOut.String())
		require.Contains(t, errOut.String(), "invalid --ui-addr")
	}
}
