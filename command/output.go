package command

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/qo-queue/qo/internal/termsafe"
)

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func reasonSuffix(r string) string {
	if r == "" {
		return ""
	}
	return ": " + oneLine(r)
}

func formatTime(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05.000Z") }

func formatTimePtr(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return formatTime(*t)
}

// timeWithCountdown renders t with how far it is from now: "(in 4m12s)",
// or past (pastWord + " 3s ago").
func timeWithCountdown(t, now time.Time, pastWord string) string {
	d := t.Sub(now)
	if d > 0 {
		return fmt.Sprintf("%s (in %s)", formatTime(t), roundDuration(d))
	}
	if pastWord == "now" {
		return fmt.Sprintf("%s (now)", formatTime(t))
	}
	return fmt.Sprintf("%s (%s %s ago)", formatTime(t), pastWord, roundDuration(-d))
}

func roundDuration(d time.Duration) time.Duration {
	if d >= time.Second {
		return d.Round(time.Second)
	}
	return d.Round(time.Millisecond)
}

// oneLine renders text from the bucket (an error, a reason) as one short
// line for a terminal: white space folded, at most 200 bytes, control
// characters escaped.
func oneLine(s string) string { return termsafe.Line(foldSpace(s)) }

// foldSpace folds white space runs into one space and cuts s to 200 bytes
// (on a character boundary).
func foldSpace(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	return cutText(s, 200, "...")
}

// cutText cuts s to at most n bytes on a character boundary, adding more
// when it cut.
func cutText(s string, n int, more string) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + more
}

// jsonText renders a JSON document from the bucket on one line: compacted,
// cut to 200 bytes, control characters escaped.
func jsonText(m json.RawMessage) string {
	if m == nil {
		return "null"
	}
	var b bytes.Buffer
	s := string(m)
	if json.Compact(&b, m) == nil {
		s = b.String()
	}
	return termsafe.Line(cutText(s, 200, "... (--json shows all)"))
}

// tabRow writes cells as one tabwriter row, each escaped (a tab or a
// newline inside a cell would break the table, an ESC the terminal).
func tabRow(w io.Writer, cells ...string) {
	for i, c := range cells {
		cells[i] = termsafe.Line(c)
	}
	fmt.Fprintln(w, strings.Join(cells, "\t"))
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// idList renders up to max ids, then how many more.
func idList(ids []uuid.UUID, max int) string {
	var parts []string
	for i, id := range ids {
		if i == max {
			parts = append(parts, fmt.Sprintf("and %d more", len(ids)-max))
			break
		}
		parts = append(parts, id.String())
	}
	return strings.Join(parts, ", ")
}

// emitJSON writes v as indented JSON and a newline: the --json output of
// every command, with the characters a terminal acts on escaped
// (termsafe.JSON: same JSON value).
func emitJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(termsafe.JSONWriter(w))
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
