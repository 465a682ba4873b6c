package testutil

import (
	"os"
	"strings"
	"testing"
)

// READMEProgram fails t unless the Go block of the Markdown file readme
// marked <!-- snippet: name --> is the Go program src from its package
// clause on (the comments before it left out): the README shows a whole
// program that go vet and go test compile.
func READMEProgram(t testing.TB, readme, name, src string) {
	t.Helper()
	snippet := readmeBlock(t, readme, name, false)
	code, err := os.ReadFile(src)
	if err != nil {
		t.Fatalf("%v", err)
	}
	body := string(code)
	if !strings.HasPrefix(body, "package ") {
		i := strings.Index(body, "\npackage ")
		if i < 0 {
			t.Fatalf("%s: no package clause", src)
		}
		body = body[i+1:]
	}
	if got := strings.TrimSuffix(body, "\n"); got != snippet {
		t.Errorf("%s's snippet %s and %s differ: change both.\n%s:\n%s\n\n%s:\n%s", readme, name, src, readme, snippet, src, got)
	}
}
