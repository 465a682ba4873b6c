package termsafe

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestLineAndText(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in, line, text string
	}{
		{"plain text, ünïcödé and 🙂‍↕️", "plain text, ünïcödé and 🙂‍↕️", "plain text, ünïcödé and 🙂‍↕️"},
		{"", "", ""},
		{"\x1b]0;pwned\x07title", `\x1b]0;pwned\atitle`, `\x1b]0;pwned\atitle`},
		{"before\x1b[2Jafter", `before\x1b[2Jafter`, `before\x1b[2Jafter`},
		{"hidden\rshown", `hidden\rshown`, `hidden\rshown`},
		{"a\nb\tc", `a\nb\tc`, "a\nb\tc"},
		{"del\x7f nul\x00 bs\b", `del\x7f nul\x00 bs\b`, `del\x7f nul\x00 bs\b`},
		{"c1 \u009b2J next\u0085", `c1 \u009b2J next\u0085`, `c1 \u009b2J next\u0085`},
		{"bidi \u202eevil\u202c \u2066x\u2069", `bidi \u202eevil\u202c \u2066x\u2069`, `bidi \u202eevil\u202c \u2066x\u2069`},
		{"bad \xff\xfe utf8 \xc2", `bad \xff\xfe utf8 \xc2`, `bad \xff\xfe utf8 \xc2`},
		{"\ufffd is a real replacement character", "\ufffd is a real replacement character", "\ufffd is a real replacement character"},
	}
	for _, tc := range tests {
		t.Run(tc.line, func(t *testing.T) {
			t.Parallel()
			if got := Line(tc.in); got != tc.line {
				t.Errorf("Line(%q) = %q, want %q", tc.in, got, tc.line)
			}
			if got := Text(tc.in); got != tc.text {
				t.Errorf("Text(%q) = %q, want %q", tc.in, got, tc.text)
			}
		})
	}
}

// FuzzLine: whatever goes in, nothing a terminal interprets comes out, and
// clean text is left alone.
func FuzzLine(f *testing.F) {
	for _, s := range []string{"ok", "\x1b]0;pwned\x07", "\x1b[2J\r", "\u009b\u202e", "\xff", "a\nb\tc"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for name, out := range map[string]string{"Line": Line(s), "Text": Text(s)} {
			if !utf8.ValidString(out) {
				t.Fatalf("%s(%q) = %q is not UTF-8", name, s, out)
			}
			for _, r := range out {
				if unsafe(r) && !(name == "Text" && (r == '\n' || r == '\t')) {
					t.Fatalf("%s(%q) = %q holds %U", name, s, out, r)
				}
			}
		}
		if firstUnsafe(s, false) < 0 && Line(s) != s {
			t.Fatalf("Line changed clean text %q", s)
		}
		if strings.ContainsAny(Line(s), "\n\t") {
			t.Fatalf("Line(%q) spans lines", s)
		}
	})
}
