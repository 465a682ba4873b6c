package devenv

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/worker"
)

// demoTask is one kind of sample task the demo (Config.Demo) submits.
type demoTask struct {
	typ        string
	input      string
	delay      time.Duration
	maxRetries int
}

// demoCycle is the repeating sequence of the demo: quick and slow successes,
// a retried failure that ends failed, a permanent failure, a delayed task.
// Within one cycle every status shows up.
var demoCycle = []demoTask{
	{typ: worker.BuiltinEcho, input: `{"hello":"world"}`},
	{typ: worker.BuiltinSleep, input: `{"ms":1500}`},
	{typ: worker.BuiltinFail, input: `{"mode":"retryable","message":"demo: upstream is flaky"}`, maxRetries: 2},
	{typ: worker.BuiltinEcho, input: `{"greeting":"hi"}`},
	{typ: worker.BuiltinSleep, input: `{"ms":6000}`},
	{typ: worker.BuiltinFail, input: `{"mode":"permanent","message":"demo: input rejected"}`},
	{typ: worker.BuiltinEcho, input: `{"later":true}`, delay: 15 * time.Second},
	{typ: worker.BuiltinSleep, input: `{"ms":300}`},
	{typ: worker.BuiltinEcho, input: `{"n":42}`},
	{typ: worker.BuiltinSleep, input: `{"ms":15000}`},
}

// demoRetryPolicy keeps demo retries short enough to watch.
var demoRetryPolicy = queue.RetryPolicy{InitialIntervalMS: 2000, MaxIntervalMS: 8000, Multiplier: 2, JitterPercent: 0.25}

// demoRequest builds the n-th demo submission.
func demoRequest(n int, now time.Time) queue.SubmitRequest {
	d := demoCycle[n%len(demoCycle)]
	retries := d.maxRetries
	req := queue.SubmitRequest{
		Type:        d.typ,
		Input:       json.RawMessage(d.input),
		Timeout:     time.Minute,
		MaxRetries:  &retries,
		RetryPolicy: &demoRetryPolicy,
	}
	if d.delay > 0 {
		req.AvailableAt = now.Add(d.delay)
	}
	return req
}

// runDemo submits demo tasks at rate per second until ctx is cancelled.
func runDemo(ctx context.Context, q *queue.Queue, rate float64, log *slog.Logger) {
	every := time.Duration(float64(time.Second) / rate)
	t := time.NewTicker(every)
	defer t.Stop()
	log.Info("demo: submitting sample tasks", "per_second", rate)
	failures := 0
	for n := 0; ; n++ {
		req := demoRequest(n, q.Now())
		task, _, err := q.Submit(ctx, req)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			failures++
			if failures <= 3 || failures%100 == 0 {
				log.Warn("demo: submit failed", "type", req.Type, "err", err, "failures", failures)
			}
		default:
			log.Debug("demo: submitted", "task_id", task.ID, "type", task.Type)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
