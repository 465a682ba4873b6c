package command

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/qo-queue/qo/inspect"
	"github.com/qo-queue/qo/internal/termsafe"
	"github.com/qo-queue/qo/monitor"
	"github.com/qo-queue/qo/monitor/view"
	"github.com/qo-queue/qo/queue"
)

func statsCommand() *cli.Command {
	return &cli.Command{
		Name:      "stats",
		Usage:     "counts by status, type and shard, the backlog's age and recent throughput",
		UsageText: "qo stats [--json] [--watch [--interval 2s]]",
		Description: `Counts the queue from its indexes and the workers' heartbeats, the same
figures as the console's overview and GET /api/stats: pending (and delayed),
running and failed tasks (dead letters: tasks whose retries ran out) by type
and shard, the age of the oldest pending task, completions and failed
attempts (each failed run of a handler, retries included) per minute over
the last minutes, the last hour and the last day (from the monitor's
throughput rollup, so they survive restarts), the types with pending tasks
that no live worker serves or that are paused, and the workers by the
monitor's liveness rule (see qo workers). Its cost is a handful of LISTs,
one GET per worker and per changed rollup hour, whatever the bucket's
history; finished tasks are not counted one by one: --json's by_status
holds only the counted statuses (listed in "counted"), so a finished status
is absent rather than 0.

--json prints exactly the shape of GET /api/stats. --watch redraws every
--interval until Ctrl-C, reading only what changed since the last round.

Exit codes: 0, 3 when the bucket holds no queue (run qo init), 5 when S3
cannot be reached.

Examples:
  qo stats
  qo stats --json | jq '.by_status.pending'
  qo stats --watch --interval 5s`,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "json", Usage: "print as JSON (the shape of GET /api/stats)"},
			&cli.BoolFlag{Name: "watch", Usage: "redraw every --interval until interrupted"},
			&cli.StringFlag{Name: "interval", Value: "2s", Usage: "how often --watch redraws (at least 1s)"},
			removedHealthThreshold(),
		},
		Action: runStats,
	}
}

func runStats(c *cli.Context) error {
	if c.NArg() > 0 {
		return usageError("stats takes no arguments, got %q", c.Args().First())
	}
	if err := checkRemovedHealthThreshold(c); err != nil {
		return err
	}
	interval, err := cmdDuration(c, "interval")
	if err != nil {
		return err
	}
	if interval < time.Second {
		return usageError("--interval %s is too short: at least 1s (each round lists the indexes)", interval)
	}
	q, err := openQueue(c)
	if errors.Is(err, queue.ErrNotInitialized) {
		return withExitCode(exitNotFound, err)
	}
	if err != nil {
		return err
	}
	model := inspect.New(q, inspect.Options{})
	show := func(ctx context.Context) error {
		st, err := model.Stats(ctx)
		if err != nil {
			return err
		}
		if c.Bool("json") {
			return emitJSON(c.App.Writer, st)
		}
		return printStats(c.App.Writer, st)
	}
	if !c.Bool("watch") {
		return show(c.Context)
	}
	ctx, stop := context.WithCancel(c.Context)
	defer stop()
	defer onSignals(func(int) { stop() })()
	redraw := envOf(c).IsTerminal(c.App.Writer) && !c.Bool("json")
	for round := 0; ; round++ {
		if redraw {
			fmt.Fprint(c.App.Writer, "\x1b[H\x1b[2J")
		} else if round > 0 {
			fmt.Fprintln(c.App.Writer)
		}
		if err := show(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(interval):
		}
	}
}

// printStats writes the human form of st.
func printStats(w io.Writer, st view.Stats) error {
	if err := printStatusCounts(w, st); err != nil {
		return err
	}
	printStatsActivity(w, st)
	if err := printStatsTable(w, st, "TYPE", st.ByType); err != nil {
		return err
	}
	if err := printStatsTable(w, st, "SHARD", st.ByShard); err != nil {
		return err
	}
	if len(st.Malformed) > 0 {
		fmt.Fprintf(w, "\n%d malformed objects skipped (see qo doctor)\n", len(st.Malformed))
		for _, m := range st.Malformed {
			fmt.Fprintf(w, "  %s: %s\n", termsafe.Line(m.Key), termsafe.Line(m.Error))
		}
	}
	return nil
}

// printStatusCounts prints the head line and the tasks by status.
func printStatusCounts(w io.Writer, st view.Stats) error {
	counted := func(s queue.Status) bool { return slices.Contains(st.Counted, s) }
	head := "queue at " + st.At.UTC().Format(time.RFC3339)
	if st.Partial {
		head += " (partial: the counts are lower bounds)"
	}
	fmt.Fprintln(w, head)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "STATUS\tTASKS")
	for _, s := range queue.Statuses {
		if !counted(s) {
			continue
		}
		n := fmt.Sprint(st.ByStatus[s])
		if s == queue.StatusPending && st.Delayed > 0 {
			n += fmt.Sprintf(" (%d delayed)", st.Delayed)
		}
		if s == queue.StatusFailed {
			n += " (dead letters)"
		}
		tabRow(tw, string(s), n)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if st.ByStatus[queue.StatusPending] > 0 {
		fmt.Fprintf(w, "oldest pending: %s\n", (time.Duration(st.OldestPendingSeconds * float64(time.Second))).Round(time.Second))
	}
	return nil
}

// printStatsActivity prints the finishes of the last minutes and hours,
// the request rate, the fleet-wide caps and rates, the types no worker
// serves and the workers.
func printStatsActivity(w io.Writer, st view.Stats) {
	sum := func(ms []queue.MinuteCount) (done, failed int) {
		for _, m := range ms {
			done += m.Completed
			failed += m.Failed
		}
		return done, failed
	}
	if len(st.Recent) > 0 {
		done, failed := sum(st.Recent)
		fmt.Fprintf(w, "last %d minutes: %d completed, %d failed attempts (%.1f finishes per minute)\n", len(st.Recent), done, failed, float64(done+failed)/float64(len(st.Recent)))
	}
	if len(st.LastDay) > 0 {
		done, failed := sum(st.LastDay)
		fmt.Fprintf(w, "last %d hours: %d completed, %d failed attempts\n", len(st.LastDay), done, failed)
	}
	if r := st.RequestRate; r != nil {
		fmt.Fprintf(w, "S3 requests: %.1f/s (~$%.4f/hour) from %d workers' heartbeats\n", r.PerSecond, r.DollarsPerHour, r.Workers)
	}
	for _, l := range []struct {
		label  string
		byType string
	}{
		{"fleet-wide caps (running at once)", typeValues(st.Limits)},
		{"fleet-wide rates (starts)", typeValues(st.Rates)},
		{"per-key caps (running at once for each key)", typeValues(st.KeyLimits)},
		{"per-key rates (starts for each key)", typeValues(st.KeyRates)},
	} {
		if l.byType != "" {
			fmt.Fprintf(w, "%s: %s\n", l.label, l.byType)
		}
	}
	for _, u := range st.Unserved {
		fmt.Fprintf(w, "UNSERVED %s: %d pending, %s\n", termsafe.Line(u.Type), u.Pending, u.Reason)
	}
	fmt.Fprintf(w, "workers: %d active, %d stale, %d dead\n", st.Workers[monitor.Active], st.Workers[monitor.Stale], st.Workers[monitor.Dead])
}

// printStatsTable prints rows (by type or shard) of the pending, running
// and failed counts, "-" for a status not counted; nothing without rows.
func printStatsTable(w io.Writer, st view.Stats, title string, rows map[string]map[queue.Status]int) error {
	if len(rows) == 0 {
		return nil
	}
	cols := []queue.Status{queue.StatusPending, queue.StatusRunning, queue.StatusFailed}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	hdr := []string{title}
	for _, s := range cols {
		hdr = append(hdr, strings.ToUpper(string(s)))
	}
	fmt.Fprintln(tw, strings.Join(hdr, "\t"))
	keys := make([]string, 0, len(rows))
	for k := range rows {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		cells := []string{k}
		for _, s := range cols {
			n := "-"
			if slices.Contains(st.Counted, s) {
				n = fmt.Sprint(rows[k][s])
			}
			cells = append(cells, n)
		}
		tabRow(tw, cells...)
	}
	return tw.Flush()
}

// typeValues lists "type value" pairs, by type, comma-separated ("" for
// none).
func typeValues[V any](m map[string]V) string {
	parts := make([]string, 0, len(m))
	for _, t := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %v", termsafe.Line(t), m[t]))
	}
	return strings.Join(parts, ", ")
}
