package e2e

// `qo dev` driven for real: the embedded S3 server, queue, worker and
// monitor in one process, reached from other qo processes. No S3 test
// server is needed: qo dev brings its own.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/internal/testutil"
)

// devWait bounds every wait on a qo dev process (a shared, slow machine).
const devWait = 90 * time.Second

// devProc is a running `qo dev`.
type devProc struct {
	dir, addr string
	cmd       *exec.Cmd
	stderr    *testutil.Buffer
	done      chan error
	export    string // the export line it printed when ready
}

func devSkip(t *testing.T) {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("stops qo dev with SIGTERM")
	}
	require.NotEmpty(t, qoBin, "TestMain did not set the binary path")
}

// startDev runs `qo dev --data-dir dir --addr addr extra...` without a
// terminal and no S3 settings in its environment, and waits until it
// prints its export line.
func startDev(t *testing.T, dir, addr string, extra ...string) *devProc {
	t.Helper()
	args := append([]string{"dev", "--data-dir", dir, "--addr", addr}, extra...)
	cmd := exec.Command(qoBin, args...)
	cmd.Env = baseEnv(t)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	d := &devProc{dir: dir, addr: addr, cmd: cmd, stderr: &testutil.Buffer{}, done: make(chan error, 1)}
	cmd.Stderr = d.stderr
	require.NoError(t, cmd.Start())

	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		d.done <- cmd.Wait() // after stdout is drained, as os/exec requires
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill() // no-op once it exited
		select {
		case err := <-d.done:
			d.done <- err
		case <-time.After(devWait):
		}
		if t.Failed() {
			t.Logf("--- stderr of qo %s:\n%s", strings.Join(args, " "), d.stderr.String())
		}
	})

	deadline := time.After(devWait)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("qo dev exited before it was ready:\n%s", d.stderr.String())
			}
			if strings.HasPrefix(l, "export ") {
				d.export = l
				go func() { // keep draining
					for range lines {
					}
				}()
				return d
			}
			t.Fatalf("qo dev printed an unexpected line on stdout: %q", l)
		case <-deadline:
			t.Fatalf("qo dev not ready within %v:\n%s", devWait, d.stderr.String())
		}
	}
}

// env is the export line as VAR=value entries.
func (d *devProc) env(t *testing.T) []string {
	t.Helper()
	fields := strings.Fields(strings.TrimPrefix(d.export, "export "))
	require.Len(t, fields, 5, "export line %q", d.export)
	return fields
}

// stop sends SIGTERM and returns the exit code.
func (d *devProc) stop(t *testing.T) int {
	t.Helper()
	require.NoError(t, d.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-d.done:
		d.done <- err
		if err == nil {
			return 0
		}
		ee, ok := err.(*exec.ExitError)
		require.True(t, ok, "wait: %v", err)
		return ee.ExitCode()
	case <-time.After(devWait):
		t.Fatalf("qo dev did not exit within %v after SIGTERM", devWait)
	}
	return -1
}

func (d *devProc) stateFileExists() bool {
	_, err := os.Stat(filepath.Join(d.dir, "state.json"))
	return err == nil
}

// devTask is the part of a task's JSON the tests look at.
type devTask struct {
	ID     string          `json:"id"`
	Status string          `json:"status"`
	Output json.RawMessage `json:"output"`
}

func devSubmit(t *testing.T, env []string, input string) string {
	t.Helper()
	r := qo(t, env, "submit", "--type", "echo", "--input", input, "--json")
	require.Equal(t, 0, r.code, r.String())
	var task devTask
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &task), r.String())
	require.NotEmpty(t, task.ID)
	return task.ID
}

// devWaitStatus polls `qo status ID --json` until the task has status want.
func devWaitStatus(t *testing.T, env []string, id, want string) devTask {
	t.Helper()
	var r result
	var task devTask
	testutil.Poll{Limit: devWait, Every: 200 * time.Millisecond}.Until(t, func() bool {
		r, task = qo(t, env, "status", id, "--json"), devTask{}
		return r.code == 0 && json.Unmarshal([]byte(r.stdout), &task) == nil && task.Status == want
	}, "task %s to be %s; last: %s", id, want, testutil.Lazy(func() string { return r.String() }))
	return task
}

// Another terminal, with no S3 settings at all, submits to the running dev
// server and sees the task complete: it finds the server by its state file.
func TestDevSubmitByDiscovery(t *testing.T) {
	t.Parallel()
	devSkip(t)
	dir := t.TempDir()
	d := startDev(t, dir, testutil.FreeAddr(t))
	require.True(t, d.stateFileExists())

	// Only where the dev data lives; no S3_* or AWS_* (baseEnv drops them).
	env := []string{"QO_DEV_DATA_DIR=" + dir}
	id := devSubmit(t, env, `{"hi":1}`)
	task := devWaitStatus(t, env, id, "completed")
	require.JSONEq(t, `{"hi":1}`, string(task.Output))

	// The web UI is served; its address is in the log (a terminal shows
	// the link with the dev keys).
	m := regexp.MustCompile(`"web_ui":"(http://127\.0\.0\.1:\d+/)"`).FindStringSubmatch(d.stderr.String())
	require.NotNil(t, m, "no web_ui in the log")
	resp, err := http.Get(m[1])
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)

	require.Equal(t, 0, d.stop(t), "Ctrl+C / SIGTERM is a clean exit")
	require.False(t, d.stateFileExists(), "the state file is removed on exit")

	r := qo(t, env, "status", id, "--json")
	require.NotEqual(t, 0, r.code, "a stopped dev server is not discovered: %s", r)
}

// Data survives a restart (same directory, address and credentials);
// --reset is refused while a server runs and starts over otherwise.
func TestDevRestartAndReset(t *testing.T) {
	t.Parallel()
	devSkip(t)
	dir := t.TempDir()
	addr := testutil.FreeAddr(t)
	d := startDev(t, dir, addr)
	require.Contains(t, d.export, "S3_ENDPOINT=http://"+addr+" ")
	require.Contains(t, d.export, "S3_BUCKET=qo-dev ")
	require.Contains(t, d.export, "AWS_REGION=us-east-1")
	id := devSubmit(t, d.env(t), `{"n":1}`)
	devWaitStatus(t, d.env(t), id, "completed")

	r := qo(t, nil, "dev", "--reset", "--yes", "--data-dir", dir, "--addr", testutil.FreeAddr(t))
	require.Equal(t, 4, r.code, r.String())
	require.Contains(t, r.stderr, "stop it before --reset")
	r = qo(t, nil, "dev", "--data-dir", dir, "--addr", testutil.FreeAddr(t))
	require.Equal(t, 4, r.code, "one data directory, one server: %s", r)
	require.Contains(t, r.stderr, "already runs")
	r = qo(t, nil, "dev", "--data-dir", t.TempDir(), "--addr", addr)
	require.Equal(t, 4, r.code, "one address, one server: %s", r)
	require.Contains(t, r.stderr, "another 'qo dev' may be running")
	require.Equal(t, 0, d.stop(t))

	again := startDev(t, dir, addr)
	require.Equal(t, d.export, again.export, "same address and credentials after a restart")
	task := devWaitStatus(t, again.env(t), id, "completed")
	require.JSONEq(t, `{"n":1}`, string(task.Output))
	require.Equal(t, 0, again.stop(t))

	fresh := startDev(t, dir, addr, "--reset")
	require.NotEqual(t, d.export, fresh.export, "--reset generates new credentials")
	r = qo(t, fresh.env(t), "status", id, "--json")
	require.Equal(t, 3, r.code, "the task is gone after --reset: %s", r)
	require.Equal(t, 0, fresh.stop(t))
}

// --demo keeps tasks flowing through several states.
func TestDevDemo(t *testing.T) {
	t.Parallel()
	devSkip(t)
	d := startDev(t, t.TempDir(), testutil.FreeAddr(t), "--demo", "--demo-rate", "10", "--shutdown-timeout", "2s")
	env := d.env(t)
	var seen map[string]int
	testutil.Poll{Limit: devWait, Every: 500 * time.Millisecond}.Until(t, func() bool {
		r := qo(t, env, "list", "--json", "--limit", "1000")
		require.Equal(t, 0, r.code, r.String())
		var page struct {
			Tasks []devTask `json:"tasks"`
		}
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &page), r.String())
		seen = map[string]int{}
		for _, task := range page.Tasks {
			seen[task.Status]++
		}
		return seen["completed"] > 0 && seen["failed"] > 0 && seen["pending"]+seen["running"] > 0
	}, "demo tasks completed, failed and pending or running; by status: %s", testutil.Lazy(func() string { return fmt.Sprint(seen) }))
	require.Equal(t, 0, d.stop(t), "stops cleanly with demo tasks running")
}

// A busy address is one clear line naming the flag, and a non-zero exit.
func TestDevBusyPort(t *testing.T) {
	t.Parallel()
	devSkip(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	addr := l.Addr().String()

	r := qo(t, nil, "dev", "--data-dir", t.TempDir(), "--addr", addr) // qo bounds its run in time
	require.NotEqual(t, 0, r.code, r.String())
	require.Equal(t, 1, strings.Count(r.stderr, "\n"), "one line: %q", r.stderr)
	require.Contains(t, r.stderr, addr)
	require.Contains(t, r.stderr, "--addr")
	require.Contains(t, r.stderr, "another 'qo dev' may be running")
	require.Empty(t, r.stdout)
}
