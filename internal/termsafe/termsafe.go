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
