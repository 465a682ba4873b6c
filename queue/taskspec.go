package queue

// The spec of a task to submit (see doc.go, "Task spec"): one struct,
// SubmitRequest, and one validator, Validate, that every way in calls:
// Submit itself, DecodeSubmit (bulk lines, the HTTP API, workflow steps),
// the command line's flags, schedules (at create and at every run) and
// the console's form.
//
// A new field is one edit here: the struct field, its entry in
// SpecFields (JSON name and doc line), its rule in Validate; then the
// JSON decoder (submitdoc.go) and the flag set (command/taskflags.go)
// each read it with one line.

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
)

// SubmitRequest is the spec of a task to submit. Zero values take the
// defaults, so a zero duration, time or string means "not given".
// Durations are Go durations here; in JSON they are duration strings
// ("90s", "1h30m") or numbers of seconds (see SpecFields).
type SubmitRequest struct {
	Type  string
	Input json.RawMessage // any JSON document; nil means null
	// Timeout is the lease of one attempt (whole seconds, rounded up;
	// 0 is the default, 300 s).
	Timeout     time.Duration
	MaxRetries  *int         // default 3; 0 means one attempt only
	RetryPolicy *RetryPolicy // default DefaultRetryPolicy
	AvailableAt time.Time    // zero: now; later: a delayed task
	// Delay, when set, makes the task available that long after the
	// moment of submission (exclusive with AvailableAt).
	Delay time.Duration
	// IdempotencyKey, when set, makes the submit idempotent per (type,
	// key): a second submit with the same pair returns the first task.
	IdempotencyKey string
	// UniqueWhileActive limits IdempotencyKey to while its task is
	// active (waiting, pending or running): once it ended, a submit with
	// the key makes a new task (see doc.go, "Uniqueness windows").
	UniqueWhileActive bool
	// UniqueFor limits IdempotencyKey to this long after the submit that
	// made its task; then a submit with the key makes a new task.
	// Exclusive with UniqueWhileActive.
	UniqueFor time.Duration
	// Priority is the task's level ("" is normal).
	Priority Priority
	// Key is the task's fairness key ("" is none): a type's ready tasks
	// are taken round-robin over keys, and a per-key limit holds for each
	// (see doc.go, "Task keys"). [A-Za-z0-9_.:-]{1,64}.
	Key string
	// ExpiresAt, when set, is the deadline for starting: a task not
	// claimed by then becomes expired instead of running.
	ExpiresAt time.Time
	// ExpiresIn, when set, is the deadline for starting counted from
	// when the task becomes available (exclusive with ExpiresAt).
	ExpiresIn time.Duration
	// After lists the task's parents: it waits (status waiting) until
	// every one has ended, and runs once all completed (see doc.go,
	// "Dependencies"). Each must exist in this queue; at most MaxParents.
	After []uuid.UUID
	// OnParentFailure is what the task does when a parent ends without
	// completing ("" is ParentFailureCancel). Only with After.
	OnParentFailure ParentFailure
	// Metadata is string headers carried unchanged by the task (see
	// ValidateMetadata for the bounds); the keys MetaTraceparent and
	// MetaTracestate hold its trace context.
	Metadata map[string]string
}

// SpecField is one field of a task spec as JSON carries it.
type SpecField struct {
	Name string // its JSON name (a bulk line's, an HTTP body's, a workflow step's)
	Doc  string // what it holds, for help texts
}

// SpecFields are the fields of a task spec in JSON, in the order help
// texts list them. Durations are "90s", "1h30m" or a number of seconds;
// times are RFC 3339.
var SpecFields = []SpecField{
	{"type", "task type (alias task_type; required)"},
	{"input", "any JSON document"},
	{"timeout_seconds", "lease of one attempt, whole seconds (default 300)"},
	{"max_retries", "retries after the first attempt (0: run once)"},
	{"retry_policy", `{"initial_interval_ms", "max_interval_ms", "multiplier", "jitter_percent"}; missing fields keep their defaults`},
	{"delay", "available that long after the submit: a duration"},
	{"available_at", "available from this time (RFC 3339)"},
	{"idempotency_key", "the same type and key yield the same task"},
	{"unique_while_active", "true: the key holds while its task is active"},
	{"unique_for", "the key holds for this duration after the submit"},
	{"priority", "high, normal or low"},
	{"key", "the task's key: round-robin and per-key limits"},
	{"expires_in", "deadline for starting, a duration after available"},
	{"expires_at", "deadline for starting (RFC 3339)"},
	{"after", "task ids that must end first"},
	{"on_parent_failure", "cancel, fail or run (only with after)"},
	{"metadata", `{"KEY": "VALUE", ...}: string headers`},
}

// SpecError is a rule of the task spec a request breaks. Its text names
// the fields by their JSON names; In words it with other names (the
// command line's flags). It wraps ErrInvalidInput.
type SpecError struct {
	// Fields are the JSON names of the fields at fault, the first the
	// one to fix.
	Fields []string
	format string // one %s per field
	detail string // appended as is
}

func specErr(fields []string, format string) *SpecError {
	return &SpecError{Fields: fields, format: format}
}

// one is a SpecError about a single field.
func one(field, format string, args ...any) *SpecError {
	return &SpecError{Fields: []string{field}, format: "%s" + strings.ReplaceAll(fmt.Sprintf(format, args...), "%", "%%")}
}

// wrapped is a SpecError for field from another validator's error.
func wrapped(field string, err error) *SpecError {
	return &SpecError{Fields: []string{field}, format: "%s: ", detail: inputText(err)}
}

// Error names the fields as JSON does, quoted.
func (e *SpecError) Error() string { return e.In(strconv.Quote) }

// In words the error naming each field name(f).
func (e *SpecError) In(name func(field string) string) string {
	args := make([]any, len(e.Fields))
	for i, f := range e.Fields {
		args[i] = name(f)
	}
	return ErrInvalidInput.Error() + ": " + fmt.Sprintf(e.format, args...) + e.detail
}

func (e *SpecError) Unwrap() error { return ErrInvalidInput }

// missingType is the error of a request without a type; hint, when set,
// says how to give one.
func missingType(hint string) *SpecError {
	if hint != "" {
		hint = "; " + hint
	}
	return &SpecError{Fields: []string{"type"}, format: "missing %s (the task type a worker handles" + strings.ReplaceAll(hint, "%", "%%") + ")"}
}

// Validate checks every rule of the spec that holds whatever the queue
// and the clock: each field's form and range, and the fields that need or
// exclude each other. The rules that need the queue (the input size
// bound, the parents existing) or the clock (an expiry after the
// availability) are checked by Submit. The error is a *SpecError.
func (r SubmitRequest) Validate() error {
	if err := r.validateFields(); err != nil {
		return err
	}
	return r.validatePairs()
}

// validateFields checks each field on its own.
func (r SubmitRequest) validateFields() error {
	switch {
	case r.Type == "":
		return missingType("")
	case ValidateType(r.Type) != nil:
		return wrapped("type", ValidateType(r.Type))
	case !isJSONNull(r.Input) && !json.Valid(r.Input):
		var v any
		return one("input", " is not valid JSON (%s)", strings.TrimPrefix(fmt.Sprint(json.Unmarshal(r.Input, &v)), "json: "))
	case !utf8.Valid(r.Input):
		return one("input", " is not valid UTF-8 (JSON text must be UTF-8): convert it first, e.g. iconv -f latin1 -t utf-8")
	case r.Timeout < 0 || (r.Timeout > 0 && r.Timeout < time.Second):
		return one("timeout_seconds", " %s is below the 1s minimum", r.Timeout)
	case r.MaxRetries != nil && *r.MaxRetries < 0:
		return one("max_retries", " %d is negative (0 runs the task once)", *r.MaxRetries)
	case r.RetryPolicy != nil && r.RetryPolicy.Validate() != nil:
		return wrapped("retry_policy", r.RetryPolicy.Validate())
	case r.Delay < 0:
		return one("delay", " %s is negative", r.Delay)
	case len(r.IdempotencyKey) > MaxIdempotencyKeyLen:
		return one("idempotency_key", " is %d bytes long (at most %d)", len(r.IdempotencyKey), MaxIdempotencyKeyLen)
	case r.UniqueFor < 0:
		return one("unique_for", " %s is negative (leave it out for a key held for good)", r.UniqueFor)
	case r.ExpiresIn < 0:
		return one("expires_in", " %s must be positive (leave it out for a task that never expires)", r.ExpiresIn)
	}
	if _, err := ParsePriority(string(r.Priority)); err != nil {
		return wrapped("priority", err)
	}
	if r.Key != "" {
		if err := ValidateTaskKey(r.Key); err != nil {
			return wrapped("key", err)
		}
	}
	if err := checkParents(r.After); err != nil {
		return wrapped("after", err)
	}
	if _, err := ParseParentFailure(string(r.OnParentFailure)); err != nil {
		return wrapped("on_parent_failure", err)
	}
	if err := ValidateMetadata(r.Metadata); err != nil {
		return wrapped("metadata", err)
	}
	return nil
}

// validatePairs checks the fields that need or exclude each other.
func (r SubmitRequest) validatePairs() error {
	switch {
	case r.Delay > 0 && !r.AvailableAt.IsZero():
		return specErr([]string{"delay", "available_at"}, "give either %s or %s, not both")
	case (r.UniqueWhileActive || r.UniqueFor > 0) && r.IdempotencyKey == "":
		return specErr([]string{"unique_while_active", "unique_for", "idempotency_key"}, "%s and %s need %s: the window applies to that key")
	case r.UniqueWhileActive && r.UniqueFor > 0:
		return specErr([]string{"unique_while_active", "unique_for"}, "%s and %s exclude each other: give one")
	case r.ExpiresIn > 0 && !r.ExpiresAt.IsZero():
		return specErr([]string{"expires_in", "expires_at"}, "give either %s or %s, not both")
	case !r.ExpiresAt.IsZero() && !r.AvailableAt.IsZero() && !r.ExpiresAt.After(r.AvailableAt):
		return specErr([]string{"expires_at", "available_at"}, "%s is not after %s: the task could never run; give a later expiry")
	case r.OnParentFailure != "" && len(r.After) == 0:
		return specErr([]string{"on_parent_failure", "after"}, "%s needs %s (it says what the task does when a parent does not complete)")
	}
	return nil
}

// zeroMeansUnset are the fields whose zero value means "not given" (the
// default) although 0 is not a value they take: a reader refuses a 0
// given explicitly (GivenZero) rather than read it as the default.
var zeroMeansUnset = []string{"timeout_seconds", "unique_for", "expires_in"}

// GivenZero is the error of a reader (the JSON decoder, the command
// line's flags) that found field given as 0: nil when 0 is a value of the
// field, else a *SpecError.
func GivenZero(field string) error {
	if !slices.Contains(zeroMeansUnset, field) {
		return nil
	}
	return one(field, " 0 must be positive (leave it out for the default)")
}

// Resolve returns the request with Delay and ExpiresIn turned into times
// at now: ExpiresIn counts from when the task becomes available, so that
// both come from one reading of the clock. Submit resolves a request
// itself; a caller resolves first to fix the times of several submits at
// one moment (a workflow's steps).
func (r SubmitRequest) Resolve(now time.Time) SubmitRequest {
	if r.Delay > 0 {
		r.AvailableAt, r.Delay = now.Add(r.Delay), 0
	}
	if r.ExpiresIn > 0 {
		if r.AvailableAt.IsZero() {
			r.AvailableAt = now
		}
		r.ExpiresAt, r.ExpiresIn = r.AvailableAt.Add(r.ExpiresIn), 0
	}
	return r
}
