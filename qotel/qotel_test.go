package qotel_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/qo-queue/qo/internal/testutil"
	"github.com/qo-queue/qo/qotel"
	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store/memstore"
	"github.com/qo-queue/qo/worker"
)

func newQueue(t *testing.T) *queue.Queue {
	t.Helper()
	ctx := context.Background()
	s := memstore.New()
	_, err := queue.Init(ctx, s, 1)
	require.NoError(t, err)
	q, err := queue.Open(ctx, s, queue.Options{})
	require.NoError(t, err)
	return q
}

func workerOptions(hook worker.AttemptHook) worker.Options {
	return worker.Options{
		ID: "w1", PollMin: 5 * time.Millisecond, PollMax: 50 * time.Millisecond,
		HeartbeatInterval: 50 * time.Millisecond, LeaseCheckInterval: 50 * time.Millisecond,
		NoMonitor: true, AttemptHook: hook, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
}

// runUntil runs w until task id reaches status, then stops it.
func runUntil(t *testing.T, q *queue.Queue, w *worker.Worker, id fmt.Stringer, status queue.Status) *queue.Task {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	var last *queue.Task
	testutil.Eventually(t, func() bool {
		pid, _ := queue.ParseID(id.String())
		task, err := q.Get(context.Background(), pid)
		last = task
		return err == nil && task.Status == status
	}, "task %s to become %s", id, status)
	cancel()
	require.NoError(t, <-done)
	return last
}

func byName(spans []sdktrace.ReadOnlySpan) map[string]sdktrace.ReadOnlySpan {
	out := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range spans {
		out[s.Name()] = s
	}
	return out
}

// A trace crosses the submit, an exec handler and the completion: every
// span shares the submit's trace id, the worker's process span is the
// send span's child and links to it, and the exec handler saw the run
// span's context in TRACEPARENT.
func TestTraceCrossesSubmitExecAndCompletion(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the handler is a shell script")
	}
	t.Parallel()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	tr := qotel.New(qotel.WithTracerProvider(tp))
	q := newQueue(t)

	dir := t.TempDir()
	seen := filepath.Join(dir, "traceparent")
	script := filepath.Join(dir, "handler.sh")
	require.NoError(t, os.WriteFile(script, []byte("#!/bin/sh\nprintf '%s' \"$TRACEPARENT\" > \"$1\"\nprintf '{\"traceparent\":\"%s\"}' \"$TRACEPARENT\"\n"), 0o755))

	task, created, err := tr.Submit(context.Background(), q, queue.SubmitRequest{Type: "resize", Input: json.RawMessage(`{}`),
		Metadata: map[string]string{"tenant": "acme"}})
	require.NoError(t, err)
	require.True(t, created)

	w := worker.New(q, workerOptions(tr.AttemptHook()))
	w.Handle("resize", worker.Exec([]string{script, seen}, worker.ExecOptions{}))
	done := runUntil(t, q, w, task.ID, queue.StatusCompleted)
	require.NoError(t, tp.ForceFlush(context.Background()))

	spans := byName(rec.Ended())
	for _, name := range []string{"send resize", "process resize", "receive resize", "run resize", "settle resize"} {
		require.Contains(t, spans, name)
	}
	send, process := spans["send resize"], spans["process resize"]
	require.Equal(t, trace.SpanKindProducer, send.SpanKind())
	require.Equal(t, trace.SpanKindConsumer, process.SpanKind())
	traceID := send.SpanContext().TraceID()
	for name, s := range spans {
		require.Equal(t, traceID, s.SpanContext().TraceID(), "%s shares the submit's trace", name)
	}
	// The task stores the send span's context, beside its own metadata.
	require.Equal(t, fmt.Sprintf("00-%s-%s-01", traceID, send.SpanContext().SpanID()), done.Metadata[queue.MetaTraceparent])
	require.Equal(t, "acme", done.Metadata["tenant"])
	// process: child of send, and linked to it.
	require.Equal(t, send.SpanContext().SpanID(), process.Parent().SpanID())
	require.True(t, process.Parent().IsRemote())
	require.Len(t, process.Links(), 1)
	require.Equal(t, send.SpanContext().SpanID(), process.Links()[0].SpanContext.SpanID())
	for _, name := range []string{"receive resize", "run resize", "settle resize"} {
		require.Equal(t, process.SpanContext().SpanID(), spans[name].Parent().SpanID(), "%s is a child of process", name)
	}
	// The exec handler saw the run span's context.
	run := spans["run resize"]
	want := fmt.Sprintf("00-%s-%s-01", traceID, run.SpanContext().SpanID())
	got, err := os.ReadFile(seen)
	require.NoError(t, err)
	require.Equal(t, want, string(got))
	require.JSONEq(t, `{"traceparent":"`+want+`"}`, string(done.Output))

	attrs := map[string]string{}
	for _, kv := range process.Attributes() {
		attrs[string(kv.Key)] = kv.Value.String()
	}
	require.Equal(t, map[string]string{"messaging.system": "qo", "messaging.destination.name": "resize",
		"messaging.operation.type": "process", "messaging.operation.name": "process",
		"messaging.message.id": task.ID.String(), "qo.task.attempt": "1", "qo.worker.id": "w1", "qo.outcome": "completed"}, attrs)
	require.False(t, process.StartTime().After(spans["receive resize"].StartTime()), "the attempt starts with its claim")
}

// A failed attempt marks the process span as an error; the retry is
// another process span in the same trace, under the same send span.
func TestRetriedAttemptsShareTheTrace(t *testing.T) {
	t.Parallel()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	tr := qotel.New(qotel.WithTracerProvider(tp))
	q := newQueue(t)
	task, _, err := tr.Submit(context.Background(), q, queue.SubmitRequest{Type: "flaky", RetryPolicy: &queue.RetryPolicy{Multiplier: 1}})
	require.NoError(t, err)
	w := worker.New(q, workerOptions(tr.AttemptHook()))
	w.Handle("flaky", func(_ context.Context, t *queue.Task) (json.RawMessage, error) {
		if t.Attempt == 1 {
			return nil, fmt.Errorf("first attempt fails")
		}
		return nil, nil
	})
	runUntil(t, q, w, task.ID, queue.StatusCompleted)
	var processes []sdktrace.ReadOnlySpan
	var send sdktrace.ReadOnlySpan
	testutil.Eventually(t, func() bool {
		processes = processes[:0]
		for _, s := range rec.Ended() {
			switch s.Name() {
			case "process flaky":
				processes = append(processes, s)
			case "send flaky":
				send = s
			}
		}
		return len(processes) == 2
	}, "two process spans")
	for _, p := range processes {
		require.Equal(t, send.SpanContext().TraceID(), p.SpanContext().TraceID())
		require.Equal(t, send.SpanContext().SpanID(), p.Parent().SpanID())
	}
	require.Equal(t, "Error", processes[0].Status().Code.String())
	require.Contains(t, processes[0].Status().Description, "first attempt fails")
	require.Equal(t, "Unset", processes[1].Status().Code.String())
}

// The submit hook traces every way a queue submits: one send span per
// task, its context stored in the task, each task its own trace unless the
// caller's context holds a span.
func TestSubmitHookTracesEverySubmit(t *testing.T) {
	t.Parallel()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	tr := qotel.New(qotel.WithTracerProvider(tp))
	q := newQueue(t)
	q.OnSubmit(tr.SubmitHook())
	ctx := context.Background()

	first, created, err := q.Submit(ctx, queue.SubmitRequest{Type: "a", IdempotencyKey: "k"})
	require.NoError(t, err)
	require.True(t, created)
	again, created, err := q.Submit(ctx, queue.SubmitRequest{Type: "a", IdempotencyKey: "k"})
	require.NoError(t, err)
	require.False(t, created)
	require.Equal(t, first.Metadata[queue.MetaTraceparent], again.Metadata[queue.MetaTraceparent], "a duplicate keeps the first context")
	spec, err := queue.DecodeWorkflow([]byte(`{"name": "wf", "steps": [{"name": "one", "type": "b"}, {"name": "two", "type": "c", "after": ["one"]}]}`), queue.DefaultSubmitDefaults)
	require.NoError(t, err)
	_, _, err = q.Workflows().Submit(ctx, spec)
	require.NoError(t, err)

	spans := rec.Ended()
	require.Len(t, spans, 4, "one send span per submit")
	byName := map[string]int{}
	for _, s := range spans {
		byName[s.Name()]++
		require.Equal(t, "producer", s.SpanKind().String())
	}
	require.Equal(t, map[string]int{"send a": 2, "send b": 1, "send c": 1}, byName)
	dup := false
	for _, kv := range spans[1].Attributes() {
		dup = dup || kv.Key == qotel.AttrDuplicate && kv.Value.AsBool()
	}
	require.True(t, dup, "the second submit of the key is a duplicate")
	require.Equal(t, fmt.Sprintf("00-%s-%s-01", spans[0].SpanContext().TraceID(), spans[0].SpanContext().SpanID()), first.Metadata[queue.MetaTraceparent])
}

// Inject stores the context of the span in ctx, keeps the other metadata
// and never changes the caller's map.
func TestInject(t *testing.T) {
	t.Parallel()
	tp := sdktrace.NewTracerProvider()
	tr := qotel.New(qotel.WithTracerProvider(tp))
	meta := map[string]string{"tenant": "acme"}
	req := queue.SubmitRequest{Metadata: meta}
	tr.Inject(context.Background(), &req)
	require.Equal(t, map[string]string{"tenant": "acme"}, req.Metadata, "no span, nothing injected")

	ctx, span := tp.Tracer("t").Start(context.Background(), "parent")
	defer span.End()
	tr.Inject(ctx, &req)
	require.Equal(t, fmt.Sprintf("00-%s-%s-01", span.SpanContext().TraceID(), span.SpanContext().SpanID()), req.Metadata[queue.MetaTraceparent])
	require.Equal(t, "acme", req.Metadata["tenant"])
	require.NotContains(t, meta, queue.MetaTraceparent)
	require.NoError(t, queue.ValidateMetadata(req.Metadata))
}

// qo's core packages, and so the qo binary, do not link OpenTelemetry:
// only programs that import qotel do.
func TestCoreDoesNotImportOpenTelemetry(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	cmd := exec.Command("go", "list", "-deps", "github.com/qo-queue/qo", "github.com/qo-queue/qo/queue", "github.com/qo-queue/qo/worker", "github.com/qo-queue/qo/command")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	for _, pkg := range strings.Fields(string(out)) {
		require.False(t, strings.HasPrefix(pkg, "go.opentelemetry.io/"), "a core package depends on %s: keep OpenTelemetry in qotel", pkg)
	}
	require.Contains(t, string(out), "github.com/qo-queue/qo/worker")
}
