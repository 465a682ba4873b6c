// Package qotel traces qo tasks with OpenTelemetry: a producer span for
// each submit, whose context travels in the task's metadata (the W3C
// traceparent and tracestate, see queue.MetaTraceparent), and on the
// worker a consumer span for each attempt with spans for its claim, its
// handler's run and the write of its outcome. Exec handlers get the run
// span's context as TRACEPARENT and TRACESTATE, so a handler in any
// language that reads them continues the trace.
//
// The spans follow the OpenTelemetry messaging conventions, with qo as the
// messaging system and the task type as the destination:
//
//	send {type}     producer  the submit; its context is stored in the task
//	process {type}  consumer  one attempt, from the claim to its recorded
//	                          end; child of the send span (one trace per
//	                          task) and linked to it, as the conventions ask
//	receive {type}  internal  the claim (child of process)
//	run {type}      internal  the handler (child of process); what exec
//	                          handlers get as TRACEPARENT
//	settle {type}   internal  from the handler's return to the outcome's
//	                          write (child of process)
//
// Every span has messaging.system "qo", messaging.destination.name (the
// task type), messaging.operation.type and .name and, once known,
// messaging.message.id (the task id). Worker spans add qo.task.attempt and
// qo.worker.id; process and settle spans add qo.outcome, and are marked as
// errors when the attempt failed or its outcome could not be written.
//
// qo's own packages do not import OpenTelemetry: only programs that
// import qotel link it. Use a Tracer on both sides:
//
//	tr := qotel.New(qotel.WithTracerProvider(tp))
//	q.OnSubmit(tr.SubmitHook()) // every submit of q gets a send span
//	...
//	w := worker.New(q, worker.Options{AttemptHook: tr.AttemptHook()})
package qotel

import (
	"context"
	"encoding/json"
	"maps"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/worker"
)

// ScopeName is the instrumentation scope of qotel's spans.
const ScopeName = "github.com/qo-queue/qo/qotel"

// Attribute keys.
const (
	AttrSystem        = attribute.Key("messaging.system")
	AttrDestination   = attribute.Key("messaging.destination.name")
	AttrOperationType = attribute.Key("messaging.operation.type")
	AttrOperationName = attribute.Key("messaging.operation.name")
	AttrMessageID     = attribute.Key("messaging.message.id")
	AttrAttempt       = attribute.Key("qo.task.attempt")
	AttrWorkerID      = attribute.Key("qo.worker.id")
	AttrOutcome       = attribute.Key("qo.outcome")
	AttrDuplicate     = attribute.Key("qo.duplicate")
)

// Tracer makes qo's spans. Its zero value is not usable: call New.
type Tracer struct {
	tracer trace.Tracer
	prop   propagation.TraceContext
}

// Option configures a Tracer.
type Option func(*config)

type config struct{ tp trace.TracerProvider }

// WithTracerProvider sets the provider of the spans (default: the global
// one, otel.GetTracerProvider).
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(c *config) { c.tp = tp }
}

// New returns a Tracer.
func New(opts ...Option) *Tracer {
	c := config{}
	for _, o := range opts {
		o(&c)
	}
	if c.tp == nil {
		c.tp = otel.GetTracerProvider()
	}
	return &Tracer{tracer: c.tp.Tracer(ScopeName)}
}

func baseAttrs(typ, opType, opName string) []attribute.KeyValue {
	return []attribute.KeyValue{AttrSystem.String("qo"), AttrDestination.String(typ),
		AttrOperationType.String(opType), AttrOperationName.String(opName)}
}

// Inject stores the trace context of ctx in req's metadata (the keys
// queue.MetaTraceparent and queue.MetaTracestate), replacing any there.
// req.Metadata is copied, never changed in place. Without a valid span in
// ctx it does nothing.
func (tr *Tracer) Inject(ctx context.Context, req *queue.SubmitRequest) {
	carrier := propagation.MapCarrier{}
	tr.prop.Inject(ctx, carrier)
	if carrier[queue.MetaTraceparent] == "" {
		return
	}
	m := maps.Clone(req.Metadata)
	if m == nil {
		m = map[string]string{}
	}
	delete(m, queue.MetaTracestate)
	for _, k := range []string{queue.MetaTraceparent, queue.MetaTracestate} {
		if v := carrier[k]; v != "" {
			m[k] = v
		}
	}
	req.Metadata = m
}

// Extract returns ctx with the trace context stored in t's metadata as
// its remote span context (ctx as it is when t has none).
func (tr *Tracer) Extract(ctx context.Context, t *queue.Task) context.Context {
	return tr.prop.Extract(ctx, propagation.MapCarrier(t.Metadata))
}

// SubmitHook returns the submit hook that traces every submit of a queue
// (q.OnSubmit(tr.SubmitHook())): Submit, SubmitArgs, each line of a bulk
// submit and each step of a workflow get a producer span "send {type}",
// whose context is stored in the task's metadata. A duplicate of an
// idempotent submit keeps the first submit's context (the task never
// changes); its span says qo.duplicate.
func (tr *Tracer) SubmitHook() queue.SubmitHook {
	return queue.SubmitHook{
		Before: func(ctx context.Context, req *queue.SubmitRequest) (context.Context, error) {
			ctx, _ = tr.tracer.Start(ctx, "send "+req.Type, trace.WithSpanKind(trace.SpanKindProducer),
				trace.WithAttributes(baseAttrs(req.Type, "send", "submit")...))
			tr.Inject(ctx, req)
			return ctx, nil
		},
		After: func(ctx context.Context, _ queue.SubmitRequest, task *queue.Task, created bool, err error) {
			endSend(trace.SpanFromContext(ctx), task, created, err)
		},
	}
}

// Submit submits req to q as q.Submit does, inside the producer span of
// SubmitHook: for a program that traces some submits only. A queue with
// SubmitHook installed traces every submit already (use one or the other,
// or a submit gets two send spans).
func (tr *Tracer) Submit(ctx context.Context, q *queue.Queue, req queue.SubmitRequest) (*queue.Task, bool, error) {
	h := tr.SubmitHook()
	ctx, _ = h.Before(ctx, &req)
	task, created, err := q.Submit(ctx, req)
	h.After(ctx, req, task, created, err)
	return task, created, err
}

// endSend ends a send span with what the submit returned.
func endSend(span trace.Span, task *queue.Task, created bool, err error) {
	if task != nil {
		span.SetAttributes(AttrMessageID.String(task.ID.String()))
		if !created {
			span.SetAttributes(AttrDuplicate.Bool(true))
		}
	}
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// AttemptHook returns the worker hook that traces each attempt: set it as
// worker.Options.AttemptHook.
func (tr *Tracer) AttemptHook() worker.AttemptHook { return attemptHook{tr} }

type attemptHook struct{ tr *Tracer }

type attemptKey struct{}

// attempt is what one attempt's spans share, in its context.
type attempt struct {
	process  trace.Span
	runEnded time.Time
}

func workerAttrs(t *queue.Task, opType, opName string) []attribute.KeyValue {
	return append(baseAttrs(t.Type, opType, opName), AttrMessageID.String(t.ID.String()),
		AttrAttempt.Int(t.Attempt), AttrWorkerID.String(t.WorkerID))
}

func (h attemptHook) Claimed(ctx context.Context, t *queue.Task, claimBegan time.Time) context.Context {
	opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindConsumer), trace.WithTimestamp(claimBegan),
		trace.WithAttributes(workerAttrs(t, "process", "process")...)}
	producer := trace.SpanContextFromContext(h.tr.Extract(context.Background(), t))
	if producer.IsValid() {
		ctx = trace.ContextWithRemoteSpanContext(ctx, producer)
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: producer}))
	} else {
		opts = append(opts, trace.WithNewRoot())
	}
	ctx, process := h.tr.tracer.Start(ctx, "process "+t.Type, opts...)
	_, claim := h.tr.tracer.Start(ctx, "receive "+t.Type, trace.WithTimestamp(claimBegan),
		trace.WithAttributes(workerAttrs(t, "receive", "claim")...))
	claim.End()
	return context.WithValue(ctx, attemptKey{}, &attempt{process: process})
}

func (h attemptHook) Run(ctx context.Context, t *queue.Task, next worker.HandlerFunc) (json.RawMessage, error) {
	ctx, span := h.tr.tracer.Start(ctx, "run "+t.Type, trace.WithAttributes(workerAttrs(t, "process", "run")...))
	// The handler sees the run span's context in the task's metadata:
	// exec handlers get it as TRACEPARENT. The worker's copy keeps the
	// stored one.
	t = t.Clone()
	carrier := propagation.MapCarrier{}
	h.tr.prop.Inject(ctx, carrier)
	t.Metadata = maps.Clone(t.Metadata)
	if t.Metadata == nil {
		t.Metadata = map[string]string{}
	}
	delete(t.Metadata, queue.MetaTracestate)
	maps.Copy(t.Metadata, carrier)
	out, err := next(ctx, t)
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
	if a, ok := ctx.Value(attemptKey{}).(*attempt); ok {
		a.runEnded = time.Now()
	}
	return out, err
}

func (h attemptHook) Finished(ctx context.Context, t *queue.Task, outcome worker.Outcome, handlerErr error) {
	a, ok := ctx.Value(attemptKey{}).(*attempt)
	if !ok {
		return
	}
	settleOpts := []trace.SpanStartOption{trace.WithAttributes(append(workerAttrs(t, "settle", "finish"), AttrOutcome.String(string(outcome)))...)}
	if !a.runEnded.IsZero() {
		settleOpts = append(settleOpts, trace.WithTimestamp(a.runEnded))
	}
	_, settle := h.tr.tracer.Start(ctx, "settle "+t.Type, settleOpts...)
	a.process.SetAttributes(AttrOutcome.String(string(outcome)))
	switch outcome {
	case "":
		settle.SetStatus(codes.Error, "the outcome could not be written")
		a.process.SetStatus(codes.Error, "the outcome could not be written")
	case worker.OutcomeFailed, worker.OutcomeRetried, worker.OutcomeLost:
		msg := string(outcome)
		if handlerErr != nil {
			msg += ": " + handlerErr.Error()
		} else if t.LastError != "" {
			msg += ": " + t.LastError
		}
		a.process.SetStatus(codes.Error, msg)
	}
	settle.End()
	a.process.End()
}
