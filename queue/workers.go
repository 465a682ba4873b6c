package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/qo-queue/qo/store"
)

// WorkerInfo is a worker's registry entry at workers/{id}.json. It is for
// observability only: correctness never depends on it.
type WorkerInfo struct {
	Format         int       `json:"format"`
	ID             string    `json:"worker_id"`
	StartedAt      time.Time `json:"started_at"`
	LastHeartbeat  time.Time `json:"last_heartbeat"`
	Shards         []string  `json:"shards"`
	CurrentTasks   []string  `json:"current_tasks"`
	Types          []string  `json:"types"`
	Concurrency    int       `json:"concurrency"`
	TasksCompleted int64     `json:"tasks_completed"`
	TasksFailed    int64     `json:"tasks_failed"`
	// Recent counts the worker's finishes by minute, oldest first, for
	// the last DefaultRecentMinutes minutes (see Stats.Recent).
	Recent  []MinuteCount `json:"recent,omitempty"`
	Host    string        `json:"host"`
	PID     int           `json:"pid"`
	Version string        `json:"version"`
	// Requests counts the S3 requests the worker's process has sent since
	// it started, by kind (nil when its store does not count them). The
	// sum over workers, differenced between heartbeats, is the fleet's
	// request rate and cost.
	Requests *store.Counts `json:"s3_requests,omitempty"`
}

// PutWorker writes (registers or heartbeats) a worker entry. Format is set
// to FormatVersion.
func (q *Queue) PutWorker(ctx context.Context, w *WorkerInfo) error {
	if err := ValidateWorkerID(w.ID); err != nil {
		return fmt.Errorf("put worker: %w", err)
	}
	w.Format = FormatVersion
	body, err := json.Marshal(w)
	if err != nil {
		return fmt.Errorf("put worker %s: %w", w.ID, err)
	}
	if _, err := q.s.Put(ctx, WorkerKey(w.ID), body, store.Condition{}); err != nil {
		return fmt.Errorf("put worker %s: %w", w.ID, err)
	}
	return nil
}

// DeleteWorker removes a worker entry (deregistration). Missing is fine.
func (q *Queue) DeleteWorker(ctx context.Context, id string) error {
	if err := ValidateWorkerID(id); err != nil {
		return fmt.Errorf("delete worker: %w", err)
	}
	if err := q.s.Delete(ctx, WorkerKey(id), store.Condition{}); err != nil {
		return fmt.Errorf("delete worker %s: %w", id, err)
	}
	return nil
}

// DecodeWorker parses a registry entry found at key ("" skips the key check).
func DecodeWorker(key string, body []byte) (*WorkerInfo, error) {
	var w WorkerInfo
	if err := json.Unmarshal(body, &w); err != nil {
		return nil, &MalformedError{Key: key, Err: err}
	}
	if w.Format != FormatVersion {
		return nil, &MalformedError{Key: key, Err: fmt.Errorf("unknown format version %d (this qo reads format %d)", w.Format, FormatVersion)}
	}
	if key != "" && WorkerKey(w.ID) != key {
		return nil, &MalformedError{Key: key, Err: fmt.Errorf("object says worker %q", w.ID)}
	}
	return &w, nil
}

// ListWorkers reads every registry entry, sorted by id. Malformed entries
// are logged and skipped; see ListWorkersReport to get them.
func (q *Queue) ListWorkers(ctx context.Context) ([]*WorkerInfo, error) {
	ws, bad, err := q.ListWorkersReport(ctx)
	for _, m := range bad {
		q.log.Warn("skipping malformed worker entry", "key", m.Key, "err", m.Err)
	}
	return ws, err
}

// ListWorkersReport is ListWorkers that also returns the malformed entries.
func (q *Queue) ListWorkersReport(ctx context.Context) ([]*WorkerInfo, []MalformedError, error) {
	var keys []string
	token := ""
	for {
		page, err := q.s.List(ctx, store.ListParams{Prefix: WorkersPrefix, Token: token})
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
	ws := make([]*WorkerInfo, len(keys))
	errs := make([]error, len(keys))
	forEach(len(keys), sweepParallelism, func(i int) {
		obj, err := q.s.Get(ctx, keys[i])
		if err != nil {
			errs[i] = err
			return
		}
		ws[i], errs[i] = DecodeWorker(keys[i], obj.Body)
	})
	var out []*WorkerInfo
	var bad []MalformedError
	for i := range keys {
		var m *MalformedError
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
