package command

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/qo-queue/qo/httpapi"
	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/worker"
)

const runWorkerDescription = `Claims tasks and runs their handlers until SIGTERM or SIGINT. The first signal
stops claiming, waits up to --shutdown-timeout for running tasks, then stops
the rest (an exec handler gets SIGTERM, then SIGKILL after --kill-grace) and
releases each task once its handler has exited (pending again, available at
once, no retry counted): never while it still runs. A second signal stops them
at once (SIGKILL). Either way the worker deregisters and exits 0, also when
the signal comes while it is still starting.

On start the worker probes the server's conditional writes (three PUTs to
monitor/probe.json) and exits 5 without claiming anything on a server that
ignores them, where tasks would run twice (qo doctor has the details;
docs/providers.md lists the servers tested with qo).

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
  QO_TASK_KEY           set by qo for each task (QO_TASK_KEY when it has a
                        key); nothing overrides them.
  TRACEPARENT, TRACESTATE
                        the task's W3C trace context, when its metadata
                        holds one; never the worker's own.
QO_EXEC_ENV takes names (or NAME=VALUE without commas), comma separated; a
--env on the command line replaces it.

A task's timeout_seconds is a hard limit: at the deadline the handler is
stopped (an exec handler gets SIGTERM, then SIGKILL after --kill-grace) and
the attempt is retried or failed as timed out. Liveness is the heartbeat:
a worker whose heartbeat is older than --dead-after loses its tasks to the
monitor, which runs them again elsewhere; a handler running longer than
the lease check interval has its task re-read to notice a cancel.

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

func workerCommand(build Build) *cli.Command {
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
		&cli.IntFlag{Name: "concurrency", Aliases: []string{"c"}, Category: catWorker, EnvVars: []string{"QO_CONCURRENCY"},
			DefaultText: fmt.Sprintf("the CPUs the process may use (a container's CPU limit), at least %d, at most %d", worker.MinDefaultConcurrency, worker.MaxDefaultConcurrency),
			Usage:       "tasks run at once"},
		&cli.StringSliceFlag{Name: "types", Category: catWorker, EnvVars: []string{"QO_TYPES"},
			Usage: "task types to serve, comma separated (default: every type with a handler); TYPE=W weighs a type: with a=6,b=3,c=1 the worker claims about 6 of a and 3 of b for each c while all have tasks ready (a type without =W weighs 1)"},
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
			Usage: "exec handlers: time between SIGTERM and SIGKILL; at most a quarter of --dead-after, and 10s (the default is lowered to fit)"},
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
		Action:      serviceAction(func(c *cli.Context) error { return runWorker(c, build) }),
	}
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
	o.Concurrency = worker.DefaultConcurrency()
	if c.IsSet("concurrency") {
		o.Concurrency = c.Int("concurrency")
	}
	if o.Concurrency < 1 {
		return nil, usageError("invalid --concurrency %d: must be at least 1", o.Concurrency)
	}
	if o.Types, o.Weights, err = parseTypes(c.StringSlice("types")); err != nil {
		return nil, err
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
	if most, _ := worker.MaxKillGrace(o.DeadAfter); !c.IsSet("kill-grace") && ws.execOpts.KillGrace > most {
		ws.execOpts.KillGrace = most // the default, under a short --dead-after
	}
	o.KillGrace = ws.execOpts.KillGrace
	if err := worker.CheckKillGrace(o.KillGrace, o.DeadAfter); err != nil {
		return nil, usageError("invalid --kill-grace: %s", strings.TrimPrefix(err.Error(), worker.ErrKillGrace.Error()+": "))
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
	return ws, nil
}

func runWorker(c *cli.Context, build Build) error {
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
	ws.opts.Version = build.String()
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

	// The first signal drains (the probes turn to 503), a second one
	// releases the running tasks at once.
	return worker.RunNotify(c.Context, w, func(n int) {
		if n == 1 {
			p.setStopping()
		}
	})
}
