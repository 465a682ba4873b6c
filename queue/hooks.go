package queue

import (
	"context"
	"fmt"
)

// SubmitHook runs around each task submit: Submit, every line of
// SubmitBulk, every step of Workflows.Submit (and everything built on them:
// the CLI, the HTTP API, schedules). Either function may be nil.
type SubmitHook struct {
	// Before runs before anything is written. It may change req (add
	// metadata, set a default priority...). It returns the context for the
	// rest of the submit (nil: ctx unchanged), which later hooks, the
	// submit's writes and this hook's After get. An error refuses the
	// submit: nothing is written and the submit returns an error wrapping
	// ErrSubmitRefused and this one.
	Before func(ctx context.Context, req *SubmitRequest) (context.Context, error)
	// After runs once the submit returned, with the request as written,
	// the task (nil when it failed), whether it was created (false for a
	// duplicate of an idempotency key) and the submit's error. It cannot
	// change the result.
	After func(ctx context.Context, req SubmitRequest, t *Task, created bool, err error)
}

// OnSubmit adds hooks that run on every later submit through q. Hooks
// nest like middleware: the Before functions run in the order the hooks
// were added, the After functions in the reverse order, and a hook's After
// runs exactly when its Before ran (or it has none), also when a later
// Before refused the submit. Safe for concurrent use with submits.
func (q *Queue) OnSubmit(hooks ...SubmitHook) {
	q.hooksMu.Lock()
	defer q.hooksMu.Unlock()
	q.hooks = append(q.hooks[:len(q.hooks):len(q.hooks)], hooks...)
}

// submitHooks returns the hooks registered so far.
func (q *Queue) submitHooks() []SubmitHook {
	q.hooksMu.RLock()
	defer q.hooksMu.RUnlock()
	return q.hooks
}

// hooked is one submit under way through the hooks.
type hooked struct {
	hooks []SubmitHook
	ctxs  []context.Context // the context each hook's After gets
}

// beforeSubmit runs the Before hooks on req. The hooks whose Before ran
// are remembered for afterSubmit, which must be called in every case.
func (q *Queue) beforeSubmit(ctx context.Context, req *SubmitRequest) (context.Context, *hooked, error) {
	hooks := q.submitHooks()
	h := &hooked{hooks: hooks, ctxs: make([]context.Context, 0, len(hooks))}
	for _, hk := range hooks {
		if hk.Before != nil {
			next, err := hk.Before(ctx, req)
			if err != nil {
				return ctx, h, fmt.Errorf("%w: %w", ErrSubmitRefused, err)
			}
			if next != nil {
				ctx = next
			}
		}
		h.ctxs = append(h.ctxs, ctx)
	}
	return ctx, h, nil
}

// afterSubmit runs the After hooks of the hooks whose Before ran, last
// first.
func (h *hooked) afterSubmit(req SubmitRequest, t *Task, created bool, err error) {
	for i := len(h.ctxs) - 1; i >= 0; i-- {
		if after := h.hooks[i].After; after != nil {
			after(h.ctxs[i], req, t, created, err)
		}
	}
}
