package testutil

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

// Writers and a reader at once: every read sees whole writes only, and
// every write is there at the end, once.
func TestBufferConcurrentWrites(t *testing.T) {
	t.Parallel()
	const writers, lines = 8, 500
	var b Buffer
	if b.String() != "" {
		t.Fatalf("a new Buffer holds %q", b.String())
	}
	stop := make(chan struct{})
	readerDone := make(chan error, 1)
	go func() {
		for {
			s := b.String()
			if s != "" && !strings.HasSuffix(s, "\n") {
				readerDone <- fmt.Errorf("read a partial write: %q", s[max(0, len(s)-20):])
				return
			}
			select {
			case <-stop:
				readerDone <- nil
				return
			default:
			}
		}
	}()
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range lines {
				if n, err := fmt.Fprintf(&b, "writer %d line %d\n", w, i); err != nil || n == 0 {
					t.Errorf("write: %d, %v", n, err)
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	if err := <-readerDone; err != nil {
		t.Error(err)
	}
	seen := map[string]int{}
	for _, l := range strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n") {
		seen[l]++
	}
	if len(seen) != writers*lines {
		t.Errorf("%d distinct lines, want %d", len(seen), writers*lines)
	}
	for l, n := range seen {
		if n != 1 {
			t.Errorf("line %q written %d times", l, n)
		}
	}
}
