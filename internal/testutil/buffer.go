package testutil

import (
	"bytes"
	"sync"
)

// Buffer collects output while the test reads it: an io.Writer safe for
// concurrent use (a child process's stdout and stderr, a logger shared by
// goroutines) whose String may be called at any time. The zero Buffer is
// empty and ready to use.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p; it never fails.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
