package testutil

import (
	"fmt"
	"testing"
	"time"
)

// WaitLimit is how long Eventually waits: generous, because the machine
// running the tests may be shared and slow, and only ever reached when the
// test fails anyway.
const WaitLimit = 60 * time.Second

// defaultEvery is the longest pause between two checks of Eventually.
const defaultEvery = 10 * time.Millisecond

// Eventually calls cond until it returns true. When WaitLimit passes first
// it fails the test with "gave up after 1m0s waiting for " and the message
// format and args make, so the message names what was awaited: "task %s
// to complete". See Poll for a wait with other bounds.
func Eventually(t testing.TB, cond func() bool, format string, args ...any) {
	t.Helper()
	Poll{}.Until(t, cond, format, args...)
}

// Poll is a wait with its own bounds; the zero Poll waits as Eventually
// does.
type Poll struct {
	// Limit is how long to wait before the test fails; WaitLimit when zero.
	Limit time.Duration
	// Every is the longest pause between two checks; 10ms when zero.
	// Pauses start at a millisecond and double up to it, so a condition
	// that holds soon is seen soon. A costly check (a child process, a
	// page of requests) wants a longer one.
	Every time.Duration
}

// Until calls cond until it returns true and fails the test as Eventually
// does when p.Limit passes first. cond runs on the caller's goroutine, so
// it may fail the test itself. The message is formatted only then: an
// argument with a String method (a *Buffer, a Lazy) shows what it holds
// at the end, not when Until was called.
func (p Poll) Until(t testing.TB, cond func() bool, format string, args ...any) {
	t.Helper()
	limit, every := p.Limit, p.Every
	if limit <= 0 {
		limit = WaitLimit
	}
	if every <= 0 {
		every = defaultEvery
	}
	deadline := time.Now().Add(limit)
	pause := min(time.Millisecond, every)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up after %v waiting for %s", limit, fmt.Sprintf(format, args...))
			return // a testing.TB that does not stop the goroutine
		}
		time.Sleep(pause)
		pause = grow(pause, every)
	}
}

// grow returns the pause after pause: twice as long, at most every.
func grow(pause, every time.Duration) time.Duration {
	return min(2*pause, every)
}

// Lazy is a message argument computed when the message is formatted:
// Poll.Until(t, cond, "the screen to show it; it shows:\n%s",
// Lazy(screen)) reads the screen once, when the wait failed.
type Lazy func() string

// String returns what f returns now.
func (f Lazy) String() string { return f() }
