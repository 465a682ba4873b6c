package main

// qo dev: everything on this machine, for a developer's first minutes with
// no S3 account: the embedded S3 gateway, a versioned bucket holding a
// queue, a worker with the built-in handlers and its embedded monitor, and
// optionally a trickle of demo tasks.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/qo-queue/qo/monitor"
	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/store/gateway"
	"github.com/qo-queue/qo/store/s3store"
	"github.com/qo-queue/qo/tui"
	"github.com/qo-queue/qo/worker"
)

// Defaults of qo dev. The address is fixed (not a free port) so the
// printed environment lines stay valid across restarts.
const (
	defaultDevAddr        = "127.0.0.1:9470"
	defaultDevBucket      = "qo-dev"
	defaultDevConcurrency = 4
	defaultDevDemoRate    = 1.0
	maxDevDemoRate        = 50.0
	devWorkerID           = "qo-dev"
	devStatusEvery        = 3 * time.Second
)

const devDescription = `Starts everything on this machine, no S3 account needed:
  - the embedded S3 server (versitygw) on --addr, its data under --data-dir
    (default $XDG_DATA_HOME/qo/dev or ~/.local/share/qo/dev; on Windows
    %LocalAppData%\qo\dev), with credentials generated once and kept there;
  - the bucket --bucket, versioned, holding an initialised queue (CORS open
    for the web UI);
  - a worker with the built-in handlers (echo, sleep, fail) plus any --exec
    handlers (which, as in 'qo run-worker', get a clean environment: only
    PATH, HOME, the locale and what --env and --env-file give them), and the
    timeout monitor;
  - with --demo, a steady trickle of sample tasks (quick, slow, delayed,
    failing and retried) so every screen has something to show.

The S3 server serves the bucket with root keys and CORS open to every
origin, so it listens on loopback only: an --addr other machines can reach
(0.0.0.0:9470, a LAN address) is refused unless --insecure-listen
(QO_DEV_INSECURE_LISTEN=true) says it is meant, and then qo dev warns.

It prints the environment lines that point other terminals at it, and while
it runs other qo commands given no S3 settings find it by themselves (through
a state file in the data directory). Data survives a restart: same data
directory, same address, same credentials. --reset deletes the data first.

On a terminal it opens the operations console (qo tui) on the dev queue and
its log goes to dev.log in the data directory; quitting the console (q or
Ctrl+C) stops qo dev. --no-tui shows what runs and a status line instead.
Otherwise it logs to stderr (JSON) and prints only the export line on
stdout. Ctrl+C (or SIGTERM) stops it cleanly: running tasks
get --shutdown-timeout to finish and are released otherwise (none is lost); a
second Ctrl+C releases them at once.

Examples:
  qo dev --demo
  qo submit --type echo --input '{"hi":1}'      # in another terminal
  qo dev --exec resize=./resize.sh --concurrency 8
  qo dev --reset --yes`

func init() {
	commands = append(commands, localCommand(devCommand()))
}

func devCommand() *cli.Command {
	const (
		catServer = "Server"
		catWorker = "Worker"
		catDemo   = "Demo"
	)
	flags := []cli.Flag{
		&cli.StringFlag{Name: "addr", Category: catServer, EnvVars: []string{"QO_DEV_ADDR"}, Value: defaultDevAddr,
			Usage: "listen on `HOST:PORT` (loopback unless --insecure-listen)"},
		&cli.BoolFlag{Name: "insecure-listen", Category: catServer, EnvVars: []string{envDevInsecureListen},
			Usage: "allow an --addr other machines can reach (the S3 server has root keys and CORS open to every origin)"},
		&cli.StringFlag{Name: "data-dir", Category: catServer, EnvVars: []string{envDevDataDir},
			Usage: "keep the bucket, credentials and state under `DIR` (default: the per-user data directory)"},
		&cli.StringFlag{Name: "bucket", Category: catServer, EnvVars: []string{"QO_DEV_BUCKET"}, Value: defaultDevBucket,
			Usage: "bucket `NAME` of the queue"},
		// --reset and --yes have no environment twins on purpose: a
		// variable left in a shell would wipe the data on every start.
		&cli.BoolFlag{Name: "reset", Category: catServer,
			Usage: "delete the data directory's contents (tasks, credentials) before starting"},
		&cli.BoolFlag{Name: "yes", Aliases: []string{"y"}, Category: catServer,
			Usage: "do not ask before --reset deletes data"},

		&cli.IntFlag{Name: "concurrency", Aliases: []string{"c"}, Category: catWorker, EnvVars: []string{"QO_DEV_CONCURRENCY"}, Value: defaultDevConcurrency,
			Usage: "tasks the worker runs at once"},
		limitFlag(catWorker, "QO_DEV_LIMITS"),
		&cli.StringSliceFlag{Name: "exec", Category: catWorker, EnvVars: []string{"QO_DEV_EXEC"},
			Usage: "`TYPE=COMMAND` handler, repeatable (see 'qo run-worker --help'); replaces a built-in of the same name"},
		execEnvFlag(catWorker, "QO_DEV_EXEC_ENV"),
		execEnvFileFlag(catWorker, "QO_DEV_EXEC_ENV_FILE"),
		&cli.StringFlag{Name: "shutdown-timeout", Category: catWorker, EnvVars: []string{"QO_DEV_SHUTDOWN_TIMEOUT"}, Value: "10s",
			Usage: "on Ctrl+C, wait this long for running tasks before releasing them"},

		&cli.BoolFlag{Name: "no-tui", EnvVars: []string{"QO_DEV_NO_TUI"},
			Usage: "on a terminal, print a banner and a status line instead of opening the console (qo tui)"},
		&cli.BoolFlag{Name: "demo", Category: catDemo, EnvVars: []string{"QO_DEV_DEMO"},
			Usage: "submit a steady trickle of sample tasks"},
		&cli.Float64Flag{Name: "demo-rate", Category: catDemo, EnvVars: []string{"QO_DEV_DEMO_RATE"}, Value: defaultDevDemoRate,
			Usage: fmt.Sprintf("demo tasks per second (at most %g)", maxDevDemoRate)},
	}
	flags = append(flags, logFlags()...)
	return &cli.Command{
		Name:        "dev",
		Usage:       "run a local S3 server, queue, worker and monitor in one command",
		UsageText:   "qo dev [--demo] [--addr 127.0.0.1:9470] [--data-dir DIR] [--exec TYPE=COMMAND ...] [--reset [--yes]]",
		Description: devDescription,
		Flags:       flags,
		Action:      runDev,
	}
}

// envDevInsecureListen is the environment twin of qo dev --insecure-listen.
const envDevInsecureListen = "QO_DEV_INSECURE_LISTEN"

// devConfig is what qo dev's flags describe.
type devConfig struct {
	addr            string
	listenWarning   string // set when --insecure-listen let addr go beyond loopback
	dataDir         string
	bucket          string
	reset, yes      bool
	concurrency     int
	limits          map[string]int
	execs           []worker.ExecSpec
	execPassEnv     []string // --env NAME
	execEnv         []string // --env-file, --env NAME=VALUE
	shutdownTimeout time.Duration
	demo            bool
	noTUI           bool
	demoRate        float64
}

// bucketNameRE is the S3 bucket naming rule (simplified: no IP-like names
// check, which the server does).
var bucketNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$`)

func devConfigFromFlags(c *cli.Context) (*devConfig, error) {
	if c.NArg() > 0 {
		return nil, usageError("dev takes no arguments, got %q (see 'qo dev --help')", c.Args().First())
	}
	dc := &devConfig{
		addr:        strings.TrimSpace(c.String("addr")),
		bucket:      strings.TrimSpace(c.String("bucket")),
		reset:       c.Bool("reset"),
		yes:         c.Bool("yes"),
		concurrency: c.Int("concurrency"),
		demo:        c.Bool("demo"),
		noTUI:       c.Bool("no-tui"),
		demoRate:    c.Float64("demo-rate"),
	}
	limits, err := parseLimits(c.StringSlice("limit"))
	if err != nil {
		return nil, err
	}
	dc.limits = limits
	host, port, err := net.SplitHostPort(dc.addr)
	if err != nil || host == "" {
		return nil, usageError("invalid --addr %q: want HOST:PORT, e.g. %s", dc.addr, defaultDevAddr)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return nil, usageError("invalid --addr %q: the port must be a number from 0 to 65535", dc.addr)
	}
	if dc.listenWarning, err = checkListenAddr("qo dev", dc.addr, c.Bool("insecure-listen"), envDevInsecureListen); err != nil {
		return nil, err
	}
	if !bucketNameRE.MatchString(dc.bucket) {
		return nil, usageError("invalid --bucket %q: want 3 to 63 lowercase letters, digits, '-' or '.', starting and ending with a letter or digit", dc.bucket)
	}
	if dc.concurrency < 1 {
		return nil, usageError("invalid --concurrency %d: must be at least 1", dc.concurrency)
	}
	if dc.demoRate <= 0 || dc.demoRate > maxDevDemoRate {
		return nil, usageError("invalid --demo-rate %g: want tasks per second above 0 and at most %g", dc.demoRate, maxDevDemoRate)
	}
	if dc.shutdownTimeout, err = cmdDuration(c, "shutdown-timeout"); err != nil {
		return nil, err
	}
	if dc.execs, err = parseExecFlags(c.StringSlice("exec")); err != nil {
		return nil, err
	}
	if dc.execPassEnv, dc.execEnv, err = execEnvFromFlags(c); err != nil {
		return nil, err
	}
	if dc.dataDir, err = devDataDir(c.String("data-dir")); err != nil {
		return nil, usageError("%v", err)
	}
	return dc, nil
}

// devSession is a running qo dev, as its terminal view sees it.
type devSession struct {
	State   *devState
	DataDir string
	LogPath string // where the log goes on a terminal ("" when on stderr)
	Demo    bool
	Queue   *queue.Queue
	// The embedded worker: its id, the types it serves, its concurrency.
	WorkerID    string
	Types       []string
	Concurrency int
	Out         io.Writer
	GOOS        string
	// NoTUI shows the banner and a status line instead of the console.
	NoTUI bool
	// Exposed: the S3 server listens beyond loopback (--insecure-listen).
	Exposed bool
	// Stop stops qo dev (the console's quit does what Ctrl+C does).
	Stop func()
}

func runDev(c *cli.Context) error {
	dc, err := devConfigFromFlags(c)
	if err != nil {
		return err
	}
	tty := isTerminal(c.App.Writer)
	if dc.listenWarning != "" {
		fmt.Fprintln(c.App.ErrWriter, "qo dev: "+dc.listenWarning)
	}
	if dc.reset {
		if err := resetDevData(c, dc, tty); err != nil {
			return err
		}
	}
	if st, ok := runningDevIn(c.Context, dc.dataDir); ok {
		return withExitCode(exitConflict, fmt.Errorf("a qo dev server already runs on %s (pid %d, %s): use it, or stop it first",
			dc.dataDir, st.PID, st.Endpoint))
	}
	if err := checkDevAddr(dc.addr); err != nil {
		return err
	}
	if err := os.MkdirAll(dc.dataDir, 0o700); err != nil {
		return usageError("cannot create the data directory: %v: pass another --data-dir", err)
	}

	log, logPath, closeLog, err := devLogger(c, dc.dataDir, tty)
	if err != nil {
		return err
	}
	defer closeLog()
	if dc.listenWarning != "" {
		log.Warn(dc.listenWarning, "addr", dc.addr)
	}

	creds, err := loadDevCredentials(dc.dataDir)
	if err != nil {
		return err
	}
	g, err := gateway.Start(c.Context, gateway.Options{
		DataDir:   filepath.Join(dc.dataDir, devGatewayDir),
		Addr:      dc.addr,
		AccessKey: creds.AccessKey,
		SecretKey: creds.SecretKey,
		Region:    gateway.DefaultRegion,
		Bucket:    dc.bucket,
		Logger:    log,
	})
	if err != nil {
		if isAddrInUse(err) {
			return devAddrBusy(dc.addr)
		}
		return fmt.Errorf("start the embedded S3 server: %w", err)
	}
	defer func() {
		if err := g.Stop(); err != nil {
			log.Warn("stopping the embedded S3 server", "err", err)
		}
	}()

	st := &devState{
		Endpoint:  g.Endpoint(),
		Bucket:    dc.bucket,
		Region:    g.Region(),
		AccessKey: creds.AccessKey,
		SecretKey: creds.SecretKey,
		PID:       os.Getpid(),
		DataDir:   dc.dataDir,
	}
	q, err := openDevQueue(c.Context, st, log)
	if err != nil {
		return err
	}
	st.StartedAt = q.Now()
	if err := writeDevState(dc.dataDir, st); err != nil {
		return err
	}
	defer func() {
		if err := removeDevState(dc.dataDir, st.PID); err != nil {
			log.Warn("removing the dev state file", "err", err)
		}
	}()

	w := worker.New(q, worker.Options{
		ID:                devWorkerID,
		Concurrency:       dc.concurrency,
		Limits:            dc.limits,
		PollMax:           time.Second,
		HeartbeatInterval: 5 * time.Second,
		ShutdownTimeout:   dc.shutdownTimeout,
		Logger:            log,
		Version:           versionString(),
		Monitor: monitor.Options{
			CheckInterval:  5 * time.Second,
			SweepInterval:  time.Minute,
			PruneDeadAfter: time.Hour,
		},
	})
	worker.RegisterBuiltins(w)
	for _, spec := range dc.execs {
		w.Handle(spec.Type, worker.Exec(spec.Command, worker.ExecOptions{WorkerID: w.ID(), PassEnv: dc.execPassEnv, Env: dc.execEnv}))
	}
	if err := w.Validate(); err != nil {
		return usageError("%v", err)
	}

	if c.Context.Err() != nil {
		return nil // interrupted while starting: nothing runs yet
	}
	ctx, cancel := context.WithCancel(c.Context)
	defer cancel()
	stopSignals := onSignals(func(n int) {
		if n == 1 {
			log.Info("signal received: shutting down (send it again to release running tasks at once)")
			if tty {
				fmt.Fprintln(c.App.Writer, "\nqo dev: stopping: waiting for running tasks (Ctrl+C again releases them now)")
			}
			cancel()
			return
		}
		log.Warn("second signal: releasing running tasks now")
		if tty {
			fmt.Fprintln(c.App.Writer, "\nqo dev: releasing running tasks now")
		}
		w.Abort()
	})
	defer stopSignals()

	// Read before Run starts (Run settles the worker's types).
	sess := &devSession{State: st, DataDir: dc.dataDir, LogPath: logPath, Demo: dc.demo, Queue: q,
		WorkerID: w.ID(), Types: w.Types(), Concurrency: dc.concurrency, Out: c.App.Writer, GOOS: runtime.GOOS,
		NoTUI: dc.noTUI, Stop: cancel, Exposed: dc.listenWarning != ""}
	var wg sync.WaitGroup
	workerErr := make(chan error, 1)
	wg.Add(1)
	go func() {
		defer wg.Done()
		workerErr <- w.Run(ctx)
	}()
	if dc.demo {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runDemo(ctx, q, dc.demoRate, log)
		}()
	}

	log.Info("qo dev ready", "endpoint", st.Endpoint, "bucket", st.Bucket, "region", st.Region,
		"data_dir", dc.dataDir, "demo", dc.demo, "concurrency", dc.concurrency)
	if tty {
		wg.Add(1)
		go func() {
			defer wg.Done()
			devTTYView(ctx, sess)
		}()
	} else {
		for _, l := range devEnvLines(st, runtime.GOOS) {
			fmt.Fprintln(c.App.Writer, l)
		}
	}

	var runErr error
	workerDone := false
	select {
	case <-ctx.Done():
	case err := <-workerErr:
		workerDone = true // Run returns early only when it cannot start
		if err != nil {
			runErr = fmt.Errorf("worker: %w", err)
		}
	case <-g.Done():
		runErr = fmt.Errorf("the embedded S3 server exited unexpectedly (%v): see the log%s", g.Err(), logHint(logPath))
		w.Abort() // nothing can be written any more: do not wait for handlers
	}
	cancel()
	if !workerDone {
		// Should the S3 server die while the worker winds down, nothing
		// can be written any more: release at once rather than retrying.
		stopWatch := make(chan struct{})
		go func() {
			select {
			case <-g.Done():
				w.Abort()
			case <-stopWatch:
			}
		}()
		err := <-workerErr
		close(stopWatch)
		if err != nil && runErr == nil {
			runErr = fmt.Errorf("worker: %w", err)
		}
	}
	wg.Wait()
	if runErr != nil {
		log.Error("qo dev failed", "err", runErr)
		return runErr
	}
	log.Info("qo dev stopped")
	if tty {
		fmt.Fprintln(c.App.Writer, "qo dev: stopped; data kept in "+dc.dataDir)
	}
	return nil
}

func logHint(path string) string {
	if path == "" {
		return ""
	}
	return " in " + path
}

// openDevQueue connects to the dev bucket and prepares it (see
// prepareDevQueue).
func openDevQueue(ctx context.Context, st *devState, log *slog.Logger) (*queue.Queue, error) {
	s, err := s3store.New(ctx, st.storeConfig())
	if err != nil {
		return nil, fmt.Errorf("connect to the embedded S3 server: %w", err)
	}
	return prepareDevQueue(ctx, s, st.Bucket, log)
}

// adminStore is a store that can also configure its bucket.
type adminStore interface {
	store.Store
	store.Admin
}

// prepareDevQueue opens the queue in the dev bucket, creating it on first
// use, and opens the bucket's CORS to any origin for the web UI.
func prepareDevQueue(ctx context.Context, s adminStore, bucket string, log *slog.Logger) (*queue.Queue, error) {
	qopts := queue.Options{Logger: log}
	q, err := queue.Open(ctx, s, qopts)
	if errors.Is(err, queue.ErrNotInitialized) {
		// The gateway has no lifecycle rules; init's warning about that
		// is noise on a developer's machine, so its outcome is one line.
		var res queue.InitResult
		res, err = queue.InitWithOptions(ctx, s, queue.InitOptions{ShardChars: 1, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			return nil, fmt.Errorf("create the queue in bucket %q: %w", bucket, err)
		}
		log.Info("queue created", "bucket", bucket, "shard_chars", res.Config.ShardChars, "versioning", res.Versioning, "lifecycle", res.Lifecycle)
		q, err = queue.Open(ctx, s, qopts)
	}
	if errors.Is(err, queue.ErrLayoutOutdated) {
		// The dev server's data was written by an older qo, and only this
		// process uses it: convert it in place (nothing is lost).
		res, merr := queue.Migrate(ctx, s, qopts, nil)
		if merr != nil {
			return nil, fmt.Errorf("convert the dev queue in bucket %q to the current key layout: %w ('qo dev --reset' starts over)", bucket, merr)
		}
		log.Info("dev queue converted to the current key layout", "bucket", bucket, "from", res.From, "to", res.To,
			"tasks_checked", res.Repair.Scanned, "seconds", res.Duration.Seconds())
		q, err = queue.Open(ctx, s, qopts)
	}
	if err != nil {
		return nil, fmt.Errorf("open the queue in bucket %q: %w", bucket, err)
	}
	// The gateway listens on this machine only: any origin may use it.
	switch err := s.SetCORS(ctx, []string{"*"}); {
	case err == nil:
	case errors.Is(err, store.ErrNotSupported):
		log.Info("the S3 server does not support bucket CORS; the web UI may not reach it", "err", err)
	default:
		return nil, fmt.Errorf("set CORS on bucket %q for the web UI: %w", bucket, err)
	}
	return q, nil
}

// devLogger returns the logger of qo dev: on a terminal, a text log in the
// data directory (the terminal shows the status instead); otherwise the
// usual logger on stderr (JSON unless --log-format says otherwise).
func devLogger(c *cli.Context, dir string, tty bool) (log *slog.Logger, path string, closeFn func(), err error) {
	if !tty {
		log, err := cmdLogger(c)
		return log, "", func() {}, err
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(c.String("log-level"))); err != nil {
		return nil, "", nil, usageError("invalid --log-level %q: want debug, info, warn or error", c.String("log-level"))
	}
	path = filepath.Join(dir, devLogFile)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, "", nil, fmt.Errorf("open the dev log: %w", err)
	}
	ho := &slog.HandlerOptions{Level: level}
	var h slog.Handler = slog.NewTextHandler(f, ho)
	if c.String("log-format") == "json" {
		h = slog.NewJSONHandler(f, ho)
	}
	return slog.New(h), path, func() { f.Close() }, nil
}

// checkListenAddr refuses a listen address other machines can reach for
// the embedded S3 server of command (qo dev, qo gateway): it serves the
// bucket over plain HTTP to anyone holding its root keys, and qo dev opens
// its CORS to every origin. With insecure (the --insecure-listen flag, or
// env) such an address is allowed, and warning says what that means.
func checkListenAddr(command, addr string, insecure bool, env string) (warning string, err error) {
	loopback, err := isLoopback(addr)
	if err != nil || loopback {
		return "", err
	}
	if !insecure {
		return "", usageError("refusing to listen on %s: other machines could reach the embedded S3 server, which serves the bucket "+
			"over plain HTTP with root keys and CORS open to every origin: listen on loopback (--addr 127.0.0.1:PORT), "+
			"or pass --insecure-listen (%s=true) to expose it on purpose", addr, env)
	}
	return fmt.Sprintf("WARNING: --insecure-listen: the embedded S3 server of %s listens on %s, beyond this machine: "+
		"anyone who reaches it gets plain HTTP, root keys (no per-user access control) and CORS open to every origin; "+
		"use this only on a network you trust", command, addr), nil
}

// checkDevAddr fails with one clear line when addr cannot be listened on.
func checkDevAddr(addr string) error {
	if _, port, _ := net.SplitHostPort(addr); port == "0" {
		return nil
	}
	l, err := net.Listen("tcp", addr)
	if err == nil {
		return l.Close()
	}
	if isAddrInUse(err) {
		return devAddrBusy(addr)
	}
	return usageError("cannot listen on %s (%v): pick another address with --addr HOST:PORT (QO_DEV_ADDR)", addr, err)
}

func isAddrInUse(err error) bool {
	if errors.Is(err, syscall.EADDRINUSE) {
		return true
	}
	msg := strings.ToLower(err.Error())
	return strings.Contains(msg, "address already in use") || strings.Contains(msg, "only one usage of each socket address")
}

func devAddrBusy(addr string) error {
	return withExitCode(exitConflict, fmt.Errorf("%s is already in use (another 'qo dev' may be running): stop it, or pick another address with --addr HOST:PORT (QO_DEV_ADDR)", addr))
}

// resetDevData deletes what qo dev keeps in the data directory, after a
// confirmation on a terminal (unless --yes). It refuses while a dev server
// uses the directory. Files qo dev did not create are left alone, so a
// mistaken --data-dir cannot wipe unrelated data.
func resetDevData(c *cli.Context, dc *devConfig, tty bool) error {
	dir := dc.dataDir
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if st, err := readDevState(dir); err == nil && processAlive(st.PID) && st.PID != os.Getpid() {
		return withExitCode(exitConflict, fmt.Errorf("a qo dev server (pid %d, %s) uses %s: stop it before --reset (if none runs, delete %s)",
			st.PID, st.Endpoint, dir, filepath.Join(dir, devStateFile)))
	}
	if tty && !dc.yes && readerIsTerminal(c.App.Reader) {
		fmt.Fprintf(c.App.Writer, "Delete every task, the credentials and all other qo dev data in %s? [y/N] ", dir)
		line, _ := bufio.NewReader(c.App.Reader).ReadString('\n')
		if a := strings.ToLower(strings.TrimSpace(line)); a != "y" && a != "yes" {
			return fmt.Errorf("reset cancelled: nothing was deleted")
		}
	}
	if err := wipeDevData(dir); err != nil {
		return err
	}
	if tty {
		fmt.Fprintf(c.App.Writer, "qo dev: deleted the dev data in %s\n", dir)
	}
	return nil
}

func readerIsTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && isTerminal(f)
}

// wipeDevData removes qo dev's own entries from dir, then dir itself if
// nothing else is left in it.
func wipeDevData(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("reset: %w", err)
	}
	own := map[string]bool{devStateFile: true, devCredentialsFile: true, devGatewayDir: true, devLogFile: true}
	for _, e := range entries {
		name := e.Name()
		temp := strings.HasPrefix(name, "."+devStateFile+".tmp") || strings.HasPrefix(name, "."+devCredentialsFile+".tmp")
		if !own[name] && !temp {
			continue
		}
		if err := os.RemoveAll(filepath.Join(dir, name)); err != nil {
			return fmt.Errorf("reset: %w", err)
		}
	}
	_ = os.Remove(dir) // only succeeds when empty
	return nil
}

// devEnvLines are the shell lines that point qo (and any S3 tool) at the
// dev server: one export line for POSIX shells, PowerShell on Windows.
func devEnvLines(st *devState, goos string) []string {
	vars := [][2]string{
		{"S3_ENDPOINT", st.Endpoint}, {"S3_BUCKET", st.Bucket},
		{"AWS_ACCESS_KEY_ID", st.AccessKey}, {"AWS_SECRET_ACCESS_KEY", st.SecretKey},
		{"AWS_REGION", st.Region},
	}
	if goos == "windows" {
		var lines []string
		for _, v := range vars {
			lines = append(lines, fmt.Sprintf("$env:%s=%q", v[0], v[1]))
		}
		return lines
	}
	parts := []string{"export"}
	for _, v := range vars {
		parts = append(parts, v[0]+"="+v[1])
	}
	return []string{strings.Join(parts, " ")}
}

// devTTYView is what qo dev shows on a terminal while it runs: the
// operations console (qo tui) on the dev queue. Quitting the console stops
// qo dev as Ctrl+C does. With --no-tui it is devBannerView instead.
func devTTYView(ctx context.Context, s *devSession) {
	if s.NoTUI {
		devBannerView(ctx, s)
		return
	}
	opts := tui.Options{
		Refresh: 2 * time.Second,
		Title:   fmt.Sprintf("dev · %s · bucket %s · worker %s", s.State.Endpoint, s.State.Bucket, s.WorkerID),
	}
	if s.Exposed {
		opts.Title += " · EXPOSED BEYOND LOOPBACK (--insecure-listen)"
	}
	err := tui.Run(ctx, s.Queue, opts)
	if ctx.Err() == nil && s.Stop != nil {
		fmt.Fprintln(s.Out, "qo dev: console closed: stopping (waiting for running tasks)")
		s.Stop()
	}
	if err != nil {
		fmt.Fprintf(s.Out, "qo dev: console: %v\n", err)
	}
}

// devBannerView prints what runs, the environment lines, what to try and
// how to stop, then a status line refreshed every few seconds, until ctx
// is cancelled.
func devBannerView(ctx context.Context, s *devSession) {
	w := s.Out
	st := s.State
	fmt.Fprintf(w, "qo dev is running\n\n")
	fmt.Fprintf(w, "  S3 server   %s  (bucket %s, data in %s)\n", st.Endpoint, st.Bucket, s.DataDir)
	if s.Exposed {
		fmt.Fprintf(w, "              WARNING: reachable from other machines (--insecure-listen)\n")
	}
	fmt.Fprintf(w, "  worker      %s: %s, concurrency %d, with the timeout monitor\n",
		s.WorkerID, strings.Join(s.Types, ", "), s.Concurrency)
	if s.Demo {
		fmt.Fprintf(w, "  demo        submitting sample tasks\n")
	}
	if s.LogPath != "" {
		fmt.Fprintf(w, "  log         %s\n", s.LogPath)
	}
	if def, err := devDataDir(""); err == nil && def == s.DataDir {
		fmt.Fprintf(w, "\nOther qo commands find this server by themselves; other tools need:\n\n")
	} else {
		fmt.Fprintf(w, "\nOther qo commands find this server when %s=%s is set; or set:\n\n", envDevDataDir, s.DataDir)
	}
	for _, l := range devEnvLines(st, s.GOOS) {
		fmt.Fprintf(w, "  %s\n", l)
	}
	fmt.Fprintf(w, "\nTry:  qo submit --type echo --input '{\"hi\":1}'\n      qo list\n\n")
	fmt.Fprintf(w, "Press Ctrl+C to stop (data is kept; 'qo dev --reset' starts over).\n\n")

	counter := s.Queue.NewStatsCounter(queue.StatsOptions{})
	t := time.NewTicker(devStatusEvery)
	defer t.Stop()
	for {
		fmt.Fprint(w, "\r\x1b[2K"+devStatusLine(ctx, s.Queue, counter))
		select {
		case <-ctx.Done():
			fmt.Fprintln(w)
			return
		case <-t.C:
		}
	}
}

// devStatusLine is one line: task counts by status and live workers.
func devStatusLine(ctx context.Context, q *queue.Queue, counter *queue.StatsCounter) string {
	ctx, cancel := context.WithTimeout(ctx, devStatusEvery)
	defer cancel()
	stats, err := counter.Refresh(ctx)
	now := q.Now()
	if err != nil {
		if ctx.Err() != nil {
			return now.Local().Format("15:04:05") + "  stopping"
		}
		return now.Local().Format("15:04:05") + "  status unavailable: " + oneLine(err.Error())
	}
	line := now.Local().Format("15:04:05") + "  " + countsLine(stats)
	if infos, err := q.ListWorkers(ctx); err == nil {
		active := 0
		for _, h := range monitor.Health(infos, now, monitor.DefaultHealthThreshold) {
			if h.State == monitor.Active {
				active++
			}
		}
		line += fmt.Sprintf("  |  workers %d", active)
	}
	return line
}

// countsLine renders task counts by status on one line.
func countsLine(st queue.Stats) string {
	var b strings.Builder
	fmt.Fprintf(&b, "pending %d", st.ByStatus[queue.StatusPending])
	if st.Delayed > 0 {
		fmt.Fprintf(&b, " (%d later)", st.Delayed)
	}
	fmt.Fprintf(&b, "  running %d  failed %d", st.ByStatus[queue.StatusRunning], st.ByStatus[queue.StatusFailed])
	done, failed := 0, 0
	for _, m := range st.Recent {
		done += m.Completed
		failed += m.Failed
	}
	fmt.Fprintf(&b, "  |  last %dm: completed %d, failed %d", len(st.Recent), done, failed)
	if st.Partial {
		b.WriteString("  (lower bounds)")
	}
	return b.String()
}

// demoTask is one kind of sample task --demo submits.
type demoTask struct {
	typ        string
	input      string
	delay      time.Duration
	maxRetries int
}

// demoCycle is the repeating sequence of --demo: quick and slow successes,
// a retried failure that ends failed, a permanent failure, a delayed task.
// Within one cycle every status shows up.
var demoCycle = []demoTask{
	{typ: worker.BuiltinEcho, input: `{"hello":"world"}`},
	{typ: worker.BuiltinSleep, input: `{"ms":1500}`},
	{typ: worker.BuiltinFail, input: `{"mode":"retryable","message":"demo: upstream is flaky"}`, maxRetries: 2},
	{typ: worker.BuiltinEcho, input: `{"greeting":"hi"}`},
	{typ: worker.BuiltinSleep, input: `{"ms":6000}`},
	{typ: worker.BuiltinFail, input: `{"mode":"permanent","message":"demo: input rejected"}`},
	{typ: worker.BuiltinEcho, input: `{"later":true}`, delay: 15 * time.Second},
	{typ: worker.BuiltinSleep, input: `{"ms":300}`},
	{typ: worker.BuiltinEcho, input: `{"n":42}`},
	{typ: worker.BuiltinSleep, input: `{"ms":15000}`},
}

// demoRetryPolicy keeps demo retries short enough to watch.
var demoRetryPolicy = queue.RetryPolicy{InitialIntervalMS: 2000, MaxIntervalMS: 8000, Multiplier: 2, JitterPercent: 0.25}

// demoRequest builds the n-th demo submission.
func demoRequest(n int, now time.Time) queue.SubmitRequest {
	d := demoCycle[n%len(demoCycle)]
	retries := d.maxRetries
	req := queue.SubmitRequest{
		Type:        d.typ,
		Input:       json.RawMessage(d.input),
		Timeout:     time.Minute,
		MaxRetries:  &retries,
		RetryPolicy: &demoRetryPolicy,
	}
	if d.delay > 0 {
		req.AvailableAt = now.Add(d.delay)
	}
	return req
}

// runDemo submits demo tasks at rate per second until ctx is cancelled.
func runDemo(ctx context.Context, q *queue.Queue, rate float64, log *slog.Logger) {
	every := time.Duration(float64(time.Second) / rate)
	t := time.NewTicker(every)
	defer t.Stop()
	log.Info("demo: submitting sample tasks", "per_second", rate)
	failures := 0
	for n := 0; ; n++ {
		req := demoRequest(n, q.Now())
		task, _, err := q.Submit(ctx, req)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			failures++
			if failures <= 3 || failures%100 == 0 {
				log.Warn("demo: submit failed", "type", req.Type, "err", err, "failures", failures)
			}
		default:
			log.Debug("demo: submitted", "task_id", task.ID, "type", task.Type)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
