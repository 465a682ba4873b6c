package command

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/urfave/cli/v2"
)

// isLoopback reports whether a listen address only accepts local
// connections.
func isLoopback(addr string) (bool, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false, usageError("invalid --addr %q: want host:port, e.g. 127.0.0.1:8080", addr)
	}
	if host == "localhost" {
		return true, nil
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback(), nil
}

// newHTTPServer returns a server with timeouts suited to the API.
func newHTTPServer(addr string, h http.Handler, log *slog.Logger) *http.Server {
	return &http.Server{
		Addr: addr, Handler: h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       60 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
}

// serveHTTP listens on addr and serves h until SIGINT or SIGTERM, then sets
// stopping and shuts down gracefully. listening (nil: none) gets the
// address it listens on (the port chosen when addr's is 0) once it does.
func serveHTTP(c *cli.Context, log *slog.Logger, addr string, h http.Handler, what string, stopping *atomic.Bool, listening func(addr string) error) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return usageError("cannot listen on %s: %v (is another server using it? pick another with --addr)", addr, err)
	}
	srv := newHTTPServer(addr, h, log)
	ctx, cancel := context.WithCancel(c.Context)
	defer cancel()
	stop := onSignals(func(int) { cancel() })
	defer stop()
	log.Info("qo "+strings.ToLower(what)+" listening", "addr", ln.Addr().String())
	fmt.Fprintf(c.App.ErrWriter, "qo: %s on http://%s\n", what, ln.Addr())
	if listening != nil {
		// Before it serves: whoever sees it answer has seen this too.
		if err := listening(ln.Addr().String()); err != nil {
			ln.Close()
			return err
		}
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	stopping.Store(true)
	shutCtx, shutCancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer shutCancel()
	if err := srv.Shutdown(shutCtx); err != nil {
		return fmt.Errorf("shut down the %s server: %w", what, err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// logRequests logs every request at debug level, and failures at warn.
func logRequests(log *slog.Logger, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		h.ServeHTTP(rec, r)
		level := slog.LevelDebug
		if rec.status >= 500 {
			level = slog.LevelWarn
		}
		log.Log(r.Context(), level, "http request", "method", r.Method, "path", r.URL.Path, "status", rec.status, "took", time.Since(start).String())
	})
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) { s.status = code; s.ResponseWriter.WriteHeader(code) }
