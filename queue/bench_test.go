package queue_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store/memstore"
)

// The whole happy path of a task on the in-memory store, so the numbers
// are qo's own CPU and allocations (go test -bench . -benchmem ./queue;
// model_test.go has the encode, decode and key benchmarks).

// BenchmarkSubmitClaimComplete is one task's whole happy path.
func BenchmarkSubmitClaimComplete(b *testing.B) {
	ctx := context.Background()
	s := memstore.New()
	if _, err := queue.Init(ctx, s, 1); err != nil {
		b.Fatal(err)
	}
	q, err := queue.Open(ctx, s, queue.Options{})
	if err != nil {
		b.Fatal(err)
	}
	req := queue.SubmitRequest{Type: "noop", Input: json.RawMessage(`{}`)}
	b.ReportAllocs()
	for b.Loop() {
		t, _, err := q.Submit(ctx, req)
		if err != nil {
			b.Fatal(err)
		}
		e, err := queue.ParseReadyKey(queue.ReadyKey(t))
		if err != nil {
			b.Fatal(err)
		}
		l, err := q.Claim(ctx, e, "bench")
		if err != nil {
			b.Fatal(err)
		}
		if _, err := q.Complete(ctx, l, nil); err != nil {
			b.Fatal(err)
		}
	}
}
