package queue

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
)

// SubmitFields are the keys a submit document may carry.
var SubmitFields = []string{"type", "task_type", "input", "timeout_seconds", "max_retries", "retry_policy",
	"delay", "available_at", "idempotency_key", "priority", "expires_in", "expires_at", "after", "on_parent_failure", "metadata",
	"unique_while_active", "unique_for", "key"}

// SubmitDefaults fill the fields a submit document leaves out.
type SubmitDefaults struct {
	Type        string
	Timeout     time.Duration
	MaxRetries  int
	Delay       time.Duration
	AvailableAt time.Time
	Priority    Priority
	ExpiresIn   time.Duration // relative to the moment of submission
	ExpiresAt   time.Time
	Key         string // the task key (see doc.go, "Task keys")
	// TypeHint is added to the "missing type" error (e.g. how to give a
	// default type).
	TypeHint string
}

// DefaultSubmitDefaults are the defaults of qo submit.
var DefaultSubmitDefaults = SubmitDefaults{Timeout: DefaultTimeout, MaxRetries: DefaultMaxRetries}

// SubmitDoc is a decoded submit document. Delay and ExpiresIn, when set,
// are relative to the moment of submission: Resolve turns them into times
// just before submitting.
type SubmitDoc struct {
	Request   SubmitRequest
	Delay     time.Duration
	ExpiresIn time.Duration
}

// Resolve returns the request with Delay and ExpiresIn applied at now (the
// queue clock). ExpiresIn counts from when the task becomes available; a
// task without a delay then becomes available at now, so that both come
// from one reading of the clock (Submit reads it again a little later,
// which could otherwise leave a short expiry before the availability).
func (d SubmitDoc) Resolve(now time.Time) SubmitRequest {
	req := d.Request
	if d.Delay > 0 {
		req.AvailableAt = now.Add(d.Delay)
	}
	if d.ExpiresIn > 0 {
		if req.AvailableAt.IsZero() {
			req.AvailableAt = now
		}
		req.ExpiresAt = req.AvailableAt.Add(d.ExpiresIn)
	}
	return req
}

// inputText strips the ErrInvalidInput prefix from err's text.
func inputText(err error) string {
	return strings.TrimPrefix(err.Error(), ErrInvalidInput.Error()+": ")
}

// DecodeSubmit decodes and validates a submit document: one JSON object
// with the SubmitFields, as qo submit --file reads per line and the HTTP
// API takes as a body. Fields left out take def's values. Every problem is
// an ErrInvalidInput naming the field and what it wants.
func DecodeSubmit(doc []byte, def SubmitDefaults) (SubmitDoc, error) {
	t, err := decodeSubmit(doc, def)
	if err != nil {
		return SubmitDoc{}, fmt.Errorf("%w: %w", ErrInvalidInput, err)
	}
	return t, nil
}

func decodeSubmit(line []byte, def SubmitDefaults) (SubmitDoc, error) {
	var t SubmitDoc
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	var fields map[string]json.RawMessage
	if err := dec.Decode(&fields); err != nil {
		return t, errors.New(jsonErrorText(err))
	}
	if fields == nil {
		return t, errors.New("want a JSON object, got null")
	}
	if dec.More() {
		return t, errors.New("more than one JSON value (want one object)")
	}
	if err := knownFields(fields, SubmitFields); err != nil {
		return t, err
	}
	req := &t.Request

	// type
	typ, err := stringField(fields, "type")
	if err != nil {
		return t, err
	}
	alias, err := stringField(fields, "task_type")
	if err != nil {
		return t, err
	}
	switch {
	case typ != "" && alias != "":
		return t, errors.New(`give either "type" or "task_type", not both`)
	case alias != "":
		typ = alias
	case typ == "":
		typ = def.Type
	}
	if typ == "" {
		hint := ""
		if def.TypeHint != "" {
			hint = "; " + def.TypeHint
		}
		return t, fmt.Errorf(`missing "type" (the task type a worker handles%s)`, hint)
	}
	if err := ValidateType(typ); err != nil {
		return t, fmt.Errorf("type: %s", inputText(err))
	}
	req.Type = typ

	// input: any JSON value, kept as written (compacted by Submit).
	if raw, ok := fields["input"]; ok && !isNull(raw) {
		req.Input = raw
	}

	// timeout_seconds
	req.Timeout = def.Timeout
	if raw, ok := fields["timeout_seconds"]; ok && !isNull(raw) {
		n, err := intField("timeout_seconds", raw)
		if err != nil {
			return t, err
		}
		if n < 1 {
			return t, fmt.Errorf("timeout_seconds %d is below the 1 second minimum", n)
		}
		req.Timeout = time.Duration(n) * time.Second
	}

	// max_retries
	retries := def.MaxRetries
	if raw, ok := fields["max_retries"]; ok && !isNull(raw) {
		n, err := intField("max_retries", raw)
		if err != nil {
			return t, err
		}
		if n < 0 {
			return t, fmt.Errorf("max_retries %d is negative (0 runs the task once)", n)
		}
		retries = int(n)
	}
	req.MaxRetries = &retries

	// retry_policy: fields not given keep their defaults.
	if raw, ok := fields["retry_policy"]; ok && !isNull(raw) {
		p := DefaultRetryPolicy
		pd := json.NewDecoder(bytes.NewReader(raw))
		pd.DisallowUnknownFields()
		if err := pd.Decode(&p); err != nil {
			return t, fmt.Errorf("retry_policy: %s (want {\"initial_interval_ms\", \"max_interval_ms\", \"multiplier\", \"jitter_percent\"})", jsonErrorText(err))
		}
		if err := p.Validate(); err != nil {
			return t, errors.New(inputText(err))
		}
		req.RetryPolicy = &p
	}

	// delay | available_at
	given := false
	if t.Delay, req.AvailableAt, given, err = whenField(fields, "delay", "available_at"); err != nil {
		return t, err
	}
	if !given {
		t.Delay, req.AvailableAt = def.Delay, def.AvailableAt
	}

	// idempotency_key
	key, err := stringField(fields, "idempotency_key")
	if err != nil {
		return t, err
	}
	if len(key) > MaxIdempotencyKeyLen {
		return t, fmt.Errorf("idempotency_key is %d bytes long (at most %d)", len(key), MaxIdempotencyKeyLen)
	}
	req.IdempotencyKey = key

	// unique_while_active | unique_for (see Uniqueness windows in doc.go)
	if raw, ok := fields["unique_while_active"]; ok && !isNull(raw) {
		if json.Unmarshal(raw, &req.UniqueWhileActive) != nil {
			return t, fmt.Errorf("unique_while_active: want true or false, got %s", jsonKind(raw))
		}
	}
	if raw, ok := fields["unique_for"]; ok && !isNull(raw) {
		if req.UniqueFor, err = durationField("unique_for", raw); err != nil {
			return t, err
		}
		if req.UniqueFor <= 0 {
			return t, errors.New(`unique_for must be positive, e.g. "10m" (leave it out for a key held for good)`)
		}
	}
	switch {
	case (req.UniqueWhileActive || req.UniqueFor > 0) && key == "":
		return t, errors.New("unique_while_active and unique_for need an idempotency_key: the window applies to that key")
	case req.UniqueWhileActive && req.UniqueFor > 0:
		return t, errors.New("unique_while_active and unique_for exclude each other: give one")
	}

	// priority
	prio, err := stringField(fields, "priority")
	if err != nil {
		return t, err
	}
	if prio == "" {
		prio = string(def.Priority)
	}
	if req.Priority, err = ParsePriority(prio); err != nil {
		return t, fmt.Errorf("priority: %s", inputText(err))
	}

	// key (see Task keys in doc.go)
	tkey, err := stringField(fields, "key")
	if err != nil {
		return t, err
	}
	if tkey == "" {
		tkey = def.Key
	}
	if tkey != "" {
		if err := ValidateTaskKey(tkey); err != nil {
			return t, fmt.Errorf("key: %s", inputText(err))
		}
	}
	req.Key = tkey

	// expires_in | expires_at
	if t.ExpiresIn, req.ExpiresAt, given, err = whenField(fields, "expires_in", "expires_at"); err != nil {
		return t, err
	}
	switch {
	case !given:
		t.ExpiresIn, req.ExpiresAt = def.ExpiresIn, def.ExpiresAt
	case t.ExpiresIn == 0 && req.ExpiresAt.IsZero():
		return t, errors.New("expires_in must be positive (leave it out for a task that never expires)")
	}

	// after, on_parent_failure (see Dependencies in doc.go)
	if raw, ok := fields["after"]; ok && !isNull(raw) {
		var ids []string
		if err := json.Unmarshal(raw, &ids); err != nil {
			return t, errors.New(`after: want an array of task ids, e.g. ["0b6f4c2e-8d1a-4f7e-9c3b-2a5d6e7f8a9b"]`)
		}
		for _, s := range ids {
			id, err := ParseID(s)
			if err != nil {
				return t, fmt.Errorf("after: %s", inputText(err))
			}
			req.After = append(req.After, id)
		}
		if err := checkParents(req.After); err != nil {
			return t, fmt.Errorf("after: %s", inputText(err))
		}
	}
	policy, err := stringField(fields, "on_parent_failure")
	if err != nil {
		return t, err
	}
	if policy != "" {
		if len(req.After) == 0 {
			return t, errors.New(`on_parent_failure needs "after" (it says what the task does when a parent does not complete)`)
		}
		if req.OnParentFailure, err = ParseParentFailure(policy); err != nil {
			return t, errors.New(inputText(err))
		}
	}

	// metadata: {key: string value}, within the bounds of ValidateMetadata.
	if raw, ok := fields["metadata"]; ok && !isNull(raw) {
		var m map[string]string
		if jsonKind(raw) != "an object" {
			return t, fmt.Errorf(`metadata: want an object of strings, e.g. {"tenant": "acme"}, got %s`, jsonKind(raw))
		}
		if json.Unmarshal(raw, &m) != nil {
			return t, errors.New(`metadata: every value must be a string, e.g. {"tenant": "acme", "batch": "7"}`)
		}
		if err := ValidateMetadata(m); err != nil {
			return t, errors.New(inputText(err))
		}
		if len(m) > 0 {
			req.Metadata = m
		}
	}
	return t, nil
}

// whenField reads a pair of fields giving one moment: rel, a duration from
// the moment of submission, or abs, an RFC 3339 time (not both). given is
// false when neither is there (or both are null).
func whenField(fields map[string]json.RawMessage, rel, abs string) (d time.Duration, at time.Time, given bool, err error) {
	rawRel, hasRel := fields[rel]
	hasRel = hasRel && !isNull(rawRel)
	rawAbs, hasAbs := fields[abs]
	hasAbs = hasAbs && !isNull(rawAbs)
	switch {
	case hasRel && hasAbs:
		return 0, time.Time{}, true, fmt.Errorf("give either %q or %q, not both", rel, abs)
	case hasRel:
		d, err = durationField(rel, rawRel)
		return d, time.Time{}, true, err
	case hasAbs:
		s, err := stringField(fields, abs)
		if err != nil {
			return 0, time.Time{}, true, err
		}
		at, err = time.Parse(time.RFC3339, s)
		if err != nil {
			return 0, time.Time{}, true, fmt.Errorf("%s %q is not an RFC 3339 time (e.g. 2025-06-01T08:00:00Z)", abs, s)
		}
		return 0, at, true, nil
	}
	return 0, time.Time{}, false, nil
}

// jsonErrorText words a decoding error for a human.
func jsonErrorText(err error) string {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return fmt.Sprintf("not valid JSON: %s (at byte %d)", strings.TrimPrefix(syn.Error(), "json: "), syn.Offset)
	case errors.As(err, &typ) && typ.Field == "":
		return fmt.Sprintf("want a JSON object, got a JSON %s", typ.Value)
	case errors.As(err, &typ):
		return fmt.Sprintf("field %s: want a %s, got a JSON %s", typ.Field, typ.Type, typ.Value)
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return "not valid JSON: unexpected end of input"
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

// stringField returns fields[name] as a string ("" when absent or null).
func stringField(fields map[string]json.RawMessage, name string) (string, error) {
	raw, ok := fields[name]
	if !ok || isNull(raw) {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", fmt.Errorf("%s: want a string, got %s", name, jsonKind(raw))
	}
	return s, nil
}

func intField(name string, raw json.RawMessage) (int64, error) {
	var n json.Number
	if jsonKind(raw) != "a number" || json.Unmarshal(raw, &n) != nil {
		return 0, fmt.Errorf("%s: want a whole number, got %s", name, jsonKind(raw))
	}
	i, err := n.Int64()
	if err != nil {
		return 0, fmt.Errorf("%s: want a whole number, got %s", name, n)
	}
	return i, nil
}

// durationField accepts a Go duration string ("90s", "1h30m") or a number
// of seconds.
func durationField(name string, raw json.RawMessage) (time.Duration, error) {
	var d time.Duration
	var s string
	var n json.Number
	switch {
	case json.Unmarshal(raw, &s) == nil:
		var err error
		d, err = time.ParseDuration(s)
		if err != nil {
			return 0, fmt.Errorf("%s %q is not a duration (e.g. \"90s\", \"1h30m\", or a number of seconds)", name, s)
		}
	case jsonKind(raw) == "a number" && json.Unmarshal(raw, &n) == nil:
		f, err := n.Float64()
		if err != nil {
			return 0, fmt.Errorf("%s: %s is not a number of seconds", name, n)
		}
		d = time.Duration(f * float64(time.Second))
	default:
		return 0, fmt.Errorf("%s: want a duration string or a number of seconds, got %s", name, jsonKind(raw))
	}
	if d < 0 {
		return 0, fmt.Errorf("%s %s is negative", name, d)
	}
	return d, nil
}

// jsonKind names the JSON type of raw for error messages.
func jsonKind(raw json.RawMessage) string {
	s := bytes.TrimSpace(raw)
	if len(s) == 0 {
		return "nothing"
	}
	switch s[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}
