package queue

import (
	"fmt"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Metadata bounds (see doc.go, "Task metadata"). They keep a task object
// small whatever its submitter attaches: a task's metadata is read with
// the task on every claim and every listing that decodes it.
const (
	// MaxMetadataKeys is the most entries a task's metadata holds.
	MaxMetadataKeys = 32
	// MaxMetadataKeyLen bounds one key, in bytes.
	MaxMetadataKeyLen = 64
	// MaxMetadataBytes bounds the sum of the lengths of all keys and
	// values, in bytes.
	MaxMetadataBytes = 4096
)

// Reserved metadata keys: the W3C trace context of the submit that made
// the task (https://www.w3.org/TR/trace-context/). qo stores them like
// any other entry; exec handlers get them as TRACEPARENT and TRACESTATE.
const (
	MetaTraceparent = "traceparent"
	MetaTracestate  = "tracestate"
)

// ValidateMetadata checks a task's metadata against the bounds: at most
// MaxMetadataKeys entries; keys of 1..MaxMetadataKeyLen characters from
// [A-Za-z0-9._-]; values valid UTF-8 without control characters; keys
// and values together at most MaxMetadataBytes bytes.
func ValidateMetadata(m map[string]string) error {
	if len(m) > MaxMetadataKeys {
		return invalidInput("metadata has %d entries (at most %d)", len(m), MaxMetadataKeys)
	}
	total := 0
	for _, k := range sortedKeys(m) {
		v := m[k]
		if err := validateMetadataKey(k); err != nil {
			return err
		}
		if !utf8.ValidString(v) {
			return invalidInput("metadata %q: value is not valid UTF-8", k)
		}
		if i := strings.IndexFunc(v, unicode.IsControl); i >= 0 {
			r, _ := utf8.DecodeRuneInString(v[i:])
			return invalidInput("metadata %q: value contains the control character %q at byte %d (tabs, newlines and the like are not allowed)", k, r, i)
		}
		total += len(k) + len(v)
	}
	if total > MaxMetadataBytes {
		return invalidInput("metadata is %d bytes (keys and values together; at most %d): keep large values in the input", total, MaxMetadataBytes)
	}
	return nil
}

func validateMetadataKey(k string) error {
	if k == "" {
		return invalidInput("metadata key is empty")
	}
	if len(k) > MaxMetadataKeyLen {
		return invalidInput("metadata key %q is %d bytes long (at most %d)", k, len(k), MaxMetadataKeyLen)
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '.', c == '-':
		default:
			r, _ := utf8.DecodeRuneInString(k[i:])
			return invalidInput("metadata key %q contains %q (allowed: letters, digits, _ . -)", k, string(r))
		}
	}
	return nil
}

// ParseMetadataEntry splits one KEY=VALUE entry (the value may be empty
// and may hold '=').
func ParseMetadataEntry(s string) (key, value string, err error) {
	key, value, ok := strings.Cut(s, "=")
	if !ok {
		return "", "", invalidInput("metadata %q has no '=': want KEY=VALUE", s)
	}
	if err := validateMetadataKey(key); err != nil {
		return "", "", err
	}
	return key, value, nil
}

// MetadataLines renders metadata as sorted "key=value" lines.
func MetadataLines(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for _, k := range sortedKeys(m) {
		out = append(out, fmt.Sprintf("%s=%s", k, m[k]))
	}
	return out
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
