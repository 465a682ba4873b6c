package queue

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/qo-queue/qo/store"
)

// idempotencyNamespace scopes the deterministic ids derived from
// idempotency keys (uuid.NewSHA1(namespace, type + "\x00" + key)). Never
// change it: ids already in buckets depend on it.
var idempotencyNamespace = uuid.MustParse("5b0e8f7e-2f44-4c5e-9f0c-7a1d3c6b9e21")

// MaxIdempotencyKeyLen bounds idempotency keys.
const MaxIdempotencyKeyLen = 256

// IDForKey returns the task id a submit with this type and idempotency key
// gets, so callers can look the task up without submitting.
func IDForKey(taskType, key string) uuid.UUID {
	return uuid.NewSHA1(idempotencyNamespace, []byte(taskType+"\x00"+key))
}

// SubmitRequest describes a new task. Zero values take the defaults.
type SubmitRequest struct {
	Type  string
	Input json.RawMessage // any JSON document; nil means null
	// Timeout is the lease of one attempt (whole seconds, rounded up;
	// default 300 s).
	Timeout     time.Duration
	MaxRetries  *int         // default 3; 0 means one attempt only
	RetryPolicy *RetryPolicy // default DefaultRetryPolicy
	AvailableAt time.Time    // zero: now; later: a delayed task
	// IdempotencyKey, when set, derives the task id from (type, key): a
	// second submit with the same pair returns the first task.
	IdempotencyKey string
	// Priority is the task's level ("" is normal).
	Priority Priority
	// ExpiresAt, when set, is the deadline for starting: a task not
	// claimed by then becomes expired instead of running.
	ExpiresAt time.Time
}

// Submit creates a pending task: a create-only PUT of the task object, then
// the ready index entry (2 PUTs). With an idempotency key, a duplicate
// returns the existing task and created=false; the same key with another
// input is ErrIdempotencyMismatch.
func (q *Queue) Submit(ctx context.Context, req SubmitRequest) (*Task, bool, error) {
	t, err := q.newTask(req)
	if err != nil {
		return nil, false, fmt.Errorf("submit: %w", err)
	}
	if err := ValidateTransition(nil, t); err != nil {
		return nil, false, fmt.Errorf("submit: %w", err)
	}
	input := t.Input
	if q.offload(len(input)) {
		ref, err := q.putInput(ctx, t, input)
		if err != nil {
			return nil, false, fmt.Errorf("submit task %s: store input: %w", t.ID, err)
		}
		t.Input, t.InputRef = nil, ref
	}
	// The ready entry goes in first (see doc.go, "Index entries are written
	// first"): once the task exists, its entry does too.
	ready := ReadyKey(t)
	if err := q.putEntries(ctx, []string{ready}); err != nil {
		return nil, false, fmt.Errorf("submit task %s: %w (nothing submitted)", t.ID, err)
	}
	entryAt := q.Now()
	if _, err := q.putTask(ctx, t, store.CreateOnly, ""); err != nil {
		var stale *staleError
		if !errors.As(err, &stale) {
			return nil, false, fmt.Errorf("submit: %w", err)
		}
		existing := stale.current
		q.dropEntries(ctx, []string{ready}, existing)
		if existing != nil && existing.Status == StatusPending && req.IdempotencyKey != "" {
			// A duplicate of a pending task: its entry was written before
			// it, but make sure (one PUT; a submit retried after a crash
			// must leave the task claimable).
			q.putIndex(ctx, ReadyKey(existing))
		}
		if existing == nil {
			return nil, false, fmt.Errorf("submit task %s: %w (create refused but no object found; the key may hold a delete marker)", t.ID, ErrConflict)
		}
		if req.IdempotencyKey == "" {
			return nil, false, fmt.Errorf("submit task %s: %w (id already taken)", t.ID, ErrConflict)
		}
		if !sameInput(existing, input) {
			shown := string(existing.Input)
			if existing.InputRef != nil {
				shown = fmt.Sprintf("of %d bytes in %s", existing.InputRef.Bytes, existing.InputRef.Key)
			}
			return existing, false, fmt.Errorf("submit: %w: key %q already made task %s with input %s",
				ErrIdempotencyMismatch, req.IdempotencyKey, existing.ID, truncate(shown, 200))
		}
		return existing, false, nil
	}
	q.landed(ctx, []string{ready}, nil, entryAt)
	return t, true, nil
}

// sameInput reports whether a task's input is the (compacted) JSON input.
func sameInput(t *Task, input json.RawMessage) bool {
	if t.InputRef != nil {
		return t.InputRef.SHA256 == digest(input)
	}
	return sameJSON(t.Input, input)
}

func (q *Queue) newTask(req SubmitRequest) (*Task, error) {
	if err := ValidateType(req.Type); err != nil {
		return nil, err
	}
	input := req.Input
	if isJSONNull(input) {
		input = nil
	} else {
		var buf bytes.Buffer
		if err := json.Compact(&buf, input); err != nil {
			return nil, invalidInput("input is not valid JSON: %v", err)
		}
		if !utf8.Valid(input) {
			return nil, invalidInput("input is not valid UTF-8 (JSON text must be UTF-8): convert it first, e.g. iconv -f latin1 -t utf-8")
		}
		input = buf.Bytes()
	}
	timeout := req.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	if timeout < time.Second {
		return nil, invalidInput("timeout %s is below the 1s minimum", timeout)
	}
	secs := int((timeout + time.Second - 1) / time.Second)
	retries := DefaultMaxRetries
	if req.MaxRetries != nil {
		retries = *req.MaxRetries
	}
	if retries < 0 {
		return nil, invalidInput("max retries %d is negative", retries)
	}
	policy := DefaultRetryPolicy
	if req.RetryPolicy != nil {
		policy = *req.RetryPolicy
	}
	if err := policy.Validate(); err != nil {
		return nil, err
	}
	if len(req.IdempotencyKey) > MaxIdempotencyKeyLen {
		return nil, invalidInput("idempotency key is %d bytes long (at most %d)", len(req.IdempotencyKey), MaxIdempotencyKeyLen)
	}
	id := NewID()
	if req.IdempotencyKey != "" {
		id = IDForKey(req.Type, req.IdempotencyKey)
	}
	prio, err := ParsePriority(string(req.Priority))
	if err != nil {
		return nil, err
	}
	now := q.Now()
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
	return &Task{
		Format:         FormatVersion,
		ID:             id,
		Type:           req.Type,
		Shard:          q.ShardOf(id),
		Status:         StatusPending,
		AvailableAt:    avail,
		Input:          input,
		TimeoutSeconds: secs,
		MaxRetries:     retries,
		RetryPolicy:    policy,
		CreatedAt:      now,
		UpdatedAt:      now,
		Rev:            1,
		RequestID:      newRequestID(),
		LastEvent:      EventEnqueued,
		IdempotencyKey: req.IdempotencyKey,
		Priority:       prio,
		ExpiresAt:      expires,
	}, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
