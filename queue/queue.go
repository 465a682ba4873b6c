package queue

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/qo-queue/qo/store"
)

// Options tune a Queue. The zero value is ready to use.
type Options struct {
	// Clock is the time source for every timestamp the queue writes and
	// compares. Default: store.ServerClock(s), the store's authoritative time.
	Clock store.Clock
	// Logger receives debug logs for best-effort index writes that failed.
	// Default: discard.
	Logger *slog.Logger
	// OffloadThreshold is the size in bytes above which inputs and
	// outputs are stored under data/ (default DefaultOffloadThreshold). It
	// is at most MaxInlinePayload, which readers bound task objects by:
	// larger values, and negative ones, mean MaxInlinePayload.
	OffloadThreshold int
	// NewID makes the id of a task created at the given time (default
	// NewIDAt). It must return a UUIDv7 for that time and never repeat;
	// tests set it for reproducible ids.
	NewID func(createdAt time.Time) uuid.UUID
	// Rand drives backoff jitter. Default: seeded from the time. The queue
	// serialises its use, so it may be shared with nobody else.
	Rand *rand.Rand
}

// Queue is a handle on one qo queue (one bucket). Safe for concurrent use.
type Queue struct {
	s      store.Store
	cfg    Config
	shards []string
	clock  store.Clock
	log    *slog.Logger
	// threshold: offload payloads above this many bytes (at most
	// MaxInlinePayload).
	threshold int

	rndMu sync.Mutex
	rnd   *rand.Rand

	idSource func(time.Time) uuid.UUID

	// olderHolders: workers of an older key layout whose lease entries
	// the lease check met (each is warned about once).
	olderHolders sync.Map

	hooksMu sync.RWMutex
	hooks   []SubmitHook // see OnSubmit

	bg background // children told after their parent's write returned (see Settle)
}

// Open reads queue.json and returns a handle. ErrNotInitialized when the
// bucket has no queue yet.
func Open(ctx context.Context, s store.Store, opts Options) (*Queue, error) {
	obj, err := getLimited(ctx, s, ConfigKey, maxSmallObject)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("open queue: %w", ErrNotInitialized)
	}
	if err != nil {
		return nil, fmt.Errorf("open queue: read %s: %w", ConfigKey, err)
	}
	cfg, err := decodeConfig(obj.Body)
	if err != nil {
		return nil, fmt.Errorf("open queue: %w", err)
	}
	if cfg.Format < LayoutVersion {
		return nil, fmt.Errorf("open queue: %w (queue.json format %d, this qo needs %d)", ErrLayoutOutdated, cfg.Format, LayoutVersion)
	}
	return newQueue(s, cfg, opts), nil
}

func newQueue(s store.Store, cfg Config, opts Options) *Queue {
	q := &Queue{s: s, cfg: cfg, shards: allShards(cfg.ShardChars), clock: opts.Clock, log: opts.Logger, rnd: opts.Rand, idSource: opts.NewID}
	if q.clock == nil {
		q.clock = store.ServerClock(s)
	}
	if q.log == nil {
		q.log = slog.New(slog.DiscardHandler)
	}
	switch {
	case opts.OffloadThreshold == 0:
		q.threshold = DefaultOffloadThreshold
	case opts.OffloadThreshold > 0 && opts.OffloadThreshold < MaxInlinePayload:
		q.threshold = opts.OffloadThreshold
	default:
		q.threshold = MaxInlinePayload
	}
	if q.rnd == nil {
		q.rnd = rand.New(rand.NewSource(time.Now().UnixNano()))
	}
	return q
}

// Config returns the queue configuration read from queue.json.
func (q *Queue) Config() Config { return q.cfg }

// Shards returns every shard name in key order ("0".."f" or "00".."ff").
func (q *Queue) Shards() []string { return append([]string(nil), q.shards...) }

// Store returns the underlying store.
func (q *Queue) Store() store.Store { return q.s }

// Logger returns the queue's logger (Options.Logger; discards when unset).
func (q *Queue) Logger() *slog.Logger { return q.log }

// Now returns the queue's current time (UTC, millisecond precision: the
// resolution of index keys).
func (q *Queue) Now() time.Time { return q.clock.Now().UTC().Truncate(time.Millisecond) }

// shardOf returns the shard of a task id (ShardOf with the queue's
// shard_chars).
func (q *Queue) shardOf(id uuid.UUID) string { return ShardOf(id, q.cfg.ShardChars) }

// TaskKey returns the key of a task object.
func (q *Queue) TaskKey(id uuid.UUID) string { return taskKeyFor(q.shardOf(id), id) }

// ValidShard reports whether name is one of this queue's shards.
func (q *Queue) ValidShard(name string) bool {
	return len(name) == q.cfg.ShardChars && isHex(name)
}

func (q *Queue) backoff(p RetryPolicy, retry int) time.Duration {
	q.rndMu.Lock()
	defer q.rndMu.Unlock()
	return p.Backoff(retry, q.rnd)
}

func newRequestID() string { return uuid.NewString() }

// Get returns the current version of a task. ErrNotFound when there is none;
// a *MalformedError when the object cannot be decoded.
//
// A waiting task with more than 16 parents, some left, also shows the ends
// its parents left as edge objects and it does not record yet (1 LIST; see doc.go,
// "Dependencies"), so that what it waits for is current.
func (q *Queue) Get(ctx context.Context, id uuid.UUID) (*Task, error) {
	t, _, err := q.getTask(ctx, id)
	if err != nil || t.Status != StatusWaiting || t.ParentsLeft() < 2 || !hasEdges(t) {
		return t, err
	}
	es, err := q.listEdges(ctx, id)
	if err != nil {
		return nil, err
	}
	if ends := es.unrecorded(t); len(ends) > 0 {
		t = t.Clone()
		for i := range t.Parents {
			if st, ok := ends[t.Parents[i].ID]; ok {
				t.Parents[i].Done = st
			}
		}
	}
	return t, nil
}

func (q *Queue) getTask(ctx context.Context, id uuid.UUID) (*Task, string, error) {
	key := q.TaskKey(id)
	obj, err := q.getLimited(ctx, key, maxTaskObject)
	if errors.Is(err, store.ErrNotFound) {
		return nil, "", fmt.Errorf("get task %s: %w (%w)", id, ErrNotFound, err)
	}
	if errors.Is(err, store.ErrTornRead) {
		// No consistent version to base a write on: the task is being
		// rewritten under the reader, who lost the race to it.
		return nil, "", fmt.Errorf("get task %s: %w: %w", id, ErrConflict, err)
	}
	if err != nil {
		return nil, "", fmt.Errorf("get task %s: %w", id, err)
	}
	t, err := DecodeTask(key, obj.Body)
	if err != nil {
		return nil, "", fmt.Errorf("get task %s: %w", id, err)
	}
	return t, obj.ETag, nil
}

// staleError reports that a conditional task write did not apply because the
// object is not the version the writer based its change on. current is the
// version found on re-read (nil when the task does not exist).
type staleError struct {
	current *Task
	etag    string
	cause   error
}

func (e *staleError) Error() string {
	return fmt.Sprintf("task changed concurrently: %v", e.cause)
}

func (e *staleError) Unwrap() error { return store.ErrPreconditionFailed }

// maxPutAttempts bounds how often one logical write is re-sent after an
// unknown outcome.
const maxPutAttempts = 3

// put writes an object with tags when there are any and the store can tag
// in the same request, else untagged.
func (q *Queue) put(ctx context.Context, key string, body []byte, cond store.Condition, tags []store.Tag) (store.PutResult, error) {
	if tg, ok := q.s.(store.Tagger); ok && len(tags) > 0 {
		return tg.PutTagged(ctx, key, body, cond, tags)
	}
	return q.s.Put(ctx, key, body, cond)
}

// putTask writes next under cond (create-only or If-Match on the version
// whose request_id is prevRequestID) and resolves uncertainty:
//
//   - success: returns next and the new ETag.
//   - any failure (a 412, a timeout, a reset connection, a 5xx): the outcome
//     may be unknown (an SDK retry of a PUT that had committed answers 412),
//     so the task is re-read. If it carries next.RequestID, a write of this
//     operation landed (this one, or an earlier call's with the same
//     request id): success without a second write, returning the version
//     stored. If it is still the base version (same request_id as before)
//     and the failure was not a 412, the PUT is sent again. Otherwise
//     someone else wrote first: *staleError with the current version.
func (q *Queue) putTask(ctx context.Context, next *Task, cond store.Condition, prevRequestID string) (*Task, string, error) {
	body, err := EncodeTask(next)
	if err != nil {
		return nil, "", err
	}
	key := next.Key()
	tags := q.retentionTags(next)
	for attempt := 1; ; attempt++ {
		res, perr := q.put(ctx, key, body, cond, tags)
		if perr == nil {
			return next, res.ETag, nil
		}
		if IsDefinite(perr) {
			return nil, "", fmt.Errorf("write task %s: %w", next.ID, perr)
		}
		// Re-read even when the caller's context is done: the write may
		// have landed and the caller deserves to know.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		cur, etag, gerr := q.getTask(rctx, next.ID)
		cancel()
		switch {
		case gerr == nil && cur.RequestID == next.RequestID:
			q.log.Debug("task write landed despite an error", "task", next.ID, "err", perr)
			if b, err := EncodeTask(cur); err == nil && bytes.Equal(b, body) {
				return next, etag, nil // this call's own write
			}
			return cur, etag, nil // an earlier call's, with the same request id
		case gerr == nil && cur.RequestID == prevRequestID && !cond.IfNoneMatch && !errors.Is(perr, store.ErrPreconditionFailed):
			// Still the base version: the write did not land; send it again.
		case errors.Is(gerr, ErrNotFound) && cond.IfNoneMatch && !errors.Is(perr, store.ErrPreconditionFailed):
			// Create did not land; send it again.
		case gerr == nil:
			return nil, "", &staleError{current: cur, etag: etag, cause: perr}
		case errors.Is(gerr, ErrNotFound):
			return nil, "", &staleError{cause: perr}
		default:
			return nil, "", fmt.Errorf("write task %s: %w: %w (re-read failed: %v)", next.ID, ErrOutcomeUnknown, perr, gerr)
		}
		if attempt >= maxPutAttempts || ctx.Err() != nil {
			return nil, "", fmt.Errorf("write task %s: %w", next.ID, perr)
		}
	}
}

// isDefinite reports errors that certainly did not write anything and that
// a re-read cannot clarify (credentials, missing bucket, unsupported).
// IsDefinite reports whether a failed write surely did not land: the
// server refused it before looking at the object. Any other failure may
// hide a write that landed, which a writer settles by re-reading.
func IsDefinite(err error) bool {
	return errors.Is(err, store.ErrAccessDenied) || errors.Is(err, store.ErrBucketNotFound) || errors.Is(err, store.ErrNotSupported)
}

// mutation describes one state change of an existing task.
type mutation struct {
	op string // operation name for errors ("complete")
	// fence, when set, is the lease_id the task must still carry (and be
	// running); otherwise the write is refused with fenceErr.
	fence    string
	fenceErr error
	// rebase re-applies the change to the current version when the
	// conditional write lost to a concurrent writer (re-validated, fenced).
	rebase bool
	// change edits next (a copy of the base version) and returns the event.
	// An empty event means "already in the requested state": no write.
	change func(next *Task, now time.Time) (event string, err error)
	// requestID, when set, is the request id of the write instead of a
	// fresh one: a caller that repeats an operation whose outcome stayed
	// unknown passes the same id, so the repeat recognises the earlier
	// write if it landed (see Lease).
	requestID string
}

// maxRebases bounds re-applying a change over concurrent writes.
const maxRebases = 8

// applied is the outcome of apply: the version replaced, the version
// written and its ETag. When the change was a no-op, next == prev.
type applied struct {
	prev, next *Task
	etag       string
}

// apply runs m against base (read with etag): the change, the transition
// validator, a conditional PUT with a fresh request_id and rev+1, and the
// uncertainty handling of putTask. It returns the written version and its
// ETag. Nothing is written when validation fails.
//
// apply also keeps the indexes (see doc.go, "Index entries are written
// first"): the entries the new version needs and the old one lacks are
// PUT before the task (a failed entry PUT fails the operation with the
// task untouched), and the entries only the old version had are DELETEd
// after the task PUT is known to have landed. When the outcome stays
// unknown, every entry is left in place.
func (q *Queue) apply(ctx context.Context, base *Task, etag string, m mutation) (applied, error) {
	reqID := m.requestID
	if reqID == "" {
		reqID = newRequestID()
	}
	var written []string // entries this call wrote for a version that did not land
	for rebases := 0; ; rebases++ {
		if m.fence != "" && (base.Status != StatusRunning || base.LeaseID != m.fence) {
			q.dropEntries(ctx, written, base)
			return applied{}, fmt.Errorf("%s task %s: %w (task is %s, lease %q; this lease is %q)",
				m.op, base.ID, m.fenceErr, base.Status, base.LeaseID, m.fence)
		}
		now := q.Now()
		next := base.Clone()
		next.Actor = "" // only an operator action's change names one
		event, err := m.change(next, now)
		if err != nil {
			q.dropEntries(ctx, written, base)
			return applied{}, fmt.Errorf("%s task %s: %w", m.op, base.ID, err)
		}
		if event == "" {
			q.dropEntries(ctx, written, base)
			return applied{prev: base, next: base, etag: etag}, nil
		}
		if err := stamp(base, next, event, now, reqID); err != nil {
			q.dropEntries(ctx, written, base)
			return applied{}, fmt.Errorf("%s task %s: %w", m.op, base.ID, err)
		}
		if q.markerMoves(base, next) && !retainedAsFinished(next) {
			// Live again (a replay): the marker is tagged live before the
			// task is, as an index entry is written first, so it never
			// expires while its task lives.
			if err := q.putMarker(ctx, next); err != nil {
				return applied{}, fmt.Errorf("%s task %s: %w (task not changed)", m.op, base.ID, err)
			}
		}
		added, removed := indexDiff(base, next)
		entriesAt := q.Now()
		if err := q.putEntries(ctx, added); err != nil {
			return applied{}, fmt.Errorf("%s task %s: %w (task not changed)", m.op, base.ID, err)
		}
		written = append(written, added...)
		stored, newETag, err := q.putTask(ctx, next, store.IfMatch(etag), base.RequestID)
		if err == nil && stored != next {
			// An earlier call of this operation (same request id) had
			// landed: keep what that version needs, drop what this call
			// wrote for its own, and finish the earlier call's index work.
			q.dropEntries(ctx, written, stored)
			added, removed = indexDiff(base, stored)
			for _, k := range added {
				q.putIndex(ctx, k) // written before, by the earlier call
			}
			q.landed(ctx, nil, removed, entriesAt)
			q.finishMarker(ctx, base, stored)
			q.afterLanded(ctx, base, stored)
			return applied{prev: base, next: stored, etag: newETag}, nil
		}
		if err == nil {
			q.dropEntries(ctx, written[:len(written)-len(added)], next)
			q.landed(ctx, added, removed, entriesAt)
			q.finishMarker(ctx, base, next)
			q.afterLanded(ctx, base, next)
			return applied{prev: base, next: next, etag: newETag}, nil
		}
		var stale *staleError
		if !errors.As(err, &stale) {
			// Outcome unknown (or a definite refusal we cannot tell apart):
			// keep every entry, old and new; readers sort them out.
			return applied{}, fmt.Errorf("%s task %s: %w", m.op, base.ID, err)
		}
		if stale.current == nil {
			q.dropEntries(ctx, written, nil)
			return applied{}, fmt.Errorf("%s task %s: %w (it disappeared)", m.op, base.ID, ErrNotFound)
		}
		if !m.rebase || rebases >= maxRebases {
			q.dropEntries(ctx, written, stale.current)
			conflict := ErrConflict
			if m.fence != "" && (stale.current.Status != StatusRunning || stale.current.LeaseID != m.fence) {
				conflict = m.fenceErr
			}
			return applied{}, fmt.Errorf("%s task %s: %w (task is now %s at rev %d)", m.op, base.ID, conflict, stale.current.Status, stale.current.Rev)
		}
		base, etag = stale.current, stale.etag
	}
}

// finishMarker rewrites the idempotency marker of a keyed task that a
// landed write finished, tagged finished (see putMarker), so it expires
// with its task. Best effort: a marker left tagged live is only kept
// longer, never lost early.
func (q *Queue) finishMarker(ctx context.Context, prev, next *Task) {
	if !q.markerMoves(prev, next) || !retainedAsFinished(next) {
		return
	}
	if err := q.putMarker(ctx, next); err != nil {
		q.log.Warn("an idempotency marker stays tagged live (kept, not expired)", "task", next.ID, "err", err)
	}
}

// IndexGrace is how old an index entry must be before a reader that finds
// it stale (its task gone, in another state, or keyed differently) deletes
// it: a younger entry may belong to a write still in flight, whose entry is
// PUT before its task. A writer whose entry PUT and task PUT end up more
// than IndexGrace/2 apart writes the entry again after the task PUT, so no
// reader can remove an entry a landed version needs.
const IndexGrace = time.Minute

// stamp makes next the version after base: rev+1, the request id, the
// event, updated_at = now (never moving back when the clock does), then
// runs the transition validator.
func stamp(base, next *Task, event string, now time.Time, requestID string) error {
	next.Rev = base.Rev + 1
	next.RequestID = requestID
	next.LastEvent = event
	next.UpdatedAt = now
	if next.UpdatedAt.Before(base.UpdatedAt) {
		next.UpdatedAt = base.UpdatedAt // the clock moved back: never reorder updated_at
	}
	return ValidateTransition(base, next)
}

// operate reads a task and applies an operator change, re-validating over
// concurrent writes.
func (q *Queue) operate(ctx context.Context, id uuid.UUID, op string, change func(next *Task, now time.Time) (string, error)) (applied, error) {
	base, etag, err := q.getTask(ctx, id)
	if err != nil {
		return applied{}, fmt.Errorf("%s: %w", op, err)
	}
	return q.apply(ctx, base, etag, mutation{op: op, rebase: true, change: change})
}

// sameJSON compares two JSON documents semantically (key order and
// whitespace do not matter).
func sameJSON(a, b json.RawMessage) bool {
	if isJSONNull(a) || isJSONNull(b) {
		return isJSONNull(a) && isJSONNull(b)
	}
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return string(a) == string(b)
	}
	return jsonEqual(va, vb)
}

func jsonEqual(a, b any) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !jsonEqual(v, w) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !jsonEqual(x[i], y[i]) {
				return false
			}
		}
		return true
	default:
		return a == b
	}
}
