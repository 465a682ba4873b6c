package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/store/storetest"
)

// indexKeys gives the task, ready and lease keys of a task created now.
type indexKeys func(now time.Time) (task, ready, lease string)

// segmentKeys are the index keys of layout 2: a key segment per field.
func segmentKeys(now time.Time) (string, string, string) {
	id := queue.NewIDAt(now)
	sh := queue.ShardOf(id, 1)
	return "tasks/" + sh + "/" + id.String() + ".json",
		fmt.Sprintf("ready/%s/%013d/noop/normal/%s", sh, now.UnixMilli(), id),
		fmt.Sprintf("leases/%s/%013d/noop/%s/%s/bench-worker", sh, now.Add(time.Minute).UnixMilli(), id, uuid.NewString())
}

// fieldKeys are the index keys of the current layout (queue.ReadyKey,
// queue.LeaseKey).
func fieldKeys(now time.Time) (string, string, string) {
	id := queue.NewIDAt(now)
	exp := now.Add(time.Minute)
	t := &queue.Task{ID: id, Shard: queue.ShardOf(id, 1), Type: "noop", Priority: queue.PriorityNormal, AvailableAt: now,
		LeaseExpiresAt: &exp, LeaseID: uuid.NewString(), WorkerID: "bench-worker"}
	return t.Key(), queue.ReadyKey(t), queue.LeaseKey(t)
}

var keyShapes = []struct {
	name string
	keys indexKeys
}{{"segments", segmentKeys}, {"fields", fieldKeys}}

// BenchmarkIndexKeyShape measures, against MinIO, what the shape of the
// index keys costs a server that stores each "/" of a key as a directory:
// a task's eight requests (as the task ceiling sends them, 32 at a time)
// (taskRequests) and a LIST of 1,000 ready entries, with the keys of layout 2 (a segment
// per field) and of the current layout (one segment per entry).
//
//	go test -run XXX -bench IndexKeyShape ./worker/bench   (with MinIO: scripts/test.sh starts one)
func BenchmarkIndexKeyShape(b *testing.B) {
	ctx := context.Background()
	for _, shape := range keyShapes {
		b.Run("task/"+shape.name, func(b *testing.B) {
			bucket := storetest.MinIO(b)
			b.ResetTimer()
			start := time.Now()
			err := parallel(b.N, 32, func(int) error {
				task, ready, lease := shape.keys(time.Now())
				return taskRequests(ctx, bucket, task, ready, lease)
			})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "tasks/s")
		})
		b.Run("list1000/"+shape.name, func(b *testing.B) {
			bucket := storetest.MinIO(b)
			base := time.Now()
			if err := parallel(1000, 32, func(i int) error {
				_, ready, _ := shape.keys(base.Add(time.Duration(i) * time.Millisecond))
				_, err := bucket.Put(ctx, ready, nil, store.Condition{})
				return err
			}); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for range b.N {
				page, err := bucket.List(ctx, store.ListParams{Prefix: queue.ReadyPrefix, Limit: 1000})
				if err != nil {
					b.Fatal(err)
				}
				if len(page.Objects) != 1000 {
					b.Fatalf("listed %d entries, want 1000", len(page.Objects))
				}
			}
		})
	}
}
