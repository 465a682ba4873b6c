// Command gotasks submits a typed task and works it until SIGINT or
// SIGTERM, connected as qo's commands are (S3_* variables, else qo dev).
package main

import (
	"context"
	"log"

	"github.com/qo-queue/qo/connect"
	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/worker"
)

type SendEmail struct {
	To string `json:"to"`
}

func (SendEmail) Kind() string { return "send_email" } // the task type, written once

func main() {
	ctx := context.Background()
	q, err := connect.Open(ctx, queue.Options{}) // S3_BUCKET, S3_ENDPOINT...; else a running qo dev
	if err != nil {
		log.Fatal(err)
	}
	if _, _, err := q.SubmitArgs(ctx, SendEmail{To: "ada@example.com"}, queue.SubmitRequest{}); err != nil {
		log.Fatal(err)
	}
	w := worker.New(q, worker.Options{Concurrency: 4})
	worker.HandleArgs(w, func(ctx context.Context, t *queue.Task, in SendEmail) (map[string]bool, error) {
		log.Println("sending to", in.To) // an error is retried with backoff; worker.Permanent(err) is not
		return map[string]bool{"sent": true}, nil
	})
	if err := worker.Run(ctx, w); err != nil { // until SIGINT or SIGTERM: drains, then releases
		log.Fatal(err)
	}
}
