package command

import (
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/tui"
)

func tuiFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "refresh", Value: "5s", EnvVars: []string{"QO_TUI_REFRESH"},
			Usage: "auto-refresh interval: off, 2s, 5s or 10s (i cycles it while running)"},
		&cli.StringFlag{Name: "screen", Value: "overview", Usage: "screen to open first: overview, tasks, workers or schedules"},
		&cli.StringFlag{Name: "status", Usage: "start the task list filtered to `STATUS`: " + statusChoices()},
		&cli.StringFlag{Name: "shard", Usage: "start the task list on one `SHARD`"},
		&cli.StringFlag{Name: "type", Usage: "start the task list filtered to task `TYPE`"},
		&cli.BoolFlag{Name: "readonly", EnvVars: []string{"QO_TUI_READONLY"},
			Usage: "offer no action that changes the queue (for production): browse and inspect only"},
		&cli.Float64Flag{Name: "price-put", Value: store.AWSStandardPrices.PutPer1000,
			Usage: "US$ per 1,000 PUT/LIST requests, for the cost estimate"},
		&cli.Float64Flag{Name: "price-get", Value: store.AWSStandardPrices.GetPer1000,
			Usage: "US$ per 1,000 GET/HEAD requests, for the cost estimate"},
	}
}

func tuiCommand() *cli.Command {
	return &cli.Command{
		Name:  "tui",
		Usage: "open the operations console: browse, inspect and act on tasks, workers and schedules",
		Description: `A full-screen console for the queue in the bucket, made for SSH sessions.

Screens (switch with 1, 2, 3, 4 or tab; ? lists every key):
  1 Overview  task counts by status, a cell per shard, completions and
              failures per minute, the oldest pending task, live workers,
              the fleet's S3 requests per second and cost per hour, and
              what is paused
  2 Tasks     browse by shard (h/l), filter by status (s steps, S picks),
              search (/) by the short id the list shows, a full id or a
              type, or wf:NAME / wf:ID for a workflow; the selection follows
              its task across refreshes; "42 of 1,310" says where it is;
              pending tasks of a paused type are marked; enter opens a task
  3 Workers   health (active/stale/dead by heartbeat age), running tasks,
              counters, shards held
  4 Schedules cron schedules with their next due time and last run
  Task detail every field, input/output as a foldable JSON tree (loaded
              from its own object when it was too large for the task), the
              version timeline; m marks two versions, d shows their diff;
              its workflow and step, parents, children, what it waits for
              and its input_from sources; w opens its workflow
  Workflow    status, counts and every step as a graph, roots first, with
              each step's status, type, attempt and timing; enter opens a
              step's task, R replays a step, X cancels every step not ended

Actions ask for confirmation first: R replay, A archive, C cancel,
N requeue now, n submit a new task, p pause or resume the selected task's
type, P pause or resume the whole queue, U list the paused types to resume
one; on the schedules screen e enables
or disables, t triggers a run now, X deletes. Errors show in the status line; the
console keeps running through S3 outages and malformed objects. With
--readonly no action is offered or accepted, and the header says READ-ONLY.

The console needs a terminal. It works without colour (NO_COLOR=1 or a
dumb terminal) and from 80x24 up; the mouse is optional. Times are the S3
server's.

Examples:
  qo tui
  qo tui --screen tasks --status failed      # straight to the dead letters
  qo tui --refresh 2s
  qo tui --readonly                          # production: look, do not touch
  qo dev                                     # the same console, on the dev server`,
		Flags:  tuiFlags(),
		Action: runTUI,
	}
}

// tuiOptions reads the console flags.
func tuiOptions(c *cli.Context) (tui.Options, error) {
	var opts tui.Options
	opts.ReadOnly = c.Bool("readonly")
	switch r := c.String("refresh"); r {
	case "off", "0", "0s":
	default:
		d, err := time.ParseDuration(r)
		if err != nil {
			return opts, usageError("invalid --refresh %q: want off, 2s, 5s or 10s", r)
		}
		opts.Refresh = d
	}
	ok := false
	for _, d := range tui.RefreshIntervals {
		ok = ok || d == opts.Refresh
	}
	if !ok {
		return opts, usageError("invalid --refresh %q: want off, 2s, 5s or 10s", c.String("refresh"))
	}
	switch s := c.String("screen"); s {
	case "overview", "tasks", "workers", "schedules":
		opts.Screen = s
	default:
		return opts, usageError("invalid --screen %q: want overview, tasks, workers or schedules", s)
	}
	if s := c.String("status"); s != "" {
		st, err := queue.ParseStatus(s)
		if err != nil {
			return opts, usageError("invalid --status: %v", err)
		}
		opts.Status = st
		if c.String("screen") == "overview" {
			opts.Screen = "tasks"
		}
	}
	opts.Shard, opts.Type = c.String("shard"), c.String("type")
	if opts.Shard != "" || opts.Type != "" {
		if c.String("screen") == "overview" {
			opts.Screen = "tasks"
		}
	}
	p := store.AWSStandardPrices
	p.PutPer1000, p.GetPer1000 = c.Float64("price-put"), c.Float64("price-get")
	if p.PutPer1000 < 0 || p.GetPer1000 < 0 {
		return opts, usageError("invalid price: prices cannot be negative")
	}
	opts.Prices = &p
	return opts, nil
}

func runTUI(c *cli.Context) error {
	opts, err := tuiOptions(c)
	if err != nil {
		return err
	}
	if !envOf(c).IsTerminal(c.App.Writer) {
		return usageError("qo tui needs a terminal: for scripts use 'qo list', 'qo status' and 'qo workers' (all take --json)")
	}
	// The console owns the screen: the queue's warnings must not be
	// printed over it (malformed objects are shown in the console).
	q, err := openQueueLogged(c, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		return err
	}
	if b, ok := q.Store().(interface{ Bucket() string }); ok {
		opts.Title = "· bucket " + b.Bucket()
	}
	if opts.Shard != "" && !q.ValidShard(opts.Shard) {
		return usageError("invalid --shard %q: this queue's shards are %s to %s", opts.Shard, q.Shards()[0], q.Shards()[len(q.Shards())-1])
	}
	if err := tui.Run(c.Context, q, opts); err != nil {
		return fmt.Errorf("tui: %w", err)
	}
	return nil
}
