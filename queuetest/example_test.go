package queuetest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"

	"github.com/google/uuid"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/queuetest"
	"github.com/qo-queue/qo/worker"
)

// In a test, pass t (*testing.T); this example stands in for it.
type exampleT struct{}

func (exampleT) Helper()                           {}
func (exampleT) Errorf(format string, args ...any) { log.Printf(format, args...) }
func (exampleT) Fatalf(format string, args ...any) { log.Fatalf(format, args...) }

type welcome struct {
	To string `json:"to"`
}

// signup is the code under test: it submits a task.
func signup(ctx context.Context, q *queue.Queue, email string) error {
	in, _ := json.Marshal(welcome{To: email})
	_, _, err := q.Submit(ctx, queue.SubmitRequest{Type: "welcome", Input: in})
	return err
}

// sendWelcome is a handler whose first attempt fails.
func sendWelcome(ctx context.Context, task *queue.Task) (json.RawMessage, error) {
	if task.Attempt == 1 {
		return nil, errors.New("mail server busy")
	}
	return json.RawMessage(`{"sent":true}`), nil
}

// Test what code submits, then run the handlers until the queue is idle:
// the first attempt fails and the retry runs at once, the clock jumping
// over the backoff.
func Example() {
	t := exampleT{} // in a test: t *testing.T
	ctx := context.Background()
	start := queuetest.Start
	// README: begin
	q := queuetest.New(t)                                           // in memory, on a clock the test moves
	if err := signup(ctx, q.Queue, "ada@example.com"); err != nil { // the code under test submits
		t.Fatalf("signup: %v", err)
	}
	fmt.Println(queuetest.Submitted[welcome](t, q, "welcome")) // [{ada@example.com}]

	q.Work(ctx, t, map[string]worker.HandlerFunc{"welcome": sendWelcome}) // until idle: no sleeping through backoffs
	done := q.Get(t, q.Tasks("welcome")[0].ID)
	fmt.Println(done.Status, done.Attempt) // completed 2
	// README: end
	fmt.Println(q.Now().After(start))
	// Output:
	// [{ada@example.com}]
	// completed 2
	// true
}

// Complete, fail or expire tasks by hand, through the queue's own
// transitions, to test code that waits for results.
func ExampleQueue_Complete() {
	t := exampleT{}
	ctx := context.Background()
	q := queuetest.New(t)
	task, _, err := q.Submit(ctx, queue.SubmitRequest{Type: "resize", Input: json.RawMessage(`{"w":64}`)})
	if err != nil {
		t.Fatalf("submit: %v", err)
	}
	q.Complete(t, task.ID, map[string]string{"url": "s3://thumbs/1.png"})

	res, err := q.Wait(ctx, []uuid.UUID{task.ID}, queue.WaitOptions{})
	fmt.Println(res[0].Task.Status, string(res[0].Task.Output), err)

	one := 0
	flaky, _, err := q.Submit(ctx, queue.SubmitRequest{Type: "resize", MaxRetries: &one})
	if err != nil {
		t.Fatalf("submit: %v", err)
	}
	fmt.Println(q.ExpireLease(t, flaky.ID).Status) // its worker died mid-task
	// Output:
	// completed {"url":"s3://thumbs/1.png"} <nil>
	// failed
}
