package queue_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store/memstore"
	"github.com/qo-queue/qo/worker"
)

// Submit a task and wait for its result. The queue lives in an in-memory
// store here; with an S3 bucket only the store changes (s3store.New).
func Example() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	st := memstore.New()
	if _, err := queue.Init(ctx, st, 1); err != nil { // once per bucket (qo init)
		log.Fatal(err)
	}
	q, err := queue.Open(ctx, st, queue.Options{})
	if err != nil {
		log.Fatal(err)
	}

	// A worker, usually another process (qo worker), here a goroutine.
	w := worker.New(q, worker.Options{PollMin: 10 * time.Millisecond, PollMax: 20 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
	w.Handle("upper", func(ctx context.Context, t *queue.Task) (json.RawMessage, error) {
		var in struct{ Text string }
		if err := json.Unmarshal(t.Input, &in); err != nil {
			return nil, worker.Permanent(err)
		}
		return json.Marshal(map[string]string{"text": strings.ToUpper(in.Text)})
	})
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()

	t, _, err := q.Submit(ctx, queue.SubmitRequest{Type: "upper", Input: json.RawMessage(`{"text":"hello"}`)})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("submitted:", t.Status)

	// Wait: poll the task until it reaches a terminal status (qo wait does
	// the same with a growing interval).
	for !t.Status.Terminal() {
		time.Sleep(10 * time.Millisecond)
		if t, err = q.Get(ctx, t.ID); err != nil {
			log.Fatal(err)
		}
	}
	fmt.Println("finished:", t.Status, string(t.Output))

	cancel() // graceful shutdown of the worker
	if err := <-done; err != nil {
		log.Fatal(err)
	}
	// Output:
	// submitted: pending
	// finished: completed {"text":"HELLO"}
}

// Follow a task from its submit until it ends: its history so far, then
// every write as a worker claims and completes it. With no ids, Follow
// reports the events of the whole queue (qo tail).
func ExampleQueue_Follow() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st := memstore.New()
	if _, err := queue.Init(ctx, st, 1); err != nil {
		log.Fatal(err)
	}
	q, err := queue.Open(ctx, st, queue.Options{})
	if err != nil {
		log.Fatal(err)
	}
	w := worker.New(q, worker.Options{PollMin: 10 * time.Millisecond, PollMax: 20 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
	w.Handle("resize", func(ctx context.Context, t *queue.Task) (json.RawMessage, error) {
		return json.RawMessage(`{"ok":true}`), nil
	})
	go func() { _ = w.Run(ctx) }()

	t, _, err := q.Submit(ctx, queue.SubmitRequest{Type: "resize"})
	if err != nil {
		log.Fatal(err)
	}
	opt := queue.FollowOptions{IDs: []uuid.UUID{t.ID}, UntilDone: true, Interval: 10 * time.Millisecond}
	err = q.Follow(ctx, opt, func(ev queue.Event) error {
		fmt.Println(ev.Name, ev.Type, ev.Status, "attempt", ev.Attempt)
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	// Output:
	// enqueued resize pending attempt 0
	// claimed resize running attempt 1
	// succeeded resize completed attempt 1
}

// Wait for tasks to end and tell how each ended (qo wait).
func ExampleQueue_Wait() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st := memstore.New()
	if _, err := queue.Init(ctx, st, 1); err != nil {
		log.Fatal(err)
	}
	q, err := queue.Open(ctx, st, queue.Options{})
	if err != nil {
		log.Fatal(err)
	}
	w := worker.New(q, worker.Options{PollMin: 10 * time.Millisecond, PollMax: 20 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
	w.Handle("divide", func(ctx context.Context, t *queue.Task) (json.RawMessage, error) {
		var in struct{ A, B int }
		if err := json.Unmarshal(t.Input, &in); err != nil {
			return nil, worker.Permanent(err)
		}
		if in.B == 0 {
			return nil, worker.Permanent(errors.New("division by zero"))
		}
		return json.Marshal(in.A / in.B)
	})
	go func() { _ = w.Run(ctx) }()

	var ids []uuid.UUID
	for _, in := range []string{`{"A":6,"B":3}`, `{"A":1,"B":0}`} {
		t, _, err := q.Submit(ctx, queue.SubmitRequest{Type: "divide", Input: json.RawMessage(in)})
		if err != nil {
			log.Fatal(err)
		}
		ids = append(ids, t.ID)
	}
	results, err := q.Wait(ctx, ids, queue.WaitOptions{Interval: 10 * time.Millisecond, Timeout: time.Minute})
	if err != nil {
		log.Fatal(err)
	}
	for _, r := range results {
		if r.Outcome == queue.OutcomeCompleted {
			fmt.Println(r.Outcome, string(r.Task.Output))
		} else {
			fmt.Println(r.Outcome+":", r.Task.LastError)
		}
	}
	// Output:
	// completed 2
	// failed: permanent: division by zero
}

// Submit a JSON Lines stream of submit documents: every line is checked
// before anything is written, then the lines are submitted 16 at a time
// (qo submit --file).
func ExampleQueue_SubmitBulk() {
	ctx := context.Background()
	st := memstore.New()
	if _, err := queue.Init(ctx, st, 1); err != nil {
		log.Fatal(err)
	}
	q, err := queue.Open(ctx, st, queue.Options{})
	if err != nil {
		log.Fatal(err)
	}
	def := queue.DefaultSubmitDefaults
	def.Type = "resize" // for lines without a type

	_, bad, err := queue.ParseBulk(strings.NewReader(`{"input":{"w":64}}`+"\n"+`{"input":{"w":64},"timeout_seconds":"5m"}`), def)
	if err != nil {
		log.Fatal(err)
	}
	for _, b := range bad {
		fmt.Printf("line %d: %s\n", b.Line, b.Error)
	}

	stream := `{"input":{"w":64}}
{"type":"mail","input":"to-a","idempotency_key":"a"}
{"type":"mail","input":"to-a","idempotency_key":"a"}
`
	items, bad, err := queue.ParseBulk(strings.NewReader(stream), def)
	if err != nil || len(bad) > 0 {
		log.Fatal(err, bad)
	}
	res := q.SubmitBulk(ctx, items, queue.BulkOptions{Progress: func(done, total int) {
		if done == total {
			fmt.Println("done:", done, "of", total)
		}
	}})
	sum := res.Summary()
	fmt.Println("submitted:", sum.Submitted, "duplicates:", sum.Duplicates, "failed:", sum.Failed)
	fmt.Println("lines 2 and 3 share a task:", sum.IDs[1] == sum.IDs[2])
	// Output:
	// line 2: timeout_seconds: want a whole number, got a string
	// done: 3 of 3
	// submitted: 2 duplicates: 1 failed: 0
	// lines 2 and 3 share a task: true
}

// Example_goAPI is README's second Go snippet, between the README markers
// (TestREADMESnippet keeps the two identical), so the snippet compiles. It
// has no output to check: Follow reports times and ids that change on
// every run, and the examples above run each call.
func Example_goAPI() {
	ctx := context.Background()
	st := memstore.New()
	if _, err := queue.Init(ctx, st, 1); err != nil {
		log.Fatal(err)
	}
	q, err := queue.Open(ctx, st, queue.Options{})
	if err != nil {
		log.Fatal(err)
	}
	f := strings.NewReader(`{"type":"resize","input":{"w":64}}` + "\n")
	var ids []uuid.UUID

	// README: begin
	items, bad, err := queue.ParseBulk(f, queue.DefaultSubmitDefaults)      // every line checked before anything is written
	res := q.SubmitBulk(ctx, items, queue.BulkOptions{Concurrency: 16})     // res.Summary(): submitted, duplicates, failed
	results, err := q.Wait(ctx, ids, queue.WaitOptions{Timeout: time.Hour}) // each result's Outcome: completed, failed, ...
	err = q.Follow(ctx, queue.FollowOptions{IDs: ids, UntilDone: true}, func(ev queue.Event) error {
		fmt.Println(ev.At, ev.Name, ev.TaskID, ev.WorkerID) // the event names of qo history
		return nil
	})
	// README: end

	_, _, _, _ = bad, res, results, err
}

// Submit hooks run around every submit (Submit, each bulk line, each
// workflow step): Before may change the request or refuse it, After sees
// the result. Before functions run in the order added, After functions in
// reverse.
func ExampleQueue_OnSubmit() {
	ctx := context.Background()
	st := memstore.New()
	if _, err := queue.Init(ctx, st, 1); err != nil {
		log.Fatal(err)
	}
	q, err := queue.Open(ctx, st, queue.Options{})
	if err != nil {
		log.Fatal(err)
	}
	q.OnSubmit(queue.SubmitHook{
		Before: func(ctx context.Context, req *queue.SubmitRequest) (context.Context, error) {
			if req.Type == "drop_tables" {
				return nil, errors.New("not from this program")
			}
			if req.Priority == "" {
				req.Priority = queue.PriorityHigh // this program's default
			}
			return nil, nil
		},
		After: func(ctx context.Context, req queue.SubmitRequest, t *queue.Task, created bool, err error) {
			// Not called for drop_tables: a hook whose Before refused
			// has no After; earlier hooks' After get the error.
			if err == nil {
				fmt.Println("submitted:", t.Type, t.Priority)
			}
		},
	})
	if _, _, err := q.Submit(ctx, queue.SubmitRequest{Type: "send_email"}); err != nil {
		log.Fatal(err)
	}
	_, _, err = q.Submit(ctx, queue.SubmitRequest{Type: "drop_tables"})
	fmt.Println(errors.Is(err, queue.ErrSubmitRefused), err)
	// Output:
	// submitted: send_email high
	// true submit: submit refused by a hook: not from this program
}
