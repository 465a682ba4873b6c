package command

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestServeRefusesUnsafeConfigurations: qo serve refuses, with exit 2 and
// an error naming the fix, --no-auth with an --allow-origin that lets any
// page in, and beyond loopback a placeholder or guessable token. Each is
// refused before the bucket is opened.
func TestServeRefusesUnsafeConfigurations(t *testing.T) {
	for _, tc := range []struct {
		name  string
		token string
		args  []string
		want  string
	}{
		{"no-auth, any origin", "", []string{"--no-auth", "--allow-origin", "*"}, `--no-auth with --allow-origin "*"`},
		{"no-auth, null origin", "", []string{"--no-auth", "--allow-origin", "null"}, `--no-auth with --allow-origin "null"`},
		{"placeholder", "REPLACE_ME", []string{"--addr", "0.0.0.0:0"}, `the API token is the placeholder "REPLACE_ME"`},
		{"one letter", "a", []string{"--addr", "0.0.0.0:0"}, "too weak to serve beyond loopback"},
		{"short hex", "0123456789abcdef", []string{"--addr", "0.0.0.0:0"}, "openssl rand -hex 16"},
		{"a word repeated", "passwordpasswordpassword", []string{"--addr", "[::]:0"}, "too weak"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(envAPIToken, tc.token)
			t.Setenv("S3_BUCKET", "") // refused before any bucket is needed
			var out, errb bytes.Buffer
			code := runApp(append([]string{"qo", "serve"}, tc.args...), &out, &errb)
			require.Equal(t, 2, code, errb.String())
			require.Contains(t, errb.String(), tc.want)
		})
	}
}

func TestTokenBits(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		tok    string
		strong bool
	}{
		{"a", false},
		{"REPLACE_ME", false},
		{"0123456789abcdef", false},                // 16 hex digits: 64 bits
		{"0123456789abcdef0123456789abcdef", true}, // openssl rand -hex 16
		{"Zm9vYmFyYmF6cXV4Zm9vYmFyYg", true},       // 26 base64 characters
		{"correct-horse-battery-staple-x", true},   // 30 characters, two classes
	} {
		require.Equal(t, tc.strong, checkTokenStrength(tc.tok) == nil, "token %q: %.0f bits", tc.tok, tokenBits(tc.tok))
	}
}
