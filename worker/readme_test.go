package worker_test

import (
	"testing"

	"github.com/qo-queue/qo/internal/testutil"
)

// README.md's first Go snippet is the body of ExampleNew, so go test
// compiles and runs what the README shows.
func TestREADMESnippet(t *testing.T) {
	testutil.READMESnippet(t, "../README.md", "worker", "example_test.go")
}
