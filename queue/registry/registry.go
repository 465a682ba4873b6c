package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store"
)

// Queue is what the registry needs of a queue: *queue.Queue is one.
type Queue interface {
	Store() store.Store
	Logger() *slog.Logger
}

// maxEntry bounds a registry entry: an entry is a few KiB.
const maxEntry = 1 << 20

// parallelism bounds the GETs in flight when reading every entry.
const parallelism = 8

// Beats lists the registry and returns, per worker id, when its entry was
// last written by the store's clock: its last heartbeat. One LIST per
// 1,000 workers and no GET; keys that are not registry entries are skipped.
func Beats(ctx context.Context, q Queue) (map[string]time.Time, error) {
	out := map[string]time.Time{}
	token := ""
	for {
		page, err := q.Store().List(ctx, store.ListParams{Prefix: queue.WorkersPrefix, Token: token})
		if err != nil {
			return nil, fmt.Errorf("list workers: %w", err)
		}
		for _, o := range page.Objects {
			if id, err := queue.ParseWorkerKey(o.Key); err == nil {
				out[id] = o.LastModified
			}
		}
		if page.NextToken == "" {
			return out, nil
		}
		token = page.NextToken
	}
}

// Get reads one registry entry (queue.ErrNotFound when there is none).
func Get(ctx context.Context, q Queue, id string) (*queue.WorkerInfo, error) {
	if err := queue.ValidateWorkerID(id); err != nil {
		return nil, fmt.Errorf("get worker: %w", err)
	}
	obj, err := queue.GetLimited(ctx, q.Store(), queue.WorkerKey(id), maxEntry)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, fmt.Errorf("get worker %s: %w", id, queue.ErrNotFound)
		}
		return nil, fmt.Errorf("get worker %s: %w", id, err)
	}
	return queue.DecodeWorker(queue.WorkerKey(id), obj.Body)
}

// Put writes (registers or heartbeats) a worker entry. Format is set to
// queue.FormatVersion and Layout to queue.LayoutVersion.
func Put(ctx context.Context, q Queue, w *queue.WorkerInfo) error {
	if err := queue.ValidateWorkerID(w.ID); err != nil {
		return fmt.Errorf("put worker: %w", err)
	}
	w.Format, w.Layout = queue.FormatVersion, queue.LayoutVersion
	body, err := json.Marshal(w)
	if err != nil {
		return fmt.Errorf("put worker %s: %w", w.ID, err)
	}
	if _, err := q.Store().Put(ctx, queue.WorkerKey(w.ID), body, store.Condition{}); err != nil {
		return fmt.Errorf("put worker %s: %w", w.ID, err)
	}
	return nil
}

// Delete removes a worker entry (deregistration). Missing is fine.
func Delete(ctx context.Context, q Queue, id string) error {
	if err := queue.ValidateWorkerID(id); err != nil {
		return fmt.Errorf("delete worker: %w", err)
	}
	if err := q.Store().Delete(ctx, queue.WorkerKey(id), store.Condition{}); err != nil {
		return fmt.Errorf("delete worker %s: %w", id, err)
	}
	return nil
}

// List reads every registry entry, sorted by id. Malformed entries are
// logged and skipped; see ListReport to get them.
func List(ctx context.Context, q Queue) ([]*queue.WorkerInfo, error) {
	ws, bad, err := ListReport(ctx, q)
	for _, m := range bad {
		q.Logger().Warn("skipping malformed worker entry", "key", m.Key, "err", m.Err)
	}
	return ws, err
}

// ListReport is List that also returns the malformed entries.
func ListReport(ctx context.Context, q Queue) ([]*queue.WorkerInfo, []queue.MalformedError, error) {
	var keys []string
	token := ""
	for {
		page, err := q.Store().List(ctx, store.ListParams{Prefix: queue.WorkersPrefix, Token: token})
		if err != nil {
			return nil, nil, fmt.Errorf("list workers: %w", err)
		}
		for _, o := range page.Objects {
			if strings.HasSuffix(o.Key, ".json") {
				keys = append(keys, o.Key)
			}
		}
		if page.NextToken == "" {
			break
		}
		token = page.NextToken
	}
	ws := make([]*queue.WorkerInfo, len(keys))
	errs := make([]error, len(keys))
	forEach(len(keys), parallelism, func(i int) {
		obj, err := queue.GetLimited(ctx, q.Store(), keys[i], maxEntry)
		if err != nil {
			errs[i] = err
			return
		}
		ws[i], errs[i] = queue.DecodeWorker(keys[i], obj.Body)
	})
	var out []*queue.WorkerInfo
	var bad []queue.MalformedError
	for i := range keys {
		var m *queue.MalformedError
		switch {
		case errs[i] == nil:
			out = append(out, ws[i])
		case errors.Is(errs[i], store.ErrNotFound):
			// deregistered between LIST and GET
		case errors.As(errs[i], &m):
			bad = append(bad, *m)
		default:
			return nil, nil, fmt.Errorf("list workers: read %s: %w", keys[i], errs[i])
		}
	}
	return out, bad, nil
}

// TaskProgress returns the latest progress of a running task: one GET of
// the registry entry of the worker its lease names, whatever else the
// bucket holds. nil when the task is not running, its holder has reported
// nothing for this attempt or has no (well-formed) entry; a malformed
// entry or report is logged and skipped.
func TaskProgress(ctx context.Context, q Queue, t *queue.Task) (*queue.Progress, error) {
	if t == nil || t.Status != queue.StatusRunning || t.WorkerID == "" {
		return nil, nil
	}
	w, err := Get(ctx, q, t.WorkerID)
	var m *queue.MalformedError
	switch {
	case errors.Is(err, queue.ErrNotFound):
		return nil, nil
	case errors.As(err, &m):
		q.Logger().Warn("skipping malformed worker entry", "key", m.Key, "err", m.Err)
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("progress of task %s: %w", t.ID, err)
	}
	p, ok := w.Progress[t.ID.String()]
	if !ok || p.Attempt != t.Attempt {
		return nil, nil
	}
	if err := queue.ValidateProgress(p.Fraction, p.Message); err != nil {
		q.Logger().Warn("skipping malformed progress in worker entry", "key", queue.WorkerKey(w.ID), "task_id", t.ID, "err", err)
		return nil, nil
	}
	return &p, nil
}

// WithProgress returns t with its Progress set from its holder's registry
// entry when it is running (see TaskProgress); t itself is not changed.
func WithProgress(ctx context.Context, q Queue, t *queue.Task) (*queue.Task, error) {
	p, err := TaskProgress(ctx, q, t)
	if err != nil || p == nil {
		return t, err
	}
	c := *t
	c.Progress = p
	return &c, nil
}

// forEach runs fn(0..n-1) with at most par calls in flight.
func forEach(n, par int, fn func(i int)) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, par)
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			fn(i)
		}()
	}
	wg.Wait()
}
