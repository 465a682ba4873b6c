//go:build unix

package e2e

// Process-level tests of the worker runtime: real `qo` processes against
// the test S3 server, killed, stopped and signalled for real.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/internal/testutil"
	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/queue/namedlease"
	"github.com/qo-queue/qo/queue/registry"
	"github.com/qo-queue/qo/store/s3store"
	"github.com/qo-queue/qo/store/storetest"
)

// wkBinary returns the qo binary under test (built once by TestMain).
func wkBinary(t *testing.T) string {
	t.Helper()
	require.NotEmpty(t, qoBin, "TestMain did not set the binary path")
	return qoBin
}

// wkEnv is a fresh queue on the test S3 server and the environment that
// points qo processes at it.
type wkEnv struct {
	q   *queue.Queue
	s   *s3store.Store
	env []string
}

func wkSetup(t *testing.T) *wkEnv {
	t.Helper()
	s := storetest.MinIO(t)
	return wkSetupOn(t, s, storetest.S3Config(t, s.Bucket()))
}

// wkSetupOn is wkSetup on an existing bucket (any S3 server): it
// initialises the queue there (idempotent) and points qo processes at it
// with cfg.
func wkSetupOn(t *testing.T, s *s3store.Store, cfg s3store.Config) *wkEnv {
	t.Helper()
	wkBinary(t)
	ctx := context.Background()
	_, err := queue.Init(ctx, s, 1)
	require.NoError(t, err)
	q, err := queue.Open(ctx, s, queue.Options{})
	require.NoError(t, err)
	env := append(os.Environ(),
		"S3_ENDPOINT="+cfg.Endpoint, "S3_BUCKET="+cfg.Bucket, "S3_REGION="+cfg.Region,
		"AWS_ACCESS_KEY_ID="+cfg.AccessKey, "AWS_SECRET_ACCESS_KEY="+cfg.SecretKey,
		"QO_LOG_FORMAT=json", "QO_LOG_LEVEL=debug")
	return &wkEnv{q: q, s: s, env: env}
}

// wkProc is a running qo process.
type wkProc struct {
	name string
	cmd  *exec.Cmd
	out  *testutil.Buffer
	done chan error
}

func (e *wkEnv) start(t *testing.T, name string, args ...string) *wkProc {
	t.Helper()
	cmd := exec.Command(wkBinary(t), args...)
	cmd.Env = e.env
	p := &wkProc{name: name, cmd: cmd, out: &testutil.Buffer{}, done: make(chan error, 1)}
	cmd.Stdout = p.out
	cmd.Stderr = p.out
	require.NoError(t, cmd.Start())
	go func() { p.done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGCONT)
		_ = cmd.Process.Kill()
		<-p.done
		if t.Failed() {
			t.Logf("--- output of %s:\n%s", name, p.out.String())
		}
	})
	return p
}

// wait returns the process's exit code once it exited.
func (p *wkProc) wait(t *testing.T) int {
	t.Helper()
	select {
	case err := <-p.done:
		p.done <- err
		if err == nil {
			return 0
		}
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		}
		t.Fatalf("%s: %v", p.name, err)
	case <-time.After(90 * time.Second):
		t.Fatalf("%s did not exit", p.name)
	}
	return -1
}

func (p *wkProc) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	require.NoError(t, p.cmd.Process.Signal(sig))
}

func (e *wkEnv) submit(t *testing.T, typ, input string, timeout time.Duration, maxRetries int) uuid.UUID {
	t.Helper()
	task, _, err := e.q.Submit(context.Background(), queue.SubmitRequest{
		Type: typ, Input: json.RawMessage(input), Timeout: timeout, MaxRetries: &maxRetries,
		RetryPolicy: &queue.RetryPolicy{InitialIntervalMS: 100, MaxIntervalMS: 100, Multiplier: 1},
	})
	require.NoError(t, err)
	return task.ID
}

// waitTask polls (generously) until cond holds for the task.
func (e *wkEnv) waitTask(t *testing.T, id uuid.UUID, what string, cond func(*queue.Task) bool) *queue.Task {
	t.Helper()
	var task *queue.Task
	var err error
	testutil.Poll{Limit: 90 * time.Second, Every: 50 * time.Millisecond}.Until(t, func() bool {
		task, err = e.q.Get(context.Background(), id)
		return err == nil && cond(task)
	}, "task %s: %s (last: %s)", id, what, testutil.Lazy(func() string { return fmt.Sprintf("%+v, err %v", task, err) }))
	return task
}

func (e *wkEnv) registered(t *testing.T, id string) bool {
	t.Helper()
	ws, err := registry.List(context.Background(), e.q)
	require.NoError(t, err)
	for _, w := range ws {
		if w.ID == id {
			return true
		}
	}
	return false
}

// cli runs qo on the environment's bucket, wants exit 0 and returns
// stdout.
func (e *wkEnv) cli(t *testing.T, args ...string) string {
	t.Helper()
	r := qo(t, e.env, args...)
	require.Equal(t, 0, r.code, "qo %s: %s", strings.Join(args, " "), r)
	return r.stdout
}

// cliID runs qo like cli and returns the id it printed.
func (e *wkEnv) cliID(t *testing.T, args ...string) uuid.UUID {
	t.Helper()
	id, err := uuid.Parse(strings.TrimSpace(e.cli(t, args...)))
	require.NoError(t, err)
	return id
}

func workerArgs(id string, extra ...string) []string {
	return append([]string{"run-worker", "--id", id, "--poll-min", "20ms", "--poll-max", "200ms",
		"--heartbeat-interval", "500ms", "--check-interval", "200ms", "--lease-check-interval", "200ms"}, extra...)
}

// kill -9 of a worker mid-task: the lease expires, the monitor embedded in
// another worker requeues the task, and it completes there.
func TestWorkerKill9Recovery(t *testing.T) {
	t.Parallel()
	e := wkSetup(t)
	id := e.submit(t, "sleep", `{"ms":1500}`, 2*time.Second, 3)
	a := e.start(t, "worker-a", workerArgs("worker-a", "--no-monitor")...)
	e.waitTask(t, id, "running on worker-a", func(task *queue.Task) bool {
		return task.Status == queue.StatusRunning && task.WorkerID == "worker-a"
	})
	a.signal(t, syscall.SIGKILL)
	a.wait(t)

	b := e.start(t, "worker-b", workerArgs("worker-b")...)
	got := e.waitTask(t, id, "completed", func(task *queue.Task) bool { return task.Status == queue.StatusCompleted })
	require.Equal(t, "worker-b", got.WorkerID)
	require.Equal(t, 2, got.Attempt)
	require.Equal(t, 1, got.RetryCount, "the timed-out attempt counts as a retry")
	require.JSONEq(t, `{"slept_ms":1500}`, string(got.Output))
	require.True(t, e.registered(t, "worker-a"), "a killed worker cannot deregister")

	b.signal(t, syscall.SIGTERM)
	require.Equal(t, 0, b.wait(t))
	require.False(t, e.registered(t, "worker-b"))
}

// kill -9 of a worker holding long tasks (timeout 10 minutes), with the
// default heartbeat, liveness bound and monitor cadence, and with the
// monitor leadership on the killed worker: every task it held runs on
// another worker well within the 30 s bound, not after its timeout.
func TestKilledWorkerTasksRunElsewhere(t *testing.T) {
	t.Parallel()
	e := wkSetup(t)
	const n = 4
	var ids []uuid.UUID
	for range n {
		ids = append(ids, e.submit(t, "sleep", `{"ms":3000}`, 10*time.Minute, 3))
	}
	defaults := func(id string, extra ...string) []string {
		return append([]string{"run-worker", "--id", id, "--poll-min", "20ms", "--poll-max", "1s"}, extra...)
	}
	a := e.start(t, "worker-a", defaults("worker-a", "--concurrency", "4")...)
	for _, id := range ids {
		e.waitTask(t, id, "running on worker-a", func(task *queue.Task) bool {
			return task.Status == queue.StatusRunning && task.WorkerID == "worker-a"
		})
	}
	leaderIs := func(holder string) bool {
		l, err := namedlease.Read(context.Background(), e.q, queue.MonitorLeaderKey)
		return err == nil && l.Holder == holder && l.ExpiresAt.After(e.q.Now())
	}
	poll := testutil.Poll{Every: 50 * time.Millisecond}
	poll.Until(t, func() bool { return leaderIs("worker-a-monitor") }, "worker-a's monitor to lead")
	b := e.start(t, "worker-b", defaults("worker-b", "--concurrency", "2")...)
	c := e.start(t, "worker-c", defaults("worker-c", "--concurrency", "2")...)
	for _, w := range []string{"worker-b", "worker-c"} {
		poll.Until(t, func() bool { return e.registered(t, w) }, "%s to register", w)
	}
	killed := time.Now()
	a.signal(t, syscall.SIGKILL)
	a.wait(t)
	var took []time.Duration
	for _, id := range ids {
		got := e.waitTask(t, id, "running elsewhere", func(task *queue.Task) bool {
			return task.Attempt >= 2 && task.WorkerID != "worker-a" && task.WorkerID != ""
		})
		took = append(took, time.Since(killed))
		require.Contains(t, got.LastError, "worker-a stopped heartbeating")
	}
	for _, id := range ids {
		e.waitTask(t, id, "completed", func(task *queue.Task) bool { return task.Status == queue.StatusCompleted })
	}
	slices.Sort(took)
	t.Logf("after SIGKILL of the worker holding %d tasks (and the monitor lead), each ran elsewhere after: %v", n, took)
	require.Less(t, took[len(took)-1], 60*time.Second, "generous bound (the target is 30 s)")
	for _, w := range []*wkProc{b, c} {
		w.signal(t, syscall.SIGTERM)
		require.Equal(t, 0, w.wait(t))
	}
}

// A handler that ignores SIGTERM is killed at its timeout (SIGKILL after
// the kill grace) and its task is retried with "timed out after 2s".
func TestTimeoutKillsHandler(t *testing.T) {
	t.Parallel()
	e := wkSetup(t)
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	script := filepath.Join(dir, "stubborn.sh")
	require.NoError(t, os.WriteFile(script, []byte("#!/bin/sh\ntrap '' TERM\necho $$ >> "+pidFile+"\nsleep 120 & wait $!\nsleep 120\n"), 0o755))
	id := e.submit(t, "stubborn", `{}`, 2*time.Second, 1)
	start := time.Now()
	w := e.start(t, "w", workerArgs("w-timeout", "--kill-grace", "1s", "--exec", "stubborn="+script)...)
	got := e.waitTask(t, id, "failed after two timed-out attempts", func(task *queue.Task) bool { return task.Status == queue.StatusFailed })
	took := time.Since(start)
	require.Equal(t, 2, got.Attempt)
	require.Equal(t, 1, got.RetryCount)
	require.Contains(t, got.LastError, "timed out after 2s")
	t.Logf("two attempts of a handler that ignores SIGTERM (timeout 2s, kill grace 1s) ended in %s", took)
	require.Less(t, took, 60*time.Second, "the timeout ends the attempt, not a lease expiry")
	hist, err := e.q.History(context.Background(), id)
	require.NoError(t, err)
	for _, ev := range hist {
		require.NotEqual(t, queue.EventLeaseExtended, ev.Name)
		require.NotEqual(t, queue.EventTimedOut, ev.Name, "the worker ended the attempts, not the monitor")
	}
	b, err := os.ReadFile(pidFile)
	require.NoError(t, err)
	for _, f := range strings.Fields(string(b)) {
		var pid int
		_, err := fmt.Sscan(f, &pid)
		require.NoError(t, err)
		require.False(t, testutil.ProcessAlive(pid), "handler %d still runs", pid)
	}
	w.signal(t, syscall.SIGTERM)
	require.Equal(t, 0, w.wait(t))
}

func TestWorkerSignals(t *testing.T) {
	t.Parallel()
	t.Run("idle SIGTERM", func(t *testing.T) {
		t.Parallel()
		e := wkSetup(t)
		w := e.start(t, "w", workerArgs("w-idle")...)
		testutil.Poll{Every: 50 * time.Millisecond}.Until(t, func() bool { return e.registered(t, "w-idle") }, "the worker to register")
		w.signal(t, syscall.SIGTERM)
		require.Equal(t, 0, w.wait(t))
		require.False(t, e.registered(t, "w-idle"))
	})
	t.Run("SIGTERM past the shutdown timeout releases", func(t *testing.T) {
		t.Parallel()
		e := wkSetup(t)
		id := e.submit(t, "sleep", `{"ms":600000}`, 30*time.Second, 3)
		w := e.start(t, "w", workerArgs("w-release", "--shutdown-timeout", "300ms")...)
		e.waitTask(t, id, "running", func(task *queue.Task) bool { return task.Status == queue.StatusRunning })
		w.signal(t, syscall.SIGTERM)
		require.Equal(t, 0, w.wait(t))
		got := e.waitTask(t, id, "pending", func(task *queue.Task) bool { return task.Status == queue.StatusPending })
		require.Equal(t, 0, got.RetryCount)
		require.False(t, e.registered(t, "w-release"))
	})
	t.Run("SIGTERM waits for a finishing task", func(t *testing.T) {
		t.Parallel()
		e := wkSetup(t)
		id := e.submit(t, "sleep", `{"ms":1500}`, 30*time.Second, 3)
		w := e.start(t, "w", workerArgs("w-finish", "--shutdown-timeout", "1m")...)
		e.waitTask(t, id, "running", func(task *queue.Task) bool { return task.Status == queue.StatusRunning })
		w.signal(t, syscall.SIGTERM)
		require.Equal(t, 0, w.wait(t))
		got, err := e.q.Get(context.Background(), id)
		require.NoError(t, err)
		require.Equal(t, queue.StatusCompleted, got.Status)
	})
	t.Run("second signal releases at once", func(t *testing.T) {
		t.Parallel()
		e := wkSetup(t)
		id := e.submit(t, "sleep", `{"ms":600000}`, 30*time.Second, 3)
		w := e.start(t, "w", workerArgs("w-twice", "--shutdown-timeout", "10m")...)
		e.waitTask(t, id, "running", func(task *queue.Task) bool { return task.Status == queue.StatusRunning })
		w.signal(t, syscall.SIGTERM)
		time.Sleep(200 * time.Millisecond)
		w.signal(t, syscall.SIGINT)
		require.Equal(t, 0, w.wait(t))
		got, err := e.q.Get(context.Background(), id)
		require.NoError(t, err)
		require.Equal(t, queue.StatusPending, got.Status)
		require.Equal(t, 0, got.RetryCount)
	})
}

// A worker stopped (SIGSTOP) past its lease and then resumed cannot
// complete the task another worker now owns.
func TestStaleWorkerProcess(t *testing.T) {
	t.Parallel()
	e := wkSetup(t)
	id := e.submit(t, "sleep", `{"ms":2500}`, 10*time.Second, 3)
	a := e.start(t, "worker-a", workerArgs("worker-a", "--no-monitor", "--dead-after", "3s")...)
	e.waitTask(t, id, "running on worker-a", func(task *queue.Task) bool {
		return task.Status == queue.StatusRunning && task.WorkerID == "worker-a"
	})
	a.signal(t, syscall.SIGSTOP)

	// A's heartbeat stops: B's monitor takes the task back after A's
	// liveness bound, long before its timeout.
	b := e.start(t, "worker-b", workerArgs("worker-b", "--dead-after", "3s")...)
	e.waitTask(t, id, "running on worker-b", func(task *queue.Task) bool {
		return task.Status == queue.StatusRunning && task.WorkerID == "worker-b"
	})
	a.signal(t, syscall.SIGCONT)

	got := e.waitTask(t, id, "completed", func(task *queue.Task) bool { return task.Status.Terminal() })
	require.Equal(t, queue.StatusCompleted, got.Status)
	require.Equal(t, "worker-b", got.WorkerID)
	hist, err := e.q.History(context.Background(), id)
	require.NoError(t, err)
	succeeded := 0
	for _, ev := range hist {
		if ev.Name == queue.EventSucceeded {
			succeeded++
			require.Equal(t, "worker-b", ev.WorkerID)
		}
	}
	require.Equal(t, 1, succeeded)
	// A's later writes (its retry of the lapsed attempt) must not have
	// landed after B's completion either.
	require.Equal(t, queue.EventSucceeded, hist[len(hist)-1].Name)

	for _, p := range []*wkProc{a, b} {
		p.signal(t, syscall.SIGTERM)
		require.Equal(t, 0, p.wait(t))
	}
}

// Two monitor processes: one leads; kill -9 it and the other takes over.
func TestTwoMonitorProcesses(t *testing.T) {
	t.Parallel()
	e := wkSetup(t)
	ctx := context.Background()
	args := func(id string) []string {
		return []string{"monitor", "--id", id, "--check-interval", "200ms", "--lease-check-interval", "200ms", "--leader-ttl", "2s"}
	}
	procs := map[string]*wkProc{
		"mon-1": e.start(t, "mon-1", args("mon-1")...),
		"mon-2": e.start(t, "mon-2", args("mon-2")...),
	}
	leader := func() string {
		l, err := namedlease.Read(ctx, e.q, queue.MonitorLeaderKey)
		if err != nil || !l.ExpiresAt.After(e.q.Now()) {
			return ""
		}
		return l.Holder
	}
	var first string
	poll := testutil.Poll{Every: 50 * time.Millisecond}
	poll.Until(t, func() bool { first = leader(); return first != "" }, "a monitor to lead")
	// It keeps the lead while alive.
	for range 10 {
		time.Sleep(100 * time.Millisecond)
		require.Equal(t, first, leader())
	}
	procs[first].signal(t, syscall.SIGKILL)
	procs[first].wait(t)
	other := "mon-1"
	if first == "mon-1" {
		other = "mon-2"
	}
	poll.Until(t, func() bool { return leader() == other }, "the standby %s to take over", other)
	procs[other].signal(t, syscall.SIGTERM)
	require.Equal(t, 0, procs[other].wait(t))
	l, err := namedlease.Read(ctx, e.q, queue.MonitorLeaderKey)
	require.NoError(t, err)
	require.Empty(t, l.Holder, "a clean shutdown releases the leadership")
}

// Exec handlers through the real binary: output, retry (exit 75), snooze
// (exit 79, no retry used) and permanent failure (other exit codes).
func TestExecHandlerProcess(t *testing.T) {
	t.Parallel()
	e := wkSetup(t)
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755))
		return p
	}
	up := write("up.sh", `tr a-z A-Z`)
	tmp := write("tmp.sh", `echo "busy, try later" >&2; exit 75`)
	bad := write("bad.sh", `echo "cannot parse input" >&2; exit 2`)
	snooze := write("snooze.sh", `[ "$QO_ATTEMPT" = 1 ] && { echo 0.2; exit 79; }; echo '"woke"'`)
	ok := e.submit(t, "up", `{"msg":"hi"}`, 10*time.Second, 3)
	snoozed := e.submit(t, "snooze", `{}`, 10*time.Second, 0)
	retried := e.submit(t, "tmp", `{}`, 10*time.Second, 1)
	failed := e.submit(t, "bad", `{}`, 10*time.Second, 3)
	w := e.start(t, "w", workerArgs("w-exec", "--exec", "up="+up, "--exec", "tmp="+tmp, "--exec", "bad="+bad, "--exec", "snooze="+snooze)...)

	got := e.waitTask(t, ok, "completed", func(task *queue.Task) bool { return task.Status == queue.StatusCompleted })
	require.JSONEq(t, `{"MSG":"HI"}`, string(got.Output))
	got = e.waitTask(t, retried, "failed", func(task *queue.Task) bool { return task.Status == queue.StatusFailed })
	require.Equal(t, 1, got.RetryCount)
	require.Contains(t, got.LastError, "busy, try later")
	got = e.waitTask(t, failed, "failed", func(task *queue.Task) bool { return task.Status == queue.StatusFailed })
	require.Equal(t, 0, got.RetryCount)
	require.Contains(t, got.LastError, "cannot parse input")
	got = e.waitTask(t, snoozed, "completed", func(task *queue.Task) bool { return task.Status == queue.StatusCompleted })
	require.JSONEq(t, `"woke"`, string(got.Output))
	require.Equal(t, 2, got.Attempt)
	require.Equal(t, 1, got.SnoozeCount, "snoozed once")
	require.Equal(t, 0, got.RetryCount, "without using a retry (it has none)")

	w.signal(t, syscall.SIGTERM)
	require.Equal(t, 0, w.wait(t))
}

// An exec handler that dumps its environment into the bucket (its error)
// shows none of the worker's credentials, only what --env and --env-file
// give it.
func TestExecHandlerEnvironment(t *testing.T) {
	t.Parallel()
	e := wkSetup(t)
	dir := t.TempDir()
	dump := filepath.Join(dir, "dump.sh")
	require.NoError(t, os.WriteFile(dump, []byte("#!/bin/sh\nenv >&2\nexit 3\n"), 0o755))
	envFile := filepath.Join(dir, "handler.env")
	require.NoError(t, os.WriteFile(envFile, []byte("# handler settings\nSMTP_PASS='from the file'\n"), 0o600))
	e.env = append(e.env, "QO_API_TOKEN=qo-secret-token", "DATABASE_URL=postgres://db/app", "UNLISTED=not-for-handlers")
	id := e.submit(t, "dump", `{}`, 10*time.Second, 0)
	w := e.start(t, "w", workerArgs("w-env", "--exec", "dump="+dump, "--env", "DATABASE_URL", "--env", "GREETING=hi, there", "--env-file", envFile)...)

	got := e.waitTask(t, id, "failed", func(task *queue.Task) bool { return task.Status == queue.StatusFailed })
	cfg := storetest.S3Config(t, e.s.Bucket())
	for _, secret := range []string{cfg.SecretKey, cfg.AccessKey, "AWS_SECRET_ACCESS_KEY", "AWS_ACCESS_KEY_ID", "qo-secret-token", "not-for-handlers", "S3_ENDPOINT"} {
		require.NotContains(t, got.LastError, secret)
	}
	for _, want := range []string{"DATABASE_URL=postgres://db/app", "GREETING=hi, there", "SMTP_PASS=from the file", "QO_TASK_TYPE=dump", "QO_WORKER_ID=w-env", "PATH="} {
		require.Contains(t, got.LastError, want)
	}
	w.signal(t, syscall.SIGTERM)
	require.Equal(t, 0, w.wait(t))
}

// kill -9 of a worker does not leave its exec handler running as an
// orphan (Linux: parent-death signal).
func TestKilledWorkerTakesExecChildAlong(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("parent-death signal is Linux only")
	}
	e := wkSetup(t)
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	script := filepath.Join(dir, "hang.sh")
	require.NoError(t, os.WriteFile(script, []byte("#!/bin/sh\necho $$ > "+pidFile+".tmp && mv "+pidFile+".tmp "+pidFile+"\nexec sleep 1000\n"), 0o755))
	e.submit(t, "hang", `{}`, 30*time.Second, 3)
	w := e.start(t, "w", workerArgs("w-hang", "--no-monitor", "--exec", "hang="+script)...)
	var pid int
	poll := testutil.Poll{Every: 20 * time.Millisecond}
	poll.Until(t, func() bool {
		b, err := os.ReadFile(pidFile)
		if err != nil {
			return false
		}
		_, err = fmt.Sscan(string(b), &pid)
		require.NoError(t, err)
		return true
	}, "the exec handler to start")
	w.signal(t, syscall.SIGKILL)
	w.wait(t)
	poll.Until(t, func() bool { return !testutil.ProcessAlive(pid) }, "exec child %d to die with its killed worker", pid)
}

// SIGTERM of a worker whose exec handler ignores SIGTERM, past its
// shutdown timeout: the handler gets SIGTERM, then SIGKILL at the kill
// grace, and its task is released only once the handler is gone, so the
// second start (on another worker) never overlaps the first. Each start
// of the handler looks whether an earlier one still runs.
func TestShutdownReleaseDoesNotOverlap(t *testing.T) {
	t.Parallel()
	e := wkSetup(t)
	dir := t.TempDir()
	pids, starts, overlaps := filepath.Join(dir, "pids"), filepath.Join(dir, "starts"), filepath.Join(dir, "overlaps")
	script := filepath.Join(dir, "stubborn.sh")
	require.NoError(t, os.WriteFile(script, []byte(`#!/bin/sh
trap '' TERM
for p in $(cat `+pids+` 2>/dev/null); do
  kill -0 "$p" 2>/dev/null && echo "$p still runs as $$ starts" >> `+overlaps+`
done
echo $$ >> `+pids+`
echo "$$ $QO_WORKER_ID $(date +%s.%N)" >> `+starts+`
sleep 1000
`), 0o755))
	id := e.submit(t, "stubborn", `{}`, 10*time.Minute, 3)
	a := e.start(t, "worker-a", workerArgs("worker-a", "--no-monitor", "--shutdown-timeout", "200ms", "--kill-grace", "2s", "--exec", "stubborn="+script)...)
	e.waitTask(t, id, "running on worker-a", func(task *queue.Task) bool {
		return task.Status == queue.StatusRunning && task.WorkerID == "worker-a"
	})
	lines := func() []string {
		b, _ := os.ReadFile(pids)
		return strings.Fields(string(b))
	}
	poll := testutil.Poll{Every: 20 * time.Millisecond}
	poll.Until(t, func() bool { return len(lines()) == 1 }, "the handler to start on worker-a")
	first := lines()[0]
	b := e.start(t, "worker-b", workerArgs("worker-b", "--no-monitor", "--shutdown-timeout", "100ms", "--kill-grace", "500ms", "--exec", "stubborn="+script)...)
	poll.Until(t, func() bool { return e.registered(t, "worker-b") }, "worker-b to register")
	stopped := time.Now()
	a.signal(t, syscall.SIGTERM)
	require.Equal(t, 0, a.wait(t))
	poll.Until(t, func() bool { return len(lines()) == 2 }, "the task to start again on worker-b")
	took := time.Since(stopped)
	log, _ := os.ReadFile(starts)
	t.Logf("SIGTERM to the second start (shutdown timeout 200ms, kill grace 2s): %s; starts:\n%s", took, log)
	_, err := os.Stat(overlaps)
	if err == nil {
		o, _ := os.ReadFile(overlaps)
		t.Fatalf("a start overlapped the one before: %s", o)
	}
	require.ErrorIs(t, err, os.ErrNotExist)
	var pid int
	_, err = fmt.Sscan(first, &pid)
	require.NoError(t, err)
	require.False(t, testutil.ProcessAlive(pid), "worker-a's handler still runs")
	got, err := e.q.Get(context.Background(), id)
	require.NoError(t, err)
	require.Equal(t, "worker-b", got.WorkerID)
	require.Equal(t, 2, got.Attempt)
	require.Zero(t, got.RetryCount, "a release does not count as a retry")
	b.signal(t, syscall.SIGTERM)
	require.Equal(t, 0, b.wait(t))
}

func TestPauseLimitsExpiryAndLargePayloads(t *testing.T) {
	t.Parallel()
	e := wkSetup(t)
	ctx := context.Background()
	e.cli(t, "pause", "echo", "sleep", "--reason", "e2e")

	expiring := e.cliID(t, "submit", "--type", "echo", "--expires-in", "1s")
	big := `{"blob":"` + strings.Repeat("b", 300<<10) + `"}`
	file := filepath.Join(t.TempDir(), "big.json")
	require.NoError(t, os.WriteFile(file, []byte(big), 0o600))
	bigID := e.cliID(t, "submit", "--type", "echo", "--input-file", file, "--priority", "high")
	var sleeps []uuid.UUID
	for range 4 {
		sleeps = append(sleeps, e.cliID(t, "submit", "--type", "sleep", "--input", `{"ms":400}`))
	}

	e.start(t, "w1", workerArgs("w1", "--builtins", "--concurrency", "4", "--limit", "sleep=1")...)
	// Paused: nothing starts (the worker reads the switches within 5 s).
	time.Sleep(2 * time.Second)
	for _, id := range append([]uuid.UUID{expiring, bigID}, sleeps...) {
		task, err := e.q.Get(ctx, id)
		require.NoError(t, err)
		require.Zero(t, task.Attempt, "task %s of a paused type started", id)
		if id != expiring { // the monitor's sweep may expire that one already
			require.Equal(t, queue.StatusPending, task.Status)
		}
	}

	e.cli(t, "resume", "echo")
	e.waitTask(t, expiring, "expired", func(t *queue.Task) bool { return t.Status == queue.StatusExpired })
	done := e.waitTask(t, bigID, "completed", func(t *queue.Task) bool { return t.Status == queue.StatusCompleted })
	require.NotNil(t, done.InputRef, "an input over 256 KiB lives in its own object")
	require.NotNil(t, done.OutputRef, "so does the echoed output")
	var shown queue.Task
	require.NoError(t, json.Unmarshal([]byte(e.cli(t, "status", bigID.String(), "--json")), &shown))
	require.JSONEq(t, big, string(shown.Input), "qo status loads the input back")
	require.JSONEq(t, big, string(shown.Output), "and the output")

	e.cli(t, "resume", "sleep")
	type span struct{ from, to time.Time }
	var spans []span
	for _, id := range sleeps {
		e.waitTask(t, id, "completed", func(t *queue.Task) bool { return t.Status == queue.StatusCompleted })
		evs, err := e.q.History(ctx, id)
		require.NoError(t, err)
		var s span
		for _, ev := range evs {
			switch ev.Name {
			case queue.EventClaimed:
				s.from = ev.At
			case queue.EventSucceeded:
				s.to = ev.At
			}
		}
		spans = append(spans, s)
	}
	for i := range spans {
		for j := range spans {
			if i != j {
				overlap := spans[i].from.Before(spans[j].to) && spans[j].from.Before(spans[i].to)
				require.False(t, overlap, "--limit sleep=1: two sleep tasks ran at once (%v and %v)", spans[i], spans[j])
			}
		}
	}
}

// qo init and every worker probe the server's conditional writes as they
// start (MinIO honours them); the probe key keeps the one version the
// first probe wrote.
func TestStartProbesLeaveOneVersion(t *testing.T) {
	t.Parallel()
	e := wkSetup(t)
	e.cli(t, "init")
	a := e.start(t, "worker a", workerArgs("probe-a", "--builtins")...)
	b := e.start(t, "worker b", workerArgs("probe-b", "--builtins")...)
	testutil.Poll{Limit: 90 * time.Second}.Until(t, func() bool {
		return e.registered(t, "probe-a") && e.registered(t, "probe-b")
	}, "both workers to register")
	for _, p := range []*wkProc{a, b} {
		p.signal(t, syscall.SIGTERM)
		require.Equal(t, 0, p.wait(t), p.out.String())
	}
	vs, err := e.s.ListVersions(context.Background(), queue.ProbeKey)
	require.NoError(t, err)
	require.Len(t, vs, 1, "probes by init, qo init and two workers wrote one version")
}

// A trace context set at submit (qo submit --metadata traceparent=...)
// crosses into the exec handler a qo run-worker process starts, as
// TRACEPARENT and TRACESTATE, and stays with the task.
func TestExecHandlerGetsTraceContext(t *testing.T) {
	t.Parallel()
	e := wkSetup(t)
	dir := t.TempDir()
	script := filepath.Join(dir, "trace.sh")
	require.NoError(t, os.WriteFile(script, []byte("#!/bin/sh\nprintf '{\"traceparent\":\"%s\",\"tracestate\":\"%s\"}' \"$TRACEPARENT\" \"$TRACESTATE\"\n"), 0o755))
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	id := e.cliID(t, "submit", "--type", "trace", "--metadata", "traceparent="+tp, "--metadata", "tracestate=congo=t61rcWkgMzE,rojo=00f067aa0ba902b7")
	w := e.start(t, "w", workerArgs("w-trace", "--exec", "trace="+script)...)
	got := e.waitTask(t, id, "completed", func(task *queue.Task) bool { return task.Status == queue.StatusCompleted })
	require.JSONEq(t, `{"traceparent":"`+tp+`","tracestate":"congo=t61rcWkgMzE,rojo=00f067aa0ba902b7"}`, string(got.Output))
	require.Equal(t, tp, got.Metadata[queue.MetaTraceparent])
	require.Contains(t, e.cli(t, "status", id.String()), "traceparent="+tp)
	w.signal(t, syscall.SIGTERM)
	require.Equal(t, 0, w.wait(t))
}
