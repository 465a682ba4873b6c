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

// WorkerInfo is a worker's registry entry at workers/{id}.json, rewritten
// at every heartbeat. Its age is the worker's liveness: the monitor takes
// back the tasks of a worker whose entry is older than its DeadAfter (task
// leases stay the fence; see doc.go, "Leases and liveness").
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
	// DeadAfterSeconds is the worker's own liveness bound: once its entry
	// is older than this (by the store's clock) the monitor takes back the
	// tasks it holds, and the worker itself stops their handlers (0: the
	// default, DefaultDeadAfter).
	DeadAfterSeconds int `json:"dead_after_seconds,omitempty"`
	// Layout is the key layout the worker reads and writes (LayoutVersion,
	// set by PutWorker). An entry without it was written by a qo of layout
	// 2 or older: Migrate refuses to run while such a worker is alive.
	Layout int `json:"layout,omitempty"`
	// Progress is the latest progress report of each running task that
	// made one, by task id (see doc.go, "Progress"): reports land here at
	// the next heartbeat, never in a write of their own.
	Progress map[string]Progress `json:"progress,omitempty"`
	// Holds is the share of each capped type's fleet-wide cap the worker
	// holds: it runs at most that many of the type (see doc.go,
	// "Fleet-wide concurrency caps"). A worker holds nothing of a type
	// not listed.
	Holds map[string]int `json:"holds,omitempty"`
	// Limits are the worker's own limits by type (worker.Options.Limits,
	// qo worker --limit): with Concurrency, the most it runs of a type,
	// which bounds its share of a fleet-wide cap.
	Limits map[string]int `json:"limits,omitempty"`
}

// DefaultDeadAfter is the liveness bound of a worker that states none: a
// worker whose registry entry was last written longer ago than this is
// presumed dead (see doc.go, "Leases and liveness").
const DefaultDeadAfter = 20 * time.Second

// DeadAfter returns the worker's liveness bound.
func (w *WorkerInfo) DeadAfter() time.Duration {
	if w == nil || w.DeadAfterSeconds <= 0 {
		return DefaultDeadAfter
	}
	return time.Duration(w.DeadAfterSeconds) * time.Second
}

// WorkerBeats lists the registry and returns, per worker id, when its entry
// was last written by the store's clock: its last heartbeat. One LIST per
// 1,000 workers and no GET; keys that are not registry entries are skipped.
func (q *Queue) WorkerBeats(ctx context.Context) (map[string]time.Time, error) {
	out := map[string]time.Time{}
	token := ""
	for {
		page, err := q.s.List(ctx, store.ListParams{Prefix: WorkersPrefix, Token: token})
		if err != nil {
			return nil, fmt.Errorf("list workers: %w", err)
		}
		for _, o := range page.Objects {
			if id, err := ParseWorkerKey(o.Key); err == nil {
				out[id] = o.LastModified
			}
		}
		if page.NextToken == "" {
			return out, nil
		}
		token = page.NextToken
	}
}

// GetWorker reads one registry entry (ErrNotFound when there is none).
func (q *Queue) GetWorker(ctx context.Context, id string) (*WorkerInfo, error) {
	if err := ValidateWorkerID(id); err != nil {
		return nil, fmt.Errorf("get worker: %w", err)
	}
	obj, err := q.getLimited(ctx, WorkerKey(id), maxSmallObject)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, fmt.Errorf("get worker %s: %w", id, ErrNotFound)
		}
		return nil, fmt.Errorf("get worker %s: %w", id, err)
	}
	return DecodeWorker(WorkerKey(id), obj.Body)
}

// PutWorker writes (registers or heartbeats) a worker entry. Format is set
// to FormatVersion and Layout to LayoutVersion.
func (q *Queue) PutWorker(ctx context.Context, w *WorkerInfo) error {
	if err := ValidateWorkerID(w.ID); err != nil {
		return fmt.Errorf("put worker: %w", err)
	}
	w.Format, w.Layout = FormatVersion, LayoutVersion
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
	if err := ValidateWorkerID(w.ID); err != nil {
		return nil, &MalformedError{Key: key, Err: errors.New(err.Error())}
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
		obj, err := q.getLimited(ctx, keys[i], maxSmallObject)
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
