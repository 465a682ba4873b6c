package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store"
)

// Seed describes the history SeedFinished writes.
type Seed struct {
	// Tasks is how many finished tasks to write.
	Tasks int
	// FailedEvery makes every n-th task failed (a dead letter, with its
	// index entry) instead of completed (0: none fail).
	FailedEvery int
	// Before is the creation time of the newest seeded task; older ones
	// spread evenly over Span before it (default: 30 days).
	Before time.Time
	Span   time.Duration
	// Parallel bounds the PUTs in flight (default 64).
	Parallel int
}

// SeedFinished writes finished tasks straight into the bucket, as a queue
// that has run for a while holds them: completed task objects (and failed
// ones with their dead-letter entries), with time-ordered ids of their
// creation times. It is how benchmarks and tests show that reads cost the
// same however much history the bucket holds.
func SeedFinished(ctx context.Context, s store.Store, q *queue.Queue, seed Seed) error {
	if seed.Span <= 0 {
		seed.Span = 30 * 24 * time.Hour
	}
	if seed.Parallel <= 0 {
		seed.Parallel = 64
	}
	if seed.Before.IsZero() {
		seed.Before = q.Now().Add(-2 * queue.DefaultListWindow)
	}
	step := seed.Span / time.Duration(max(seed.Tasks, 1))
	return parallel(seed.Tasks, seed.Parallel, func(i int) error {
		created := seed.Before.Add(-time.Duration(i) * step).UTC().Truncate(time.Millisecond)
		done := created.Add(time.Second)
		id := queue.NewIDAt(created)
		t := &queue.Task{
			Format: queue.FormatVersion, ID: id, Type: "noop", Shard: queue.ShardOf(id, q.Config().ShardChars), Status: queue.StatusCompleted,
			AvailableAt: created, Input: json.RawMessage(`{}`), TimeoutSeconds: 60, MaxRetries: 3, RetryPolicy: queue.DefaultRetryPolicy,
			CreatedAt: created, UpdatedAt: done, CompletedAt: &done, WorkerID: "seed", Attempt: 1, Rev: 3,
			RequestID: uuid.NewString(), LastEvent: queue.EventSucceeded, Priority: queue.PriorityNormal,
		}
		if seed.FailedEvery > 0 && i%seed.FailedEvery == seed.FailedEvery-1 {
			t.Status, t.LastError, t.LastEvent = queue.StatusFailed, "seeded failure", queue.EventFailed
			if _, err := s.Put(ctx, queue.DeadKey(t), nil, store.Condition{}); err != nil {
				return fmt.Errorf("seed: %w", err)
			}
		}
		if err := queue.CheckInvariants(t); err != nil {
			return fmt.Errorf("seed: %w", err)
		}
		body, err := queue.EncodeTask(t)
		if err != nil {
			return err
		}
		if _, err := s.Put(ctx, t.Key(), body, store.Condition{}); err != nil {
			return fmt.Errorf("seed: %w", err)
		}
		return nil
	})
}
