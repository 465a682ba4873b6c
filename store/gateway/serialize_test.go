//go:build !nogateway

package gateway

import (
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A GET's share of its key's lock lasts until its body is read to the end
// or closed (once, whichever comes first); a write waits for it; unused
// locks are dropped.
func TestKeyLocks(t *testing.T) {
	t.Parallel()
	l := keyLocks{m: map[string]*keyLock{}}
	body := &unlockingBody{ReadCloser: io.NopCloser(strings.NewReader("body")), release: l.read("b/k")}
	wrote, released := make(chan struct{}), make(chan struct{})
	go func() {
		release := l.write("b/k", "b/other", "b/k")
		close(wrote)
		release()
		close(released)
	}()
	select {
	case <-wrote:
		t.Fatal("a write went ahead of a GET whose body is still open")
	default:
	}
	_, err := io.ReadAll(body)
	require.NoError(t, err)
	<-wrote // the end of the body released the read
	require.NoError(t, body.Close(), "closing after the end releases nothing twice")
	<-released
	l.mu.Lock()
	defer l.mu.Unlock()
	require.Empty(t, l.m)
}
