package queue_test

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
)

// TestDocTransitionTableMatchesCode checks that doc.go's "Allowed
// transitions" table lists exactly the (from, event, to) rows of
// queue.Transitions(), so the table people read cannot drift from the one
// the validator enforces.
func TestDocTransitionTableMatchesCode(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile("doc.go")
	require.NoError(t, err)
	text := string(src)
	start := strings.Index(text, "# Allowed transitions")
	require.GreaterOrEqual(t, start, 0, "doc.go has no Allowed transitions section")
	end := strings.Index(text[start+1:], "\n# ")
	require.Greater(t, end, 0)
	section := text[start : start+1+end]

	statuses := map[string]bool{"(new)": true}
	for _, s := range queue.Statuses {
		statuses[string(s)] = true
	}
	documented := map[string]bool{}
	for line := range strings.SplitSeq(section, "\n") {
		f := strings.Fields(line)
		if !strings.HasPrefix(line, "\t") || len(f) < 3 || !statuses[f[0]] {
			continue
		}
		from := strings.TrimPrefix(f[0], "(new)")
		documented[from+" "+f[1]+" "+f[2]] = true
	}
	inCode := map[string]bool{}
	for _, tr := range queue.Transitions() {
		inCode[string(tr.From)+" "+tr.Event+" "+string(tr.To)] = true
	}
	require.Equal(t, inCode, documented, "doc.go's table (left: code, right: doc)")
}
