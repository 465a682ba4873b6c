package devenv

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/qo-queue/qo/monitor"
	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store/gateway"
	"github.com/qo-queue/qo/worker"
)

// Defaults of Config. The address is fixed (not a free port) so that the
// environment's endpoint stays the same across restarts.
const (
	DefaultAddr        = "127.0.0.1:9470"
	DefaultBucket      = "qo-dev"
	DefaultConcurrency = 4
	DefaultDemoRate    = 1.0
	MaxDemoRate        = 50.0
	// WorkerID is the embedded worker's id.
	WorkerID = "qo-dev"
)

// Errors of Start, matched with errors.Is.
var (
	// ErrConfig: the Config cannot work (a bad bucket name, a limit for a
	// type no handler serves, ...).
	ErrConfig = errors.New("invalid dev environment configuration")
	// ErrRunning: another dev environment runs on the data directory.
	ErrRunning = errors.New("a dev environment already runs on this data directory")
	// ErrAddrInUse: something else listens on the address.
	ErrAddrInUse = errors.New("address already in use")
	// ErrGatewayExited: the embedded S3 server exited while the
	// environment ran (Err and Close report it).
	ErrGatewayExited = errors.New("the embedded S3 server exited unexpectedly")
)

// Config says what Start starts. Every field but DataDir has a default.
type Config struct {
	// DataDir keeps the gateway's buckets, its credentials and the state
	// file; required and absolute (DataDir resolves one).
	DataDir string
	// Addr is the gateway's listen address (default DefaultAddr; port 0
	// picks a free port). It serves the bucket with root keys and CORS
	// open to every origin: keep it on loopback.
	Addr string
	// Bucket is the versioned bucket of the queue (default DefaultBucket).
	Bucket string
	// Concurrency is how many tasks the worker runs at once (default
	// DefaultConcurrency); Limits caps types within it.
	Concurrency int
	Limits      map[string]int
	// Execs are exec handlers beside the built-in ones (echo, sleep,
	// fail); one replaces a built-in of the same type. Their processes
	// get PassEnv's variables of this process and Env's NAME=VALUE
	// entries besides the few every handler gets (see worker.ExecOptions).
	Execs   []worker.ExecSpec
	PassEnv []string
	Env     []string
	// ShutdownTimeout is how long Close waits for running tasks before it
	// releases them (0: worker.DefaultShutdownTimeout).
	ShutdownTimeout time.Duration
	// Demo submits sample tasks, DemoRate a second (default
	// DefaultDemoRate, at most MaxDemoRate), so every view has something
	// to show.
	Demo     bool
	DemoRate float64
	// Logger gets the log of the gateway, the queue, the worker and its
	// monitor (default: none).
	Logger *slog.Logger
	// Version is the version the worker registers with.
	Version string
}

// bucketNameRE is the S3 bucket naming rule (simplified: no IP-like names
// check, which the server does).
var bucketNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$`)

// ValidBucketName reports whether name is a valid S3 bucket name (3 to 63
// lowercase letters, digits, '-' or '.', starting and ending with a letter
// or digit).
func ValidBucketName(name string) bool { return bucketNameRE.MatchString(name) }

// withDefaults fills in the defaults and checks what is left.
func (c Config) withDefaults() (Config, error) {
	if c.Addr == "" {
		c.Addr = DefaultAddr
	}
	if c.Bucket == "" {
		c.Bucket = DefaultBucket
	}
	if c.Concurrency == 0 {
		c.Concurrency = DefaultConcurrency
	}
	if c.DemoRate == 0 {
		c.DemoRate = DefaultDemoRate
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	switch {
	case c.DataDir == "" || !filepath.IsAbs(c.DataDir):
		return c, configError{fmt.Errorf("data directory %q is not an absolute path", c.DataDir)}
	case !ValidBucketName(c.Bucket):
		return c, configError{fmt.Errorf("bucket %q: want 3 to 63 lowercase letters, digits, '-' or '.', starting and ending with a letter or digit", c.Bucket)}
	case c.Concurrency < 1:
		return c, configError{fmt.Errorf("concurrency %d: must be at least 1", c.Concurrency)}
	case c.DemoRate < 0 || c.DemoRate > MaxDemoRate:
		return c, configError{fmt.Errorf("demo rate %g: want tasks per second above 0 and at most %g", c.DemoRate, MaxDemoRate)}
	}
	return c, nil
}

// configError is an error of the Config, matching ErrConfig; its text is
// the cause's alone.
type configError struct{ err error }

func (e configError) Error() string        { return e.err.Error() }
func (e configError) Unwrap() error        { return e.err }
func (e configError) Is(target error) bool { return target == ErrConfig }

// Env is a running dev environment: the embedded S3 gateway (a child
// process), a versioned bucket holding a queue, a worker with the
// built-in handlers and its embedded monitor, optionally the demo, and
// the state file that lets other processes find it.
type Env struct {
	cfg   Config
	log   *slog.Logger
	gw    *gateway.Gateway
	state *State
	// published: the state file is written (and so is removed at the end).
	published bool
	queue     *queue.Queue
	worker    *worker.Worker
	types     []string

	cancel   context.CancelFunc // stops the worker and the demo
	stopped  chan struct{}      // closed once the worker's Run returned
	demoDone chan struct{}      // closed once the demo stopped (nil: no demo)
	done     chan struct{}      // closed when the environment failed

	mu        sync.Mutex
	err       error // the first failure
	failOnce  sync.Once
	closeOnce sync.Once
}

// Start starts a dev environment on cfg.DataDir: it refuses while another
// one runs there, starts the gateway on cfg.Addr (credentials generated
// once and kept in the data directory), creates the queue in cfg.Bucket on
// first use, publishes the state file and starts the worker (and the
// demo). Data survives a restart: same data directory, same credentials,
// same tasks. ctx bounds the start only; the environment runs until
// Close, or until it fails (Done).
//
// A process that calls Start must call gateway.MaybeRunChild first thing
// in main (or TestMain): the gateway runs in a child process of the same
// binary.
func Start(ctx context.Context, cfg Config) (*Env, error) {
	if !gateway.Embedded {
		return nil, gateway.ErrNotEmbedded // before anything is created on disk
	}
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	e := &Env{cfg: cfg, log: cfg.Logger, done: make(chan struct{})}
	if err := refuseRunning(ctx, cfg.DataDir); err != nil {
		return nil, err
	}
	if err := CheckAddr(cfg.Addr); err != nil {
		if errors.Is(err, ErrAddrInUse) {
			return nil, err
		}
		return nil, fmt.Errorf("cannot listen on %s: %w", cfg.Addr, err)
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("create the data directory: %w", err)
	}
	creds, err := loadCredentials(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	if err := e.start(ctx, creds); err != nil {
		e.release()
		return nil, err
	}
	e.run()
	return e, nil
}

// start starts the gateway, opens the queue, publishes the state file and
// builds the worker.
func (e *Env) start(ctx context.Context, creds credentials) error {
	if err := e.startGateway(ctx, creds); err != nil {
		return err
	}
	if err := e.openQueue(ctx, creds); err != nil {
		return err
	}
	if err := writeState(e.cfg.DataDir, e.state); err != nil {
		return err
	}
	e.published = true
	return e.newWorker()
}

// refuseRunning fails with ErrRunning when a dev environment runs on dir.
func refuseRunning(ctx context.Context, dir string) error {
	if st, ok := Running(ctx, dir); ok {
		return fmt.Errorf("%w: %s (pid %d, %s)", ErrRunning, dir, st.PID, st.Endpoint)
	}
	return nil
}

// startGateway starts the embedded S3 server with the bucket.
func (e *Env) startGateway(ctx context.Context, creds credentials) error {
	g, err := gateway.Start(ctx, gateway.Options{
		DataDir:   filepath.Join(e.cfg.DataDir, GatewayDir),
		Addr:      e.cfg.Addr,
		AccessKey: creds.AccessKey,
		SecretKey: creds.SecretKey,
		Region:    gateway.DefaultRegion,
		Bucket:    e.cfg.Bucket,
		Logger:    e.log,
	})
	if err != nil {
		if isAddrInUse(err) {
			return fmt.Errorf("%s: %w", e.cfg.Addr, ErrAddrInUse)
		}
		return fmt.Errorf("start the embedded S3 server: %w", err)
	}
	e.gw = g
	return nil
}

// openQueue connects to the bucket and opens the queue in it (see
// prepareQueue).
func (e *Env) openQueue(ctx context.Context, creds credentials) error {
	e.state = &State{
		Endpoint:  e.gw.Endpoint(),
		Bucket:    e.cfg.Bucket,
		Region:    e.gw.Region(),
		AccessKey: creds.AccessKey,
		SecretKey: creds.SecretKey,
		PID:       os.Getpid(),
		DataDir:   e.cfg.DataDir,
	}
	q, err := connectQueue(ctx, e.state, e.log)
	if err != nil {
		return err
	}
	e.queue = q
	e.state.StartedAt = q.Now()
	return nil
}

// newWorker builds the worker: the built-in handlers, the exec ones and
// the timeout monitor.
func (e *Env) newWorker() error {
	w := worker.New(e.queue, worker.Options{
		ID:                WorkerID,
		Concurrency:       e.cfg.Concurrency,
		Limits:            e.cfg.Limits,
		PollMax:           time.Second,
		HeartbeatInterval: 5 * time.Second,
		ShutdownTimeout:   e.cfg.ShutdownTimeout,
		Logger:            e.log,
		Version:           e.cfg.Version,
		Monitor: monitor.Options{
			CheckInterval:  5 * time.Second,
			SweepInterval:  time.Minute,
			PruneDeadAfter: time.Hour,
		},
	})
	worker.RegisterBuiltins(w)
	for _, spec := range e.cfg.Execs {
		w.Handle(spec.Type, worker.Exec(spec.Command, worker.ExecOptions{WorkerID: w.ID(), PassEnv: e.cfg.PassEnv, Env: e.cfg.Env}))
	}
	if err := w.Validate(); err != nil {
		return configError{err}
	}
	e.worker = w
	e.types = w.Types() // before Run, which settles them
	return nil
}

// run starts the worker, the demo and the watch over both and the
// gateway.
func (e *Env) run() {
	ctx, cancel := context.WithCancel(context.Background())
	e.cancel = cancel
	e.stopped = make(chan struct{})
	workerErr := make(chan error, 1)
	go func() { workerErr <- e.worker.Run(ctx) }()
	if e.cfg.Demo {
		e.demoDone = make(chan struct{})
		go func() {
			defer close(e.demoDone)
			runDemo(ctx, e.queue, e.cfg.DemoRate, e.log)
		}()
	}
	go e.watch(ctx, workerErr)
}

// watch waits until Close is called, the worker returns by itself (Run
// returns early only when it cannot start) or the gateway exits, and then
// until the worker's Run returned. Should the gateway exit, nothing can
// be written any more: the worker releases its tasks at once instead of
// waiting for them.
func (e *Env) watch(ctx context.Context, workerErr <-chan error) {
	defer close(e.stopped)
	gwDone := e.gw.Done()
	select {
	case <-ctx.Done():
	case err := <-workerErr:
		if err != nil {
			err = fmt.Errorf("worker: %w", err)
		}
		e.fail(err)
		return
	case <-gwDone:
		e.fail(fmt.Errorf("%w (%v)", ErrGatewayExited, e.gw.Err()))
		e.worker.Abort()
		gwDone = nil
	}
	for {
		select {
		case err := <-workerErr:
			if err != nil {
				e.setErr(fmt.Errorf("worker: %w", err))
			}
			return
		case <-gwDone:
			e.worker.Abort()
			gwDone = nil
		}
	}
}

// fail records why the environment stopped by itself, stops the demo and
// closes Done.
func (e *Env) fail(err error) {
	e.setErr(err)
	e.failOnce.Do(func() {
		e.cancel()
		close(e.done)
	})
}

// setErr records err unless an error was recorded before.
func (e *Env) setErr(err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.err == nil {
		e.err = err
	}
}

// Done is closed when the environment stopped by itself: the worker could
// not run, or the gateway exited. Err says why; Close still has to be
// called.
func (e *Env) Done() <-chan struct{} { return e.done }

// Err returns why the environment failed, if it did.
func (e *Env) Err() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.err
}

// Abort makes the worker release its running tasks at once (they run
// again elsewhere, no retry counted) instead of waiting for them: for a
// second interrupt while Close waits.
func (e *Env) Abort() { e.worker.Abort() }

// Close stops the environment: the demo, then the worker (running tasks
// get Config.ShutdownTimeout to finish and are released otherwise, none
// is lost), then it removes the state file and stops the gateway. It
// returns why the environment failed, else the worker's error; calling it
// again returns the same.
func (e *Env) Close() error {
	e.closeOnce.Do(func() {
		e.cancel()
		<-e.stopped
		if e.demoDone != nil {
			<-e.demoDone
		}
		e.release()
	})
	return e.Err()
}

// release removes the state file and stops the gateway, as far as they
// were started.
func (e *Env) release() {
	if e.published {
		if err := removeState(e.cfg.DataDir, e.state.PID); err != nil {
			e.log.Warn("removing the dev state file", "err", err)
		}
	}
	if e.gw != nil {
		if err := e.gw.Stop(); err != nil {
			e.log.Warn("stopping the embedded S3 server", "err", err)
		}
	}
}

// State is what the environment published in its state file: the
// endpoint, bucket, region and credentials that reach its bucket.
func (e *Env) State() *State { return e.state }

// Queue is the environment's queue.
func (e *Env) Queue() *queue.Queue { return e.queue }

// WorkerID is the embedded worker's id.
func (e *Env) WorkerID() string { return e.worker.ID() }

// Types are the task types the embedded worker serves.
func (e *Env) Types() []string { return e.types }

// CheckAddr reports whether addr can be listened on: nil, an error
// matching ErrAddrInUse, or the listener's error. Port 0 always can.
func CheckAddr(addr string) error {
	if _, port, _ := net.SplitHostPort(addr); port == "0" {
		return nil
	}
	l, err := net.Listen("tcp", addr)
	if err == nil {
		return l.Close()
	}
	if isAddrInUse(err) {
		return fmt.Errorf("%s: %w", addr, ErrAddrInUse)
	}
	return err
}

func isAddrInUse(err error) bool {
	if errors.Is(err, syscall.EADDRINUSE) {
		return true
	}
	msg := strings.ToLower(err.Error())
	return strings.Contains(msg, "address already in use") || strings.Contains(msg, "only one usage of each socket address")
}
