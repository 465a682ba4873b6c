package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/qo-queue/qo/queue"
)

// ErrBadArgs: a task's input does not decode into the Go type of its
// typed handler. The task fails at once (a retry would not decode
// either); errors.Is finds it in the task's error.
var ErrBadArgs = errors.New("input does not decode into the handler's args type")

// ArgsFunc is a typed handler: it gets the task's input decoded into A
// and returns an output encoded as the task's output (the zero value of a
// pointer, map, slice or json.RawMessage output leaves no output). Its
// errors mean what a HandlerFunc's do (Retryable, Permanent, Reschedule).
type ArgsFunc[A, O any] func(ctx context.Context, t *queue.Task, args A) (O, error)

// HandleArgs registers h on w for the tasks of type A's Kind, so the type
// string is written once, in A's Kind method (see queue.Args), and
// queue.SubmitArgs submits what h handles. Like Handle, it panics after
// Run or on an invalid kind.
func HandleArgs[A queue.Args, O any](w *Worker, h ArgsFunc[A, O]) {
	var zero A
	w.Handle(zero.Kind(), ArgsHandler(h))
}

// ArgsHandler adapts a typed handler to a HandlerFunc (for Handle under a
// type of your choice, or for wrapping). An input that is not valid JSON
// for A fails the task permanently with ErrBadArgs naming A; an empty
// input decodes as the zero A.
func ArgsHandler[A, O any](h ArgsFunc[A, O]) HandlerFunc {
	if h == nil {
		panic("worker: nil typed handler")
	}
	return func(ctx context.Context, t *queue.Task) (json.RawMessage, error) {
		var args A
		if len(t.Input) > 0 {
			if err := json.Unmarshal(t.Input, &args); err != nil {
				return nil, Permanent(fmt.Errorf("%w: %s task input %s as %T: %w", ErrBadArgs, t.Type, preview(t.Input, 80), args, err))
			}
		}
		out, err := h(ctx, t, args)
		if err != nil {
			return nil, err
		}
		b, err := json.Marshal(out)
		if err != nil {
			return nil, Permanent(fmt.Errorf("%s task: encode the output %T as JSON: %w", t.Type, out, err))
		}
		if string(b) == "null" {
			return nil, nil
		}
		return b, nil
	}
}
