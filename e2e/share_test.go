//go:build unix

package e2e

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/internal/testutil"
	"github.com/qo-queue/qo/queue"
)

// Two worker processes serve the same types: one saturated by a task that
// does not end (concurrency 1), one with free slots. Over a backlog deeper
// than a walk reads (pages of 10 keys, 4 per walk, 480 tasks over 16
// shards) and while new tasks keep
// coming, the oldest tasks of the backlog all start within the bound
// behind the saturated worker's share: 9/8 of the 10 s page hold after the
// free worker passes them, plus a few of its walks (a fraction of a second
// each at a poll-max of 200 ms). Before, that share stayed pending for as
// long as the backlog stayed deep.
func TestSaturatedWorkersShareRunsElsewhere(t *testing.T) {
	t.Parallel()
	e := wkSetup(t)
	ctx := context.Background()
	page := []string{"--ready-page-size", "10"}

	long := e.submit(t, "sleep", `{"ms":600000}`, 15*time.Minute, 0)
	e.start(t, "saturated", workerArgs("saturated", append(page, "--concurrency", "1", "--no-monitor")...)...)
	e.waitTask(t, long, "running on the saturated worker", func(task *queue.Task) bool {
		return task.Status == queue.StatusRunning && task.WorkerID == "saturated"
	})

	const backlog, oldest = 480, 40
	tasks := make([]*queue.Task, backlog)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; i < backlog; i += 8 {
				task, _, err := e.q.Submit(ctx, queue.SubmitRequest{Type: "echo", Input: []byte(`{}`), Timeout: time.Minute})
				if err != nil {
					t.Errorf("submit: %v", err)
					return
				}
				tasks[i] = task
			}
		}()
	}
	wg.Wait()
	require.False(t, t.Failed())
	// The oldest by rank (available_at, then id: the ready index's order).
	slices.SortFunc(tasks, func(a, b *queue.Task) int {
		if c := a.AvailableAt.Compare(b.AvailableAt); c != 0 {
			return c
		}
		return slices.Compare(a.ID[:], b.ID[:])
	})
	watched := map[uuid.UUID]bool{}
	for _, task := range tasks[:oldest] {
		watched[task.ID] = true
	}

	// New work keeps coming, 10 a second, until the test ends.
	stop := make(chan struct{})
	arrivals := make(chan error, 1)
	go func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				arrivals <- nil
				return
			case <-tick.C:
				if _, _, err := e.q.Submit(ctx, queue.SubmitRequest{Type: "echo", Input: []byte(`{}`), Timeout: time.Minute}); err != nil {
					arrivals <- err
					return
				}
			}
		}
	}()
	defer func() {
		close(stop)
		require.NoError(t, <-arrivals)
	}()

	e.start(t, "free", workerArgs("free", append(page, "--concurrency", "4")...)...)
	poll := testutil.Poll{Limit: 90 * time.Second, Every: 50 * time.Millisecond}
	poll.Until(t, func() bool { return e.registered(t, "free") }, "the free worker to register")
	began := time.Now()

	// The bound here is 11.25 s plus the few walks the free worker takes to
	// come round to a shard (its views are used up at once: it has free
	// slots and its tasks end at once); the limit leaves room for a noisy
	// machine, and is far from "never".
	var took time.Duration
	testutil.Poll{Limit: 40 * time.Second, Every: 500 * time.Millisecond}.Until(t, func() bool {
		for id := range watched {
			task, err := e.q.Get(ctx, id)
			if err != nil || task.Attempt == 0 {
				continue
			}
			require.NotEqual(t, "saturated", task.WorkerID, "the saturated worker runs nothing else")
			delete(watched, id)
		}
		took = time.Since(began)
		return len(watched) == 0
	}, "the oldest %d tasks of the backlog to start (%s still pending)", oldest, testutil.Lazy(func() string { return fmt.Sprint(len(watched)) }))
	t.Logf("the oldest %d of %d tasks all started %s after the free worker registered", oldest, backlog, took.Round(100*time.Millisecond))
}
