package main

import (
	"testing"

	"github.com/qo-queue/qo/internal/testutil"
)

// README.md's Go program is this package's main.go, so go test compiles
// what the README shows.
func TestREADMEProgram(t *testing.T) {
	testutil.READMEProgram(t, "../../README.md", "gotasks", "main.go")
}
