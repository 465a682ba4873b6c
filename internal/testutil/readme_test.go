package testutil

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestREADMESnippet(t *testing.T) {
	t.Parallel()
	const example = "package x\n\nfunc Example() {\n\tsetup()\n\t// README: begin\n\ta := 1\n\tif a > 0 {\n\t\tuse(a)\n\t}\n\t// README: end\n}\n"
	tests := []struct {
		name, readme string
		fail         string // substring of the failure; "" = passes
	}{
		{"same", "# x\n<!-- snippet: x -->\n```go\na := 1\nif a > 0 {\n\tuse(a)\n}\n```\n", ""},
		{"differs", "<!-- snippet: x -->\n```go\na := 2\nif a > 0 {\n\tuse(a)\n}\n```\n", "differ"},
		{"unmarked block", "<!-- snippet: x -->\n```go\na := 1\nif a > 0 {\n\tuse(a)\n}\n```\n\n```go\nb := 2\n```\n", "no <!-- snippet"},
		{"no such snippet", "<!-- snippet: y -->\n```go\na := 1\n```\n", "no Go block marked"},
		{"other languages ignored", "```sh\nqo dev\n```\n<!-- snippet: x -->\n```go\na := 1\nif a > 0 {\n\tuse(a)\n}\n```\n", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			readme, src := filepath.Join(dir, "README.md"), filepath.Join(dir, "x_test.go")
			for path, text := range map[string]string{readme: tc.readme, src: example} {
				if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			r := run(func(tb testing.TB) { READMESnippet(tb, readme, "x", src) })
			switch {
			case tc.fail == "" && r.failed:
				t.Fatalf("failed: %s", r.failure)
			case tc.fail != "" && !r.failed:
				t.Fatalf("passed, want a failure about %q", tc.fail)
			case tc.fail != "" && !strings.Contains(r.failure, tc.fail):
				t.Fatalf("failure %q, want one about %q", r.failure, tc.fail)
			}
		})
	}
}
