package queue

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/google/uuid"

	"github.com/qo-queue/qo/store"
)

// MaxIdempotencyKeyLen bounds idempotency keys.
const MaxIdempotencyKeyLen = 256

// idempotencyRecord is the body of an idempotency marker (see doc.go,
// "Idempotency keys"): which task a (type, key) pair made.
type idempotencyRecord struct {
	Format    int       `json:"format"`
	TaskID    uuid.UUID `json:"task_id"`
	TaskType  string    `json:"task_type"`
	Key       string    `json:"idempotency_key"`
	CreatedAt time.Time `json:"created_at"`
	// A binding with a window (see doc.go, "Uniqueness windows"): the
	// key is held while its task is active, or until Until. Neither:
	// held for good.
	WhileActive bool       `json:"while_active,omitempty"`
	Until       *time.Time `json:"until,omitempty"`
}

// LookupKey returns the id of the task a submit with this type and
// idempotency key made (1 GET). ErrNotFound when none did.
func (q *Queue) LookupKey(ctx context.Context, taskType, key string) (uuid.UUID, error) {
	rec, err := q.readMarker(ctx, IdempotencyKey(taskType, key))
	if err != nil {
		return uuid.Nil, fmt.Errorf("look up idempotency key %q: %w", key, err)
	}
	return rec.TaskID, nil
}

func (q *Queue) readMarker(ctx context.Context, key string) (idempotencyRecord, error) {
	rec, _, err := q.readMarkerTag(ctx, key)
	return rec, err
}

// readMarkerTag reads a marker and its ETag.
func (q *Queue) readMarkerTag(ctx context.Context, key string) (idempotencyRecord, string, error) {
	var rec idempotencyRecord
	obj, err := q.getLimited(ctx, key, maxSmallObject)
	if errors.Is(err, store.ErrNotFound) {
		return rec, "", fmt.Errorf("%w (%w)", ErrNotFound, err)
	}
	if err != nil {
		return rec, "", err
	}
	if err := json.Unmarshal(obj.Body, &rec); err != nil || rec.Format != FormatVersion || rec.TaskID == uuid.Nil {
		return rec, "", &MalformedError{Key: key, Err: fmt.Errorf("not an idempotency record (%v)", err)}
	}
	return rec, obj.ETag, nil
}

// maxTakeovers bounds the rounds of claimKey taking over a marker whose
// binding ended, each lost to another submitter taking it over first.
const maxTakeovers = 5

// bindingEnded reports whether the binding rec records has ended, so a
// submit may take the key over: its Until passed, or, held while active,
// its task ended (failed, completed, cancelled, expired or archived). A
// task that does not exist has not ended (its submit may still create it,
// see claimKey). 1 GET for a binding held while active, none otherwise.
func (q *Queue) bindingEnded(ctx context.Context, rec idempotencyRecord) (bool, error) {
	if rec.Until != nil && !q.Now().Before(*rec.Until) {
		return true, nil
	}
	if !rec.WhileActive {
		return false, nil
	}
	t, _, err := q.getTask(ctx, rec.TaskID)
	switch {
	case errors.Is(err, ErrNotFound):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("read task %s of the key: %w", rec.TaskID, err)
	}
	return t.Status.Terminal(), nil
}

// claimKey binds an idempotency key to t.ID with a create-only PUT of its
// marker, or finds the task the key was bound to before: it returns that
// id (t.ID when the key is new).
//
// Under a retention the marker is tagged as the task is (live), so the
// lifecycle rule, which expires markers tagged finished, leaves it alone
// while the task lives (see doc.go, "Idempotency keys").
func (q *Queue) claimKey(ctx context.Context, t *Task) (uuid.UUID, error) {
	key := IdempotencyKey(t.Type, t.IdempotencyKey)
	body, err := markerBody(t)
	if err != nil {
		return uuid.Nil, err
	}
	_, perr := q.put(ctx, key, body, store.CreateOnly, q.retentionTags(t))
	if perr == nil {
		return t.ID, nil
	}
	for round := 0; ; round++ {
		if IsDefinite(perr) {
			return uuid.Nil, fmt.Errorf("write idempotency marker: %w", perr)
		}
		// Taken, or an outcome we cannot know: the marker says who owns
		// the key.
		rec, etag, err := q.readMarkerTag(ctx, key)
		if err != nil {
			return uuid.Nil, fmt.Errorf("write idempotency marker: %w (re-read: %w)", perr, err)
		}
		if rec.TaskID == t.ID {
			return t.ID, nil // our write landed; its response was lost
		}
		ended, err := q.bindingEnded(ctx, rec)
		if err != nil {
			return uuid.Nil, fmt.Errorf("write idempotency marker: %w", err)
		}
		if !ended {
			return rec.TaskID, nil
		}
		if round >= maxTakeovers {
			return uuid.Nil, fmt.Errorf("write idempotency marker: %w (the key was taken over %d times while this submit tried; submit again)", ErrConflict, round)
		}
		// The binding ended: take the key over, if nobody changed the
		// marker since it was read. A lost race or a lost response is
		// settled by reading the marker again.
		if _, perr = q.put(ctx, key, body, store.IfMatch(etag), q.retentionTags(t)); perr == nil {
			return t.ID, nil
		}
	}
}

// markerBody is the body of the idempotency marker of keyed task t.
func markerBody(t *Task) ([]byte, error) {
	rec := idempotencyRecord{Format: FormatVersion, TaskID: t.ID, TaskType: t.Type, Key: t.IdempotencyKey, CreatedAt: t.CreatedAt}
	if u := t.Unique; u != nil {
		rec.WhileActive, rec.Until = u.WhileActive, cloneTime(u.Until)
	}
	return json.Marshal(rec)
}

// markerMoves reports whether the idempotency marker of a keyed task must
// be rewritten by a write from prev to next: under a retention, when the
// task becomes finished (its marker may expire from then on, as the task
// does) or live again (a replay: its marker must not expire).
func (q *Queue) markerMoves(prev, next *Task) bool {
	return q.cfg.TasksRetentionDays > 0 && next.IdempotencyKey != "" && prev != nil &&
		retainedAsFinished(prev) != retainedAsFinished(next)
}

// putMarker rewrites the idempotency marker of keyed task t, tagged as t
// is (1 PUT). The binding never changes: the marker names t, as it did.
// The write also restarts the marker's age, which the lifecycle rule
// counts from its last write: a marker tagged finished expires N days
// after its task finished, as the task does.
func (q *Queue) putMarker(ctx context.Context, t *Task) error {
	body, err := markerBody(t)
	if err != nil {
		return err
	}
	key := IdempotencyKey(t.Type, t.IdempotencyKey)
	cond := store.Condition{}
	if t.Unique != nil {
		// A windowed key may have moved on to another task: rewrite the
		// marker only while it still names t (1 GET more).
		rec, etag, err := q.readMarkerTag(ctx, key)
		switch {
		case err == nil && rec.TaskID != t.ID:
			return nil
		case err == nil:
			cond = store.IfMatch(etag)
		case !errors.Is(err, ErrNotFound):
			return fmt.Errorf("rewrite idempotency marker of task %s: %w", t.ID, err)
		}
	}
	if _, err := q.put(ctx, key, body, cond, q.retentionTags(t)); err != nil {
		return fmt.Errorf("rewrite idempotency marker of task %s: %w", t.ID, err)
	}
	return nil
}

// Submit creates a pending task: its ready entry, then a create-only PUT
// of the task object (2 PUTs). With an idempotency key, a create-only PUT
// of the key's marker comes first (1 PUT more); a duplicate returns the
// existing task and created=false; the same key with another input is
// ErrIdempotencyMismatch.
//
// With After, the parents are read first (1 GET each; an unknown one is
// ErrInvalidInput and nothing is written). A task whose parents all
// completed is pending at once; otherwise it is created waiting (its
// waiting entry, then the task) and registered on each parent that has
// not ended (a child_added write each, see doc.go, "Dependencies"), and
// parents that ended otherwise decide by OnParentFailure at once.
//
// The hooks added with OnSubmit run around it (see SubmitHook).
func (q *Queue) Submit(ctx context.Context, req SubmitRequest) (*Task, bool, error) {
	ctx, h, err := q.beforeSubmit(ctx, &req)
	if err != nil {
		err = fmt.Errorf("submit: %w", err)
		h.afterSubmit(req, nil, false, err)
		return nil, false, err
	}
	t, created, err := q.submit(ctx, req)
	h.afterSubmit(req, t, created, err)
	return t, created, err
}

func (q *Queue) submit(ctx context.Context, req SubmitRequest) (*Task, bool, error) {
	t, err := q.newTask(req)
	if err != nil {
		return nil, false, fmt.Errorf("submit: %w", err)
	}
	if len(req.After) > 0 {
		t.OnParentFailure, _ = ParseParentFailure(string(req.OnParentFailure)) // validated by newTask
		if t.Parents, err = q.readParents(ctx, req.After); err != nil {
			return nil, false, fmt.Errorf("submit: %w", err)
		}
		if !allEnded(t) || blocked(t) {
			t.Status = StatusWaiting
		}
	}
	if t.IdempotencyKey != "" {
		id, err := q.claimKey(ctx, t)
		if err != nil {
			return nil, false, fmt.Errorf("submit: %w", err)
		}
		if id != t.ID {
			existing, _, err := q.getTask(ctx, id)
			switch {
			case err == nil:
				return q.duplicate(ctx, existing, t, t.Input)
			case !errors.Is(err, ErrNotFound):
				return nil, false, fmt.Errorf("submit: %w", err)
			}
			// The key's first submit died between its marker and its
			// task: finish it under the id the marker gave out.
			t.ID, t.Shard = id, q.shardOf(id)
		}
	}
	if err := ValidateTransition(nil, t); err != nil {
		return nil, false, fmt.Errorf("submit: %w", err)
	}
	input := t.Input
	existing, err := q.create(ctx, t)
	if err != nil {
		return nil, false, err
	}
	if existing != nil {
		if req.IdempotencyKey == "" {
			return nil, false, fmt.Errorf("submit task %s: %w (id already taken)", t.ID, ErrConflict)
		}
		return q.duplicate(ctx, existing, t, input)
	}
	if t.Status == StatusWaiting {
		done, _, err := q.register(ctx, t)
		if err != nil {
			// The task exists and waits; the sweeper (or the same submit
			// again, with an idempotency key) finishes its registration.
			return done, true, fmt.Errorf("submit task %s: %w (the task was created and waits; submit again with the same idempotency key, or the sweeper, completes it)", t.ID, err)
		}
		return done, true, nil
	}
	return t, true, nil
}

// create writes a new task t: its input under data/ when too large,
// its index entries, then a create-only PUT of the task. When a task with
// t's id exists already, nothing is created and that task is returned.
func (q *Queue) create(ctx context.Context, t *Task) (existing *Task, _ error) {
	if q.offload(len(t.Input)) {
		ref, err := q.putInput(ctx, t, t.Input)
		if err != nil {
			return nil, fmt.Errorf("submit task %s: store input: %w", t.ID, err)
		}
		t.Input, t.InputRef = nil, ref
	}
	// The ready (or waiting) entry goes in first (see doc.go, "Index
	// entries are written first"): once the task exists, its entry does too.
	entries := IndexKeys(t)
	if err := q.putEntries(ctx, entries); err != nil {
		return nil, fmt.Errorf("submit task %s: %w (nothing submitted)", t.ID, err)
	}
	entryAt := q.Now()
	if _, _, err := q.putTask(ctx, t, store.CreateOnly, ""); err != nil {
		var stale *staleError
		if !errors.As(err, &stale) {
			return nil, fmt.Errorf("submit: %w", err)
		}
		q.dropEntries(ctx, entries, stale.current)
		if stale.current == nil {
			return nil, fmt.Errorf("submit task %s: %w (create refused but no object found; the key may hold a delete marker)", t.ID, ErrConflict)
		}
		return stale.current, nil
	}
	q.landed(ctx, entries, nil, entryAt)
	return nil, nil
}

// duplicate answers a submit whose idempotency key already made existing:
// the existing task (created=false), or ErrIdempotencyMismatch when the
// inputs differ. A pending duplicate gets its ready entry written again (1
// PUT; it was written before the task, so this only matters when the
// first submit's entry was lost to damage): retrying a submit always
// leaves the task claimable.
func (q *Queue) duplicate(ctx context.Context, existing, t *Task, input json.RawMessage) (*Task, bool, error) {
	if !sameInput(existing, input) {
		shown := string(existing.Input)
		if existing.InputRef != nil {
			shown = fmt.Sprintf("of %d bytes in %s", existing.InputRef.Bytes, existing.InputRef.Key)
		}
		return existing, false, fmt.Errorf("submit: %w: key %q already made task %s with input %s",
			ErrIdempotencyMismatch, t.IdempotencyKey, existing.ID, truncate(shown, 200))
	}
	if existing.Status == StatusPending {
		q.putIndex(ctx, ReadyKey(existing))
	}
	if existing.Status == StatusWaiting {
		// A first submit that stopped before registering on its parents
		// is finished by its repeat.
		q.putIndex(ctx, WaitingKey(existing))
		done, _, err := q.register(ctx, existing)
		if err != nil {
			return done, false, fmt.Errorf("submit: %w", err)
		}
		return done, false, nil
	}
	return existing, false, nil
}

// sameInput reports whether a task's input is the (compacted) JSON input.
func sameInput(t *Task, input json.RawMessage) bool {
	if t.InputRef != nil {
		return t.InputRef.SHA256 == digest(input)
	}
	return sameJSON(t.Input, input)
}

// newTask makes the task req describes, as of now: req is validated
// (Validate), then checked against the queue (the input size) and the
// clock (an expiry after the availability).
func (q *Queue) newTask(req SubmitRequest) (*Task, error) {
	if err := req.Validate(); err != nil {
		return nil, err
	}
	input, err := q.compactInput(req.Input)
	if err != nil {
		return nil, err
	}
	now := q.Now()
	req = req.Resolve(now)
	avail := now
	if !req.AvailableAt.IsZero() {
		avail = req.AvailableAt.UTC().Truncate(time.Millisecond)
	}
	var expires *time.Time
	if !req.ExpiresAt.IsZero() {
		e := req.ExpiresAt.UTC().Truncate(time.Millisecond)
		if !e.After(avail) {
			return nil, invalidInput("expiry %s is not after the time the task becomes available (%s): it could never run; give a later expiry", e.Format(time.RFC3339), avail.Format(time.RFC3339))
		}
		expires = &e
	}
	timeout := cmp.Or(req.Timeout, DefaultTimeout)
	retries := DefaultMaxRetries
	if req.MaxRetries != nil {
		retries = *req.MaxRetries
	}
	policy := DefaultRetryPolicy
	if req.RetryPolicy != nil {
		policy = *req.RetryPolicy
	}
	prio, _ := ParsePriority(string(req.Priority)) // validated
	id := q.newID(now)
	return &Task{
		Format:         FormatVersion,
		ID:             id,
		Type:           req.Type,
		Shard:          q.shardOf(id),
		Status:         StatusPending,
		AvailableAt:    avail,
		Input:          input,
		TimeoutSeconds: int((timeout + time.Second - 1) / time.Second),
		MaxRetries:     retries,
		RetryPolicy:    policy,
		CreatedAt:      now,
		UpdatedAt:      now,
		Rev:            1,
		RequestID:      newRequestID(),
		LastEvent:      EventEnqueued,
		IdempotencyKey: req.IdempotencyKey,
		Unique:         uniqueWindow(req, now),
		Priority:       prio,
		TaskKey:        req.Key,
		ExpiresAt:      expires,
		Metadata:       cloneMetadata(req.Metadata),
	}, nil
}

// cloneMetadata copies m (nil when empty).
func cloneMetadata(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	return maps.Clone(m)
}

// compactInput is a task's input as stored: compacted JSON, nil for null,
// within the queue's payload bound.
func (q *Queue) compactInput(input json.RawMessage) (json.RawMessage, error) {
	if isJSONNull(input) {
		return nil, nil
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, input); err != nil {
		return nil, invalidInput("input is not valid JSON: %v", err)
	}
	if int64(buf.Len()) > q.cfg.EffectiveMaxPayloadBytes() {
		return nil, q.payloadTooLarge("input", buf.Len())
	}
	return buf.Bytes(), nil
}

// uniqueWindow is the uniqueness window of a validated request made at
// now (nil: none).
func uniqueWindow(req SubmitRequest, now time.Time) *UniqueWindow {
	switch {
	case req.UniqueWhileActive:
		return &UniqueWindow{WhileActive: true}
	case req.UniqueFor > 0:
		until := now.Add(req.UniqueFor).Truncate(time.Millisecond)
		return &UniqueWindow{Until: &until}
	}
	return nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
