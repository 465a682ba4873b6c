//go:build unix

package worker

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/internal/testutil"
	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store/storetest"
)

// script writes an executable shell script and returns its path.
func script(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "handler.sh")
	require.NoError(t, os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755))
	return p
}

func execTask(input string) *queue.Task {
	return &queue.Task{ID: uuid.New(), Type: "job", Input: json.RawMessage(input), Attempt: 2, TimeoutSeconds: 30}
}

func TestExecHandler(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		body      string
		input     string
		opts      ExecOptions
		wantOut   string // JSON; "" = nil output
		wantErr   string // substring
		permanent bool
		retryable bool
	}{
		{name: "success echoes stdin", body: `cat`, input: `{"x":[1,2]}`, wantOut: `{"x":[1,2]}`},
		{name: "environment", body: `printf '{"id":"%s","type":"%s","attempt":%s,"worker":"%s"}' "$QO_TASK_ID" "$QO_TASK_TYPE" "$QO_ATTEMPT" "$QO_WORKER_ID"`,
			input: `{}`, opts: ExecOptions{WorkerID: "w1"}, wantOut: `ENV`},
		{name: "empty stdout is null", body: `cat >/dev/null; echo "log line" >&2`, input: `{}`},
		{name: "no input gives null on stdin", body: `read x; [ "$x" = null ] || exit 9`, input: ``},
		{name: "exit 75 is retryable", body: `echo "db busy" >&2; exit 75`, input: `{}`, wantErr: "db busy", retryable: true},
		{name: "other exit is permanent", body: `echo "bad input" >&2; exit 3`, input: `{}`, wantErr: "exit status 3: bad input", permanent: true},
		{name: "non-JSON stdout", body: `echo "hello there"`, input: `{}`, wantErr: "stdout is not valid JSON", permanent: true},
		{name: "huge stdout", body: `head -c 100000 /dev/zero | tr '\0' a`, input: `{}`, opts: ExecOptions{MaxStdout: 1024},
			wantErr: "stdout exceeded the 1024-byte limit", permanent: true},
		{name: "stderr tail only", body: `i=0; while [ $i -lt 300 ]; do echo "line $i of noise" >&2; i=$((i+1)); done; exit 2`, input: `{}`,
			opts: ExecOptions{StderrTail: 64}, wantErr: "line 299 of noise", permanent: true},
		{name: "killed by a foreign signal is retryable", body: `kill -9 $$`, input: `{}`, wantErr: "signal: killed", retryable: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			task := execTask(tc.input)
			h := Exec([]string{script(t, tc.body)}, tc.opts)
			out, err := h(context.Background(), task)
			if tc.wantErr != "" {
				require.Error(t, err)
				require.Contains(t, err.Error(), tc.wantErr)
				require.Equal(t, tc.permanent, IsPermanent(err), "permanent: %v", err)
				var re *RetryableError
				require.Equal(t, tc.retryable, errors.As(err, &re), "retryable: %v", err)
				require.Nil(t, out)
				return
			}
			require.NoError(t, err)
			switch tc.wantOut {
			case "":
				require.Nil(t, out)
			case "ENV":
				require.JSONEq(t, `{"id":"`+task.ID.String()+`","type":"job","attempt":2,"worker":"w1"}`, string(out))
			default:
				require.JSONEq(t, tc.wantOut, string(out))
			}
		})
	}
	t.Run("stderr tail is bounded", func(t *testing.T) {
		t.Parallel()
		h := Exec([]string{script(t, `i=0; while [ $i -lt 300 ]; do echo "line $i of noise" >&2; i=$((i+1)); done; exit 2`)}, ExecOptions{StderrTail: 64})
		_, err := h(context.Background(), execTask(`{}`))
		require.Error(t, err)
		require.NotContains(t, err.Error(), "line 1 of noise")
		require.Less(t, len(err.Error()), 200)
	})
	t.Run("missing program is retryable", func(t *testing.T) {
		t.Parallel()
		_, err := Exec([]string{filepath.Join(t.TempDir(), "nope")}, ExecOptions{})(context.Background(), execTask(`{}`))
		var re *RetryableError
		require.ErrorAs(t, err, &re)
	})
}

// An exec handler snoozes its task with ExitSnooze and the delay in seconds
// on stdout.
func TestExecSnooze(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, body string
		want       time.Duration // 0: a permanent failure
	}{
		{"delay on stdout", `echo 30; exit 79`, 30 * time.Second},
		{"fractional", `echo 0.5; exit 79`, 500 * time.Millisecond},
		{"empty stdout takes the default", `exit 79`, DefaultExecSnooze},
		{"not a number", `echo soon; exit 79`, 0},
		{"over the bound", `echo 1e9; exit 79`, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Exec([]string{script(t, tc.body)}, ExecOptions{})(context.Background(), execTask(`{}`))
			if tc.want == 0 {
				require.True(t, IsPermanent(err), "%v", err)
				require.ErrorContains(t, err, "wants the delay in seconds")
				return
			}
			var sz *SnoozeError
			require.ErrorAs(t, err, &sz)
			require.Equal(t, tc.want, sz.Delay)
		})
	}
}

// On cancellation the whole process group gets SIGTERM, and SIGKILL after
// the grace period when it ignores SIGTERM.
func TestExecHandlerKill(t *testing.T) {
	t.Parallel()
	for _, ignoreTerm := range []bool{false, true} {
		t.Run("ignores SIGTERM="+strconv.FormatBool(ignoreTerm), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			trap := ""
			if ignoreTerm {
				trap = `trap '' TERM`
			}
			body := trap + `
sleep 1000 &
echo $! > ` + dir + `/child.pid
echo $$ > ` + dir + `/parent.pid
echo started >&2
wait`
			h := Exec([]string{script(t, body)}, ExecOptions{KillGrace: 200 * time.Millisecond})
			ctx, cancel := context.WithCancelCause(context.Background())
			done := make(chan error, 1)
			go func() {
				_, err := h(ctx, execTask(`{}`))
				done <- err
			}()
			eventuallyFile(t, filepath.Join(dir, "parent.pid"))
			cancel(&TimeoutError{After: time.Second})
			var err error
			select {
			case err = <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("exec handler was not killed")
			}
			require.ErrorIs(t, err, ErrTimedOut)
			require.Contains(t, err.Error(), "started")
			for _, f := range []string{"parent.pid", "child.pid"} {
				pid := readPid(t, filepath.Join(dir, f))
				testutil.Eventually(t, func() bool { return !testutil.ProcessAlive(pid) }, "%s %d to be gone", f, pid)
			}
		})
	}
}

func eventuallyFile(t *testing.T, p string) {
	t.Helper()
	testutil.Eventually(t, func() bool {
		b, err := os.ReadFile(p)
		return err == nil && strings.HasSuffix(string(b), "\n")
	}, "file %s", p)
}

func readPid(t *testing.T, p string) int {
	t.Helper()
	eventuallyFile(t, p)
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	require.NoError(t, err)
	return pid
}

func TestParseExecSpec(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		typ     string
		cmd     []string
		wantErr string
	}{
		{in: "send_email=./send.sh", typ: "send_email", cmd: []string{"./send.sh"}},
		{in: "resize = /usr/bin/convert -resize 50% ", typ: "resize", cmd: []string{"/usr/bin/convert", "-resize", "50%"}},
		{in: "noequals", wantErr: "want TYPE=COMMAND"},
		{in: "=cmd", wantErr: "want TYPE=COMMAND"},
		{in: "t=", wantErr: "want TYPE=COMMAND"},
		{in: "bad/type=cmd", wantErr: "task type"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			spec, err := ParseExecSpec(tc.in)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.typ, spec.Type)
			require.Equal(t, tc.cmd, spec.Command)
		})
	}
	require.ErrorContains(t, ExecSpec{Type: "x", Command: []string{"/definitely/not/here"}}.Check(), "chmod +x")
	require.NoError(t, ExecSpec{Type: "x", Command: []string{"sh"}}.Check())
}

// An exec handler run by a worker: output stored, exit codes steer the task.
func TestExecThroughWorker(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, b storetest.Backend) {
		bd := setup(t, b, setupOpts{})
		w := New(bd.q, bd.opts(t))
		w.Handle("upper", Exec([]string{script(t, `tr a-z A-Z`)}, ExecOptions{}))
		w.Handle("tempfail", Exec([]string{script(t, `echo "try later" >&2; exit 75`)}, ExecOptions{}))
		ok := bd.submit(t, "upper", `{"msg":"hi"}`)
		tf := bd.submit(t, "tempfail", `{}`, retries(1), func(r *queue.SubmitRequest) {
			r.RetryPolicy = &queue.RetryPolicy{InitialIntervalMS: 1, MaxIntervalMS: 1, Multiplier: 1}
		})
		r := start(t, w)
		got := bd.waitStatus(t, ok.ID, queue.StatusCompleted)
		require.JSONEq(t, `{"MSG":"HI"}`, string(got.Output))
		got = bd.waitStatus(t, tf.ID, queue.StatusFailed)
		require.Equal(t, 1, got.RetryCount)
		require.Contains(t, got.LastError, "try later")
		require.NoError(t, r.stop(t))
	})
}

// envOf runs an exec handler that writes its environment to a file and
// returns it as a map.
func envOf(t *testing.T, opts ExecOptions) map[string]string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "env.txt")
	h := Exec([]string{script(t, `env > "$1"`), out}, opts)
	_, err := h(context.Background(), execTask(`{}`))
	require.NoError(t, err)
	b, err := os.ReadFile(out)
	require.NoError(t, err)
	env := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			env[k] = v
		}
	}
	return env
}

// A handler does not inherit the worker's environment: the bucket's
// credentials and qo's own settings stay with the worker; what the options
// name gets through. (Not parallel: it sets the process environment.)
func TestExecEnvironmentIsClean(t *testing.T) {
	secrets := map[string]string{
		"AWS_ACCESS_KEY_ID": "AKIAEXAMPLEKEY", "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI-secret", "AWS_SESSION_TOKEN": "tok",
		"QO_API_TOKEN": "qo-token", "S3_ENDPOINT": "http://127.0.0.1:1", "DATABASE_URL": "postgres://u:p@db/app",
	}
	for k, v := range secrets {
		t.Setenv(k, v)
	}
	t.Setenv("LC_TIME", "C")

	env := envOf(t, ExecOptions{WorkerID: "w1"})
	for k := range secrets {
		require.NotContains(t, env, k, "the handler must not see %s", k)
	}
	for _, v := range secrets {
		for k, got := range env {
			require.NotEqual(t, v, got, "%s carries a secret value", k)
		}
	}
	require.Equal(t, os.Getenv("PATH"), env["PATH"], "PATH is inherited")
	require.Equal(t, "C", env["LC_TIME"], "LC_* is inherited")
	require.Equal(t, "w1", env["QO_WORKER_ID"])
	require.Equal(t, "job", env["QO_TASK_TYPE"])

	t.Run("PassEnv and Env", func(t *testing.T) {
		env := envOf(t, ExecOptions{PassEnv: []string{"DATABASE_URL", "NOT_SET_ANYWHERE"}, Env: []string{"GREETING=hello, world", "HOME=/srv/handler", "QO_TASK_TYPE=spoof"}})
		require.Equal(t, "postgres://u:p@db/app", env["DATABASE_URL"])
		require.NotContains(t, env, "NOT_SET_ANYWHERE", "a name the worker does not have is skipped")
		require.Equal(t, "hello, world", env["GREETING"])
		require.Equal(t, "/srv/handler", env["HOME"], "Env overrides the base environment")
		require.Equal(t, "job", env["QO_TASK_TYPE"], "the task variables cannot be overridden")
		require.NotContains(t, env, "AWS_SECRET_ACCESS_KEY")
	})
	t.Run("env file", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "handler.env")
		require.NoError(t, os.WriteFile(p, []byte("# settings\nexport SMTP_HOST=mail.example.com\nSMTP_PASS='p w#1'\nURL=\"https://${SMTP_HOST}/x\"\r\n"), 0o600))
		vars, err := ReadEnvFile(p)
		require.NoError(t, err)
		env := envOf(t, ExecOptions{Env: vars})
		require.Equal(t, "mail.example.com", env["SMTP_HOST"])
		require.Equal(t, "p w#1", env["SMTP_PASS"])
		require.Equal(t, "https://mail.example.com/x", env["URL"])
		require.NotContains(t, env, "AWS_ACCESS_KEY_ID")
	})
}

func TestChildEnv(t *testing.T) {
	t.Parallel()
	worker := []string{"PATH=/usr/bin", "HOME=/home/w", "LC_ALL=C", "LCX=no", "AWS_SECRET_ACCESS_KEY=s", "QO_EXEC=x=./x", "KEEP=1", "=C:=weird"}
	got := childEnv(worker, ExecOptions{PassEnv: []string{"KEEP"}, Env: []string{"HOME=/tmp", "NEW=a=b"}}, []string{"QO_TASK_ID=1"})
	require.Equal(t, []string{"PATH=/usr/bin", "HOME=/tmp", "LC_ALL=C", "KEEP=1", "NEW=a=b", "QO_TASK_ID=1"}, got)
}

func TestExecOptionsValidate(t *testing.T) {
	t.Parallel()
	require.NoError(t, ExecOptions{PassEnv: []string{"A_1", "_x"}, Env: []string{"B=", "C=a=b"}}.Validate())
	for _, o := range []ExecOptions{
		{PassEnv: []string{"1A"}}, {PassEnv: []string{"A-B"}}, {PassEnv: []string{""}},
		{Env: []string{"NOEQUALS"}}, {Env: []string{"=x"}}, {Env: []string{"A B=1"}},
	} {
		err := o.Validate()
		require.ErrorIs(t, err, ErrExecEnv, "%+v", o)
	}
	require.ErrorContains(t, ExecOptions{Env: []string{"NOEQUALS"}}.Validate(), "want NAME=VALUE")
	require.ErrorContains(t, ExecOptions{PassEnv: []string{"A-B"}}.Validate(), "use letters, digits and _")
}

func TestReadEnvFileErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tests := []struct {
		name, body string
		want       []string
	}{
		{"bad name", "A=1\nmy-key=s3cret\n", []string{"line 2:", `unexpected "-" in a variable name`, "want NAME=VALUE"}},
		{"no equals", "A=1\nJUSTANAME\nB=2\n", []string{"line 2:", "a line without '='"}},
		{"unterminated quote", "A=1\nB=\"s3cret\nC=2\n", []string{"line 2:", "quoted value is not closed"}},
		{"name starts with a digit", "A=1\n1A=s3cret\n", []string{`line 2: "1A" is not a variable name`}},
		{"space in a name", "A B=s3cret\n", []string{`line 1: "A B" is not a variable name`}},
		{"no name", "=s3cret\n", []string{"no NAME before"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_")+".env")
			require.NoError(t, os.WriteFile(p, []byte(tc.body), 0o600))
			_, err := ReadEnvFile(p)
			require.ErrorIs(t, err, ErrExecEnv)
			require.ErrorContains(t, err, p)
			for _, w := range tc.want {
				require.ErrorContains(t, err, w)
			}
			require.NotContains(t, err.Error(), "s3cret", "an error never echoes a value")
		})
	}
	_, err := ReadEnvFile(filepath.Join(dir, "missing.env"))
	require.ErrorIs(t, err, ErrExecEnv)
	require.ErrorContains(t, err, "does not exist")
}

// A shutdown past its timeout stops an exec handler that ignores SIGTERM
// (it is killed at the kill grace) and releases its task only once the
// handler's process is gone: no other worker can claim the task while the
// first attempt still runs.
func TestShutdownReleasesAfterExecHandlerExits(t *testing.T) {
	t.Parallel()
	bd := setup(t, storetest.Backends()[0], setupOpts{})
	rs := &releaseWatch{Store: bd.s}
	q := bd.over(t, rs)
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	o := bd.opts(t)
	o.ShutdownTimeout = 10 * time.Millisecond
	o.KillGrace = time.Second
	o.HandlerGrace = 0 // the default, above the kill grace
	w := New(q, o)
	w.Handle("stubborn", Exec([]string{script(t, "trap '' TERM\necho $$ > "+pidFile+".tmp && mv "+pidFile+".tmp "+pidFile+"\nsleep 1000")}, ExecOptions{}))
	task := bd.submit(t, "stubborn", `{}`)
	r := start(t, w)
	pid := readPid(t, pidFile)
	var released atomic.Int32
	var overlaps []string
	var mu sync.Mutex
	check := func() {
		released.Add(1)
		if testutil.ProcessAlive(pid) {
			mu.Lock()
			overlaps = append(overlaps, "the task was released while its handler (pid "+strconv.Itoa(pid)+") still ran")
			mu.Unlock()
		}
	}
	rs.check.Store(&check)
	require.NoError(t, r.stop(t))
	got := bd.get(t, task.ID)
	require.Equal(t, queue.StatusPending, got.Status, "released once the handler is gone")
	require.Contains(t, got.LastError, "shut down")
	require.EqualValues(t, 1, released.Load())
	mu.Lock()
	defer mu.Unlock()
	require.Empty(t, overlaps)
	require.False(t, testutil.ProcessAlive(pid))
}

// Abort kills an exec handler that is in its kill grace at once, rather
// than at the end of the grace (an hour here).
func TestAbortKillsExecHandlerInItsGrace(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	h := Exec([]string{script(t, "trap '' TERM\necho $$ > "+pidFile+".tmp && mv "+pidFile+".tmp "+pidFile+"\nsleep 1000")}, ExecOptions{})
	abort := make(chan struct{})
	base := withHandlerEnv(context.Background(), handlerEnv{abort: abort, killGrace: time.Hour})
	ctx, cancel := context.WithCancelCause(base)
	done := make(chan error, 1)
	go func() {
		_, err := h(ctx, execTask(`{}`))
		done <- err
	}()
	pid := readPid(t, pidFile)
	cancel(ErrShuttingDown) // SIGTERM, ignored; SIGKILL only in an hour
	close(abort)
	select {
	case err := <-done:
		require.ErrorIs(t, err, ErrShuttingDown)
	case <-time.After(60 * time.Second):
		t.Fatal("the aborted exec handler was not killed")
	}
	require.False(t, testutil.ProcessAlive(pid))
}

// Abort during the kill grace of an exec handler that ignores SIGTERM
// kills it at once, and its task is released once the process is gone,
// before Run returns: nothing is left for the monitor.
func TestAbortDuringKillGraceReleases(t *testing.T) {
	t.Parallel()
	bd := setup(t, storetest.Backends()[0], setupOpts{})
	rs := &releaseWatch{Store: bd.s}
	q := bd.over(t, rs)
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	logs := &testutil.Buffer{}
	o := bd.opts(t)
	o.ShutdownTimeout = 10 * time.Millisecond
	o.KillGrace, o.HandlerGrace = 5*time.Second, 0 // the most DeadAfter 20s allows, and the default above it
	o.Logger = slog.New(slog.NewTextHandler(logs, nil))
	w := New(q, o)
	w.Handle("stubborn", Exec([]string{script(t, "trap '' TERM\necho $$ > "+pidFile+".tmp && mv "+pidFile+".tmp "+pidFile+"\nsleep 1000")}, ExecOptions{}))
	task := bd.submit(t, "stubborn", `{}`)
	r := start(t, w)
	pid := readPid(t, pidFile)
	var alive atomic.Bool
	check := func() { alive.Store(alive.Load() || testutil.ProcessAlive(pid)) }
	rs.check.Store(&check)
	r.cancel()
	testutil.Eventually(t, func() bool { return strings.Contains(logs.String(), "stopping the handlers still running") }, "the handler to be stopped")
	w.Abort() // in the kill grace: SIGTERM sent, SIGKILL due in 5s
	require.NoError(t, r.stop(t))
	require.False(t, testutil.ProcessAlive(pid))
	require.Equal(t, queue.StatusPending, bd.get(t, task.ID).Status, "released before Run returned")
	require.False(t, alive.Load(), "released while the handler still ran")
	require.False(t, bd.registered(t, w.ID()), "nothing left for the monitor: deregistered")
}

// An exec handler gets the task's trace context as TRACEPARENT and
// TRACESTATE, and only the task's: a worker's own TRACEPARENT stays with
// it. (Not parallel: it sets the process environment.)
func TestExecTraceContext(t *testing.T) {
	t.Setenv("TRACEPARENT", "00-11111111111111111111111111111111-1111111111111111-01")
	t.Setenv("TRACESTATE", "worker=own")
	run := func(meta map[string]string, opts ExecOptions) map[string]string {
		out := filepath.Join(t.TempDir(), "env.txt")
		h := Exec([]string{script(t, `env > "$1"`), out}, opts)
		task := execTask(`{}`)
		task.Metadata = meta
		_, err := h(context.Background(), task)
		require.NoError(t, err)
		b, err := os.ReadFile(out)
		require.NoError(t, err)
		env := map[string]string{}
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			if k, v, ok := strings.Cut(line, "="); ok {
				env[k] = v
			}
		}
		return env
	}
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	env := run(map[string]string{queue.MetaTraceparent: tp, queue.MetaTracestate: "congo=t61rcWkgMzE", "tenant": "acme"}, ExecOptions{})
	require.Equal(t, tp, env["TRACEPARENT"])
	require.Equal(t, "congo=t61rcWkgMzE", env["TRACESTATE"])
	require.NotContains(t, env, "tenant", "other metadata is not in the environment")

	// Nothing set by the options overrides the task's context.
	env = run(map[string]string{queue.MetaTraceparent: tp}, ExecOptions{Env: []string{"TRACEPARENT=00-22222222222222222222222222222222-2222222222222222-01"}})
	require.Equal(t, tp, env["TRACEPARENT"])
	require.NotContains(t, env, "TRACESTATE")

	env = run(nil, ExecOptions{})
	require.NotContains(t, env, "TRACEPARENT", "the worker's own trace context never reaches a handler")
	require.NotContains(t, env, "TRACESTATE")
}
