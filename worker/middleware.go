package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/qo-queue/qo/queue"
)

// Middleware wraps a handler: it gets the next handler in the chain and
// returns one that runs code around it (logging, tracing, metrics, input
// checks...). It may change the task or the context it passes on, return
// without calling next, or change next's output or error.
//
// Middleware applies to every handler of the worker alike: Go handlers,
// exec handlers (Exec) and built-ins.
type Middleware func(next HandlerFunc) HandlerFunc

// Use adds middleware around every handler of w. The first registered is
// the outermost: with Use(a, b), a call runs a, which calls b, which calls
// the handler. Call it before Run (it panics afterwards); Use may be called
// several times, each call adding inside the earlier ones.
//
// Between the middleware and the handler, the worker always places Recover:
// a handler's panic reaches the middleware as a *PanicError. A panic in a
// middleware itself is recovered too (the task fails as retryable, the
// worker stays up).
func (w *Worker) Use(mw ...Middleware) {
	if w.started.Load() {
		panic("worker: Use called after Run")
	}
	for _, m := range mw {
		if m == nil {
			panic("worker: nil middleware")
		}
	}
	w.middleware = append(w.middleware, mw...)
}

// chain wraps h in the registered middleware and the innermost Recover.
func (w *Worker) chain(h HandlerFunc) HandlerFunc {
	h = Recover()(h)
	for i := len(w.middleware) - 1; i >= 0; i-- {
		h = w.middleware[i](h)
	}
	return h
}

// PanicError is a handler's panic turned into an error by Recover. The
// worker treats it as retryable and logs it with its stack.
type PanicError struct {
	Value any    // what the handler panicked with
	Stack []byte // the goroutine's stack at the panic
}

func (e *PanicError) Error() string { return fmt.Sprintf("handler panicked: %v", e.Value) }

// Recover returns middleware that turns a panic of the next handler into a
// *PanicError: the attempt fails (retryable, with the panic's message in
// last_error and its stack in the worker's log) and the worker stays up.
// The worker always applies it innermost; add it yourself only to recover
// panics of your own middleware at another place in the chain.
func Recover() Middleware {
	return func(next HandlerFunc) HandlerFunc {
		return func(ctx context.Context, t *queue.Task) (out json.RawMessage, err error) {
			defer func() {
				if r := recover(); r != nil {
					out, err = nil, &PanicError{Value: r, Stack: debug.Stack()}
				}
			}()
			return next(ctx, t)
		}
	}
}

// Result is how a handler call ended, as middleware sees it: before the
// worker writes the task's outcome (see Observer for that).
type Result string

// Results.
const (
	ResultOK    Result = "ok"    // returned no error
	ResultError Result = "error" // returned an error
	ResultPanic Result = "panic" // panicked (a *PanicError)
)

// ResultOf classifies a handler's error.
func ResultOf(err error) Result {
	var pe *PanicError
	switch {
	case err == nil:
		return ResultOK
	case errors.As(err, &pe):
		return ResultPanic
	default:
		return ResultError
	}
}

// Logging returns middleware that logs each handler call once it returned,
// with task_id, task_type, attempt, duration and result (ok, error, panic)
// and, on failure, the error: at Info when it succeeded, Warn when it
// failed. log nil means slog.Default().
func Logging(log *slog.Logger) Middleware {
	if log == nil {
		log = slog.Default()
	}
	return func(next HandlerFunc) HandlerFunc {
		return func(ctx context.Context, t *queue.Task) (json.RawMessage, error) {
			began := time.Now()
			out, err := next(ctx, t)
			attrs := []any{"task_id", t.ID, "task_type", t.Type, "attempt", t.Attempt,
				"duration", time.Since(began), "result", string(ResultOf(err))}
			if err != nil {
				log.WarnContext(ctx, "handler failed", append(attrs, "err", err.Error())...)
			} else {
				log.InfoContext(ctx, "handler done", attrs...)
			}
			return out, err
		}
	}
}

// Measure returns middleware that reports each handler call to record: the
// task's type, how the call ended and how long it took. The metrics package
// provides one for Prometheus ((*metrics.Metrics).Middleware).
func Measure(record func(taskType string, r Result, d time.Duration)) Middleware {
	return func(next HandlerFunc) HandlerFunc {
		return func(ctx context.Context, t *queue.Task) (json.RawMessage, error) {
			began := time.Now()
			out, err := next(ctx, t)
			record(t.Type, ResultOf(err), time.Since(began))
			return out, err
		}
	}
}
