//go:build unix

package worker

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store/memstore"
)

// envSignalChild makes TestRunSignalChild run a worker under Run (in the
// child process TestRunSignals starts).
const envSignalChild = "QO_TEST_SIGNAL_CHILD"

// TestRunSignalChild is the child of TestRunSignals: a worker under Run
// with one task whose handler says "handler running" on stdout and returns when a
// line arrives on stdin (or when it is stopped). Logs and the task's
// final status go to stdout, one line each.
func TestRunSignalChild(t *testing.T) {
	if os.Getenv(envSignalChild) != "1" {
		t.Skip("the child process of TestRunSignals")
	}
	ctx := context.Background()
	st := memstore.New()
	_, err := queue.Init(ctx, st, 1)
	require.NoError(t, err)
	q, err := queue.Open(ctx, st, queue.Options{})
	require.NoError(t, err)
	task, _, err := q.Submit(ctx, queue.SubmitRequest{Type: "block"})
	require.NoError(t, err)

	w := New(q, Options{PollMin: 5 * time.Millisecond, PollMax: 20 * time.Millisecond, ShutdownTimeout: time.Hour,
		NoMonitor: true, Logger: slog.New(slog.NewTextHandler(os.Stdout, nil))})
	finish := make(chan struct{})
	go func() {
		_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
		close(finish)
	}()
	w.Handle("block", func(ctx context.Context, _ *queue.Task) (json.RawMessage, error) {
		fmt.Println("handler running")
		select {
		case <-finish:
			return json.RawMessage(`{"finished":true}`), nil
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	})
	err = Run(ctx, w)
	got, gerr := q.Get(ctx, task.ID)
	require.NoError(t, gerr)
	fmt.Printf("result: run=%v status=%s\n", err, got.Status)
}

// TestRunSignals sends real signals to a child process whose worker runs
// under Run: the first signal lets the running task finish, a second one
// releases it at once; either way Run returns nil.
func TestRunSignals(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	require.NoError(t, err)
	tests := []struct {
		name    string
		signals int
		want    string
	}{
		{"one signal drains", 1, "result: run=<nil> status=completed"},
		{"a second signal releases at once", 2, "result: run=<nil> status=pending"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, exe, "-test.run=^TestRunSignalChild$", "-test.v")
			cmd.Env = append(os.Environ(), envSignalChild+"=1")
			stdin, err := cmd.StdinPipe()
			require.NoError(t, err)
			stdout, err := cmd.StdoutPipe()
			require.NoError(t, err)
			require.NoError(t, cmd.Start())
			lines := bufio.NewScanner(stdout)
			var seen []string
			// waitLine reads the child's output up to a line that is s, or
			// a log line whose message is s.
			waitLine := func(s string) {
				t.Helper()
				for lines.Scan() {
					seen = append(seen, lines.Text())
					if l := lines.Text(); l == s || strings.Contains(l, ` msg="`+s) {
						return
					}
				}
				t.Fatalf("the child ended before printing %q; its output:\n%s", s, strings.Join(seen, "\n"))
			}

			waitLine("handler running")
			require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
			waitLine("signal received: shutting down")
			if tc.signals == 2 {
				require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
				waitLine("second signal: releasing running tasks now")
			} else {
				_, err := io.WriteString(stdin, "finish\n")
				require.NoError(t, err)
			}
			waitLine(tc.want)
			for lines.Scan() {
				seen = append(seen, lines.Text())
			}
			require.NoError(t, cmd.Wait(), "the child's output:\n%s", strings.Join(seen, "\n"))
		})
	}
}
