package queue

import (
	"context"
	"encoding/json"
	"fmt"
)

// Args is the input of a typed task: a Go type whose Kind is the type of
// the tasks it is submitted as (SubmitArgs) and handled as
// (worker.HandleArgs). Kind must return a constant and work on the zero
// value (a value receiver on a struct type):
//
//	type SendEmail struct{ To string }
//
//	func (SendEmail) Kind() string { return "send_email" }
//
// The type string is then written once, so a typo in it is a compile
// error rather than tasks that no worker claims.
type Args interface {
	Kind() string
}

// SubmitArgs submits a task of type args.Kind() whose input is the JSON
// encoding of args, with req's other settings (priority, retries,
// idempotency key, ...). req.Type and req.Input must be left empty: args
// gives both. It costs what Submit costs.
func (q *Queue) SubmitArgs(ctx context.Context, args Args, req SubmitRequest) (*Task, bool, error) {
	if args == nil {
		return nil, false, fmt.Errorf("submit: %w", invalidInput("nil args: pass a value whose Kind names the task type"))
	}
	kind := args.Kind()
	if req.Type != "" && req.Type != kind {
		return nil, false, fmt.Errorf("submit %s: %w", kind, invalidInput("request type %q differs from the args' kind %q: leave SubmitRequest.Type empty", req.Type, kind))
	}
	if req.Input != nil {
		return nil, false, fmt.Errorf("submit %s: %w", kind, invalidInput("SubmitRequest.Input is set: the args are the input, leave it empty"))
	}
	input, err := json.Marshal(args)
	if err != nil {
		return nil, false, fmt.Errorf("submit %s: %w", kind, invalidInput("encode %T as JSON: %v", args, err))
	}
	req.Type, req.Input = kind, input
	return q.Submit(ctx, req)
}
