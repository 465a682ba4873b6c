package queue

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/qo-queue/qo/store"
)

// Event is one entry of a task's history: one object version.
type Event struct {
	Name      string    // canonical event (see Events), "deleted" for a delete marker, "unknown" when underivable
	At        time.Time // updated_at of the version (LastModified for malformed versions and delete markers)
	Status    Status
	WorkerID  string // the worker involved: the lease holder, or the holder whose lease this event ended
	Attempt   int
	Rev       int64
	VersionID string
	Task      *Task // decoded version; nil for delete markers and malformed versions
	Err       error // a *MalformedError when the version could not be decoded
}

// EventDeleted names a delete marker in a task's history (qo never deletes
// tasks; someone removed the object by hand).
const EventDeleted = "deleted"

// History lists every version of a task, oldest first, with the canonical
// event that produced each (1 LIST-VERSIONS + 1 GET per version). Versions
// that cannot be decoded are returned with Err set rather than failing the
// call. ErrNotFound when the task never existed.
func (q *Queue) History(ctx context.Context, id uuid.UUID) ([]Event, error) {
	key := q.TaskKey(id)
	versions, err := q.s.ListVersions(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("history of task %s: %w", id, err)
	}
	if len(versions) == 0 {
		return nil, fmt.Errorf("history of task %s: %w (%w)", id, ErrNotFound, store.ErrNotFound)
	}
	// ListVersions is newest first; build oldest first.
	events := make([]Event, len(versions))
	var firstErr error
	var mu sync.Mutex
	forEach(len(versions), sweepParallelism, func(i int) {
		v := versions[len(versions)-1-i]
		ev := Event{VersionID: v.VersionID, At: v.LastModified}
		if v.DeleteMarker {
			ev.Name = EventDeleted
			events[i] = ev
			return
		}
		var obj *store.Object
		var err error
		if v.VersionID == "" {
			obj, err = q.s.Get(ctx, key) // unversioned bucket: only the current object
		} else {
			obj, err = q.s.GetVersion(ctx, key, v.VersionID)
		}
		if err != nil {
			if errors.Is(err, store.ErrNotFound) {
				// Expired by a lifecycle rule between LIST and GET.
				ev.Name = "unknown"
				ev.Err = &MalformedError{Key: key + "?versionId=" + v.VersionID, Err: err}
				events[i] = ev
				return
			}
			mu.Lock()
			if firstErr == nil {
				firstErr = err
			}
			mu.Unlock()
			return
		}
		t, err := DecodeTask(key, obj.Body)
		if err != nil {
			ev.Name = "unknown"
			ev.Err = err
			events[i] = ev
			return
		}
		ev.Task, ev.Status, ev.Attempt, ev.Rev, ev.At = t, t.Status, t.Attempt, t.Rev, t.UpdatedAt
		events[i] = ev
	})
	if firstErr != nil {
		return nil, fmt.Errorf("history of task %s: %w", id, firstErr)
	}
	var prev *Task
	for i := range events {
		t := events[i].Task
		if t == nil {
			continue
		}
		events[i].Name = deriveEvent(prev, t)
		events[i].WorkerID = t.WorkerID
		if prev != nil && prev.Status == StatusRunning && t.Status != StatusRunning && prev.WorkerID != "" {
			events[i].WorkerID = prev.WorkerID // the holder whose lease ended here
		}
		prev = t
	}
	return events, nil
}

// deriveEvent names the change that produced t. Objects written by qo carry
// it in last_event; for others it is inferred from the status change.
func deriveEvent(prev, t *Task) string {
	for _, e := range Events {
		if t.LastEvent == e {
			return e
		}
	}
	if prev == nil {
		return EventEnqueued
	}
	switch {
	case prev.Status == StatusPending && t.Status == StatusRunning:
		return EventClaimed
	case prev.Status == StatusRunning && t.Status == StatusRunning:
		if t.CancelRequested && !prev.CancelRequested {
			return EventCancelRequested
		}
		return EventLeaseExtended
	case prev.Status == StatusRunning && t.Status == StatusCompleted:
		return EventSucceeded
	case prev.Status == StatusRunning && t.Status == StatusPending:
		if t.RetryCount > prev.RetryCount {
			return EventRetried
		}
		return EventRequeued
	case t.Status == StatusFailed:
		return EventFailed
	case t.Status == StatusCancelled:
		return EventCancelled
	case t.Status == StatusArchived:
		return EventArchived
	case prev.Status.Terminal() && t.Status == StatusPending:
		return EventReplayed
	case prev.Status == StatusPending && t.Status == StatusPending:
		return EventRequeued
	}
	return "unknown"
}
