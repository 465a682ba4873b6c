package worker_test

import (
	"os"
	"strings"
	"testing"
)

// The Go snippet of README.md is the body of ExampleNew between its
// "README: begin" and "README: end" markers, so go test compiles and runs
// what the README shows.
func TestREADMEGoSnippetIsExampleNew(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(readme), "\n```go\n")
	if !ok {
		t.Fatal("README.md has no ```go block")
	}
	snippet, _, ok := strings.Cut(after, "\n```")
	if !ok {
		t.Fatal("README.md: the ```go block does not end")
	}
	if strings.Contains(after, "\n```go\n") {
		t.Fatal("README.md has more than one ```go block: test the others too")
	}

	src, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	_, body, ok := strings.Cut(string(src), "\t// README: begin\n")
	if !ok {
		t.Fatal("example_test.go: no README: begin marker")
	}
	body, _, ok = strings.Cut(body, "\t// README: end\n")
	if !ok {
		t.Fatal("example_test.go: no README: end marker")
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimSuffix(body, "\n"), "\n") {
		lines = append(lines, strings.TrimPrefix(l, "\t"))
	}
	if got := strings.Join(lines, "\n"); got != snippet {
		t.Errorf("README.md's Go snippet and ExampleNew differ: change both.\nREADME.md:\n%s\n\nExampleNew:\n%s", snippet, got)
	}
}
