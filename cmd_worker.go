package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/urfave/cli/v2"

	"github.com/qo-queue/qo/httpapi"
	"github.com/qo-queue/qo/internal/termsafe"
	"github.com/qo-queue/qo/monitor"
	"github.com/qo-queue/qo/monitor/view"
	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/worker"
)

// Commands of the worker runtime: run-worker (alias worker), monitor,
// workers.

func init() {
	commands = append(commands, runWorkerCommand(), monitorCommand(), workersCommand())
}

const runWorkerDescription = `Claims tasks and runs their handlers until SIGTERM or SIGINT. The first signal
stops claiming, waits up to --shutdown-timeout for running tasks and releases
the rest (pending again, available at once, no retry counted); a second signal
releases them at once. Either way the worker deregisters and exits 0.

Handlers, three ways:
  --exec TYPE=COMMAND   run COMMAND (split on spaces, no shell) per task: the
                        task input JSON on stdin, the output JSON on stdout
                        (empty = null); exit 0 = success, 75 = retry, anything
                        else = permanent failure; the stderr tail is kept as the
                        error. On timeout, cancel or lease loss the process
                        group gets SIGTERM, then SIGKILL after --kill-grace.
  --builtins            echo (output = input), sleep ({"ms": N}) and fail
                        ({"mode": "retryable"|"permanent"}), for demos and tests;
                        on by default when no --exec is given.
  Go API                embed qo: worker.New(q, opts).Handle("type", fn).

Exec handler environment: a handler does NOT inherit the worker's environment,
which holds the bucket's credentials (a handler that printed it would store
them in the bucket). It gets only PATH, HOME, USER, LOGNAME, SHELL, LANG,
LANGUAGE, LC_*, TZ, TMPDIR, TERM, SSL_CERT_FILE and SSL_CERT_DIR from the
worker (on Windows: PATH, PATHEXT, SYSTEMROOT, TEMP, USERPROFILE and the like),
then, in this order (a later one wins):
  --env NAME            the worker's NAME, when set (skipped when not)
  --env-file FILE       the variables of a dotenv file (NAME=VALUE lines,
                        # comments, quotes, export prefixes)
  --env NAME=VALUE      NAME set to VALUE (commas and all)
  QO_TASK_ID, QO_TASK_TYPE, QO_ATTEMPT, QO_WORKER_ID, QO_TASK_TIMEOUT_SECONDS,
                        set by qo for each task; nothing overrides them.
QO_EXEC_ENV takes names (or NAME=VALUE without commas), comma separated; a
--env on the command line replaces it.

A task's timeout is a lease: while a handler runs its lease is renewed every
timeout/3, so a slow handler keeps running as long as the worker is healthy;
a dead or partitioned worker's tasks come back when their lease expires.

The worker runs the timeout monitor too (one of all running monitors leads at
a time); --no-monitor turns it off when a separate 'qo monitor' runs.

Shard leasing (--shard-leasing): each worker polls only the shards it holds a
lease on; leases are balanced to ceil(shards / live workers) per worker. A
worker with no free shard keeps heartbeating and retries with jittered backoff.
All workers of a leasing pool must serve the same task types.

Probes for orchestrators (Kubernetes), served with /metrics on --metrics-addr
(QO_METRICS_ADDR); neither sends an S3 request:
  GET /healthz   liveness: 200 {"alive":true} while the process runs; 503 once
                 a signal started the shutdown.
  GET /readyz    readiness: 200 {"ready":true,"reason":"claiming"} while the
                 worker reaches the bucket and claims, or is idle on purpose
                 ("paused: ..." when every type it serves is paused,
                 "standby: ..." when shard leasing leaves it no shard).
                 503 {"ready":false,"reason","since"} before it registered,
                 when its last heartbeat that landed is older than
                 2 x --heartbeat-interval (at most 3/4 of --dead-after, when
                 it stops claiming), when its last poll failed, and while it
                 shuts down. Go code embedding a worker: Worker.Ready().

Durations accept Go syntax (500ms, 30s, 2m) or a bare number of seconds.

Examples:
  qo run-worker --exec send_email=./send.sh --concurrency 4
  qo run-worker --exec send_email=./send.sh --env SMTP_HOST --env-file /etc/qo/send.env
  QO_SHARD_LEASING=1 qo worker --exec resize=/usr/local/bin/resize
  qo run-worker --builtins --types echo,sleep`

func runWorkerCommand() *cli.Command {
	const (
		catWorker  = "Worker"
		catHandler = "Handlers"
		catPoll    = "Polling"
		catLease   = "Shard leasing"
	)
	flags := []cli.Flag{
		&cli.StringFlag{Name: "id", Category: catWorker, EnvVars: []string{"QO_WORKER_ID"},
			Usage: "worker `ID` in the registry and in task records (default: hostname-random)"},
		metricsAddrFlag(catWorker),
		&cli.StringSliceFlag{Name: "shards", Category: catWorker, EnvVars: []string{"QO_SHARDS"},
			Usage: "only poll these shards, comma separated (default: all)"},
		&cli.IntFlag{Name: "concurrency", Aliases: []string{"c"}, Category: catWorker, EnvVars: []string{"QO_CONCURRENCY"}, Value: 1,
			Usage: "tasks run at once"},
		&cli.StringSliceFlag{Name: "types", Category: catWorker, EnvVars: []string{"QO_TYPES"},
			Usage: "task types to serve, comma separated (default: every type with a handler)"},
		limitFlag(catWorker, "QO_LIMITS"),
		&cli.StringFlag{Name: "shutdown-timeout", Category: catWorker, EnvVars: []string{"QO_SHUTDOWN_TIMEOUT"}, Value: "30s",
			Usage: "on SIGTERM/SIGINT, wait this long for running tasks before releasing them"},
		&cli.StringFlag{Name: "heartbeat-interval", Category: catWorker, EnvVars: []string{"QO_HEARTBEAT_INTERVAL"}, Value: "10s",
			Usage: "registry heartbeat period; the heartbeat is the worker's liveness (see --dead-after)"},
		&cli.BoolFlag{Name: "no-monitor", Category: catWorker, EnvVars: []string{"QO_NO_MONITOR"},
			Usage: "do not run the embedded timeout monitor"},

		&cli.StringSliceFlag{Name: "exec", Category: catHandler, EnvVars: []string{"QO_EXEC"},
			Usage: "`TYPE=COMMAND` handler, repeatable (in QO_EXEC: comma separated)"},
		&cli.BoolFlag{Name: "builtins", Category: catHandler, EnvVars: []string{"QO_BUILTINS"},
			Usage: "register the echo, sleep and fail handlers (default: on when no --exec is given)"},
		&cli.StringFlag{Name: "kill-grace", Category: catHandler, EnvVars: []string{"QO_KILL_GRACE"}, Value: "5s",
			Usage: "exec handlers: time between SIGTERM and SIGKILL"},
		&cli.Int64Flag{Name: "exec-max-output", Category: catHandler, EnvVars: []string{"QO_EXEC_MAX_OUTPUT"}, Value: worker.DefaultMaxStdout,
			Usage: "exec handlers: stdout size limit in `BYTES` (larger output fails the task)"},
		execEnvFlag(catHandler, "QO_EXEC_ENV"),
		execEnvFileFlag(catHandler, "QO_EXEC_ENV_FILE"),

		&cli.StringFlag{Name: "index-mode", Category: catPoll, EnvVars: []string{"QO_INDEX_MODE"}, Value: string(worker.IndexOnly),
			Usage: "task discovery: index-only; hybrid (also scans recent task objects when the index looks empty for a while: for a bucket damaged from outside) or log-scan (diagnosis)"},
		&cli.StringFlag{Name: "poll-min", Category: catPoll, EnvVars: []string{"QO_POLL_MIN"}, Value: "100ms",
			Usage: "idle poll interval after work (doubles while idle)"},
		&cli.StringFlag{Name: "poll-max", Category: catPoll, EnvVars: []string{"QO_POLL_MAX"}, Value: "5s",
			Usage: "longest idle poll interval"},
		&cli.IntFlag{Name: "ready-page-size", Category: catPoll, EnvVars: []string{"QO_READY_PAGE_SIZE"}, Value: worker.DefaultReadyPageSize,
			Usage: "keys per ready-index LIST"},
		&cli.IntFlag{Name: "log-scan-page-size", Category: catPoll, EnvVars: []string{"QO_LOG_SCAN_PAGE_SIZE"}, Value: worker.DefaultLogScanPageSize,
			Usage: "tasks per tasks/ scan page (hybrid and log-scan modes)"},

		&cli.BoolFlag{Name: "shard-leasing", Category: catLease, EnvVars: []string{"QO_SHARD_LEASING"},
			Usage: "poll only shards this worker holds a lease on"},
		&cli.IntFlag{Name: "shard-leasing-shards-per-worker", Category: catLease, EnvVars: []string{"QO_SHARD_LEASING_SHARDS_PER_WORKER"},
			Usage: "cap on shards held per worker (0: the balanced share ceil(shards / live workers))"},
		&cli.StringFlag{Name: "shard-leasing-ttl", Category: catLease, EnvVars: []string{"QO_SHARD_LEASING_TTL_SECS"}, Value: "30s",
			Usage: "shard lease time to live"},
		&cli.StringFlag{Name: "shard-leasing-renew", Category: catLease, EnvVars: []string{"QO_SHARD_LEASING_RENEW_SECS"}, Value: "10s",
			Usage: "shard lease renewal and rebalancing period (below the TTL)"},
	}
	flags = append(flags, monitorFlags()...)
	flags = append(flags, logFlags()...)
	return &cli.Command{
		Name:        "run-worker",
		Aliases:     []string{"worker"},
		Usage:       "claim tasks and run their handlers (exec, built-in) until stopped",
		UsageText:   "qo run-worker [--exec TYPE=COMMAND ...] [--builtins] [flags]",
		Description: runWorkerDescription,
		Flags:       flags,
		Action:      runWorker,
	}
}

// monitorFlags are shared by run-worker (for the embedded monitor) and
// monitor.
func monitorFlags() []cli.Flag {
	const cat = "Monitor"
	return []cli.Flag{
		&cli.StringFlag{Name: "lease-check-interval", Category: cat, EnvVars: []string{"QO_MONITOR_LEASE_CHECK_INTERVAL"}, Value: "5s",
			Usage: "how often the leading monitor takes back the tasks of expired leases and dead workers (one LIST when nothing runs)"},
		&cli.StringFlag{Name: "dead-after", Category: cat, EnvVars: []string{"QO_DEAD_AFTER"}, Value: "20s",
			Usage: "liveness bound: a worker whose heartbeat is older (plus 2s of clock skew) is dead and its tasks run again; a worker stops its own handlers at 3/4 of it without a landed heartbeat; at least 2x --heartbeat-interval"},
		&cli.StringFlag{Name: "check-interval", Category: cat, EnvVars: []string{"QO_MONITOR_CHECK_INTERVAL"}, Value: "30s",
			Usage: "how often the leading monitor logs worker health and prunes dead registrations"},
		&cli.StringFlag{Name: "worker-health-threshold", Category: cat, EnvVars: []string{"QO_MONITOR_WORKER_HEALTH_THRESHOLD"}, Value: "60s",
			Usage: "heartbeat age after which a worker is stale (dead after 3x)"},
		&cli.StringFlag{Name: "sweep-interval", Category: cat, EnvVars: []string{"QO_MONITOR_SWEEP_INTERVAL"}, Value: "5m",
			Usage: "how often the index sweeper runs (0 disables it)"},
		&cli.IntFlag{Name: "sweep-page-size", Category: cat, EnvVars: []string{"QO_MONITOR_SWEEP_PAGE_SIZE"}, Value: monitor.DefaultSweepPageSize,
			Usage: "task objects one sweep round reads per shard"},
		&cli.StringFlag{Name: "leader-ttl", Category: cat, EnvVars: []string{"QO_MONITOR_LEADER_TTL"},
			Usage: "monitor leader lease time to live (default: 3x lease check interval, within 5s..90s)"},
		&cli.StringFlag{Name: "prune-dead-after", Category: cat, EnvVars: []string{"QO_MONITOR_PRUNE_DEAD_AFTER"}, Value: "24h",
			Usage: "delete registry entries of workers silent this long (0: never)"},
	}
}

func logFlags() []cli.Flag {
	const cat = "Logging"
	return []cli.Flag{
		&cli.StringFlag{Name: "log-level", Category: cat, EnvVars: []string{"QO_LOG_LEVEL"}, Value: "info",
			Usage: "debug, info, warn or error"},
		&cli.StringFlag{Name: "log-format", Category: cat, EnvVars: []string{"QO_LOG_FORMAT"}, Value: "auto",
			Usage: "text, json, or auto (text on a terminal, JSON otherwise)"},
	}
}

// cmdDuration reads a duration flag: Go syntax (500ms, 2m) or a bare number
// of seconds (as QO_MONITOR_CHECK_INTERVAL=30).
func cmdDuration(c *cli.Context, name string) (time.Duration, error) {
	s := strings.TrimSpace(c.String(name))
	if s == "" {
		return 0, nil
	}
	d, err := parseSecondsOrDuration(s)
	if err != nil {
		return 0, usageError("invalid --%s %q: want a duration like 500ms, 30s or 2m, or a number of seconds", name, s)
	}
	if d < 0 {
		return 0, usageError("invalid --%s %q: must not be negative", name, s)
	}
	return d, nil
}

func parseSecondsOrDuration(s string) (time.Duration, error) {
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		return time.Duration(f * float64(time.Second)), nil
	}
	return time.ParseDuration(s)
}

// cmdLogger builds the slog logger of long-running commands: on stderr,
// text on a terminal and JSON otherwise (or as --log-format says).
func cmdLogger(c *cli.Context) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(c.String("log-level"))); err != nil {
		return nil, usageError("invalid --log-level %q: want debug, info, warn or error", c.String("log-level"))
	}
	w := c.App.ErrWriter
	if w == nil {
		w = os.Stderr
	}
	ho := &slog.HandlerOptions{Level: level}
	switch f := c.String("log-format"); f {
	case "text":
		return slog.New(slog.NewTextHandler(w, ho)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, ho)), nil
	case "auto", "":
		if isTerminal(w) {
			return slog.New(slog.NewTextHandler(w, ho)), nil
		}
		return slog.New(slog.NewJSONHandler(w, ho)), nil
	default:
		return nil, usageError("invalid --log-format %q: want text, json or auto", f)
	}
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}

// monitorOptions reads the monitor flags.
func monitorOptions(c *cli.Context) (monitor.Options, error) {
	var o monitor.Options
	var err error
	if o.CheckInterval, err = cmdDuration(c, "check-interval"); err != nil {
		return o, err
	}
	if o.WorkerHealthThreshold, err = cmdDuration(c, "worker-health-threshold"); err != nil {
		return o, err
	}
	if o.LeaseCheckInterval, err = cmdDuration(c, "lease-check-interval"); err != nil {
		return o, err
	}
	if o.DeadAfter, err = cmdDuration(c, "dead-after"); err != nil {
		return o, err
	}
	if o.SweepInterval, err = cmdDuration(c, "sweep-interval"); err != nil {
		return o, err
	}
	if o.SweepInterval == 0 {
		o.SweepInterval = -1 // 0 on the command line disables the sweeper
	}
	if o.LeaderTTL, err = cmdDuration(c, "leader-ttl"); err != nil {
		return o, err
	}
	if o.PruneDeadAfter, err = cmdDuration(c, "prune-dead-after"); err != nil {
		return o, err
	}
	if o.SweepPageSize = c.Int("sweep-page-size"); o.SweepPageSize <= 0 {
		return o, usageError("invalid --sweep-page-size %d: must be positive", o.SweepPageSize)
	}
	if o.LeaderTTL > 0 && o.LeaseCheckInterval > 0 && o.LeaderTTL < o.LeaseCheckInterval {
		return o, usageError("--leader-ttl %s is shorter than --lease-check-interval %s: the leader would lose its lease between checks", o.LeaderTTL, o.LeaseCheckInterval)
	}
	return o, nil
}

// splitList flattens repeated and comma-separated values, dropping blanks.
func splitList(vals []string) []string {
	var out []string
	for _, v := range vals {
		for _, p := range strings.Split(v, ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
	}
	return out
}

// workerSetup is what run-worker's flags describe.
type workerSetup struct {
	opts     worker.Options
	execs    []worker.ExecSpec
	builtins bool
	execOpts worker.ExecOptions
}

func workerSetupFromFlags(c *cli.Context) (*workerSetup, error) {
	ws := &workerSetup{}
	var (
		err  error
		mode worker.IndexMode
	)
	o := &ws.opts
	o.ID = strings.TrimSpace(c.String("id"))
	if o.ID != "" {
		if err := queue.ValidateWorkerID(o.ID); err != nil {
			return nil, usageError("invalid --id: %v", err)
		}
	}
	o.Shards = splitList(c.StringSlice("shards"))
	if o.Concurrency = c.Int("concurrency"); o.Concurrency < 1 {
		return nil, usageError("invalid --concurrency %d: must be at least 1", o.Concurrency)
	}
	o.Types = splitList(c.StringSlice("types"))
	for _, t := range o.Types {
		if err := queue.ValidateType(t); err != nil {
			return nil, usageError("invalid --types: %v", err)
		}
	}
	if o.Limits, err = parseLimits(c.StringSlice("limit")); err != nil {
		return nil, err
	}
	mode, err = worker.ParseIndexMode(c.String("index-mode"))
	if err != nil {
		return nil, usageError("invalid --index-mode: %v", err)
	}
	o.IndexMode = mode
	for _, d := range []struct {
		flag string
		dst  *time.Duration
	}{
		{"poll-min", &o.PollMin}, {"poll-max", &o.PollMax}, {"shutdown-timeout", &o.ShutdownTimeout},
		{"heartbeat-interval", &o.HeartbeatInterval}, {"kill-grace", &ws.execOpts.KillGrace},
		{"shard-leasing-ttl", &o.ShardLeasing.TTL}, {"shard-leasing-renew", &o.ShardLeasing.RenewInterval},
	} {
		if *d.dst, err = cmdDuration(c, d.flag); err != nil {
			return nil, err
		}
	}
	if o.PollMin > 0 && o.PollMax > 0 && o.PollMax < o.PollMin {
		return nil, usageError("--poll-max %s is below --poll-min %s", o.PollMax, o.PollMin)
	}
	if o.ReadyPageSize = c.Int("ready-page-size"); o.ReadyPageSize < 1 || o.ReadyPageSize > 1000 {
		return nil, usageError("invalid --ready-page-size %d: want 1..1000", o.ReadyPageSize)
	}
	if o.LogScanPageSize = c.Int("log-scan-page-size"); o.LogScanPageSize < 1 || o.LogScanPageSize > 1000 {
		return nil, usageError("invalid --log-scan-page-size %d: want 1..1000", o.LogScanPageSize)
	}
	if ws.execOpts.MaxStdout = c.Int64("exec-max-output"); ws.execOpts.MaxStdout < 1 {
		return nil, usageError("invalid --exec-max-output %d: must be positive", ws.execOpts.MaxStdout)
	}
	if ws.execOpts.KillGrace > 0 {
		o.HandlerGrace = ws.execOpts.KillGrace + 2*time.Second
	}
	o.NoMonitor = c.Bool("no-monitor")
	o.ShardLeasing.Enabled = c.Bool("shard-leasing")
	if o.ShardLeasing.ShardsPerWorker = c.Int("shard-leasing-shards-per-worker"); o.ShardLeasing.ShardsPerWorker < 0 {
		return nil, usageError("invalid --shard-leasing-shards-per-worker %d: must be >= 0", o.ShardLeasing.ShardsPerWorker)
	}
	if o.ShardLeasing.Enabled && o.ShardLeasing.RenewInterval >= o.ShardLeasing.TTL {
		return nil, usageError("--shard-leasing-renew %s must be shorter than --shard-leasing-ttl %s", o.ShardLeasing.RenewInterval, o.ShardLeasing.TTL)
	}
	if o.Monitor, err = monitorOptions(c); err != nil {
		return nil, err
	}
	o.DeadAfter = o.Monitor.DeadAfter
	if o.HeartbeatInterval > 0 && o.DeadAfter > 0 && 2*o.HeartbeatInterval > o.DeadAfter {
		return nil, usageError("--heartbeat-interval %s is more than half of --dead-after %s: one late heartbeat would get the worker's tasks taken back; raise --dead-after to at least %s", o.HeartbeatInterval, o.DeadAfter, 2*o.HeartbeatInterval)
	}
	if ws.execs, err = parseExecFlags(c.StringSlice("exec")); err != nil {
		return nil, err
	}
	if ws.execOpts.PassEnv, ws.execOpts.Env, err = execEnvFromFlags(c); err != nil {
		return nil, err
	}
	ws.builtins = len(ws.execs) == 0
	if c.IsSet("builtins") {
		ws.builtins = c.Bool("builtins")
	}
	if len(ws.execs) == 0 && !ws.builtins {
		return nil, usageError("no handlers: give --exec TYPE=COMMAND (repeatable) or --builtins")
	}
	o.Version = versionString()
	return ws, nil
}

func runWorker(c *cli.Context) error {
	if c.NArg() > 0 {
		return usageError("run-worker takes no arguments, got %q (handlers are given with --exec TYPE=COMMAND)", c.Args().First())
	}
	log, err := cmdLogger(c)
	if err != nil {
		return err
	}
	ws, err := workerSetupFromFlags(c)
	if err != nil {
		return err
	}
	m, p, stopMetrics, err := metricsFromFlag(c, log)
	if err != nil {
		return err
	}
	defer stopMetrics()
	q, err := openQueueLogged(c, log)
	if err != nil {
		return err
	}
	if m != nil {
		watchStoreMetrics(m, q)
		ws.opts.Observer, ws.opts.Monitor.Observer = m, m
	}
	ws.opts.Logger = log
	w := worker.New(q, ws.opts)
	if ws.builtins {
		worker.RegisterBuiltins(w)
	}
	ws.execOpts.WorkerID = w.ID()
	for _, spec := range ws.execs {
		w.Handle(spec.Type, worker.Exec(spec.Command, ws.execOpts)) // an exec handler replaces a built-in of the same name
	}
	if err := w.Validate(); err != nil {
		return usageError("%v", err)
	}
	p.setReady(func(context.Context) httpapi.Readiness {
		r := w.Readiness()
		return httpapi.Readiness{Ready: r.Ready, Reason: r.Reason, Since: r.Since}
	})

	ctx, cancel := context.WithCancel(c.Context)
	defer cancel()
	stop := onSignals(func(n int) {
		if n == 1 {
			log.Info("signal received: shutting down (send it again to release running tasks at once)")
			p.setStopping()
			cancel()
			return
		}
		log.Warn("second signal: releasing running tasks now")
		w.Abort()
	})
	defer stop()
	return w.Run(ctx)
}

// onSignals calls f with a running count for each SIGINT or SIGTERM until
// the returned stop is called. While registered, signals do not kill the
// process.
func onSignals(f func(n int)) (stop func()) {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		n := 0
		for {
			select {
			case <-sigs:
				n++
				f(n)
			case <-done:
				return
			}
		}
	}()
	return func() {
		signal.Stop(sigs)
		close(done)
	}
}

func monitorCommand() *cli.Command {
	flags := []cli.Flag{
		&cli.StringFlag{Name: "id", EnvVars: []string{"QO_MONITOR_ID"},
			Usage: "monitor `ID` as the leader-lease holder (default: monitor-hostname-random)"},
	}
	flags = append(flags, metricsAddrFlag(""))
	flags = append(flags, monitorFlags()...)
	flags = append(flags, logFlags()...)
	return &cli.Command{
		Name:      "monitor",
		Usage:     "expire timed-out leases, watch worker heartbeats and repair indexes",
		UsageText: "qo monitor [--check-interval 30s] [--worker-health-threshold 60s] [--sweep-interval 5m] [flags]",
		Description: `Runs until SIGTERM or SIGINT. Any number of monitors may run (each worker embeds
one unless --no-monitor): one leads at a time, through a lease object written
with conditional PUTs, and the others stand by and take over when it expires.

The leader, every --check-interval, lists only the lease-index entries that
expired and requeues their tasks with backoff (or fails them when their retries
are exhausted), and logs workers whose heartbeat is older than
--worker-health-threshold; every --sweep-interval it repairs the ready and lease
indexes, one bounded page per shard per round.

Probes, served with /metrics on --metrics-addr (QO_METRICS_ADDR):
  GET /healthz   liveness: 200 while the process runs, 503 once a signal
                 started the shutdown; no S3 request.
  GET /readyz    readiness: 200 when the bucket answers (one HeadBucket,
                 reused for 2s whoever asks), 503 with the error when it does
                 not, and while shutting down.

Durations accept Go syntax (500ms, 30s, 2m) or a bare number of seconds.`,
		Flags: flags,
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return usageError("monitor takes no arguments, got %q", c.Args().First())
			}
			log, err := cmdLogger(c)
			if err != nil {
				return err
			}
			o, err := monitorOptions(c)
			if err != nil {
				return err
			}
			if o.ID = strings.TrimSpace(c.String("id")); o.ID != "" {
				if err := queue.ValidateWorkerID(o.ID); err != nil {
					return usageError("invalid --id: %v", err)
				}
			}
			o.Logger = log
			m, p, stopMetrics, err := metricsFromFlag(c, log)
			if err != nil {
				return err
			}
			defer stopMetrics()
			q, err := openQueueLogged(c, log)
			if err != nil {
				return err
			}
			if m != nil {
				watchStoreMetrics(m, q)
				o.Observer = m
			}
			p.setReady(httpapi.NewS3Check(q.Store(), 0).Readiness)
			ctx, cancel := context.WithCancel(c.Context)
			defer cancel()
			stop := onSignals(func(int) {
				p.setStopping()
				cancel()
			})
			defer stop()
			return monitor.New(q, o).Run(ctx)
		},
	}
}

func workersCommand() *cli.Command {
	return &cli.Command{
		Name:      "workers",
		Usage:     "list registered workers: active, stale or dead by heartbeat age",
		UsageText: "qo workers [--json] [--worker-health-threshold 60s]",
		Description: `A worker is active while its last heartbeat is at most --worker-health-threshold
old, stale beyond that, and dead beyond 3x the threshold. Heartbeats are for
observability only: a dead worker's tasks come back when their leases expire.
SHARDS "all" means the worker polls every shard (no shard leasing).

--json prints {"now", "threshold_seconds", "workers": [...]} where each worker
is its registry record (worker_id, started_at, last_heartbeat, shards,
current_tasks, types, concurrency, tasks_completed, tasks_failed, host, pid,
version) plus "state" and "heartbeat_age_seconds".`,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "json", Usage: "print as JSON"},
			&cli.StringFlag{Name: "worker-health-threshold", EnvVars: []string{"QO_MONITOR_WORKER_HEALTH_THRESHOLD"}, Value: "60s",
				Usage: "heartbeat age after which a worker is stale (dead after 3x)"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return usageError("workers takes no arguments, got %q", c.Args().First())
			}
			threshold, err := cmdDuration(c, "worker-health-threshold")
			if err != nil {
				return err
			}
			if threshold == 0 {
				return usageError("--worker-health-threshold must be positive")
			}
			q, err := openQueue(c)
			if err != nil {
				return err
			}
			infos, err := q.ListWorkers(c.Context)
			if err != nil {
				return err
			}
			now := q.Now()
			health := monitor.Health(infos, now, threshold)
			if c.Bool("json") {
				return emitJSON(c.App.Writer, view.WorkersOf(health, now, threshold))
			}
			return printWorkers(c.App.Writer, health)
		},
	}
}

func printWorkers(w io.Writer, health []monitor.WorkerHealth) error {
	if len(health) == 0 {
		_, err := fmt.Fprintln(w, "no workers registered")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "WORKER\tSTATE\tHEARTBEAT\tRUNNING\tDONE\tFAILED\tSHARDS\tTYPES\tHOST\tPID")
	counts := map[monitor.State]int{}
	for _, h := range health {
		wi := h.Worker
		counts[h.State]++
		tabRow(tw, wi.ID, string(h.State), h.Age.Round(time.Second).String()+" ago", fmt.Sprintf("%d/%d", len(wi.CurrentTasks), wi.Concurrency),
			fmt.Sprint(wi.TasksCompleted), fmt.Sprint(wi.TasksFailed), shardsText(wi.Shards), strings.Join(wi.Types, ","), wi.Host, fmt.Sprint(wi.PID))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, h := range health {
		if len(h.Worker.CurrentTasks) > 0 {
			fmt.Fprintf(w, "%s running: %s\n", termsafe.Line(h.Worker.ID), termsafe.Line(strings.Join(h.Worker.CurrentTasks, " ")))
		}
	}
	_, err := fmt.Fprintf(w, "%d active, %d stale, %d dead\n", counts[monitor.Active], counts[monitor.Stale], counts[monitor.Dead])
	return err
}

// shardsText renders a shard list compactly: "all", "0-7", "0,3,a".
func shardsText(shards []string) string {
	if len(shards) == 0 {
		return "all"
	}
	s := append([]string(nil), shards...)
	sort.Strings(s)
	if len(s) > 8 {
		return fmt.Sprintf("%s..%s (%d)", s[0], s[len(s)-1], len(s))
	}
	return strings.Join(s, ",")
}

// parseExecFlags parses repeated --exec TYPE=COMMAND values (blank ones are
// ignored), refusing a type given twice or a command that cannot run.
func parseExecFlags(vals []string) ([]worker.ExecSpec, error) {
	var specs []worker.ExecSpec
	seen := map[string]bool{}
	for _, raw := range vals {
		if raw = strings.TrimSpace(raw); raw == "" {
			continue
		}
		spec, err := worker.ParseExecSpec(raw)
		if err != nil {
			return nil, usageError("invalid --exec: %v", err)
		}
		if seen[spec.Type] {
			return nil, usageError("invalid --exec: type %q is given twice", spec.Type)
		}
		seen[spec.Type] = true
		if err := spec.Check(); err != nil {
			return nil, usageError("invalid --exec: %v", err)
		}
		specs = append(specs, spec)
	}
	return specs, nil
}

// limitFlag is --limit TYPE=N, shared by run-worker and dev.
func limitFlag(category, env string) cli.Flag {
	return &cli.StringSliceFlag{Name: "limit", Category: category, EnvVars: []string{env},
		Usage: "`TYPE=N`: run at most N tasks of TYPE at once in this worker, repeatable (in " + env + ": comma separated)"}
}

// parseLimits reads --limit values ("send_email=4").
func parseLimits(vals []string) (map[string]int, error) {
	var out map[string]int
	for _, v := range splitList(vals) {
		typ, num, ok := strings.Cut(v, "=")
		n, err := strconv.Atoi(strings.TrimSpace(num))
		typ = strings.TrimSpace(typ)
		if !ok || err != nil {
			return nil, usageError("invalid --limit %q: want TYPE=N, e.g. --limit send_email=4", v)
		}
		if err := queue.ValidateType(typ); err != nil {
			return nil, usageError("invalid --limit %q: %s", v, inputMessage(err))
		}
		if n < 1 {
			return nil, usageError("invalid --limit %q: N must be at least 1 (to stop a type, use: qo pause %s)", v, typ)
		}
		if _, dup := out[typ]; dup {
			return nil, usageError("--limit names type %q twice", typ)
		}
		if out == nil {
			out = map[string]int{}
		}
		out[typ] = n
	}
	return out, nil
}

// execEnvFlag is --env NAME[=VALUE], shared by run-worker and dev. Each
// --env on the command line is one entry, commas and all (a value may
// hold commas); the variable holds a comma-separated list. It is a
// GenericFlag because a string slice flag would split values on commas:
// the variable's value goes to Value, the command line's to Destination
// (see execEnvFromFlags).
func execEnvFlag(category, env string) cli.Flag {
	return &cli.GenericFlag{Name: "env", Category: category, EnvVars: []string{env},
		Value: &envEntries{}, Destination: &envEntries{},
		Usage: "exec handlers: pass the worker's variable `NAME`, or set NAME=VALUE, repeatable; they inherit no other but PATH, HOME, the locale and the like (in " + env + ": names, comma separated)"}
}

// execEnvFileFlag is --env-file FILE, shared by run-worker and dev.
func execEnvFileFlag(category, env string) cli.Flag {
	return &cli.StringFlag{Name: "env-file", Category: category, EnvVars: []string{env}, TakesFile: true,
		Usage: "exec handlers: set the variables of the dotenv `FILE` (NAME=VALUE lines, # comments) in their environment"}
}

// envEntries collects the values of --env, one entry per flag.
type envEntries struct{ vals []string }

func (e *envEntries) Set(v string) error { e.vals = append(e.vals, v); return nil }
func (e *envEntries) String() string     { return strings.Join(e.vals, ",") }

// fresh gives each run of the app its own (the command definitions, and
// so the flag values, are shared; see cloneFlag).
func (e *envEntries) fresh() cli.Generic { return &envEntries{} }

// execEnvFromFlags reads --env and --env-file into the exec handler
// options: the names to pass through and the NAME=VALUE entries (those of
// the file first, so --env NAME=VALUE wins over the file).
func execEnvFromFlags(c *cli.Context) (pass, set []string, err error) {
	var entries []string
	if d, ok := c.Generic("env").(*envEntries); ok && len(d.vals) > 0 {
		entries = d.vals // the command line wins over the variable
	} else {
		for _, f := range c.Command.Flags {
			if g, ok := f.(*cli.GenericFlag); ok && g.Name == "env" {
				if v, ok := g.Value.(*envEntries); ok {
					entries = splitList(v.vals)
				}
			}
		}
	}
	if path := strings.TrimSpace(c.String("env-file")); path != "" {
		if set, err = worker.ReadEnvFile(path); err != nil {
			return nil, nil, usageError("invalid --env-file: %s", execEnvMessage(err))
		}
	}
	for _, raw := range entries {
		if strings.TrimSpace(raw) == "" {
			continue
		}
		name, value, hasValue, err := worker.ParseEnvEntry(raw)
		if err != nil {
			return nil, nil, usageError("invalid --env %s", execEnvMessage(err))
		}
		if hasValue {
			set = append(set, name+"="+value)
		} else {
			pass = append(pass, name)
		}
	}
	return pass, set, nil
}

// execEnvMessage strips the sentinel's prefix from an exec environment
// error.
func execEnvMessage(err error) string {
	return strings.Replace(err.Error(), worker.ErrExecEnv.Error()+": ", "", 1)
}
