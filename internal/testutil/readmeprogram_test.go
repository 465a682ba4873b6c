package testutil

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestREADMEProgram(t *testing.T) {
	t.Parallel()
	const program = "// Command x does x.\npackage main\n\nfunc main() {\n\tprintln(1)\n}\n"
	tests := []struct {
		name, readme, src string
		fail              string // substring of the failure; "" = passes
	}{
		{"same, doc comment left out", "<!-- snippet: x -->\n```go\npackage main\n\nfunc main() {\n\tprintln(1)\n}\n```\n", program, ""},
		{"no doc comment", "<!-- snippet: x -->\n```go\npackage main\n\nfunc main() {}\n```\n", "package main\n\nfunc main() {}\n", ""},
		{"differs", "<!-- snippet: x -->\n```go\npackage main\n\nfunc main() {\n\tprintln(2)\n}\n```\n", program, "differ"},
		{"no such snippet", "<!-- snippet: y -->\n```go\npackage main\n```\n", program, "no Go block marked"},
		{"no package clause", "<!-- snippet: x -->\n```go\npackage main\n```\n", "// nothing\n", "no package clause"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			readme, src := filepath.Join(dir, "README.md"), filepath.Join(dir, "main.go")
			for path, text := range map[string]string{readme: tc.readme, src: tc.src} {
				if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			r := run(func(tb testing.TB) { READMEProgram(tb, readme, "x", src) })
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
