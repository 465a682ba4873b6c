package worker

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/store/memstore"
)

// slowStore answers every request after a fixed delay, as a store across
// a network does.
type slowStore struct {
	store.Store
	delay time.Duration
}

func (s slowStore) Get(ctx context.Context, key string) (*store.Object, error) {
	time.Sleep(s.delay)
	return s.Store.Get(ctx, key)
}

func (s slowStore) Put(ctx context.Context, key string, body []byte, cond store.Condition) (store.PutResult, error) {
	time.Sleep(s.delay)
	return s.Store.Put(ctx, key, body, cond)
}

func (s slowStore) Delete(ctx context.Context, key string, cond store.Condition) error {
	time.Sleep(s.delay)
	return s.Store.Delete(ctx, key, cond)
}

func (s slowStore) List(ctx context.Context, p store.ListParams) (store.ListPage, error) {
	time.Sleep(s.delay)
	return s.Store.List(ctx, p)
}

// BenchmarkBusyWorker drains a backlog of no-op tasks with one worker of
// concurrency 8 over a store that answers every request after 10 ms (an
// S3 server across a network); tasks/s is the rate. A claim is four
// requests in a row, so a worker that claimed one task after another
// would manage at most 25 tasks/s here.
func BenchmarkBusyWorker(b *testing.B) {
	const tasks = 200
	ctx := context.Background()
	var total time.Duration
	for b.Loop() {
		b.StopTimer()
		mem := memstore.New()
		if _, err := queue.Init(ctx, mem, 1); err != nil {
			b.Fatal(err)
		}
		q, err := queue.Open(ctx, slowStore{Store: mem, delay: 10 * time.Millisecond}, queue.Options{Logger: testLogger(b)})
		if err != nil {
			b.Fatal(err)
		}
		for range tasks {
			if _, _, err := q.Submit(ctx, queue.SubmitRequest{Type: "noop", Input: json.RawMessage(`{}`), Timeout: time.Minute}); err != nil {
				b.Fatal(err)
			}
		}
		var done atomic.Int64
		finished := make(chan struct{})
		w := New(q, Options{ID: "bench-" + uuid.NewString()[:8], Concurrency: 8, NoMonitor: true, Logger: testLogger(b)})
		w.Handle("noop", func(context.Context, *queue.Task) (json.RawMessage, error) {
			if done.Add(1) == tasks {
				close(finished)
			}
			return nil, nil
		})
		wctx, cancel := context.WithCancel(ctx)
		b.StartTimer()
		start := time.Now()
		ran := make(chan error, 1)
		go func() { ran <- w.Run(wctx) }()
		<-finished
		total += time.Since(start)
		b.StopTimer()
		cancel()
		if err := <-ran; err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(tasks*b.N)/total.Seconds(), "tasks/s")
}
