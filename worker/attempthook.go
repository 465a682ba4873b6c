package worker

import (
	"context"
	"encoding/json"
	"time"

	"github.com/qo-queue/qo/queue"
)

// AttemptHook follows each attempt a worker runs, with its task: the seam
// for tracing (package qotel implements it) and anything else that needs
// the task rather than the counts an Observer gets. Options.AttemptHook
// nil means none. Its methods run in the attempt's goroutine; they must
// be safe for concurrent use across attempts.
type AttemptHook interface {
	// Claimed is called once a claim of t was won, before its input is
	// loaded and its handler runs; claimBegan is when the claim's first
	// request was sent. The context it returns (derived from ctx) is the
	// handler's and is passed to Run and Finished.
	Claimed(ctx context.Context, t *queue.Task, claimBegan time.Time) context.Context
	// Run runs the handler: it must call next (with ctx, or a context
	// derived from it, and t or a copy of it) once and return what next
	// returned, or an error of its own.
	Run(ctx context.Context, t *queue.Task, next HandlerFunc) (json.RawMessage, error)
	// Finished is called once the attempt's outcome was recorded, with
	// the task as the worker last wrote it (or read it, when no write
	// landed), the outcome and the error the handler returned (nil on
	// success). outcome is "" when the outcome could not be written (the
	// lease holds, so the task comes back to another attempt).
	Finished(ctx context.Context, t *queue.Task, outcome Outcome, handlerErr error)
}
