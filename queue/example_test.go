package queue_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"log/slog"
	"strings"
	"time"

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
