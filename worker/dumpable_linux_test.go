//go:build linux

package worker

import (
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store/storetest"
)

// envChild marks the child process TestHandlerCannotReadWorkerEnviron
// runs itself in.
const envChild = "QO_TEST_NONDUMPABLE_CHILD"

// canary is the credential the child worker holds in its environment.
const canary = "wJalrXUtnFEMI-nondumpable-canary"

// peekScript is an exec handler that counts the canary in its parent's
// (the worker's) /proc/PID/environ, and QO_TASK_ID in its own, both read
// by a child process of its own (cat), as another process of the same
// user would.
const peekScript = `cat >/dev/null
parent=$(cat /proc/$PPID/environ 2>/dev/null | tr '\0' '\n' | grep -c '^AWS_SECRET_ACCESS_KEY=` + canary + `$')
own=$(cat /proc/$$/environ 2>/dev/null | tr '\0' '\n' | grep -c '^QO_TASK_ID=')
printf '{"parent_canary":%d,"own_task_id":%d}\n' "$parent" "$own"`

// A handler cannot read the worker's credentials from
// /proc/$PPID/environ: Run makes the worker process non-dumpable before
// any handler runs, and its /proc files then belong to root. The handler's
// own /proc is as usual (dumpable comes back with exec).
//
// The test runs itself in a child process: a worker process of its own
// (non-dumpable is process-wide) that holds a canary credential in its
// environment, which /proc shows as the process started. Under root it
// runs the child as nobody: root's capabilities (CAP_SYS_PTRACE; on the
// kernel this was written on CAP_SYS_ADMIN and CAP_PERFMON too) read any
// process's /proc, and a same-uid handler with fewer capabilities than the
// worker is refused whether the worker is dumpable or not, so only another
// user shows the defence (docs/security.md, "What a handler can reach").
func TestHandlerCannotReadWorkerEnviron(t *testing.T) {
	if os.Getenv(envChild) == "" {
		runNonDumpableChild(t)
		return
	}
	require.Equal(t, canary, os.Getenv("AWS_SECRET_ACCESS_KEY"), "the worker holds the credential")
	bd := setup(t, storetest.Backends()[0], setupOpts{})
	w := New(bd.q, bd.opts(t))
	w.Handle("peek", Exec([]string{script(t, peekScript)}, ExecOptions{}))
	task := bd.submit(t, "peek", `{}`)
	r := start(t, w)
	var got struct {
		ParentCanary int `json:"parent_canary"`
		OwnTaskID    int `json:"own_task_id"`
	}
	require.NoError(t, json.Unmarshal(bd.waitStatus(t, task.ID, queue.StatusCompleted).Output, &got))
	require.Zero(t, got.ParentCanary, "the handler read the worker's credential from /proc/$PPID/environ")
	require.Equal(t, 1, got.OwnTaskID, "the handler reads its own /proc/PID/environ")
	require.NoError(t, r.stop(t))
}

func runNonDumpableChild(t *testing.T) {
	exe, err := os.Executable()
	require.NoError(t, err)
	args := []string{"-test.run=^TestHandlerCannotReadWorkerEnviron$", "-test.count=1", "-test.v"}
	var cmd *exec.Cmd
	tmp := t.TempDir()
	if os.Getuid() == 0 {
		setpriv, err := exec.LookPath("setpriv")
		if err != nil {
			t.Skip("running as root without setpriv (util-linux): cannot run the worker as another user")
		}
		// A copy nobody can run, and a temporary directory it can write.
		dir, err := os.MkdirTemp("", "qo-nondumpable-")
		require.NoError(t, err)
		t.Cleanup(func() { os.RemoveAll(dir) })
		require.NoError(t, os.Chmod(dir, 0o1777))
		copyExe := filepath.Join(dir, "worker.test")
		copyFile(t, exe, copyExe)
		tmp = dir
		cmd = exec.Command(setpriv, append([]string{"--reuid=65534", "--regid=65534", "--clear-groups", copyExe}, args...)...)
	} else {
		cmd = exec.Command(exe, args...)
	}
	cmd.Env = append(os.Environ(), envChild+"=1", "AWS_SECRET_ACCESS_KEY="+canary, "TMPDIR="+tmp)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "--- PASS: TestHandlerCannotReadWorkerEnviron")
}

func copyFile(t *testing.T, from, to string) {
	src, err := os.Open(from)
	require.NoError(t, err)
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	require.NoError(t, err)
	_, err = io.Copy(dst, src)
	require.NoError(t, err)
	require.NoError(t, dst.Close())
}
