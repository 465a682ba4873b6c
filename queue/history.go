package queue

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/qo-queue/qo/store"
)

// Event is one write of a task: one object version, as a task's History
// lists it and as Follow reports it. Its Name is the same wherever it is
// shown (history, qo tail, the console, the HTTP API): the canonical event
// the write recorded in last_event (see Events), or, for objects that do
// not carry one, the event the status change implies.
type Event struct {
	Name      string    // canonical event (see Events), EventDeleted for a delete marker, EventUnknown when underivable
	At        time.Time // updated_at of the version (LastModified for malformed versions and delete markers; the poll's time for a deletion Follow saw)
	TaskID    uuid.UUID // the task
	Type      string    // its task type ("" when no version of it could be read)
	Status    Status
	WorkerID  string // the worker involved: the lease holder, or the holder whose lease this event ended
	Attempt   int
	Rev       int64
	VersionID string // the version's id when read from the task's history ("" when Follow read the current object)
	Task      *Task  // decoded version; nil for delete markers and malformed versions
	Err       error  // a *MalformedError when the version could not be decoded
	// Missed counts the writes of the task between the previous event
	// reported and this one that Follow knows it did not see (events
	// between two polls coalesce when no history fills the gap); always 0
	// in a History.
	Missed int64
}

// EventDeleted names a delete marker in a task's history (qo never deletes
// tasks; someone removed the object by hand).
const EventDeleted = "deleted"

// EventUnknown names a version whose event cannot be told: it could not be
// read, or it carries no canonical last_event and its status change fits
// none.
const EventUnknown = "unknown"

// eventOf is the event that wrote version t, prev being the version before
// it when known (a write that ends a lease names the worker that held it).
func eventOf(prev, t *Task) Event {
	ev := Event{Name: deriveEvent(prev, t), At: t.UpdatedAt, TaskID: t.ID, Type: t.Type, Status: t.Status,
		WorkerID: t.WorkerID, Attempt: t.Attempt, Rev: t.Rev, Task: t}
	if prev != nil && prev.Status == StatusRunning && t.Status != StatusRunning && prev.WorkerID != "" {
		ev.WorkerID = prev.WorkerID // the holder whose lease ended here
	}
	return ev
}

// History lists every version of a task, oldest first, with the canonical
// event that produced each (1 LIST-VERSIONS + 1 GET per version). Versions
// that cannot be decoded are returned with Err set rather than failing the
// call. ErrNotFound when the task never existed.
//
// The order is the versions' rev, not the server's listing: some servers
// (gofakes3) list versions oldest first. A delete marker or an unreadable
// version, which has no rev, stays right after the version listed before
// it.
//
// ReadThrough(cache) makes it read only the versions cache does not hold,
// so reading again the history of a task that did not change costs its
// LIST-VERSIONS alone.
func (q *Queue) History(ctx context.Context, id uuid.UUID, opts ...HistoryOption) ([]Event, error) {
	var o historyOptions
	for _, opt := range opts {
		opt(&o)
	}
	return q.history(ctx, id, o.cache)
}

// HistoryOption is an option of History.
type HistoryOption func(*historyOptions)

type historyOptions struct{ cache VersionCache }

// ReadThrough makes History read through cache (nil: no cache).
func ReadThrough(cache VersionCache) HistoryOption {
	return func(o *historyOptions) { o.cache = cache }
}

// VersionCache keeps the bodies of object versions a reader has read: a
// version never changes, so a reader that keeps them reads each version
// once. Implementations must be safe for concurrent use.
type VersionCache interface {
	// Version returns the body of version versionID of key, if kept.
	Version(key, versionID string) ([]byte, bool)
	// Keep keeps the body of version versionID of key.
	Keep(key, versionID string, body []byte)
}

// history is History reading through cache (nil: no cache).
func (q *Queue) history(ctx context.Context, id uuid.UUID, cache VersionCache) ([]Event, error) {
	key := q.TaskKey(id)
	versions, err := q.s.ListVersions(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("history of task %s: %w", id, err)
	}
	if len(versions) == 0 {
		return nil, fmt.Errorf("history of task %s: %w (%w)", id, ErrNotFound, store.ErrNotFound)
	}
	versions = newestFirst(versions)
	// Build oldest first; sorted by rev below.
	events := make([]Event, len(versions))
	var firstErr error
	var mu sync.Mutex
	forEach(len(versions), sweepParallelism, func(i int) {
		v := versions[len(versions)-1-i]
		ev := Event{VersionID: v.VersionID, At: v.LastModified, TaskID: id}
		if v.DeleteMarker {
			ev.Name = EventDeleted
			events[i] = ev
			return
		}
		var obj *store.Object
		var err error
		if body, ok := cachedVersion(cache, key, v.VersionID); ok {
			obj = &store.Object{Body: body}
		} else if v.VersionID == "" {
			obj, err = q.getLimited(ctx, key, maxTaskObject) // unversioned bucket: only the current object
		} else if obj, err = q.getVersionLimited(ctx, key, v.VersionID, maxTaskObject); err == nil && cache != nil {
			cache.Keep(key, v.VersionID, obj.Body)
		}
		if err != nil {
			if errors.Is(err, store.ErrNotFound) {
				// Expired by a lifecycle rule between LIST and GET.
				ev.Name = EventUnknown
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
			ev.Name = EventUnknown
			ev.Err = err
			events[i] = ev
			return
		}
		ev.Task = t
		events[i] = ev
	})
	if firstErr != nil {
		return nil, fmt.Errorf("history of task %s: %w", id, firstErr)
	}
	sortByRev(events)
	var prev *Task
	typ := ""
	for i := range events {
		t := events[i].Task
		if t == nil {
			continue
		}
		vid := events[i].VersionID
		events[i] = eventOf(prev, t)
		events[i].VersionID = vid
		prev, typ = t, t.Type
	}
	for i := range events {
		if events[i].Type == "" {
			events[i].Type = typ // delete markers and unreadable versions: the type every version has
		}
	}
	return events, nil
}

// cachedVersion returns a kept version's body; the current object of an
// unversioned bucket (no version id) is never kept.
func cachedVersion(cache VersionCache, key, versionID string) ([]byte, bool) {
	if cache == nil || versionID == "" {
		return nil, false
	}
	return cache.Version(key, versionID)
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
	return EventUnknown
}

// newestFirst returns versions newest first: as listed when the listing
// is (the S3 API's order), reversed when the server listed them oldest
// first (gofakes3 does), which the latest version showing up last tells.
func newestFirst(versions []store.Version) []store.Version {
	n := len(versions)
	if n < 2 || versions[0].IsLatest || !versions[n-1].IsLatest {
		return versions
	}
	out := make([]store.Version, n)
	for i, v := range versions {
		out[n-1-i] = v
	}
	return out
}

// sortByRev orders events (built oldest first from the listing) by the
// rev of their task version, keeping the listing's order among equal revs.
// An event without a task (a delete marker, an unreadable version) keeps
// its place after the event before it.
func sortByRev(events []Event) {
	type keyed struct {
		rev int64
		ev  Event
	}
	ks := make([]keyed, len(events))
	var last int64
	for i, e := range events {
		if e.Task != nil {
			last = e.Task.Rev
		}
		ks[i] = keyed{last, e}
	}
	sort.SliceStable(ks, func(a, b int) bool { return ks[a].rev < ks[b].rev })
	for i := range ks {
		events[i] = ks[i].ev
	}
}
