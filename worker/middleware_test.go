//go:build unix

package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
)

// trace is middleware that records its name around each call.
type trace struct {
	mu    sync.Mutex
	calls []string
}

func (tr *trace) add(s string) {
	tr.mu.Lock()
	tr.calls = append(tr.calls, s)
	tr.mu.Unlock()
}

func (tr *trace) mw(name string) Middleware {
	return func(next HandlerFunc) HandlerFunc {
		return func(ctx context.Context, t *queue.Task) (json.RawMessage, error) {
			tr.add(name + ">" + t.Type)
			out, err := next(ctx, t)
			tr.add(name + "<" + string(ResultOf(err)))
			return out, err
		}
	}
}

func (tr *trace) snapshot() []string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return append([]string(nil), tr.calls...)
}

// The first middleware registered is the outermost, Use adds inside the
// earlier ones, and middleware wraps exec handlers and Go handlers alike.
func TestUseOrderAndExecHandlers(t *testing.T) {
	t.Parallel()
	bd := setup(t, memBackend(), setupOpts{})
	w := New(bd.q, bd.opts(t))
	tr := &trace{}
	w.Use(tr.mw("a"), tr.mw("b"))
	w.Use(tr.mw("c"))
	w.Handle("go", func(context.Context, *queue.Task) (json.RawMessage, error) {
		tr.add("handler")
		return nil, nil
	})
	w.Handle("exec", Exec([]string{script(t, `cat`)}, ExecOptions{}))
	r := start(t, w)

	task := bd.submit(t, "go", `{}`)
	bd.waitStatus(t, task.ID, queue.StatusCompleted)
	require.Equal(t, []string{"a>go", "b>go", "c>go", "handler", "c<ok", "b<ok", "a<ok"}, tr.snapshot())

	task = bd.submit(t, "exec", `{"x":1}`)
	done := bd.waitStatus(t, task.ID, queue.StatusCompleted)
	require.JSONEq(t, `{"x":1}`, string(done.Output))
	require.Equal(t, []string{"a>exec", "b>exec", "c>exec", "c<ok", "b<ok", "a<ok"}, tr.snapshot()[7:])
	require.NoError(t, r.stop(t))
	require.Panics(t, func() { w.Use(tr.mw("late")) }, "Use after Run")
}

// A handler's panic reaches the middleware as a *PanicError, and a panic
// of a middleware fails the task without taking the worker down.
func TestMiddlewarePanics(t *testing.T) {
	t.Parallel()
	bd := setup(t, memBackend(), setupOpts{})
	w := New(bd.q, bd.opts(t))
	tr := &trace{}
	w.Use(tr.mw("outer"), func(next HandlerFunc) HandlerFunc {
		return func(ctx context.Context, t *queue.Task) (json.RawMessage, error) {
			if t.Type == "mwpanics" {
				panic("middleware boom")
			}
			return next(ctx, t)
		}
	})
	w.Handle("panics", func(context.Context, *queue.Task) (json.RawMessage, error) { panic("handler boom") })
	w.Handle("mwpanics", echoHandler)
	w.Handle("echo", echoHandler)
	r := start(t, w)

	p := bd.submit(t, "panics", `{}`, retries(0))
	got := bd.waitStatus(t, p.ID, queue.StatusFailed)
	require.Contains(t, got.LastError, "handler panicked: handler boom")
	require.Equal(t, []string{"outer>panics", "outer<panic"}, tr.snapshot())

	m := bd.submit(t, "mwpanics", `{}`, retries(0))
	got = bd.waitStatus(t, m.ID, queue.StatusFailed)
	require.Contains(t, got.LastError, "handler panicked: middleware boom")

	e := bd.submit(t, "echo", `{"still":"up"}`)
	got = bd.waitStatus(t, e.ID, queue.StatusCompleted)
	require.JSONEq(t, `{"still":"up"}`, string(got.Output))
	require.NoError(t, r.stop(t))
}

func TestLoggingAndMeasure(t *testing.T) {
	t.Parallel()
	bd := setup(t, memBackend(), setupOpts{})
	w := New(bd.q, bd.opts(t))
	var buf syncBuffer
	type rec struct {
		typ string
		r   Result
	}
	var mu sync.Mutex
	var recs []rec
	w.Use(Logging(slog.New(slog.NewTextHandler(&buf, nil))), Measure(func(typ string, r Result, d time.Duration) {
		require.GreaterOrEqual(t, d, time.Duration(0))
		mu.Lock()
		recs = append(recs, rec{typ, r})
		mu.Unlock()
	}))
	RegisterBuiltins(w)
	r := start(t, w)
	ok := bd.submit(t, "echo", `{}`)
	bd.waitStatus(t, ok.ID, queue.StatusCompleted)
	bad := bd.submit(t, "fail", `{"mode":"permanent","message":"nope"}`)
	bd.waitStatus(t, bad.ID, queue.StatusFailed)
	require.NoError(t, r.stop(t))

	mu.Lock()
	require.Equal(t, []rec{{"echo", ResultOK}, {"fail", ResultError}}, recs)
	mu.Unlock()
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	require.Len(t, lines, 2)
	require.Contains(t, lines[0], "level=INFO msg=\"handler done\" task_id="+ok.ID.String()+" task_type=echo attempt=1 duration=")
	require.Contains(t, lines[0], "result=ok")
	require.Contains(t, lines[1], "level=WARN msg=\"handler failed\" task_id="+bad.ID.String()+" task_type=fail attempt=1 duration=")
	require.Contains(t, lines[1], `result=error err="permanent: nope"`)
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
