package command

// The operator actions: replay, archive and cancel, on one task or many.
//
// One task id (and no filter, no --dry-run): the action on that task, and
// --json prints the task object after the change, exactly as stored in the
// bucket (see queue/doc.go, "Task object").
//
// Several ids, ids on stdin ("-" reads whitespace-separated ids), or a
// filter (--status, --type, --shard, --all): a bulk action
// (queue.PlanBulkAction, then ActPlan.Run). Its plan and request cost go
// to stderr before anything is written; --dry-run stops there. The summary
// is JSON with --json or whenever stdout is not a terminal:
//
//	{"op": "cancel", "dry_run": false, "done": ["id"...],
//	 "skipped": [{"id", "status", "reason"}...], "failed": [{"id", "status", "reason"}...],
//	 "partial": false, "requests": {"ok": {"GET": n...}, "failed": {...}}}
//
// done lists the tasks written (with dry_run, the tasks that would be);
// skipped the tasks left alone and why (a state the action does not apply
// to, already done, not found, changed meanwhile); failed the writes that
// failed or were never attempted. The shapes are stable: new fields may be
// added, none removed.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/urfave/cli/v2"

	"github.com/qo-queue/qo/internal/termsafe"
	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store"
)

// severalTasks is the part of an operator command's help about acting on
// several tasks: the same for cancel, replay and archive.
const severalTasks = `Several tasks: give several ids, '-' to read ids from stdin (separated by
spaces or newlines), or a filter: --status, --type, --shard (--all for every
task it applies to). Each task gets the same conditional write as one task;
tasks it does not apply to are skipped, with the reason. The plan and its
request cost are printed on stderr before anything is written; --dry-run
stops there. The summary lists what was done, skipped (and why) and failed;
it is JSON with --json or when stdout is not a terminal. Running the same
command again is safe: what is done is skipped.`

// operatorCommand builds a command that applies one operator action to a
// task, or to many (see above); name is the queue's name of the action.
// The paragraph on several tasks goes before the description's examples.
func operatorCommand(name, usage, description string, extra []cli.Flag,
	do func(ctx context.Context, c *cli.Context, q *queue.Queue, id uuid.UUID) (*queue.Task, error)) *cli.Command {
	usageText := "qo " + name + " ID... | - | --status S [--type T] | --type T | --all"
	for _, f := range extra {
		usageText += " [--" + f.Names()[0] + " ...]"
	}
	usageText += " [--dry-run] [--json]"
	statuses := queue.OperatorFrom(name)
	names := make([]string, len(statuses))
	for i, s := range statuses {
		names[i] = string(s)
	}
	flags := append(extra,
		&cli.StringSliceFlag{Name: "status", Usage: "act on every task in this `STATUS` (" + strings.Join(names, ", ") + "; repeat or comma-separate for several)"},
		&cli.StringFlag{Name: "type", Usage: "act on every task of this `TYPE` (with --status, of that status; else of every status " + name + " applies to)"},
		&cli.StringFlag{Name: "shard", Usage: "only the tasks of this `SHARD`"},
		&cli.StringFlag{Name: "since", Usage: "with a status not served by an index (completed, cancelled, expired), tasks created in the last `AGE` or since a TIME; default 24h"},
		&cli.BoolFlag{Name: "all", Usage: "act on every task " + name + " applies to (" + strings.Join(names, ", ") + ")"},
		&cli.BoolFlag{Name: "dry-run", Aliases: []string{"n"}, Usage: "print what would be done and its request cost; write nothing"},
		&cli.IntFlag{Name: "concurrency", Aliases: []string{"c"}, Value: queue.DefaultActConcurrency,
			Usage: fmt.Sprintf("writes in flight at once for several tasks (1..%d)", queue.MaxBulkConcurrency)},
		&cli.BoolFlag{Name: "no-progress", EnvVars: []string{"QO_NO_PROGRESS"}, Usage: "do not draw the progress bar on a terminal"},
		jsonFlag())
	return &cli.Command{
		Name:        name,
		Usage:       usage,
		UsageText:   usageText,
		Description: withSeveralTasks(description),
		Flags:       flags,
		Action: func(c *cli.Context) error {
			args, err := positionalArgs(c)
			if err != nil {
				return err
			}
			req, single, err := bulkRequest(c, name, args)
			if err != nil {
				return err
			}
			q, err := openQueue(c)
			if err != nil {
				return err
			}
			if single != uuid.Nil {
				return runOneOperator(c, q, single, do)
			}
			return runBulkAction(c, q, req)
		},
	}
}

// bulkRequest reads the ids and the filter. A single id without a filter
// or --dry-run is returned as single: the one-task action.
func bulkRequest(c *cli.Context, op string, args []string) (queue.BulkActionRequest, uuid.UUID, error) {
	req := queue.BulkActionRequest{Op: op, Reason: c.String("reason")}
	filtered := c.IsSet("status") || c.IsSet("type") || c.IsSet("shard") || c.Bool("all")
	if len(args) > 0 && filtered {
		return req, uuid.Nil, usageError("give task ids or a filter (--status, --type, --shard, --all), not both")
	}
	if c.IsSet("since") && !filtered {
		return req, uuid.Nil, usageError("--since goes with a filter (--status, --type, --all)")
	}
	if !filtered {
		if len(args) == 0 {
			return req, uuid.Nil, usageError("want task ids ('-' reads them from stdin) or a filter such as --status %s (usage: %s)", queue.OperatorFrom(op)[0], c.Command.UsageText)
		}
		ids, err := taskIDs(c, args)
		if err != nil {
			return req, uuid.Nil, err
		}
		if len(ids) == 0 {
			return req, uuid.Nil, usageError("no task ids on stdin (want ids separated by spaces or newlines)")
		}
		if len(ids) == 1 && len(args) == 1 && args[0] != "-" && !c.Bool("dry-run") {
			return req, ids[0], nil
		}
		req.IDs = ids
		return req, uuid.Nil, nil
	}
	if c.Bool("all") && (c.IsSet("status") || c.IsSet("type")) {
		return req, uuid.Nil, usageError("--all means every task %s applies to: drop it, or drop --status and --type", op)
	}
	if !c.Bool("all") && !c.IsSet("status") && !c.IsSet("type") {
		return req, uuid.Nil, usageError("--shard alone selects too much: add --status or --type, or --all for every task %s applies to", op)
	}
	f := &queue.ActFilter{Type: c.String("type"), Shard: c.String("shard")}
	allowed := queue.OperatorFrom(op)
	for _, v := range c.StringSlice("status") {
		for _, s := range strings.Split(v, ",") {
			st, err := queue.ParseStatus(strings.TrimSpace(s))
			if err != nil {
				return req, uuid.Nil, usageError("--status: %s", inputMessage(err))
			}
			if !slices.Contains(allowed, st) {
				return req, uuid.Nil, usageError("--status %s: %s applies only to %s tasks", st, op, joinStatuses(allowed))
			}
			f.Statuses = append(f.Statuses, st)
		}
	}
	if f.Type != "" {
		if err := queue.ValidateType(f.Type); err != nil {
			return req, uuid.Nil, usageError("--type: %s", inputMessage(err))
		}
	}
	if s := c.String("since"); s != "" {
		since, err := parseSince(s, time.Now())
		if err != nil {
			return req, uuid.Nil, usageError("--since %q: %v", s, err)
		}
		f.Since = since
	}
	req.Filter = f
	return req, uuid.Nil, nil
}

func joinStatuses(ss []queue.Status) string {
	names := make([]string, len(ss))
	for i, s := range ss {
		names[i] = string(s)
	}
	return strings.Join(names, ", ")
}

// runOneOperator is the action on one task.
func runOneOperator(c *cli.Context, q *queue.Queue, id uuid.UUID,
	do func(ctx context.Context, c *cli.Context, q *queue.Queue, id uuid.UUID) (*queue.Task, error)) error {
	before, err := q.Get(c.Context, id)
	if err != nil {
		return taskError(id, err)
	}
	task, err := do(c.Context, c, q, id)
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return emitJSON(c.App.Writer, task)
	}
	if task.Rev == before.Rev {
		_, err = fmt.Fprintf(c.App.Writer, "task %s: already %s; nothing to do\n", task.ID, termsafe.Line(statusLine(task, q.Now())))
		return err
	}
	_, err = fmt.Fprintf(c.App.Writer, "task %s: %s -> %s (%s)\n", task.ID, termsafe.Line(string(before.Status)),
		termsafe.Line(statusLine(task, q.Now())), termsafe.Line(task.LastEvent))
	return err
}

// runBulkAction plans, states the plan and its cost on stderr, and (unless
// --dry-run) runs it with a progress bar on a terminal.
func runBulkAction(c *cli.Context, q *queue.Queue, req queue.BulkActionRequest) error {
	conc := c.Int("concurrency")
	if conc < 1 || conc > queue.MaxBulkConcurrency {
		return usageError("--concurrency %d: want 1..%d", conc, queue.MaxBulkConcurrency)
	}
	plan, err := q.PlanBulkAction(c.Context, req)
	if err != nil {
		return err
	}
	dry := c.Bool("dry-run")
	lead := "plan"
	if dry {
		lead = "dry run (nothing written)"
	}
	fmt.Fprintf(c.App.ErrWriter, "qo: %s: %s; about $%.4f at S3 Standard prices\n", lead, plan.Summary(), plan.Dollars(store.AWSStandardPrices))
	var sum *queue.ActSummary
	if dry {
		sum = plan.DryRun()
	} else {
		opt := queue.ActOptions{Concurrency: conc}
		var bar *progressBar
		if plan.Len() > 0 && !c.Bool("no-progress") && envOf(c).IsTerminal(c.App.ErrWriter) {
			bar = startProgress(c.App.ErrWriter, plan.Len())
			opt.Progress = func(done, _ int) { bar.set(done) }
		}
		sum = plan.Run(c.Context, opt)
		bar.stop()
	}
	if c.Bool("json") || !envOf(c).IsTerminal(c.App.Writer) {
		if err := emitJSON(c.App.Writer, sum); err != nil {
			return err
		}
	} else {
		printActSummary(c.App.Writer, sum)
	}
	return actError(sum)
}

func printActSummary(w io.Writer, s *queue.ActSummary) {
	verb := "done"
	if s.DryRun {
		verb = "would be done"
	}
	fmt.Fprintf(w, "%s: %d %s, %d skipped, %d failed\n", s.Op, len(s.Done), verb, len(s.Skipped), len(s.Failed))
	list := func(kind string, items []queue.ActSkip) {
		for i, it := range items {
			if i == maxListedBadLines {
				fmt.Fprintf(w, "  ... and %d more %s (--json lists them all)\n", len(items)-i, kind)
				return
			}
			id := it.ID.String()
			if it.ID == uuid.Nil {
				id = "-"
			}
			fmt.Fprintf(w, "  %s %s: %s\n", kind, id, termsafe.Line(it.Reason))
		}
	}
	list("skipped", s.Skipped)
	list("failed", s.Failed)
	if s.Partial {
		fmt.Fprintf(w, "more tasks match than one run plans (%d): run the same command again for the rest\n", queue.MaxActPlan)
	}
}

// actError is the command's error: nil when nothing failed (skipped tasks
// are not failures: the action did not apply to them).
func actError(s *queue.ActSummary) error {
	if len(s.Failed) == 0 {
		return nil
	}
	msg := fmt.Sprintf("%s: %d of %d tasks failed (running the same command again is safe); first, %s: %s",
		s.Op, len(s.Failed), len(s.Done)+len(s.Failed), s.Failed[0].ID, s.Failed[0].Reason)
	if s.Stopped != nil {
		if errors.Is(s.Stopped, context.Canceled) {
			return withExitCode(exitInterrupted, fmt.Errorf("%s: %w", msg, s.Stopped))
		}
		return fmt.Errorf("%s: %w", msg, s.Stopped)
	}
	return errors.New(msg)
}

// withSeveralTasks puts the paragraph on several tasks before the examples
// of an operator command's description.
func withSeveralTasks(description string) string {
	head, examples, ok := strings.Cut(description, "\nExamples:\n")
	if !ok {
		return description + "\n\n" + severalTasks
	}
	return head + "\n" + severalTasks + "\n\nExamples:\n" + examples
}
