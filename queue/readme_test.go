package queue_test

import (
	"testing"

	"github.com/qo-queue/qo/internal/testutil"
)

// README.md's snippet of the queue's Go API is the body of Example_goAPI,
// so go test compiles what the README shows.
func TestREADMESnippet(t *testing.T) {
	testutil.READMESnippet(t, "../README.md", "queue", "example_test.go")
}
