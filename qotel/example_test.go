package qotel_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/qo-queue/qo/internal/testutil"
	"github.com/qo-queue/qo/qotel"
	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store/memstore"
	"github.com/qo-queue/qo/worker"
)

// A submit and the worker that runs it, traced: the producer's span
// context travels in the task, and the worker's spans join its trace.
// Here the spans go to an in-memory recorder; a program gives New its own
// TracerProvider (with an OTLP exporter, say) or sets the global one.
func Example() {
	ctx := context.Background()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	tr := qotel.New(qotel.WithTracerProvider(tp))

	s := memstore.New() // a bucket in memory; use s3store for a real one
	if _, err := queue.Init(ctx, s, 1); err != nil {
		panic(err)
	}
	q, err := queue.Open(ctx, s, queue.Options{})
	if err != nil {
		panic(err)
	}

	// Producer: the submit hook puts every submit in a "send" span.
	q.OnSubmit(tr.SubmitHook())
	task, _, err := q.Submit(ctx, queue.SubmitRequest{Type: "greet", Input: json.RawMessage(`{"name":"Ann"}`)})
	if err != nil {
		panic(err)
	}
	fmt.Println("stored trace context:", task.Metadata[queue.MetaTraceparent] != "")

	// Consumer: the attempt hook makes the worker's spans.
	w := worker.New(q, worker.Options{AttemptHook: tr.AttemptHook(), NoMonitor: true, PollMin: 5 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	w.Handle("greet", func(ctx context.Context, t *queue.Task) (json.RawMessage, error) {
		// The handler's context holds the run span: spans started from
		// it are its children.
		fmt.Println("handler in the trace:", trace.SpanContextFromContext(ctx).TraceID().String() == task.Metadata[queue.MetaTraceparent][3:35])
		return json.RawMessage(`"hello"`), nil
	})
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- w.Run(runCtx) }()
	for {
		t, err := q.Get(ctx, task.ID)
		if err == nil && t.Status == queue.StatusCompleted {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	stop()
	<-done

	var names []string
	for _, s := range rec.Ended() {
		names = append(names, s.Name())
	}
	slices.Sort(names)
	fmt.Println(names)
	// Output:
	// stored trace context: true
	// handler in the trace: true
	// [process greet receive greet run greet send greet settle greet]
}

// The README's snippet: a traced submit and a traced worker.
func ExampleTracer() {
	ctx := context.Background()
	var q *queue.Queue // from queue.Open
	// README: begin
	tr := qotel.New() // the global TracerProvider, or qotel.New(qotel.WithTracerProvider(tp))
	// Every submit of q gets a "send" span; its context is stored in the
	// task's metadata.
	q.OnSubmit(tr.SubmitHook())
	task, _, err := q.Submit(ctx, queue.SubmitRequest{Type: "resize"})
	// "process", "receive", "run" and "settle" spans, in the submit's trace.
	w := worker.New(q, worker.Options{AttemptHook: tr.AttemptHook()})
	// Exec handlers get the "run" span's TRACEPARENT and TRACESTATE.
	w.Handle("resize", worker.Exec([]string{"./resize.sh"}, worker.ExecOptions{}))
	// README: end
	_, _ = task, err
}

// README.md's qotel snippet is the body of ExampleTracer.
func TestREADMESnippet(t *testing.T) {
	testutil.READMESnippet(t, "../README.md", "qotel", "example_test.go")
}
