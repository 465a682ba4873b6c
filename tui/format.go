package tui

import (
	"fmt"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/qo-queue/qo/internal/termsafe"
)

// ago renders how long before now t was: "3s ago", "4m ago", "2h ago".
func ago(t, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := now.Sub(t)
	if d < 0 {
		return "in " + short(-d)
	}
	return short(d) + " ago"
}

// short renders a duration in at most two units: 42s, 3m05s, 2h10m, 3d4h.
func short(d time.Duration) string {
	if d < 0 {
		d = -d
	}
	switch {
	case d < time.Second:
		return "0s"
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d/time.Minute), int(d%time.Minute/time.Second))
	case d < 24*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d/time.Hour), int(d%time.Hour/time.Minute))
	default:
		return fmt.Sprintf("%dd%dh", int(d/(24*time.Hour)), int(d%(24*time.Hour)/time.Hour))
	}
}

// fit pads or cuts s (which may hold ANSI styles) to exactly w cells.
func fit(s string, w int) string {
	if w <= 0 {
		return ""
	}
	if n := ansi.StringWidth(s); n <= w {
		return s + strings.Repeat(" ", w-n)
	}
	return ansi.Truncate(s, w, "…")
}

// cut shortens s to at most w cells.
func cut(s string, w int) string {
	if ansi.StringWidth(s) <= w {
		return s
	}
	return ansi.Truncate(s, w, "…")
}

// safe escapes the control characters of text from the bucket (task
// types, errors, reasons, worker and schedule fields): every such string
// passes through it, or oneLine, before it is drawn.
func safe(s string) string { return termsafe.Line(s) }

// oneLine folds s onto one line, control characters escaped.
func oneLine(s string) string { return safe(strings.Join(strings.Fields(s), " ")) }

var sparkRunes = []rune("▁▂▃▄▅▆▇█")

// sparkline renders values as a row of block characters scaled to the
// largest value; zero is a space-height bar so gaps stay visible.
func sparkline(values []int) string {
	peak := 0
	for _, v := range values {
		peak = max(peak, v)
	}
	var b strings.Builder
	for _, v := range values {
		if peak == 0 || v == 0 {
			b.WriteRune('·')
			continue
		}
		i := (v*len(sparkRunes) - 1) / peak
		b.WriteRune(sparkRunes[min(i, len(sparkRunes)-1)])
	}
	return b.String()
}

// plural renders n things: "1 step", "3 steps".
func plural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return count(n) + " " + thing + "s"
}

// children renders n children.
func children(n int) string {
	if n == 1 {
		return "1 child"
	}
	return count(n) + " children"
}

// count renders n with thousands separators.
func count(n int) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		return "-" + s
	}
	return s
}

// dollars renders a small amount of money readably.
func dollars(v float64) string {
	switch {
	case v == 0:
		return "$0"
	case v < 0.01:
		return fmt.Sprintf("$%.4f", v)
	case v < 100:
		return fmt.Sprintf("$%.2f", v)
	default:
		return "$" + count(int(v+0.5))
	}
}
