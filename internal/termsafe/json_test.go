package termsafe

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestJSON: the characters a terminal acts on that encoding/json leaves
// raw are escaped; the result is valid JSON with the same value.
func TestJSON(t *testing.T) {
	t.Parallel()
	var all strings.Builder
	for r := rune(0); r < 0x3000; r++ {
		all.WriteRune(r)
	}
	values := []any{
		"plain ünïcödé 🙂",
		"\x1b]0;title\x07 \u009b2J \u202eevil\u202c \x7f \u0085 \u061c \u200e\u200f \u2066x\u2069",
		map[string]any{"out\u009b": []any{"\u202a", 1, nil, "\u2028\u2029"}},
		all.String(),
	}
	for _, v := range values {
		enc, err := json.Marshal(v)
		require(t, err == nil, "marshal: %v", err)
		for _, indent := range []bool{false, true} {
			in := enc
			if indent {
				var b bytes.Buffer
				require(t, json.Indent(&b, enc, "", "  ") == nil, "indent")
				in = b.Bytes()
			}
			got := JSON(in)
			require(t, json.Valid(got), "not valid JSON: %q", got)
			var back any
			require(t, json.Unmarshal(got, &back) == nil, "unmarshal")
			want, _ := json.Marshal(v)
			again, _ := json.Marshal(back)
			require(t, bytes.Equal(want, again), "the value changed: %q", got)
			for _, r := range string(got) {
				require(t, !unsafe(r) || r == '\n', "raw %U in %q", r, got)
			}
		}
	}
	clean := []byte(`{"a":"plain ünïcödé 🙂"}`)
	require(t, &JSON(clean)[0] == &clean[0], "clean JSON is returned as it is")
	require(t, string(JSON([]byte(`"\u009b"`))) == `"\u009b"`, "an escape stays an escape")
	require(t, string(JSON([]byte("\"\u009b\u202e\x7f\""))) == `"\u009b\u202e\u007f"`, "got %s", JSON([]byte("\"\u009b\u202e\x7f\"")))
	require(t, utf8.Valid(JSON([]byte("\"\u00e9\u009b\""))), "valid UTF-8")
}

func TestJSONWriter(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	n, err := JSONWriter(&b).Write([]byte("{\"a\":\"\u009b\"}\n"))
	require(t, err == nil && n == len("{\"a\":\"\u009b\"}\n"), "Write returns the length written to it: %d %v", n, err)
	require(t, b.String() == "{\"a\":\"\\u009b\"}\n", "got %q", b.String())
}

func require(t *testing.T, ok bool, format string, args ...any) {
	t.Helper()
	if !ok {
		t.Fatalf(format, args...)
	}
}
