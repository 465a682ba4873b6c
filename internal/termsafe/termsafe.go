// Package termsafe makes untrusted text safe to print on a terminal.
//
// Task data (types, errors, inputs, outputs, reasons, worker and schedule
// names) comes from the bucket, where anyone with write access, or any
// handler, can put control characters in it. Printed raw, an ESC sequence
// retitles the terminal, clears the screen or rewrites what the operator
// sees; a carriage return hides the start of a line. Every human-readable
// output of qo passes such text through Line (one line: a table cell, a
// field) or Text (a block that may span lines).
//
// Dangerous characters are replaced by their Go escape, visible and
// unambiguous: ESC becomes \x1b, CR \r, BEL \a, a C1 control \u009b, a
// bidirectional override \u202e, a byte that is not UTF-8 \xff. Printable
// text, including any Unicode letter or emoji, is left as it is.
package termsafe

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Line escapes every control character of s, newlines and tabs included:
// for text that must stay on one line (a table cell, a field value, a log
// line).
func Line(s string) string { return escape(s, false) }

// Text escapes every control character of s except newline and tab: for a
// multi-line block printed as it is.
func Text(s string) string { return escape(s, true) }

// unsafe reports whether r must not reach a terminal raw: C0 and C1
// controls, DEL, and the bidirectional formatting characters that reorder
// what is displayed (the "Trojan Source" characters).
func unsafe(r rune) bool {
	switch {
	case unicode.IsControl(r):
		return true
	case r == '\u061c', r == '\u200e', r == '\u200f',
		r >= '\u202a' && r <= '\u202e', r >= '\u2066' && r <= '\u2069':
		return true
	}
	return false
}

func escape(s string, keepLines bool) string {
	i := firstUnsafe(s, keepLines)
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	b.WriteString(s[:i])
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case unsafe(r) && !(keepLines && (r == '\n' || r == '\t')):
			q := strconv.QuoteRune(r) // '\x1b', '\u009b', '\r'
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// firstUnsafe returns the index of the first byte of s that needs an
// escape, or -1.
func firstUnsafe(s string, keepLines bool) int {
	for i, r := range s {
		if r == utf8.RuneError {
			if _, n := utf8.DecodeRuneInString(s[i:]); n == 1 {
				return i
			}
		}
		if unsafe(r) && !(keepLines && (r == '\n' || r == '\t')) {
			return i
		}
	}
	return -1
}

// JSON rewrites encoded JSON so a terminal shows it as it is: every
// character Line escapes that encoding/json leaves raw (DEL, the C1
// controls such as the 8-bit CSI U+009B, and the bidirectional formatting
// characters) becomes a \uXXXX escape. It stays valid JSON with the same
// value: outside strings JSON holds only ASCII punctuation and white
// space, and inside a string \uXXXX is that character. C0 controls are
// already escaped by encoding/json (they cannot be raw in a JSON
// string). b is returned as it is when nothing needs an escape.
func JSON(b []byte) []byte {
	i := firstJSONUnsafe(b)
	if i < 0 {
		return b
	}
	out := make([]byte, 0, len(b)+12)
	out = append(out, b[:i]...)
	for i < len(b) {
		r, n := utf8.DecodeRune(b[i:])
		if jsonUnsafe(r, n) {
			out = fmt.Appendf(out, `\u%04x`, r)
		} else {
			out = append(out, b[i:i+n]...)
		}
		i += n
	}
	return out
}

// jsonUnsafe reports whether the rune r (n bytes long) must be escaped in
// JSON: a character unsafe on a terminal that encoding/json writes raw.
func jsonUnsafe(r rune, n int) bool {
	return !(r == utf8.RuneError && n == 1) && r >= 0x7f && unsafe(r)
}

func firstJSONUnsafe(b []byte) int {
	for i := 0; i < len(b); {
		if b[i] < 0x7f {
			i++
			continue
		}
		r, n := utf8.DecodeRune(b[i:])
		if jsonUnsafe(r, n) {
			return i
		}
		i += n
	}
	return -1
}

// JSONWriter returns a writer that passes each Write through JSON before
// w: for writers that get whole JSON documents or records in one Write,
// as json.Encoder.Encode and slog's JSON handler do (a character split
// across two Writes would not be escaped).
func JSONWriter(w io.Writer) io.Writer { return jsonWriter{w} }

type jsonWriter struct{ w io.Writer }

func (j jsonWriter) Write(p []byte) (int, error) {
	if _, err := j.w.Write(JSON(p)); err != nil {
		return 0, err
	}
	return len(p), nil
}
