package queue

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
)

// SubmitFields are the keys a submit document may carry (the names of
// SpecFields, and task_type, an alias of type).
var SubmitFields = func() []string {
	var names []string
	for _, f := range SpecFields {
		names = append(names, f.Name)
		if f.Name == "type" {
			names = append(names, "task_type")
		}
	}
	return names
}()

// SubmitDefaults fill the fields a submit document leaves out.
type SubmitDefaults struct {
	SubmitRequest
	// TypeHint is added to the "type is required" error (e.g. how to give
	// a default type).
	TypeHint string
}

// DefaultSubmitDefaults are the defaults of qo submit.
var DefaultSubmitDefaults = SubmitDefaults{SubmitRequest: SubmitRequest{Timeout: DefaultTimeout, MaxRetries: ptrTo(DefaultMaxRetries)}}

func ptrTo[T any](v T) *T { return &v }

// inputText strips the ErrInvalidInput prefix from err's text.
func inputText(err error) string {
	return strings.TrimPrefix(err.Error(), ErrInvalidInput.Error()+": ")
}

// DecodeSubmit decodes and validates a submit document: one JSON object
// with the SubmitFields, as qo submit --file reads per line and the HTTP
// API takes as a body. Fields left out (or null) take def's values; a
// field of a pair (delay | available_at, expires_in | expires_at) replaces
// both of def's. Every problem is an ErrInvalidInput naming the field and
// what it wants: an unknown field, a value of the wrong JSON type, or a
// rule of Validate (then a *SpecError).
func DecodeSubmit(doc []byte, def SubmitDefaults) (SubmitRequest, error) {
	req, err := decodeSubmit(doc, def)
	var se *SpecError
	switch {
	case errors.As(err, &se):
		return req, err
	case err != nil:
		return SubmitRequest{}, fmt.Errorf("%w: %w", ErrInvalidInput, err)
	}
	return req, nil
}

func decodeSubmit(line []byte, def SubmitDefaults) (SubmitRequest, error) {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	var fields map[string]json.RawMessage
	if err := dec.Decode(&fields); err != nil {
		return SubmitRequest{}, errors.New(jsonErrorText(err))
	}
	if fields == nil {
		return SubmitRequest{}, errors.New("want a JSON object, got null")
	}
	if dec.More() {
		return SubmitRequest{}, errors.New("more than one JSON value (want one object)")
	}
	if err := knownFields(fields, SubmitFields); err != nil {
		return SubmitRequest{}, err
	}
	for name, raw := range fields {
		if isNull(raw) {
			delete(fields, name) // null is as absent
		}
	}
	if fields["type"] != nil && fields["task_type"] != nil {
		return SubmitRequest{}, errors.New(`give either "type" or "task_type", not both`)
	}
	req := def.SubmitRequest
	if req.MaxRetries != nil {
		req.MaxRetries = ptrTo(*req.MaxRetries) // not shared with def
	}
	for _, pair := range [][2]string{{"delay", "available_at"}, {"expires_in", "expires_at"}} {
		if fields[pair[0]] != nil || fields[pair[1]] != nil {
			req.clear(pair[0])
			req.clear(pair[1])
		}
	}
	for _, name := range slices.Sorted(maps.Keys(fields)) {
		if err := req.set(name, fields[name]); err != nil {
			return SubmitRequest{}, err
		}
	}
	if req.Type == "" {
		return req, missingType(def.TypeHint)
	}
	return req, req.Validate()
}

// clear resets a field of a pair to "not given".
func (r *SubmitRequest) clear(name string) {
	switch name {
	case "delay":
		r.Delay = 0
	case "available_at":
		r.AvailableAt = time.Time{}
	case "expires_in":
		r.ExpiresIn = 0
	case "expires_at":
		r.ExpiresAt = time.Time{}
	}
}

// set reads the JSON field name (one of SubmitFields, not null) into r:
// its JSON type and form, not its rules (Validate checks those).
func (r *SubmitRequest) set(name string, raw json.RawMessage) error {
	var err error
	switch name {
	case "type", "task_type":
		r.Type, err = stringValue(name, raw)
	case "input":
		r.Input = raw // kept as written, compacted by Submit
	case "timeout_seconds":
		var n int64
		n, err = intField(name, raw)
		r.Timeout = time.Duration(n) * time.Second
	case "max_retries":
		var n int64
		n, err = intField(name, raw)
		r.MaxRetries = ptrTo(int(n))
	case "retry_policy":
		r.RetryPolicy, err = retryPolicyField(raw)
	case "delay":
		r.Delay, err = durationField(name, raw)
	case "available_at":
		r.AvailableAt, err = timeField(name, raw)
	case "idempotency_key":
		r.IdempotencyKey, err = stringValue(name, raw)
	case "unique_while_active":
		if json.Unmarshal(raw, &r.UniqueWhileActive) != nil {
			err = fmt.Errorf("unique_while_active: want true or false, got %s", jsonKind(raw))
		}
	case "unique_for":
		r.UniqueFor, err = durationField(name, raw)
	case "priority":
		var p string
		p, err = stringValue(name, raw)
		r.Priority = Priority(strings.ToLower(p))
	case "key":
		r.Key, err = stringValue(name, raw)
	case "expires_in":
		r.ExpiresIn, err = durationField(name, raw)
	case "expires_at":
		r.ExpiresAt, err = timeField(name, raw)
	case "after":
		r.After, err = idsField(name, raw)
	case "on_parent_failure":
		var p string
		p, err = stringValue(name, raw)
		r.OnParentFailure = ParentFailure(p)
	case "metadata":
		r.Metadata, err = metadataField(raw)
	default:
		err = fmt.Errorf("field %q is not read", name) // a name of SubmitFields set does not know
	}
	if err == nil && isZero(raw) {
		err = GivenZero(name)
	}
	return err
}

// retryPolicyField reads a retry policy: the fields not given keep their
// defaults.
func retryPolicyField(raw json.RawMessage) (*RetryPolicy, error) {
	p := DefaultRetryPolicy
	pd := json.NewDecoder(bytes.NewReader(raw))
	pd.DisallowUnknownFields()
	if err := pd.Decode(&p); err != nil {
		return nil, fmt.Errorf("retry_policy: %s (want {\"initial_interval_ms\", \"max_interval_ms\", \"multiplier\", \"jitter_percent\"})", jsonErrorText(err))
	}
	return &p, nil
}

// idsField reads an array of task ids.
func idsField(name string, raw json.RawMessage) ([]uuid.UUID, error) {
	var ids []string
	if err := json.Unmarshal(raw, &ids); err != nil {
		return nil, fmt.Errorf(`%s: want an array of task ids, e.g. ["0b6f4c2e-8d1a-4f7e-9c3b-2a5d6e7f8a9b"]`, name)
	}
	var out []uuid.UUID
	for _, s := range ids {
		id, err := ParseID(s)
		if err != nil {
			return nil, fmt.Errorf("%s: %s", name, inputText(err))
		}
		out = append(out, id)
	}
	return out, nil
}

// metadataField reads {key: string value}.
func metadataField(raw json.RawMessage) (map[string]string, error) {
	var m map[string]string
	if jsonKind(raw) != "an object" {
		return nil, fmt.Errorf(`metadata: want an object of strings, e.g. {"tenant": "acme"}, got %s`, jsonKind(raw))
	}
	if json.Unmarshal(raw, &m) != nil {
		return nil, errors.New(`metadata: every value must be a string, e.g. {"tenant": "acme", "batch": "7"}`)
	}
	if len(m) == 0 {
		return nil, nil
	}
	return m, nil
}

// timeField reads an RFC 3339 time.
func timeField(name string, raw json.RawMessage) (time.Time, error) {
	s, err := stringValue(name, raw)
	if err != nil {
		return time.Time{}, err
	}
	at, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%s %q is not an RFC 3339 time (e.g. 2025-06-01T08:00:00Z)", name, s)
	}
	return at, nil
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

// isZero reports whether raw is a zero duration (the number 0 or "0s").
func isZero(raw json.RawMessage) bool {
	d, err := durationField("", raw)
	return err == nil && d == 0
}

func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

// stringValue reads a JSON string.
func stringValue(name string, raw json.RawMessage) (string, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", fmt.Errorf("%s: want a string, got %s", name, jsonKind(raw))
	}
	return s, nil
}

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
	return d, nil // its range is Validate's
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
