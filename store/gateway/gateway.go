// Package gateway runs qo's embedded S3 server: versitygw over its posix
// backend, with object versioning, listening on a local address.
//
// # Why a child process
//
// The posix backend changes the working directory of the whole process when
// it starts, and versitygw keeps package-level state that allows one gateway
// per process. So the gateway never runs inside the calling process: Start
// re-executes the current binary (os.Executable) with an environment marker,
// and the re-executed process runs the gateway instead of its usual main.
// Every binary (and every test binary) that calls Start must therefore call
// MaybeRunChild first thing in main (or TestMain):
//
//	func main() {
//		gateway.MaybeRunChild() // returns unless this process is a gateway child
//		...
//	}
//
// # Lifetime
//
// The child never outlives its parent: it exits when its stdin (a pipe from
// the parent) closes, which happens when the parent calls Stop or dies for any
// reason, and on Linux it also gets SIGTERM from the kernel when the parent
// dies (PR_SET_PDEATHSIG). Interrupts from the terminal (Ctrl-C) are ignored
// by the child so the parent decides the order of shutdown.
//
// # Data layout
//
// Under Options.DataDir:
//
//	buckets/   one directory per bucket (the posix backend's root)
//	versions/  noncurrent object versions (must be outside buckets/)
//	meta/      object metadata, only on filesystems without user xattrs
//
// Metadata lives in extended attributes when the filesystem supports user
// xattrs (detected by trying), else in the sidecar directory meta/. Once a
// data directory uses meta/, it keeps using it, so data stays readable when
// moved.
//
// # Whole reads
//
// versitygw keeps an object's ETag apart from its body, and with sidecar
// metadata it stores a PUT's new ETag before it links the new body into
// place, so a GET in between answered the old body with the new ETag (a
// torn read: a stale compare-and-swap then wins). The child serializes
// each key's reads and writes (serialize.go), so every GET and HEAD sees
// an object whole, in either metadata mode.
//
// # Builds without the gateway
//
// versitygw and the libraries it links (its HTTP framework, its IAM and
// event backends) make up about a third of the qo binary. The build tag
// nogateway leaves them out, for binaries that only reach real buckets (the
// container image): the package keeps its API, Embedded is false, and Start
// fails with ErrNotEmbedded.
package gateway

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	"github.com/pkg/xattr"
)

// Defaults for Options.
const (
	DefaultAddr         = "127.0.0.1:0"
	DefaultRegion       = "us-east-1"
	DefaultStartTimeout = 30 * time.Second
)

// Options configures Start.
type Options struct {
	// DataDir holds all gateway data (created if missing). Required.
	DataDir string
	// Addr is the listen address, host:port. Port 0 (the default
	// "127.0.0.1:0") picks a free port.
	Addr string
	// AccessKey and SecretKey are the root credentials clients sign with.
	// Required.
	AccessKey string
	SecretKey string
	// Region reported to clients; default "us-east-1".
	Region string
	// Bucket, when set, is created with versioning enabled if missing.
	Bucket string
	// Logger receives the child's output when it fails; default slog.Default().
	Logger *slog.Logger
	// SidecarMetadata forces sidecar metadata even where user xattrs work.
	SidecarMetadata bool
	// StartTimeout bounds the wait for the gateway to answer; default 30s.
	StartTimeout time.Duration
}

// Gateway is a running embedded S3 server in a child process.
type Gateway struct {
	addr     string
	endpoint string
	region   string
	sidecar  bool
	logger   *slog.Logger

	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr *tailBuffer
	done   chan struct{} // closed when the child has exited and been reaped
	waitMu sync.Mutex
	err    error // the child's exit status, valid after done

	stopOnce sync.Once
	stopErr  error
	stopping chan struct{}
}

// Endpoint is the gateway's URL, e.g. "http://127.0.0.1:40123".
func (g *Gateway) Endpoint() string { return g.endpoint }

// Addr is the address the gateway listens on.
func (g *Gateway) Addr() string { return g.addr }

// Region is the region the gateway reports.
func (g *Gateway) Region() string { return g.region }

// PID is the process id of the gateway child.
func (g *Gateway) PID() int { return g.cmd.Process.Pid }

// SidecarMetadata reports whether object metadata lives in the sidecar
// directory (the filesystem has no user xattrs, or it was forced).
func (g *Gateway) SidecarMetadata() bool { return g.sidecar }

// Done is closed when the child process has exited, after Stop or on a crash.
func (g *Gateway) Done() <-chan struct{} { return g.done }

// Err returns why the child exited (nil while it runs or after a clean Stop).
func (g *Gateway) Err() error {
	select {
	case <-g.done:
	default:
		return nil
	}
	g.waitMu.Lock()
	defer g.waitMu.Unlock()
	return g.err
}

// ErrNotEmbedded is Start's error in a binary built with the tag nogateway.
var ErrNotEmbedded error = notEmbeddedError{}

type notEmbeddedError struct{}

func (notEmbeddedError) Error() string {
	return "this qo was built without the embedded S3 gateway (the worker image): run qo dev from the release binary, or point qo at a bucket with --endpoint"
}

// ExitCode is 2, as for a usage error: this binary cannot run the command.
// It makes the error a cli.ExitCoder (github.com/urfave/cli), whose code the
// qo command exits with.
func (notEmbeddedError) ExitCode() int { return 2 }

// errAddrInUse: the child could not bind its listen address.
var errAddrInUse = errors.New("listen address already in use")

// Start launches the gateway in a child process, waits until it answers S3
// requests and, when opts.Bucket is set, creates that bucket with versioning
// enabled if it is missing. The gateway runs until Stop is called or the
// calling process exits; ctx bounds only the start. In a build without the
// gateway (Embedded false) it returns ErrNotEmbedded.
func Start(ctx context.Context, opts Options) (*Gateway, error) {
	if !Embedded {
		return nil, ErrNotEmbedded
	}
	if opts.DataDir == "" {
		return nil, errors.New("gateway: DataDir is required")
	}
	if opts.AccessKey == "" || opts.SecretKey == "" {
		return nil, errors.New("gateway: AccessKey and SecretKey are required")
	}
	if opts.Addr == "" {
		opts.Addr = DefaultAddr
	}
	if opts.Region == "" {
		opts.Region = DefaultRegion
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = DefaultStartTimeout
	}
	if opts.Bucket != "" && !validBucketName(opts.Bucket) {
		return nil, fmt.Errorf("gateway: bucket name %q is invalid: use 3 to 63 lowercase letters, digits, dots and hyphens, starting and ending with a letter or digit", opts.Bucket)
	}
	host, port, err := net.SplitHostPort(opts.Addr)
	if err != nil {
		return nil, fmt.Errorf("gateway: listen address %q must be host:port (e.g. 127.0.0.1:9000): %w", opts.Addr, err)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return nil, fmt.Errorf("gateway: listen address %q: port must be a number from 0 to 65535", opts.Addr)
	}

	dataDir, err := filepath.Abs(opts.DataDir)
	if err != nil {
		return nil, fmt.Errorf("gateway: data dir %q: %w", opts.DataDir, err)
	}
	cfg := childConfig{
		Root:      filepath.Join(dataDir, "buckets"),
		Versions:  filepath.Join(dataDir, "versions"),
		AccessKey: opts.AccessKey,
		SecretKey: opts.SecretKey,
		Region:    opts.Region,
	}
	for _, dir := range []string{cfg.Root, cfg.Versions} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("gateway: create data directory: %w", err)
		}
	}
	sidecarDir := filepath.Join(dataDir, "meta")
	if opts.SidecarMetadata || dirExists(sidecarDir) || !userXattrsWork(cfg.Root) {
		if err := os.MkdirAll(sidecarDir, 0o755); err != nil {
			return nil, fmt.Errorf("gateway: create metadata directory: %w", err)
		}
		cfg.Sidecar = sidecarDir
	}

	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("gateway: locate the current executable to run the gateway: %w", err)
	}

	ctx, cancel := context.WithTimeout(ctx, opts.StartTimeout)
	defer cancel()

	autoPort := port == "0"
	var g *Gateway
	for attempt := 1; ; attempt++ {
		cfg.Addr = opts.Addr
		if autoPort {
			if cfg.Addr, err = freeAddr(host); err != nil {
				return nil, fmt.Errorf("gateway: pick a free port on %q: %w", host, err)
			}
		}
		g, err = launch(ctx, exe, cfg, opts.Logger)
		if err == nil {
			break
		}
		// Another process may grab the free port between our probe and the
		// child's bind; try a few other ports before giving up.
		if autoPort && errors.Is(err, errAddrInUse) && attempt < 5 {
			continue
		}
		if errors.Is(err, errAddrInUse) {
			return nil, fmt.Errorf("gateway: cannot listen on %s: address already in use; choose another address or stop whatever uses it", cfg.Addr)
		}
		return nil, err
	}
	g.region = opts.Region
	g.sidecar = cfg.Sidecar != ""

	if err := g.prepare(ctx, opts); err != nil {
		g.logChildOutput("gateway did not answer S3 requests")
		_ = g.Stop()
		return nil, err
	}
	go g.watch()
	return g, nil
}

// childConfig is what the parent sends the child, as one JSON line on its
// stdin (never on the command line or in the environment: it holds secrets).
type childConfig struct {
	Root      string `json:"root"`
	Versions  string `json:"versions"`
	Sidecar   string `json:"sidecar,omitempty"`
	Addr      string `json:"addr"`
	AccessKey string `json:"access_key"`
	SecretKey string `json:"secret_key"`
	Region    string `json:"region"`
}

// Lines the child writes on its stdout, the parent's status channel.
const (
	msgReady      = "ready"
	msgAddrInUse  = "addr-in-use"
	childEnv      = "QO_GATEWAY_CHILD"
	childEnvValue = "1"
)

// launch starts one child and waits for it to listen.
func launch(ctx context.Context, exe string, cfg childConfig, logger *slog.Logger) (*Gateway, error) {
	cmd := exec.Command(exe)
	cmd.Args = []string{"qo-gateway"}
	cmd.Env = append(os.Environ(), childEnv+"="+childEnvValue)
	cmd.Dir = cfg.Root
	setChildAttrs(cmd)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	stderr := &tailBuffer{max: 64 << 10}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("gateway: start child process %s: %w", exe, err)
	}
	host, port, _ := net.SplitHostPort(cfg.Addr)
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	g := &Gateway{
		addr:     cfg.Addr,
		endpoint: "http://" + net.JoinHostPort(host, port),
		logger:   logger,
		cmd:      cmd,
		stdin:    stdin,
		stderr:   stderr,
		done:     make(chan struct{}),
		stopping: make(chan struct{}),
	}

	ready := make(chan struct{})
	addrInUse := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			switch sc.Text() {
			case msgReady:
				close(ready)
			case msgAddrInUse:
				close(addrInUse)
			}
		}
		// Wait only after stdout is drained (os/exec requires it); stdout
		// closes when the child exits.
		_, _ = io.Copy(io.Discard, stdout)
		err := cmd.Wait()
		g.waitMu.Lock()
		g.err = err
		g.waitMu.Unlock()
		close(g.done)
	}()

	line, err := json.Marshal(cfg)
	if err == nil {
		_, err = stdin.Write(append(line, '\n'))
	}
	if err != nil {
		_ = cmd.Process.Kill()
		<-g.done
		return nil, fmt.Errorf("gateway: send configuration to child: %w%s", err, g.stderrSuffix())
	}

	select {
	case <-ready:
		return g, nil
	case <-addrInUse:
		_ = stdin.Close()
		g.reap()
		return nil, errAddrInUse
	case <-g.done:
		g.logChildOutput("gateway child exited during start")
		return nil, fmt.Errorf("gateway: child exited during start (%v)%s", g.Err(), g.stderrSuffix())
	case <-ctx.Done():
		_ = stdin.Close()
		g.reap()
		g.logChildOutput("gateway did not start in time")
		return nil, fmt.Errorf("gateway: not listening on %s after waiting: %w%s", cfg.Addr, ctx.Err(), g.stderrSuffix())
	}
}

// prepare proves the gateway answers S3 requests and creates the bucket.
func (g *Gateway) prepare(ctx context.Context, opts Options) error {
	cli := s3.New(s3.Options{
		Region:       opts.Region,
		BaseEndpoint: aws.String(g.endpoint),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(opts.AccessKey, opts.SecretKey, ""),
	})
	if opts.Bucket == "" {
		if _, err := cli.ListBuckets(ctx, &s3.ListBucketsInput{}); err != nil {
			return fmt.Errorf("gateway: list buckets on %s: %w", g.endpoint, err)
		}
		return nil
	}
	bucket := aws.String(opts.Bucket)
	if _, err := cli.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: bucket}); err != nil {
		if !isNotFound(err) {
			return fmt.Errorf("gateway: check bucket %q on %s: %w", opts.Bucket, g.endpoint, err)
		}
		_, err := cli.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: bucket})
		var owned *types.BucketAlreadyOwnedByYou
		if err != nil && !errors.As(err, &owned) {
			return fmt.Errorf("gateway: create bucket %q: %w", opts.Bucket, err)
		}
	}
	v, err := cli.GetBucketVersioning(ctx, &s3.GetBucketVersioningInput{Bucket: bucket})
	if err != nil {
		return fmt.Errorf("gateway: read versioning of bucket %q: %w", opts.Bucket, err)
	}
	if v.Status != types.BucketVersioningStatusEnabled {
		_, err := cli.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{
			Bucket:                  bucket,
			VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusEnabled},
		})
		if err != nil {
			return fmt.Errorf("gateway: enable versioning on bucket %q: %w", opts.Bucket, err)
		}
	}
	return nil
}

func isNotFound(err error) bool {
	var nf *types.NotFound
	var nsb *types.NoSuchBucket
	if errors.As(err, &nf) || errors.As(err, &nsb) {
		return true
	}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		switch ae.ErrorCode() {
		case "NotFound", "NoSuchBucket":
			return true
		}
	}
	return false
}

// watch logs an unexpected exit of the child.
func (g *Gateway) watch() {
	select {
	case <-g.stopping:
	case <-g.done:
		select {
		case <-g.stopping:
		default:
			g.logChildOutput("gateway child exited unexpectedly")
		}
	}
}

// Stop shuts the gateway down (gracefully, then by force after 10s) and
// waits for the child to exit. It is safe to call more than once.
func (g *Gateway) Stop() error {
	g.stopOnce.Do(func() {
		close(g.stopping)
		select {
		case <-g.done:
			// Already gone: report how it ended.
			if err := g.Err(); err != nil {
				g.stopErr = fmt.Errorf("gateway: child had exited: %w%s", err, g.stderrSuffix())
			}
			return
		default:
		}
		_ = g.stdin.Close() // the child exits when its stdin closes
		select {
		case <-g.done:
			if err := g.Err(); err != nil {
				g.logChildOutput("gateway child failed while stopping")
				g.stopErr = fmt.Errorf("gateway: child exit: %w%s", err, g.stderrSuffix())
			}
		case <-time.After(10 * time.Second):
			_ = g.cmd.Process.Kill()
			<-g.done
			g.stopErr = errors.New("gateway: child did not stop within 10s and was killed")
		}
	})
	return g.stopErr
}

// reap waits for a child we asked to exit, killing it if it lingers.
func (g *Gateway) reap() {
	select {
	case <-g.done:
	case <-time.After(5 * time.Second):
		_ = g.cmd.Process.Kill()
		<-g.done
	}
}

func (g *Gateway) logChildOutput(msg string) {
	out := strings.TrimSpace(g.stderr.String())
	if out == "" {
		g.logger.Error(msg, "pid", g.cmd.Process.Pid, "addr", g.addr)
		return
	}
	g.logger.Error(msg, "pid", g.cmd.Process.Pid, "addr", g.addr, "output", out)
}

// stderrSuffix is the last line of the child's output, for error messages.
func (g *Gateway) stderrSuffix() string {
	out := strings.TrimSpace(g.stderr.String())
	if out == "" {
		return ""
	}
	if i := strings.LastIndexByte(out, '\n'); i >= 0 {
		out = out[i+1:]
	}
	return ": " + out
}

// freeAddr returns host:port with a port nothing listens on right now.
func freeAddr(host string) (string, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return "", err
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		return "", err
	}
	return addr, nil
}

// userXattrsWork reports whether dir's filesystem stores user extended
// attributes, by setting and removing one.
func userXattrsWork(dir string) bool {
	if !xattr.XATTR_SUPPORTED {
		return false
	}
	const name = "user.qo.probe"
	if err := xattr.Set(dir, name, []byte("1")); err != nil {
		return false
	}
	_ = xattr.Remove(dir, name)
	return true
}

// validBucketName applies the S3 bucket naming rules the gateway enforces.
func validBucketName(name string) bool {
	if len(name) < 3 || len(name) > 63 {
		return false
	}
	for i, r := range name {
		alnum := (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9')
		if (i == 0 || i == len(name)-1) && !alnum {
			return false
		}
		if !alnum && r != '-' && r != '.' {
			return false
		}
	}
	return !strings.Contains(name, "..") && net.ParseIP(name) == nil
}

func dirExists(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf bytes.Buffer
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf.Write(p)
	if over := t.buf.Len() - t.max; over > 0 {
		t.buf.Next(over)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.buf.String()
}
