package queuetest_test

import (
	"testing"

	"github.com/qo-queue/qo/internal/testutil"
)

// README.md's queuetest snippet is the body of Example.
func TestREADMESnippet(t *testing.T) {
	testutil.READMESnippet(t, "../README.md", "queuetest", "example_test.go")
}
