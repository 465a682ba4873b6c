// Package termsafetest holds what tests of terminal output share: text that
// tries to take over a terminal, and the check that none of it got through.
package termsafetest

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Hostile is text a handler or anyone with write access to the bucket can
// put in a task: an OSC that retitles the terminal, a clear-screen CSI, a
// carriage return that hides what precedes it, an 8-bit CSI.
const Hostile = "boom \x1b]0;pwned\x07 \x1b[2J \rhidden \u009b31m end"

// RequireNoControl fails t when out (the output of what) holds a byte a
// terminal would act on.
func RequireNoControl(t testing.TB, what, out string) {
	t.Helper()
	for _, raw := range []string{"\x1b", "\x07", "\r", "\u009b"} {
		require.NotContains(t, out, raw, "%s prints a raw %q:\n%s", what, raw, out)
	}
}
