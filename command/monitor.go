package command

import (
	"context"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/qo-queue/qo/httpapi"
	"github.com/qo-queue/qo/monitor"
	"github.com/qo-queue/qo/queue"
)

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
		removedHealthThreshold(),
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

// monitorOptions reads the monitor flags.
func monitorOptions(c *cli.Context) (monitor.Options, error) {
	var o monitor.Options
	var err error
	if o.CheckInterval, err = cmdDuration(c, "check-interval"); err != nil {
		return o, err
	}
	if err := checkRemovedHealthThreshold(c); err != nil {
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
		UsageText: "qo monitor [--check-interval 30s] [--dead-after 20s] [--sweep-interval 5m] [flags]",
		Description: `Runs until SIGTERM or SIGINT. Any number of monitors may run (each worker embeds
one unless --no-monitor): one leads at a time, through a lease object written
with conditional PUTs, and the others stand by and take over when it expires.

The leader, every --check-interval, lists only the lease-index entries that
expired and requeues their tasks with backoff (or fails them when their retries
are exhausted), and logs workers that turn stale or dead (by the rule it takes
their tasks back by: dead once a heartbeat is older than the worker's
--dead-after plus 2s), folding their finishes into the throughput rollup
(monitor/throughput/, kept 7 days, which qo stats and the console read); every
--sweep-interval it repairs the ready and lease indexes, one bounded page per
shard per round.

Probes, served with /metrics on --metrics-addr (QO_METRICS_ADDR):
  GET /healthz   liveness: 200 while the process runs, 503 once a signal
                 started the shutdown; no S3 request.
  GET /readyz    readiness: 200 when the bucket answers (one HeadBucket,
                 reused for 2s whoever asks), 503 with the error when it does
                 not, and while shutting down.

Durations accept Go syntax (500ms, 30s, 2m) or a bare number of seconds.`,
		Flags: flags,
		Action: serviceAction(func(c *cli.Context) error {
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
			p.setReady(httpapi.NewS3Check(q.Store(), 0).SetLogger(log).Readiness)
			ctx, cancel := context.WithCancel(c.Context)
			defer cancel()
			stop := onSignals(func(int) {
				p.setStopping()
				cancel()
			})
			defer stop()
			return monitor.New(q, o).Run(ctx)
		}),
	}
}

// removedHealthThreshold is the flag that set a display threshold of its
// own: worker health now follows the monitor's liveness rule, so the flag
// is refused with a note rather than unknown.
func removedHealthThreshold() cli.Flag {
	return &cli.StringFlag{Name: "worker-health-threshold", Hidden: true}
}

// checkRemovedHealthThreshold refuses --worker-health-threshold.
func checkRemovedHealthThreshold(c *cli.Context) error {
	if c.IsSet("worker-health-threshold") {
		return usageError("--worker-health-threshold was removed: a worker is shown stale and dead by the monitor's liveness rule, from its --dead-after (stale at 3/4 of it, dead past it plus 2s); drop the flag")
	}
	return nil
}
