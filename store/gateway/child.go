//go:build !nogateway

package gateway

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/versity/versitygw/backend/meta"
	"github.com/versity/versitygw/backend/posix"
	"github.com/versity/versitygw/embedgw"
	"github.com/versity/versitygw/s3api"
)

// Embedded reports whether this binary carries the gateway: true unless it
// was built with the tag nogateway.
const Embedded = true

// MaybeRunChild runs the gateway and exits the process when this process was
// started by Start as a gateway child; otherwise it returns at once. Call it
// first thing in main, and in TestMain of every test package that calls Start.
func MaybeRunChild() {
	if os.Getenv(childEnv) != childEnvValue {
		return
	}
	os.Exit(runChild())
}

// Exit codes of the child.
const (
	childOK        = 0
	childFailed    = 1
	childAddrInUse = 3
)

// shutdownGrace is how long requests in flight may take once the gateway
// was asked to stop.
const shutdownGrace = 2 * time.Second

func runChild() int {
	// Stdout is the status channel to the parent; the gateway's own prints
	// go to stderr, which the parent keeps for diagnostics.
	status := os.Stdout
	os.Stdout = os.Stderr
	// The parent decides when the gateway stops (it closes our stdin): ignore
	// interrupts and terminations sent to the whole process group (Ctrl+C,
	// systemd's control-group kill, timeout(1)), so the parent's workers can
	// still finish or release their tasks through us while it shuts down. A
	// parent that dies outright takes us along (stdin EOF, Pdeathsig).
	signal.Ignore(os.Interrupt, syscall.SIGTERM)
	ctx := context.Background()

	in := bufio.NewReader(os.Stdin)
	line, err := in.ReadBytes('\n')
	if err != nil {
		fmt.Fprintf(os.Stderr, "qo gateway: read configuration from parent: %v\n", err)
		return childFailed
	}
	var cfg childConfig
	if err := json.Unmarshal(line, &cfg); err != nil {
		fmt.Fprintf(os.Stderr, "qo gateway: bad configuration from parent: %v\n", err)
		return childFailed
	}
	// The parent holds the other end of stdin for the gateway's lifetime:
	// EOF means Stop was called or the parent died.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		_, _ = io.Copy(io.Discard, in)
		cancel()
	}()
	// Graceful shutdown waits for every open connection, and idle keep-alive
	// connections of clients that are still alive would hold it for long.
	// Requests in flight get a short grace; then the process exits. Objects
	// are written to a temporary file and linked into place, so an exit
	// never leaves a partial object.
	go func() {
		<-ctx.Done()
		time.Sleep(shutdownGrace)
		fmt.Fprintln(os.Stderr, "qo gateway: connections still open after the shutdown grace period; exiting")
		os.Exit(childOK)
	}()

	err = serve(ctx, cfg, func() { fmt.Fprintln(status, msgReady) })
	switch {
	case err == nil:
		return childOK
	case isAddrInUse(err):
		fmt.Fprintln(status, msgAddrInUse)
		fmt.Fprintf(os.Stderr, "qo gateway: %v\n", err)
		return childAddrInUse
	default:
		fmt.Fprintf(os.Stderr, "qo gateway: %v\n", err)
		return childFailed
	}
}

// serve runs the gateway until ctx is done. It changes the working directory.
func serve(ctx context.Context, cfg childConfig, onListen func()) error {
	var ms meta.MetadataStorer = meta.XattrMeta{}
	popts := posix.PosixOpts{VersioningDir: cfg.Versions}
	if cfg.Sidecar != "" {
		sc, err := meta.NewSideCar(cfg.Sidecar)
		if err != nil {
			return fmt.Errorf("sidecar metadata in %s: %w", cfg.Sidecar, err)
		}
		ms = sc
		popts.SideCarDir = cfg.Sidecar
	}
	be, err := posix.New(cfg.Root, ms, popts)
	if err != nil {
		return fmt.Errorf("posix backend in %s: %w", cfg.Root, err)
	}
	// Serialized per key: every read whole, in either metadata mode (see
	// serialize.go).
	return embedgw.RunVersityGW(ctx, newSerialized(be), &embedgw.Config{
		RootUserAccess:    cfg.AccessKey,
		RootUserSecret:    cfg.SecretKey,
		Region:            cfg.Region,
		Ports:             []string{cfg.Addr},
		MaxConnections:    10000,
		MaxRequests:       5000,
		MultipartMaxParts: 10000,
		Quiet:             true,
		KeepAlive:         true,
		S3Options:         []s3api.Option{s3api.WithOnListen(onListen)},
	})
}

func isAddrInUse(err error) bool {
	return errors.Is(err, syscall.EADDRINUSE) || strings.Contains(err.Error(), "address already in use")
}
