package testutil

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// snippetRE matches a Go block of a Markdown file and the marker line
// before it that names the example it shows: <!-- snippet: NAME -->.
var snippetRE = regexp.MustCompile("(?m)^(?:<!-- snippet: ([^ ]+) -->\\n)?```go\\n((?s:.*?))\\n```")

// READMESnippet fails t unless the Go block of the Markdown file readme
// marked <!-- snippet: name --> is the code of the Go file src between its
// "// README: begin" and "// README: end" comments, one tab of indentation
// removed: the example compiles (and, with an Output comment, runs) what
// the document shows. Every Go block of readme must carry a marker, so a
// new one cannot go untested.
func READMESnippet(t testing.TB, readme, name, src string) {
	t.Helper()
	snippet := readmeBlock(t, readme, name, true)
	code, err := os.ReadFile(src)
	if err != nil {
		t.Fatalf("%v", err)
	}
	_, body, ok := strings.Cut(string(code), "\t// README: begin\n")
	if !ok {
		t.Fatalf("%s: no README: begin marker", src)
	}
	body, _, ok = strings.Cut(body, "\t// README: end\n")
	if !ok {
		t.Fatalf("%s: no README: end marker", src)
	}
	lines := strings.Split(strings.TrimSuffix(body, "\n"), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimPrefix(l, "\t")
	}
	if got := strings.Join(lines, "\n"); got != snippet {
		t.Errorf("%s's snippet %s and %s differ: change both.\n%s:\n%s\n\n%s:\n%s", readme, name, src, readme, snippet, src, got)
	}
}

// readmeBlock returns the Go block of the Markdown file readme marked
// <!-- snippet: name -->, failing t when there is none; with everyMarked,
// also when a Go block of readme has no marker.
func readmeBlock(t testing.TB, readme, name string, everyMarked bool) string {
	t.Helper()
	doc, err := os.ReadFile(readme)
	if err != nil {
		t.Fatalf("%v", err)
	}
	var snippet string
	found := false
	for _, m := range snippetRE.FindAllStringSubmatch(string(doc), -1) {
		switch {
		case m[1] == "" && everyMarked:
			t.Fatalf("%s: a Go block has no <!-- snippet: NAME --> line before it: add one and an example that compiles it", readme)
		case m[1] == name:
			snippet, found = m[2], true
		}
	}
	if !found {
		t.Fatalf("%s: no Go block marked <!-- snippet: %s -->", readme, name)
	}
	return snippet
}
