package worker

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store/storetest"
)

type resizeArgs struct {
	Path  string `json:"path"`
	Width int    `json:"width"`
}

func (resizeArgs) Kind() string { return "resize" }

type resizeOut struct {
	Resized string `json:"resized"`
}

// memBundle is a queue on the in-memory store.
func memBundle(t *testing.T) *bundle {
	t.Helper()
	return setup(t, storetest.Backends()[0], setupOpts{})
}

// TestHandleArgs: a typed handler gets the decoded args of a typed
// submit, its output becomes the task's; input that does not decode
// fails the task at once, naming the type; errors keep their meaning.
func TestHandleArgs(t *testing.T) {
	t.Parallel()
	bd := memBundle(t)
	w := New(bd.q, bd.opts(t))
	var errFlaky = errors.New("disk busy")
	HandleArgs(w, func(_ context.Context, task *queue.Task, a resizeArgs) (resizeOut, error) {
		switch a.Path {
		case "flaky":
			if task.Attempt == 1 {
				return resizeOut{}, errFlaky
			}
		case "broken":
			return resizeOut{}, Permanent(errors.New("not an image"))
		}
		return resizeOut{Resized: a.Path + "@" + string(rune('0'+a.Width))}, nil
	})
	require.Equal(t, []string{"resize"}, w.Types(), "registered under the args' kind")
	start(t, w)
	ctx := context.Background()
	fast := &queue.RetryPolicy{InitialIntervalMS: 1, MaxIntervalMS: 1, Multiplier: 1}

	tests := []struct {
		name      string
		submit    func() (*queue.Task, bool, error)
		status    queue.Status
		output    string
		lastError string
		attempts  int
	}{
		{"typed submit and output", func() (*queue.Task, bool, error) {
			return bd.q.SubmitArgs(ctx, resizeArgs{Path: "a.png", Width: 4}, queue.SubmitRequest{})
		}, queue.StatusCompleted, `{"resized":"a.png@4"}`, "", 1},
		{"a plain error is retried", func() (*queue.Task, bool, error) {
			return bd.q.SubmitArgs(ctx, resizeArgs{Path: "flaky", Width: 1}, queue.SubmitRequest{RetryPolicy: fast})
		}, queue.StatusCompleted, `{"resized":"flaky@1"}`, "", 2},
		{"a permanent error fails at once", func() (*queue.Task, bool, error) {
			return bd.q.SubmitArgs(ctx, resizeArgs{Path: "broken"}, queue.SubmitRequest{RetryPolicy: fast})
		}, queue.StatusFailed, "", "not an image", 1},
		{"bad input fails at once, naming the type", func() (*queue.Task, bool, error) {
			return bd.q.Submit(ctx, queue.SubmitRequest{Type: "resize", Input: json.RawMessage(`{"width":"wide"}`), RetryPolicy: fast})
		}, queue.StatusFailed, "", "worker.resizeArgs", 1},
		{"no input is the zero args", func() (*queue.Task, bool, error) {
			return bd.q.Submit(ctx, queue.SubmitRequest{Type: "resize"})
		}, queue.StatusCompleted, `{"resized":"@0"}`, "", 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			task, created, err := tc.submit()
			require.NoError(t, err)
			require.True(t, created)
			got := bd.waitStatus(t, task.ID, tc.status)
			require.Equal(t, tc.attempts, got.Attempt)
			if tc.output != "" {
				require.JSONEq(t, tc.output, string(got.Output))
			}
			require.Contains(t, got.LastError, tc.lastError)
		})
	}
}

// TestArgsHandler checks the adapter's decoding and encoding directly.
func TestArgsHandler(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, input string
		h           HandlerFunc
		out         string
		err         error
		permanent   bool
	}{
		{"decoded", `{"path":"x","width":2}`, ArgsHandler(func(_ context.Context, _ *queue.Task, a resizeArgs) (resizeArgs, error) {
			return a, nil
		}), `{"path":"x","width":2}`, nil, false},
		{"not JSON", `{"path":`, ArgsHandler(func(context.Context, *queue.Task, resizeArgs) (int, error) { return 1, nil }), "", ErrBadArgs, true},
		{"wrong shape", `[1,2]`, ArgsHandler(func(context.Context, *queue.Task, resizeArgs) (int, error) { return 1, nil }), "", ErrBadArgs, true},
		{"nil output is no output", `{}`, ArgsHandler(func(context.Context, *queue.Task, resizeArgs) (*resizeOut, error) { return nil, nil }), "", nil, false},
		{"raw output passes through", `{}`, ArgsHandler(func(context.Context, *queue.Task, resizeArgs) (json.RawMessage, error) {
			return json.RawMessage(`{"ok":true}`), nil
		}), `{"ok":true}`, nil, false},
		{"unencodable output", `{}`, ArgsHandler(func(context.Context, *queue.Task, resizeArgs) (func(), error) { return func() {}, nil }), "", nil, true},
		{"the handler's error is kept", `{}`, ArgsHandler(func(context.Context, *queue.Task, resizeArgs) (int, error) {
			return 0, Retryable(ErrLeaseLost)
		}), "", ErrLeaseLost, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out, err := tc.h(context.Background(), &queue.Task{Type: "resize", Input: json.RawMessage(tc.input)})
			require.Equal(t, tc.permanent, IsPermanent(err), "permanent: %v", err)
			if tc.err != nil {
				require.ErrorIs(t, err, tc.err)
			} else if !tc.permanent {
				require.NoError(t, err)
			}
			if tc.out == "" {
				require.Nil(t, out)
			} else {
				require.JSONEq(t, tc.out, string(out))
			}
		})
	}
}
