package command

// qo dev: everything on this machine, for a developer's first minutes with
// no S3 account: the embedded S3 gateway, a versioned bucket holding a
// queue, a worker with the built-in handlers and its embedded monitor, and
// optionally a trickle of demo tasks. Package devenv starts and stops
// them; this file reads the flags, prints, and turns signals into Close
// and Abort.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/qo-queue/qo/devenv"
	"github.com/qo-queue/qo/internal/termsafe"
	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/webui"
	"github.com/qo-queue/qo/worker"
)

// devStatusEvery is how often the status line under qo dev --no-tui's
// banner is refreshed.
const devStatusEvery = 3 * time.Second

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

It serves the web UI on --ui-addr (loopback; a free port when that one is
taken) and, on a terminal, prints the link that opens it on the dev queue
(the dev keys ride in the link's fragment, which browsers never send).

On a terminal it opens the operations console (qo tui) on the dev queue and
its log goes to dev.log in the data directory; q on the console's top
screens asks before stopping qo dev (the S3 server, worker and monitor),
Ctrl+C stops it at once. --no-tui shows what runs and a status line instead.
Otherwise it logs to stderr (JSON; "qo dev ready" names the web UI's
address) and prints only the export line on stdout. Ctrl+C (or SIGTERM) stops it cleanly: running tasks
get --shutdown-timeout to finish and are released otherwise (none is lost); a
second Ctrl+C releases them at once.

Examples:
  qo dev --demo
  qo submit --type echo --input '{"hi":1}'      # in another terminal
  qo dev --exec resize=./resize.sh --concurrency 8
  qo dev --reset --yes`

func devCommand(build Build) *cli.Command {
	const (
		catServer = "Server"
		catWorker = "Worker"
		catDemo   = "Demo"
	)
	flags := []cli.Flag{
		&cli.StringFlag{Name: "addr", Category: catServer, EnvVars: []string{"QO_DEV_ADDR"}, Value: devenv.DefaultAddr,
			Usage: "listen on `HOST:PORT` (loopback unless --insecure-listen)"},
		&cli.BoolFlag{Name: "insecure-listen", Category: catServer, EnvVars: []string{envDevInsecureListen},
			Usage: "allow an --addr other machines can reach (the S3 server has root keys and CORS open to every origin)"},
		&cli.StringFlag{Name: "data-dir", Category: catServer, EnvVars: []string{devenv.EnvDataDir},
			Usage: "keep the bucket, credentials and state under `DIR` (default: the per-user data directory)"},
		&cli.StringFlag{Name: "bucket", Category: catServer, EnvVars: []string{"QO_DEV_BUCKET"}, Value: devenv.DefaultBucket,
			Usage: "bucket `NAME` of the queue"},
		// --reset and --yes have no environment twins on purpose: a
		// variable left in a shell would wipe the data on every start.
		&cli.BoolFlag{Name: "reset", Category: catServer,
			Usage: "delete the data directory's contents (tasks, credentials) before starting"},
		&cli.BoolFlag{Name: "yes", Aliases: []string{"y"}, Category: catServer,
			Usage: "do not ask before --reset deletes data"},
		&cli.StringFlag{Name: "ui-addr", Category: catServer, EnvVars: []string{"QO_DEV_UI_ADDR"}, Value: defaultUIAddr,
			Usage: "serve the web UI on `HOST:PORT` (loopback; a free port when this one is taken; off: no web UI)"},

		&cli.IntFlag{Name: "concurrency", Aliases: []string{"c"}, Category: catWorker, EnvVars: []string{"QO_DEV_CONCURRENCY"}, Value: devenv.DefaultConcurrency,
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
		&cli.Float64Flag{Name: "demo-rate", Category: catDemo, EnvVars: []string{"QO_DEV_DEMO_RATE"}, Value: devenv.DefaultDemoRate,
			Usage: fmt.Sprintf("demo tasks per second (at most %g)", devenv.MaxDemoRate)},
	}
	flags = append(flags, logFlags()...)
	return &cli.Command{
		Name:        "dev",
		Usage:       "run a local S3 server, queue, worker and monitor in one command",
		UsageText:   "qo dev [--demo] [--addr 127.0.0.1:9470] [--data-dir DIR] [--exec TYPE=COMMAND ...] [--reset [--yes]]",
		Description: devDescription,
		Flags:       flags,
		Action:      func(c *cli.Context) error { return runDev(c, build) },
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
	uiAddr          string // "" when the web UI is off
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
		return nil, usageError("invalid --addr %q: want HOST:PORT, e.g. %s", dc.addr, devenv.DefaultAddr)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return nil, usageError("invalid --addr %q: the port must be a number from 0 to 65535", dc.addr)
	}
	if dc.listenWarning, err = checkListenAddr("qo dev", dc.addr, c.Bool("insecure-listen"), envDevInsecureListen); err != nil {
		return nil, err
	}
	if dc.uiAddr = strings.TrimSpace(c.String("ui-addr")); dc.uiAddr == "off" {
		dc.uiAddr = ""
	} else if loopback, err := isLoopback(dc.uiAddr); err != nil || !loopback {
		return nil, usageError("invalid --ui-addr %q: want a loopback HOST:PORT such as %s (the web UI's link carries the dev keys), or off", dc.uiAddr, defaultUIAddr)
	}
	if !devenv.ValidBucketName(dc.bucket) {
		return nil, usageError("invalid --bucket %q: want 3 to 63 lowercase letters, digits, '-' or '.', starting and ending with a letter or digit", dc.bucket)
	}
	if dc.concurrency < 1 {
		return nil, usageError("invalid --concurrency %d: must be at least 1", dc.concurrency)
	}
	if dc.demoRate <= 0 || dc.demoRate > devenv.MaxDemoRate {
		return nil, usageError("invalid --demo-rate %g: want tasks per second above 0 and at most %g", dc.demoRate, devenv.MaxDemoRate)
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
	if dc.dataDir, err = devenv.DataDir(c.String("data-dir")); err != nil {
		return nil, usageError("%v", err)
	}
	return dc, nil
}

// devSession is a running qo dev, as its terminal view sees it.
type devSession struct {
	State   *devenv.State
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
	// UILink opens the web UI on the dev queue ("" when it is off).
	UILink string
	// Stop stops qo dev (the console's quit does what Ctrl+C does).
	Stop func()
}

func runDev(c *cli.Context, build Build) error {
	dc, err := devConfigFromFlags(c)
	if err != nil {
		return err
	}
	tty := envOf(c).IsTerminal(c.App.Writer)
	if dc.listenWarning != "" {
		fmt.Fprintln(c.App.ErrWriter, "qo dev: "+dc.listenWarning)
	}
	// Before the log opens: it truncates dev.log in the data directory.
	if err := prepareDevDir(c, dc, tty); err != nil {
		return err
	}
	log, logPath, closeLog, err := devLogger(c, dc.dataDir, tty)
	if err != nil {
		return err
	}
	defer closeLog()
	if dc.listenWarning != "" {
		log.Warn(dc.listenWarning, "addr", dc.addr)
	}

	env, err := devenv.Start(c.Context, dc.envConfig(log, build))
	switch {
	case errors.Is(err, devenv.ErrAddrInUse):
		return devAddrBusy(dc.addr)
	case errors.Is(err, devenv.ErrConfig):
		return usageError("%v", err)
	case err != nil:
		return err
	}
	if c.Context.Err() != nil {
		_ = env.Close() // interrupted while starting: stop what started
		return nil
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
		env.Abort()
	})
	defer stopSignals()

	st := env.State()
	uiLink, stopUI := startDevUI(dc.uiAddr, st, log)
	defer stopUI()
	log.Info("qo dev ready", "endpoint", st.Endpoint, "bucket", st.Bucket, "region", st.Region,
		"data_dir", dc.dataDir, "demo", dc.demo, "concurrency", dc.concurrency, "web_ui", uiBase(uiLink))
	var view sync.WaitGroup
	if tty {
		sess := &devSession{State: st, DataDir: dc.dataDir, LogPath: logPath, Demo: dc.demo, Queue: env.Queue(),
			WorkerID: env.WorkerID(), Types: env.Types(), Concurrency: dc.concurrency, Out: c.App.Writer, GOOS: runtime.GOOS,
			NoTUI: dc.noTUI, Stop: cancel, Exposed: dc.listenWarning != "", UILink: uiLink}
		view.Add(1)
		go func() {
			defer view.Done()
			devTTYView(ctx, sess)
		}()
	} else {
		for _, l := range devEnvLines(st, runtime.GOOS) {
			fmt.Fprintln(c.App.Writer, l)
		}
	}

	select {
	case <-ctx.Done():
	case <-env.Done():
	}
	cancel()
	view.Wait()
	runErr := env.Close()
	if errors.Is(runErr, devenv.ErrGatewayExited) {
		runErr = fmt.Errorf("%w: see the log%s", runErr, logHint(logPath))
	}
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

// prepareDevDir readies the data directory: --reset's wipe, and refusals
// while a dev server runs there or the address is taken.
func prepareDevDir(c *cli.Context, dc *devConfig, tty bool) error {
	if dc.reset {
		if err := resetDevData(c, dc, tty); err != nil {
			return err
		}
	}
	if st, ok := devenv.Running(c.Context, dc.dataDir); ok {
		return withExitCode(exitConflict, fmt.Errorf("a qo dev server already runs on %s (pid %d, %s): use it, or stop it first",
			dc.dataDir, st.PID, st.Endpoint))
	}
	if err := checkDevAddr(dc.addr); err != nil {
		return err
	}
	if err := os.MkdirAll(dc.dataDir, 0o700); err != nil {
		return usageError("cannot create the data directory: %v: pass another --data-dir", err)
	}
	return nil
}

// envConfig is the dev environment dc describes.
func (dc *devConfig) envConfig(log *slog.Logger, build Build) devenv.Config {
	return devenv.Config{
		DataDir:         dc.dataDir,
		Addr:            dc.addr,
		Bucket:          dc.bucket,
		Concurrency:     dc.concurrency,
		Limits:          dc.limits,
		Execs:           dc.execs,
		PassEnv:         dc.execPassEnv,
		Env:             dc.execEnv,
		ShutdownTimeout: dc.shutdownTimeout,
		Demo:            dc.demo,
		DemoRate:        dc.demoRate,
		Logger:          log,
		Version:         build.String(),
	}
}

func logHint(path string) string {
	if path == "" {
		return ""
	}
	return " in " + path
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
	path = filepath.Join(dir, devenv.LogFile)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, "", nil, fmt.Errorf("open the dev log: %w", err)
	}
	ho := &slog.HandlerOptions{Level: level}
	var h slog.Handler = slog.NewTextHandler(f, ho)
	if c.String("log-format") == "json" {
		h = slog.NewJSONHandler(termsafe.JSONWriter(f), ho)
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
	switch err := devenv.CheckAddr(addr); {
	case err == nil:
		return nil
	case errors.Is(err, devenv.ErrAddrInUse):
		return devAddrBusy(addr)
	default:
		return usageError("cannot listen on %s (%v): pick another address with --addr HOST:PORT (QO_DEV_ADDR)", addr, err)
	}
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
	if st, ok := devenv.InUse(dir); ok {
		return withExitCode(exitConflict, fmt.Errorf("a qo dev server (pid %d, %s) uses %s: stop it before --reset (if none runs, delete %s)",
			st.PID, st.Endpoint, dir, filepath.Join(dir, devenv.StateFile)))
	}
	if tty && !dc.yes && readerIsTerminal(c.App.Reader) {
		fmt.Fprintf(c.App.Writer, "Delete every task, the credentials and all other qo dev data in %s? [y/N] ", dir)
		line, _ := bufio.NewReader(c.App.Reader).ReadString('\n')
		if a := strings.ToLower(strings.TrimSpace(line)); a != "y" && a != "yes" {
			return fmt.Errorf("reset cancelled: nothing was deleted")
		}
	}
	if err := devenv.Wipe(dir); err != nil {
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

// devQuitPrompt is what q in qo dev's console asks: quitting it stops
// everything qo dev runs.
const devQuitPrompt = "Stop qo dev: its S3 server, worker and monitor? (data is kept)"

// startDevUI serves the web UI's files on addr (a free loopback port when
// addr is taken) and returns the link that opens it on the dev queue, its
// settings and the dev keys in the fragment, which browsers never send to
// a server. It returns "" when addr is "" (off) or nothing could listen;
// stop shuts the server down.
func startDevUI(addr string, st *devenv.State, log *slog.Logger) (link string, stop func()) {
	if addr == "" {
		return "", func() {}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		log.Info("web UI address taken: using a free port", "addr", addr, "err", err)
		host, _, _ := net.SplitHostPort(addr)
		if ln, err = net.Listen("tcp", net.JoinHostPort(host, "0")); err != nil {
			log.Warn("web UI not served", "err", err)
			return "", func() {}
		}
	}
	page, err := webui.Handler(st.Endpoint)
	if err != nil {
		ln.Close()
		log.Warn("web UI not served", "err", err)
		return "", func() {}
	}
	srv := newHTTPServer(ln.Addr().String(), page, log)
	go func() { _ = srv.Serve(ln) }()
	frag := uiFragment(st.Endpoint, st.Bucket, st.Region)
	frag.Set("ak", st.AccessKey)
	frag.Set("sk", st.SecretKey)
	return uiURL("http://"+ln.Addr().String()+"/", frag), func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}
}

// uiBase is link without its fragment (the settings and keys).
func uiBase(link string) string {
	base, _, _ := strings.Cut(link, "#")
	return base
}
