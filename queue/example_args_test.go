package queue_test

import (
	"context"
	"fmt"
	"log"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store/memstore"
)

// Invoice is the input of "invoice" tasks: Kind gives the task type, so
// a typo in it does not compile rather than submitting tasks no worker
// claims (worker.HandleArgs registers the handler under the same Kind).
type Invoice struct {
	Customer string `json:"customer"`
	Cents    int64  `json:"cents"`
}

func (Invoice) Kind() string { return "invoice" }

func ExampleQueue_SubmitArgs() {
	ctx := context.Background()
	st := memstore.New()
	if _, err := queue.Init(ctx, st, 1); err != nil {
		log.Fatal(err)
	}
	q, err := queue.Open(ctx, st, queue.Options{})
	if err != nil {
		log.Fatal(err)
	}

	t, _, err := q.SubmitArgs(ctx, Invoice{Customer: "acme", Cents: 4200}, queue.SubmitRequest{
		Priority:       queue.PriorityHigh,
		IdempotencyKey: "acme-2030-01",
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(t.Type, t.Status, t.Priority, string(t.Input))
	// Output:
	// invoice pending high {"customer":"acme","cents":4200}
}
