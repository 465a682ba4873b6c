package command

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/urfave/cli/v2"
)

// Listening on port 0, serveHTTP tells what it listens on the port it
// got, before it answers (qo serve's web UI link named port 0 before).
func TestServeHTTPTellsTheAddressListenedOn(t *testing.T) {
	t.Parallel()
	var stderr bytes.Buffer
	app := &cli.App{ErrWriter: &stderr}
	c := cli.NewContext(app, nil, nil)
	ctx, cancel := context.WithCancel(context.Background())
	c.Context = ctx
	got := make(chan string, 1)
	done := make(chan error, 1)
	var stopping atomic.Bool
	go func() {
		done <- serveHTTP(c, slog.New(slog.DiscardHandler), "127.0.0.1:0", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.WriteString(w, "up")
		}), "API", &stopping, func(addr string) error {
			got <- addr
			return nil
		})
	}()
	addr := <-got
	require.False(t, strings.HasSuffix(addr, ":0"), "the port listened on: %s", addr)
	resp, err := http.Get("http://" + addr + "/")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, "up", string(body))
	cancel()
	require.NoError(t, <-done)
	require.True(t, stopping.Load())
	require.Contains(t, stderr.String(), "qo: API on http://"+addr+"\n")
}
