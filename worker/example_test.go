package worker_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"time"

	"github.com/google/uuid"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store/memstore"
	"github.com/qo-queue/qo/worker"
)

// openQueue makes a queue in memory; in production, queue.Open on an
// s3store.Store of the bucket that qo init prepared.
func openQueue(ctx context.Context) *queue.Queue {
	st := memstore.New()
	if _, err := queue.Init(ctx, st, 1); err != nil {
		log.Fatal(err)
	}
	q, err := queue.Open(ctx, st, queue.Options{})
	if err != nil {
		log.Fatal(err)
	}
	return q
}

// quiet are worker options for the examples: short polls, no logs.
func quiet() worker.Options {
	return worker.Options{PollMin: 10 * time.Millisecond, PollMax: 20 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)}
}

// waitFor polls a task until it reaches a terminal status.
func waitFor(ctx context.Context, q *queue.Queue, id uuid.UUID) *queue.Task {
	for {
		t, err := q.Get(ctx, id)
		if err != nil {
			log.Fatal(err)
		}
		if t.Status.Terminal() {
			return t
		}
		time.Sleep(10 * time.Millisecond)
	}
}

var errUnavailable = errors.New("mail server unavailable")

// A handler says how a failure is handled: a plain or Retryable error runs
// the task again after a backoff (up to its max_retries), a Permanent one
// fails it at once (a dead letter), Reschedule(d) runs it again after d.
func ExampleWorker_Handle() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	q := openQueue(ctx)

	w := worker.New(q, quiet())
	w.Handle("send_email", func(ctx context.Context, t *queue.Task) (json.RawMessage, error) {
		var in struct{ To string }
		if err := json.Unmarshal(t.Input, &in); err != nil || in.To == "" {
			return nil, worker.Permanent(errors.New("no recipient")) // no retry
		}
		if t.Attempt == 1 {
			return nil, worker.Retryable(errUnavailable) // retried with backoff
		}
		return json.RawMessage(`{"sent":true}`), nil
	})
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()

	// Retry after 10 ms instead of the default 1 s, 2 s, 4 s...
	fast := &queue.RetryPolicy{InitialIntervalMS: 10, MaxIntervalMS: 10, Multiplier: 1}
	for _, input := range []string{`{"to":"ada@example.com"}`, `{}`} {
		t, _, err := q.Submit(ctx, queue.SubmitRequest{Type: "send_email", Input: json.RawMessage(input), RetryPolicy: fast})
		if err != nil {
			log.Fatal(err)
		}
		t = waitFor(ctx, q, t.ID)
		if t.Status == queue.StatusCompleted {
			fmt.Printf("%s: %s after %d attempts, output %s\n", input, t.Status, t.Attempt, t.Output)
		} else {
			fmt.Printf("%s: %s after %d attempt, last error %q\n", input, t.Status, t.Attempt, t.LastError)
		}
	}

	cancel()
	if err := <-done; err != nil {
		log.Fatal(err)
	}
	// Output:
	// {"to":"ada@example.com"}: completed after 2 attempts, output {"sent":true}
	// {}: failed after 1 attempt, last error "permanent: no recipient"
}

// An embedded worker stops gracefully when its context is cancelled (here
// by hand; in a service the function Run does it on SIGTERM): it claims no
// more tasks, waits up to Options.ShutdownTimeout for the running ones,
// releases what is left (pending again, no retry counted), deregisters and
// returns nil.
func ExampleWorker_Run() {
	q := openQueue(context.Background())
	ctx, stop := context.WithCancel(context.Background())
	defer stop()

	started := make(chan struct{})
	opts := quiet()
	opts.ShutdownTimeout = 10 * time.Second
	w := worker.New(q, opts)
	w.Handle("resize", func(ctx context.Context, t *queue.Task) (json.RawMessage, error) {
		close(started)
		time.Sleep(50 * time.Millisecond) // still running when the stop comes
		return json.RawMessage(`{"resized":true}`), nil
	})
	t, _, err := q.Submit(ctx, queue.SubmitRequest{Type: "resize"})
	if err != nil {
		log.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()

	<-started
	stop() // as SIGTERM would
	fmt.Println("worker stopped:", <-done)

	t, err = q.Get(context.Background(), t.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("task:", t.Status, string(t.Output))
	// Output:
	// worker stopped: <nil>
	// task: completed {"resized":true}
}

// send stands for a handler's real work.
func send(ctx context.Context, to string) error {
	fmt.Println("sent to", to)
	return nil
}

// submitThenCancel submits one send_email task and cancels the context
// once it is done.
func submitThenCancel(ctx context.Context, st *memstore.Store, cancel func()) {
	producer, err := queue.Open(ctx, st, queue.Options{})
	if err != nil {
		log.Fatal(err)
	}
	t, _, err := producer.Submit(ctx, queue.SubmitRequest{Type: "send_email", Input: json.RawMessage(`{"to":"ada@example.com"}`)})
	if err != nil {
		log.Fatal(err)
	}
	go func() {
		waitFor(ctx, producer, t.ID)
		cancel()
	}()
}

// The Go API of README.md, verbatim between the README markers (a test
// keeps the two identical): a queue, a worker with a handler, and Run until
// the context is cancelled.
func ExampleNew() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st := memstore.New()
	if _, err := queue.Init(ctx, st, 1); err != nil {
		log.Fatal(err)
	}
	submitThenCancel(ctx, st, cancel)

	// README: begin
	q, _ := queue.Open(ctx, st, queue.Options{})
	w := worker.New(q, worker.Options{Concurrency: 4})
	w.Handle("send_email", func(ctx context.Context, t *queue.Task) (json.RawMessage, error) {
		var in struct{ To string }
		if err := json.Unmarshal(t.Input, &in); err != nil {
			return nil, worker.Permanent(err) // no retry
		}
		if err := send(ctx, in.To); err != nil {
			return nil, err // retried with backoff; worker.Reschedule(d) picks the delay
		}
		return json.RawMessage(`{"sent":true}`), nil
	})
	err := w.Run(ctx) // until ctx is cancelled; then a graceful shutdown
	// README: end

	fmt.Println("worker stopped:", err)
	// Output:
	// sent to ada@example.com
	// worker stopped: <nil>
}

// Middleware wraps every handler, Go and exec alike; the first registered
// is the outermost. Logging, Recover (always on) and Measure come with the
// package; metrics.(*Metrics).Middleware counts calls for Prometheus.
func ExampleWorker_Use() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	q := openQueue(ctx)

	w := worker.New(q, quiet())
	timing := func(next worker.HandlerFunc) worker.HandlerFunc {
		return func(ctx context.Context, t *queue.Task) (json.RawMessage, error) {
			fmt.Println("start", t.Type)
			out, err := next(ctx, t)
			fmt.Println("end", t.Type, worker.ResultOf(err))
			return out, err
		}
	}
	w.Use(timing, worker.Logging(slog.New(slog.DiscardHandler)))
	w.Handle("resize", func(context.Context, *queue.Task) (json.RawMessage, error) {
		panic("out of memory") // recovered: the task fails (retryable), the worker stays up
	})
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()

	none := 0
	t, _, err := q.Submit(ctx, queue.SubmitRequest{Type: "resize", MaxRetries: &none})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(waitFor(ctx, q, t.ID).LastError)
	cancel()
	<-done
	// Output:
	// start resize
	// end resize panic
	// handler panicked: out of memory
}
