package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/qo-queue/qo/queue"
)

// Built-in handlers for demos and tests. They are registered by
// RegisterBuiltins (the CLI does so with --builtins).
//
//	echo   output = input
//	sleep  input {"ms": N}: waits N milliseconds (stops early when the
//	       task's context is cancelled); output {"slept_ms": N}
//	fail   input {"mode": "retryable"|"permanent", "message": "..."}:
//	       always fails that way (mode defaults to retryable)
const (
	BuiltinEcho  = "echo"
	BuiltinSleep = "sleep"
	BuiltinFail  = "fail"
)

// Builtins returns the built-in handlers by type.
func Builtins() map[string]HandlerFunc {
	return map[string]HandlerFunc{
		BuiltinEcho:  echoHandler,
		BuiltinSleep: sleepHandler,
		BuiltinFail:  failHandler,
	}
}

// RegisterBuiltins registers echo, sleep and fail on w.
func RegisterBuiltins(w *Worker) {
	for typ, h := range Builtins() {
		w.Handle(typ, h)
	}
}

func echoHandler(_ context.Context, t *queue.Task) (json.RawMessage, error) {
	if len(t.Input) == 0 {
		return nil, nil
	}
	return append(json.RawMessage(nil), t.Input...), nil
}

func sleepHandler(ctx context.Context, t *queue.Task) (json.RawMessage, error) {
	var in struct {
		MS *int64 `json:"ms"`
	}
	if err := json.Unmarshal(t.Input, &in); err != nil || in.MS == nil || *in.MS < 0 {
		return nil, Permanent(fmt.Errorf(`sleep: input must be {"ms": N} with N >= 0, got %s`, preview(t.Input, 80)))
	}
	timer := time.NewTimer(time.Duration(*in.MS) * time.Millisecond)
	defer timer.Stop()
	select {
	case <-timer.C:
		return json.RawMessage(fmt.Sprintf(`{"slept_ms":%d}`, *in.MS)), nil
	case <-ctx.Done():
		return nil, fmt.Errorf("sleep: interrupted: %w", context.Cause(ctx))
	}
}

func failHandler(_ context.Context, t *queue.Task) (json.RawMessage, error) {
	var in struct {
		Mode    string `json:"mode"`
		Message string `json:"message"`
	}
	if len(t.Input) > 0 && string(t.Input) != "null" {
		if err := json.Unmarshal(t.Input, &in); err != nil {
			return nil, Permanent(fmt.Errorf(`fail: input must be {"mode": "retryable"|"permanent"}, got %s`, preview(t.Input, 80)))
		}
	}
	msg := in.Message
	if msg == "" {
		msg = "failed on purpose"
	}
	switch in.Mode {
	case "", "retryable":
		return nil, Retryable(errors.New(msg))
	case "permanent":
		return nil, Permanent(errors.New(msg))
	default:
		return nil, Permanent(fmt.Errorf(`fail: unknown mode %q (want "retryable" or "permanent")`, in.Mode))
	}
}
