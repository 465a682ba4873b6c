package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/qo-queue/qo/store"
)

// rawCeiling measures conditional PUTs (each goroutine rewrites its own key
// with If-Match) and GETs at concurrency c.
func rawCeiling(ctx context.Context, b Bucket, c, ops int) (Raw, error) {
	etags := make([]string, c)
	for i := range c {
		res, err := b.Put(ctx, fmt.Sprintf("raw/%03d", i), []byte(`{"n":0}`), store.Condition{})
		if err != nil {
			return Raw{}, err
		}
		etags[i] = res.ETag
	}
	per := max(ops/c, 1)
	start := time.Now()
	err := parallel(c, c, func(g int) error {
		for n := range per {
			res, err := b.Put(ctx, fmt.Sprintf("raw/%03d", g), []byte(fmt.Sprintf(`{"n":%d}`, n+1)), store.IfMatch(etags[g]))
			if err != nil {
				return err
			}
			etags[g] = res.ETag
		}
		return nil
	})
	if err != nil {
		return Raw{}, err
	}
	putRate := float64(per*c) / time.Since(start).Seconds()
	start = time.Now()
	err = parallel(c, c, func(g int) error {
		for range per {
			if _, err := b.Get(ctx, fmt.Sprintf("raw/%03d", g)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return Raw{}, err
	}
	return Raw{Concurrency: c, PutPerSec: putRate, GetPerSec: float64(per*c) / time.Since(start).Seconds()}, nil
}

// taskCeiling sends the requests of n no-op tasks on c goroutines, each
// task's in its order with nothing between them: create the task and its
// ready entry; read the task, write the lease entry and the running task,
// delete the ready entry; write the completed task, delete the lease
// entry (the floor of queue/doc.go). It returns tasks per second: what the
// server allows for this mix of new objects, overwrites and deletes, which
// costs it more than the raw ceiling's overwrites of a few keys. The end
// to end rate over it is what the dispatcher costs (finding work, waiting
// for a slot, handing a task to its handler).
func taskCeiling(ctx context.Context, b Bucket, c, n int) (float64, error) {
	start := time.Now()
	err := parallel(n, c, func(i int) error {
		return taskRequests(ctx, b, fmt.Sprintf("ceiling/tasks/%06d.json", i), fmt.Sprintf("ceiling/ready/%06d", i), fmt.Sprintf("ceiling/leases/%06d", i))
	})
	return float64(n) / time.Since(start).Seconds(), err
}

// taskRequests sends the requests of one no-op task, in their order, on
// the given keys: create the task and its ready entry; read the task,
// write the lease entry and the running task, delete the ready entry;
// write the completed task, delete the lease entry.
func taskRequests(ctx context.Context, b Bucket, task, ready, lease string) error {
	body := func(status string) []byte {
		return []byte(`{"id":"00000000-0000-0000-0000-000000000000","type":"noop","status":"` + status + `","input":{},"timeout_seconds":60,"max_retries":3,"created_at":"2026-01-01T00:00:00Z"}`)
	}
	created, err := b.Put(ctx, task, body("pending"), store.CreateOnly)
	if err != nil {
		return err
	}
	if _, err := b.Put(ctx, ready, nil, store.Condition{}); err != nil {
		return err
	}
	if _, err := b.Get(ctx, task); err != nil {
		return err
	}
	if _, err := b.Put(ctx, lease, nil, store.Condition{}); err != nil {
		return err
	}
	running, err := b.Put(ctx, task, body("running"), store.IfMatch(created.ETag))
	if err != nil {
		return err
	}
	if err := b.Delete(ctx, ready, store.Condition{}); err != nil {
		return err
	}
	if _, err := b.Put(ctx, task, body("completed"), store.IfMatch(running.ETag)); err != nil {
		return err
	}
	return b.Delete(ctx, lease, store.Condition{})
}
