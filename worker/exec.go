package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/qo-queue/qo/queue"
)

// Exec handler protocol (any language, no SDK):
//
//   - the task input JSON is written to the child's stdin ("null" when the
//     task has no input), then stdin is closed;
//   - the child writes its output as one JSON value on stdout (empty stdout
//     means null; anything else that is not valid JSON fails the task
//     permanently, so keep logs on stderr);
//   - exit 0 = success, exit 75 (EX_TEMPFAIL) = retryable failure, exit 79
//     = snooze (put the task back without using a retry, for the number of
//     seconds printed on stdout, e.g. `echo 30; exit 79`, or
//     DefaultExecSnooze when stdout is empty; see Snooze), any other exit =
//     permanent failure; the last StderrTail bytes of stderr are kept as
//     the task's error;
//   - the environment is not the worker's (which holds the bucket's
//     credentials): only the variables of BaseEnv (PATH, HOME, the locale,
//     ...), those named in ExecOptions.PassEnv, ExecOptions.Env, and
//     QO_TASK_ID, QO_TASK_TYPE, QO_ATTEMPT, QO_WORKER_ID,
//     QO_TASK_TIMEOUT_SECONDS, QO_TASK_KEY when the task has a key, under
//     a worker QO_PROGRESS_FILE, and
//     TRACEPARENT and TRACESTATE when the task's metadata holds a trace
//     context (see execenv.go);
//   - progress: the child may write lines "FRACTION [MESSAGE]" (0.42 or
//     42%, then up to 200 bytes of text) to the file QO_PROGRESS_FILE
//     names, appending or overwriting, e.g.
//     echo "42% resized 42 of 100" > "$QO_PROGRESS_FILE";
//     the worker reads its last complete line at each heartbeat (see
//     ReportProgress and ParseProgressLine; malformed lines are skipped);
//   - on timeout, cancellation or lease loss the child's process group gets
//     SIGTERM, then SIGKILL after KillGrace (Windows: killed at once);
//   - stdout larger than MaxStdout kills the child and fails the task
//     permanently: store large results elsewhere and return a reference.

// ExitRetryable is the exit code an exec handler uses to ask for a retry
// (EX_TEMPFAIL from sysexits.h).
const ExitRetryable = 75

// ExitSnooze is the exit code an exec handler uses to snooze its task (see
// Snooze): stdout then holds the delay in seconds as a JSON number, or is
// empty for DefaultExecSnooze. 79 is outside sysexits.h's 64..78.
const ExitSnooze = 79

// DefaultExecSnooze is the snooze of an exec handler that exits ExitSnooze
// without printing a delay.
const DefaultExecSnooze = time.Minute

// Exec handler defaults.
const (
	DefaultKillGrace  = 5 * time.Second
	DefaultMaxStdout  = 1 << 20
	DefaultStderrTail = 4 << 10
)

// ExecOptions configure exec handlers. Zero values take the defaults.
type ExecOptions struct {
	// KillGrace is the time between SIGTERM and SIGKILL (default: the
	// running worker's Options.KillGrace, which it holds to the margins
	// that keep two attempts of a task apart; DefaultKillGrace outside a
	// worker).
	KillGrace time.Duration
	// MaxStdout caps the output read from stdout, in bytes.
	MaxStdout int64
	// StderrTail is how many trailing bytes of stderr are kept as the error.
	StderrTail int
	// Dir is the child's working directory (default: the worker's).
	Dir string
	// PassEnv names variables of the worker's environment the child gets
	// too (those not set are skipped). By default it gets only BaseEnv:
	// never the worker's credentials.
	PassEnv []string
	// Env sets variables for the child, as NAME=VALUE entries (ReadEnvFile
	// reads them from a dotenv file). They override BaseEnv and PassEnv;
	// the QO_* task variables override them.
	Env []string
	// WorkerID is exported to the child as QO_WORKER_ID.
	WorkerID string
}

func (o ExecOptions) withDefaults() ExecOptions {
	if o.MaxStdout <= 0 {
		o.MaxStdout = DefaultMaxStdout
	}
	if o.StderrTail <= 0 {
		o.StderrTail = DefaultStderrTail
	}
	return o
}

// ExecSpec is one --exec TYPE=COMMAND flag.
type ExecSpec struct {
	Type    string
	Command []string // program and arguments
}

// ParseExecSpec parses "TYPE=COMMAND [ARGS...]". The command is split on
// white space and run directly, without a shell (no quoting, pipes or
// variable expansion: put anything more complex in a script).
func ParseExecSpec(s string) (ExecSpec, error) {
	typ, cmd, ok := strings.Cut(s, "=")
	typ = strings.TrimSpace(typ)
	if !ok || typ == "" || strings.TrimSpace(cmd) == "" {
		return ExecSpec{}, fmt.Errorf("invalid exec handler %q: want TYPE=COMMAND, e.g. send_email=./send.sh", s)
	}
	if err := queue.ValidateType(typ); err != nil {
		return ExecSpec{}, fmt.Errorf("invalid exec handler %q: %w", s, err)
	}
	return ExecSpec{Type: typ, Command: strings.Fields(cmd)}, nil
}

// Check verifies that the spec's program exists and is executable, so a
// typo fails at startup rather than on every task.
func (s ExecSpec) Check() error {
	if len(s.Command) == 0 {
		return fmt.Errorf("exec handler %s: empty command", s.Type)
	}
	if _, err := exec.LookPath(s.Command[0]); err != nil {
		return fmt.Errorf("exec handler %s: %w (give a path to an executable file, e.g. ./send.sh, and chmod +x it)", s.Type, err)
	}
	return nil
}

// Exec returns a handler that runs command (program and arguments) once
// per task, following the exec protocol described above.
func Exec(command []string, opts ExecOptions) HandlerFunc {
	opts = opts.withDefaults()
	cmdline := append([]string(nil), command...)
	return func(ctx context.Context, t *queue.Task) (json.RawMessage, error) {
		return runExec(ctx, cmdline, opts, t)
	}
}

func runExec(ctx context.Context, command []string, opts ExecOptions, t *queue.Task) (json.RawMessage, error) {
	if len(command) == 0 {
		return nil, Permanent(errors.New("exec handler: empty command"))
	}
	// The parent-death signal (Linux) is tied to the thread that started
	// the child: keep this goroutine on one thread until the child is
	// reaped, so no thread exit can kill a healthy handler.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()

	name := command[0]
	cmd := exec.Command(name, command[1:]...)
	cmd.Dir = opts.Dir
	taskVars := taskEnv(t, opts.WorkerID)
	if rt, _ := ctx.Value(runningTaskKey{}).(*runningTask); rt != nil {
		// The progress channel: a file of the handler's own, read at
		// each heartbeat (see progress.go).
		f, err := os.CreateTemp("", "qo-progress-*")
		if err != nil {
			return nil, Retryable(fmt.Errorf("exec %s: create the progress file: %w", name, err))
		}
		path := f.Name()
		f.Close()
		defer os.Remove(path)
		rt.prog.setFile(path)
		defer rt.prog.setFile("") // keep the last report, stop reading the file
		taskVars = append(taskVars, "QO_PROGRESS_FILE="+path)
	}
	cmd.Env = childEnv(os.Environ(), opts, taskVars)
	input := []byte(t.Input)
	if len(bytes.TrimSpace(input)) == 0 {
		input = []byte("null")
	}
	cmd.Stdin = bytes.NewReader(input)
	overflow := make(chan struct{})
	stdout := &capWriter{max: opts.MaxStdout, overflow: overflow}
	stderr := &tailWriter{max: opts.StderrTail}
	cmd.Stdout = stdout
	cmd.Stderr = stderr
	// Do not wait forever for pipes held open by grandchildren that outlive
	// the handler process.
	cmd.WaitDelay = 2 * time.Second
	setProcessGroup(cmd)

	if err := cmd.Start(); err != nil {
		// Most likely a deployment problem on this worker: let another
		// attempt (maybe on a healthy worker) run it.
		return nil, Retryable(fmt.Errorf("exec %s: start: %w", name, err))
	}

	waitErr, overflowed := waitExec(ctx, cmd, opts, overflow)
	return execResult(ctx, name, opts, waitErr, overflowed, stdout.buf.Bytes(), strings.TrimSpace(stderr.String()))
}

// waitExec waits for the started handler process and stops it early: it
// is killed when its stdout passes the limit (overflowed), at once when
// the task is aborted, and otherwise terminated when ctx ends and killed
// after the grace period. Stray members of its process group die with it.
func waitExec(ctx context.Context, cmd *exec.Cmd, opts ExecOptions, overflow <-chan struct{}) (waitErr error, overflowed bool) {
	exited := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		select {
		case <-exited:
			return
		case <-overflow:
			overflowed = true
			killGroup(cmd)
			return
		case <-ctx.Done():
		}
		if errors.Is(context.Cause(ctx), errAbort) {
			killGroup(cmd)
			return
		}
		terminateGroup(cmd)
		timer := time.NewTimer(killGrace(ctx, opts))
		defer timer.Stop()
		select {
		case <-exited:
		case <-timer.C:
			killGroup(cmd)
		case <-abortOf(ctx):
			killGroup(cmd)
		}
	}()
	waitErr = cmd.Wait()
	close(exited)
	wg.Wait()
	// Leave nothing behind: stray members of the handler's process group
	// die with it.
	killGroup(cmd)
	return waitErr, overflowed
}

// execResult turns how the handler process ended into the task's result
// or error: killed for its stdout, stopped with ctx, its exit status
// (see exitStatusError), or the JSON value it printed on stdout. tail is
// the end of its stderr.
func execResult(ctx context.Context, name string, opts ExecOptions, waitErr error, overflowed bool, stdout []byte, tail string) (json.RawMessage, error) {
	if overflowed {
		return nil, Permanent(fmt.Errorf("exec %s: stdout exceeded the %d-byte limit and the process was killed; write large results elsewhere (e.g. the bucket) and print a reference", name, opts.MaxStdout))
	}
	if ctx.Err() != nil {
		cause := context.Cause(ctx)
		return nil, fmt.Errorf("exec %s: stopped: %w%s", name, cause, tailSuffix(tail))
	}
	if waitErr != nil && !errors.Is(waitErr, exec.ErrWaitDelay) {
		var ee *exec.ExitError
		if !errors.As(waitErr, &ee) {
			return nil, Retryable(fmt.Errorf("exec %s: %w", name, waitErr))
		}
		if err := exitStatusError(name, ee, stdout, tail); err != nil {
			return nil, err
		}
	}

	out := bytes.TrimSpace(stdout)
	if len(out) == 0 {
		return nil, nil
	}
	if !json.Valid(out) {
		return nil, Permanent(fmt.Errorf("exec %s: stdout is not valid JSON (starts with %q); print the result as one JSON value on stdout and send logs to stderr", name, preview(out, 80)))
	}
	return json.RawMessage(bytes.Clone(out)), nil
}

// exitStatusError is the error of a handler process that exited with a
// status: retried on ExitRetryable or a signal qo did not send, snoozed on
// ExitSnooze, failed for good otherwise; nil for status 0 (Wait
// complained of the pipes only: the result is read as on success).
func exitStatusError(name string, ee *exec.ExitError, stdout []byte, tail string) error {
	withTail := func(msg string) string {
		if tail == "" {
			return msg
		}
		return msg + ": " + tail
	}
	code := ee.ExitCode()
	switch {
	case code == 0:
		return nil
	case code == ExitRetryable:
		return Retryable(errors.New(withTail(fmt.Sprintf("exec %s: exit status %d (retry requested)", name, code))))
	case code == ExitSnooze:
		return execSnooze(name, bytes.TrimSpace(stdout))
	case code < 0:
		// Killed by a signal we did not send (OOM killer, operator):
		// worth another attempt.
		return Retryable(errors.New(withTail(fmt.Sprintf("exec %s: %s", name, ee.String()))))
	default:
		return Permanent(errors.New(withTail(fmt.Sprintf("exec %s: exit status %d", name, code))))
	}
}

// execSnooze reads the delay an exec handler that exited ExitSnooze printed
// on stdout: a JSON number of seconds, or nothing for DefaultExecSnooze.
// Anything else fails the task permanently, naming the fix.
func execSnooze(name string, out []byte) error {
	if len(out) == 0 {
		return &SnoozeError{Delay: DefaultExecSnooze, Reason: fmt.Sprintf("exec %s: exit status %d", name, ExitSnooze)}
	}
	var secs float64
	if err := json.Unmarshal(out, &secs); err != nil || secs < 0 || secs > queue.MaxSnoozeDelay.Seconds() {
		return Permanent(fmt.Errorf("exec %s: exit status %d (snooze) wants the delay in seconds on stdout, a number within 0..%g, got %q", name, ExitSnooze, queue.MaxSnoozeDelay.Seconds(), preview(out, 80)))
	}
	err := Snooze(time.Duration(secs * float64(time.Second))).(*SnoozeError)
	err.Reason = fmt.Sprintf("exec %s: exit status %d", name, ExitSnooze)
	return err
}

// handlerEnvKey marks a handler context with what its worker tells exec
// handlers (a handlerEnv).
type handlerEnvKey struct{}

type handlerEnv struct {
	// abort closes at Worker.Abort: an exec handler in its kill grace is
	// killed at once.
	abort <-chan struct{}
	// killGrace is the worker's Options.KillGrace.
	killGrace time.Duration
}

func withHandlerEnv(ctx context.Context, env handlerEnv) context.Context {
	return context.WithValue(ctx, handlerEnvKey{}, env)
}

// abortOf returns the abort channel of ctx (nil, which never fires, outside
// a worker).
func abortOf(ctx context.Context) <-chan struct{} {
	env, _ := ctx.Value(handlerEnvKey{}).(handlerEnv)
	return env.abort
}

// killGrace is the exec handler's own kill grace, else its worker's, else
// DefaultKillGrace.
func killGrace(ctx context.Context, opts ExecOptions) time.Duration {
	if opts.KillGrace > 0 {
		return opts.KillGrace
	}
	if env, _ := ctx.Value(handlerEnvKey{}).(handlerEnv); env.killGrace > 0 {
		return env.killGrace
	}
	return DefaultKillGrace
}

func tailSuffix(tail string) string {
	if tail == "" {
		return ""
	}
	return "; stderr: " + tail
}

func preview(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "..."
	}
	return string(b)
}

// capWriter keeps up to max bytes and signals overflow once.
type capWriter struct {
	mu       sync.Mutex
	buf      bytes.Buffer
	max      int64
	over     bool
	overflow chan struct{}
}

func (w *capWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.over {
		return len(p), nil // discard; the process is being killed
	}
	if int64(w.buf.Len()+len(p)) > w.max {
		w.over = true
		close(w.overflow)
		return len(p), nil
	}
	w.buf.Write(p)
	return len(p), nil
}

// tailWriter keeps the last max bytes written.
type tailWriter struct {
	mu  sync.Mutex
	buf []byte
	max int
}

func (w *tailWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(p) >= w.max {
		w.buf = append(w.buf[:0], p[len(p)-w.max:]...)
		return len(p), nil
	}
	w.buf = append(w.buf, p...)
	if len(w.buf) > w.max {
		w.buf = append(w.buf[:0], w.buf[len(w.buf)-w.max:]...)
	}
	return len(p), nil
}

func (w *tailWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.ToValidUTF8(string(w.buf), "")
}
