package command

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/qo-queue/qo/inspect"
	"github.com/qo-queue/qo/internal/termsafe"
	"github.com/qo-queue/qo/monitor"
	"github.com/qo-queue/qo/monitor/view"
)

func workersCommand() *cli.Command {
	return &cli.Command{
		Name:      "workers",
		Usage:     "list registered workers: active, stale or dead by the monitor's liveness rule",
		UsageText: "qo workers [--json]",
		Description: `A worker is judged by the rule the monitor takes tasks back by: dead once its
last heartbeat is older than its liveness bound (its --dead-after, 20s by
default) plus 2s of clock skew, 22s by default: the monitor has taken or is
taking its tasks back. Stale from three quarters of the bound (15s): a worker
whose heartbeats do not land stops its own handlers at that age. Active below.
A SIGKILLed worker shows dead within 22s of the kill.
SHARDS "all" means the worker polls every shard (no shard leasing).

--json prints {"now", "threshold_seconds", "dead_after_seconds", "workers":
[...]} (threshold_seconds and dead_after_seconds: the stale and dead ages for
the default bound) where each worker is its registry record (worker_id,
started_at, last_heartbeat, shards, current_tasks, types, concurrency,
tasks_completed, tasks_failed, host, pid, version, dead_after_seconds when it
states its own bound, holds) plus "state" and "heartbeat_age_seconds".

A worker serving a type with a fleet-wide limit (qo limit) holds a share of
it, shown as "holds of the fleet-wide limits": of a cap, how many of the type
it may run at once; of a rate, how many it may start a minute. Where a cap
has fewer units than workers, the workers serving fewest types (then those
with most slots) hold them.`,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "json", Usage: "print as JSON"},
			removedHealthThreshold(),
		},
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return usageError("workers takes no arguments, got %q", c.Args().First())
			}
			if err := checkRemovedHealthThreshold(c); err != nil {
				return err
			}
			q, err := openQueue(c)
			if err != nil {
				return err
			}
			health, now, err := inspect.New(q, inspect.Options{}).Workers(c.Context)
			if err != nil {
				return err
			}
			if c.Bool("json") {
				return emitJSON(c.App.Writer, view.WorkersOf(health, now))
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
		if h.State != monitor.Dead && len(h.Worker.Holds) > 0 {
			fmt.Fprintf(w, "%s holds of the fleet-wide limits: %s\n", termsafe.Line(h.Worker.ID), termsafe.Line(view.HoldsText(h.Worker.Holds)))
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
