package worker_test

import (
	"context"
	"fmt"
	"log"
	"strings"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/worker"
)

// Thumbnail is the input of "thumbnail" tasks: its Kind names the type,
// so neither the submit nor the handler spells it.
type Thumbnail struct {
	Path string `json:"path"`
	Size int    `json:"size"`
}

func (Thumbnail) Kind() string { return "thumbnail" }

// ThumbnailDone is the output of "thumbnail" tasks.
type ThumbnailDone struct {
	Path string `json:"path"`
}

// A typed handler gets the input decoded into its args type and returns a
// typed output; Queue.SubmitArgs submits the same type. Input that does
// not decode fails the task at once with worker.ErrBadArgs.
func ExampleHandleArgs() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	q := openQueue(ctx)

	w := worker.New(q, quiet())
	worker.HandleArgs(w, func(ctx context.Context, t *queue.Task, in Thumbnail) (ThumbnailDone, error) {
		return ThumbnailDone{Path: fmt.Sprintf("%s.%dpx.png", strings.TrimSuffix(in.Path, ".png"), in.Size)}, nil
	})
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()

	t, _, err := q.SubmitArgs(ctx, Thumbnail{Path: "cat.png", Size: 64}, queue.SubmitRequest{})
	if err != nil {
		log.Fatal(err)
	}
	t = waitFor(ctx, q, t.ID)
	fmt.Println(t.Type, t.Status, string(t.Output))

	// A producer that sends the wrong shape gets a clear, final failure.
	t, _, err = q.Submit(ctx, queue.SubmitRequest{Type: "thumbnail", Input: []byte(`{"size":"big"}`)})
	if err != nil {
		log.Fatal(err)
	}
	t = waitFor(ctx, q, t.ID)
	fmt.Println(t.Status, "after", t.Attempt, "attempt:", strings.SplitN(t.LastError, " as ", 2)[0])

	cancel()
	if err := <-done; err != nil {
		log.Fatal(err)
	}
	// Output:
	// thumbnail completed {"path":"cat.64px.png"}
	// failed after 1 attempt: permanent: input does not decode into the handler's args type: thumbnail task input {"size":"big"}
}

// Run is what a worker program's main ends with: it runs the worker until
// SIGINT or SIGTERM (or ctx's end, here), the first signal draining the
// running tasks for Options.ShutdownTimeout and a second one releasing
// them at once, as qo worker does.
func ExampleRun() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	q := openQueue(ctx)

	w := worker.New(q, quiet())
	worker.HandleArgs(w, func(ctx context.Context, t *queue.Task, in Thumbnail) (ThumbnailDone, error) {
		defer cancel() // in a program: kill -TERM, or Ctrl+C
		return ThumbnailDone{Path: in.Path}, nil
	})
	if _, _, err := q.SubmitArgs(ctx, Thumbnail{Path: "dog.png"}, queue.SubmitRequest{}); err != nil {
		log.Fatal(err)
	}
	err := worker.Run(ctx, w)
	fmt.Println("worker stopped:", err)
	// Output:
	// worker stopped: <nil>
}
