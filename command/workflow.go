package command

// qo submit --workflow and qo workflow: workflows of named steps (see
// queue/doc.go, "Workflows").

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/qo-queue/qo/internal/termsafe"
	"github.com/qo-queue/qo/queue"
)

const workflowFileHelp = `A workflow file is one JSON object:
  {"name": "nightly-etl",                 optional; qo workflow show NAME finds
                                          the latest workflow of that name
   "idempotency_key": "etl-2026-11-25",   optional; see below
   "steps": [
     {"name": "extract", "type": "extract", "input": {"day": "2026-11-24"}},
     {"name": "clean", "type": "transform", "after": ["extract"],
      "input_from": {"rows": "extract.output.rows"}},
     ...]}
Each step has a unique name, a type and any field of a qo submit --file line
(input, timeout_seconds, max_retries, priority, key, delay, expires_in,
on_parent_failure, ...), plus "after" (the names of the steps it runs after)
and "input_from" (input fields filled from parents' outputs: STEP.output or
STEP.output.PATH, PATH being keys and array indexes joined by dots; a step
named there runs after that step). The handler gets its input object with
those fields set; a path the output lacks gives null.`

// readWorkflowFile reads and checks a workflow file ('-' is stdin).
func readWorkflowFile(stdin io.Reader, name string) (*queue.WorkflowSpec, error) {
	var raw []byte
	var err error
	if name == "-" {
		raw, err = io.ReadAll(stdin)
	} else {
		raw, err = os.ReadFile(name)
	}
	if err != nil {
		return nil, usageError("--workflow: %v", err)
	}
	spec, err := queue.DecodeWorkflow(raw, queue.DefaultSubmitDefaults)
	if err != nil {
		return nil, usageError("--workflow %s: %s (nothing submitted)", name, inputMessage(err))
	}
	return spec, nil
}

// runWorkflowSubmit is qo submit --workflow FILE.
func runWorkflowSubmit(c *cli.Context) error {
	for _, f := range []string{"type", "input", "input-file", "file", "after", "on-parent-failure", "at", "delay", "expires-at", "expires-in"} {
		if c.IsSet(f) {
			return usageError("--%s does not go with --workflow: give it to the steps in the workflow file", f)
		}
	}
	spec, err := readWorkflowFile(envOf(c).Stdin, c.String("workflow"))
	if err != nil {
		return err
	}
	if c.IsSet("idempotency-key") {
		spec.IdempotencyKey = c.String("idempotency-key")
	}
	q, err := openQueue(c)
	if err != nil {
		return err
	}
	w, created, err := q.Workflows().Submit(c.Context, spec)
	if err != nil {
		return err
	}
	if !created {
		fmt.Fprintf(c.App.ErrWriter, "qo: workflow %s already exists for idempotency key %q; nothing new submitted\n", w.ID, termsafe.Line(w.IdempotencyKey))
	}
	if c.Bool("json") {
		v, err := q.Workflows().Read(c.Context, w.ID.String())
		if err != nil {
			return err
		}
		return emitJSON(c.App.Writer, v.Report())
	}
	_, err = fmt.Fprintln(c.App.Writer, w.ID)
	return err
}

func workflowCommand() *cli.Command {
	return &cli.Command{
		Name:  "workflow",
		Usage: "show, list and cancel workflows (submit them with qo submit --workflow FILE)",
		Description: `A workflow is a set of named steps, each a task that runs after the steps it
names. Submit one with qo submit --workflow FILE; qo wait --workflow NAME|ID
waits for it.

` + workflowFileHelp + `

A workflow is submitted steps-without-children first and roots last, so a
submit that stops half-way (a crash, a lost connection) runs nothing whose
children are missing. Submitting the same file again with the same
idempotency key (the file's, --idempotency-key, or the one the error names)
finishes it and prints the same id; the same key with other steps is refused
(exit 4). Steps of a submit never finished are cancelled by the monitor after
an hour.

Replay a failed step with qo replay ID: the steps it cancelled wait for it
again.`,
		Subcommands: []*cli.Command{
			workflowShowCommand(), workflowStatusCommand(), workflowListCommand(), workflowCancelCommand(),
		},
	}
}

// workflowOptions name one workflow (NAME|ID) and, for qo workflow
// cancel, why it is cancelled.
type workflowOptions struct{ Ref, Reason string }

func (workflowOptions) Validate() error { return nil } // the queue tells a name from an id

func readWorkflowRef(c *cli.Context) (workflowOptions, error) {
	args, err := positionalArgs(c)
	if err != nil {
		return workflowOptions{}, err
	}
	if len(args) != 1 {
		return workflowOptions{}, usageError("want one workflow id or name, got %d arguments (usage: %s)", len(args), c.Command.UsageText)
	}
	return workflowOptions{Ref: args[0], Reason: c.String("reason")}, nil
}

// workflowShown is a workflow's report as the queue's clock saw it.
type workflowShown struct {
	report queue.WorkflowReport
	now    time.Time
}

// showWorkflow is the action of qo workflow show (steps) and status: the
// workflow with its steps, or the header only; its report with --json.
func showWorkflow(steps bool) cli.ActionFunc {
	return kit[workflowOptions, workflowShown]{
		options: readWorkflowRef,
		run: func(ctx context.Context, env *runEnv, o workflowOptions) (workflowShown, error) {
			q, err := env.openQueue()
			if err != nil {
				return workflowShown{}, err
			}
			v, err := q.Workflows().Read(ctx, o.Ref)
			if err != nil {
				return workflowShown{}, err
			}
			return workflowShown{report: v.Report(), now: q.Now()}, nil
		},
		text: func(w io.Writer, r workflowShown) error { return printWorkflow(w, r.report, r.now, steps) },
		json: func(r workflowShown) any { return r.report },
	}.action()
}

func workflowShowCommand() *cli.Command {
	return &cli.Command{
		Name:      "show",
		Usage:     "every step of a workflow with its state, roots first",
		UsageText: "qo workflow show NAME|ID [--json]",
		Description: `Reads the workflow and each step's task (1 GET per step). Steps are listed
by depth, roots first, indented by depth, with the steps each runs after.
--json prints {"id", "name", "idempotency_key", "status", "created_at",
"ended_at", "counts", "steps": [{"name", "task_type", "task_id", "after",
"depth", "status", "attempt", "waiting_for", "last_error", "cancel_reason",
"updated_at", "completed_at", "problem"}]}.`,
		Flags:  []cli.Flag{jsonFlag()},
		Action: showWorkflow(true),
	}
}

func workflowStatusCommand() *cli.Command {
	return &cli.Command{
		Name:      "status",
		Usage:     "where a workflow stands: its status and how many steps are in each state",
		UsageText: "qo workflow status NAME|ID [--json]",
		Description: `The status is incomplete (a step's task is missing), running, completed,
failed (every step ended and one failed or expired) or cancelled. --json
prints the same object as qo workflow show --json.`,
		Flags:  []cli.Flag{jsonFlag()},
		Action: showWorkflow(false),
	}
}

func workflowListCommand() *cli.Command {
	return &cli.Command{
		Name:      "list",
		Usage:     "the workflow names and the latest workflow of each",
		UsageText: "qo workflow list [--json]",
		Description: `One LIST and one GET per name, however many workflows were ever submitted.
Workflows without a name are not listed: keep their ids. --json prints
[{"name", "id", "created_at"}].`,
		Flags: []cli.Flag{jsonFlag()},
		Action: kit[noOptions, []queue.WorkflowSummary]{
			options: readNoOptions,
			run: func(ctx context.Context, env *runEnv, _ noOptions) ([]queue.WorkflowSummary, error) {
				q, err := env.openQueue()
				if err != nil {
					return nil, err
				}
				names, err := q.Workflows().Names(ctx, 0)
				if names == nil {
					names = []queue.WorkflowSummary{} // [] in JSON
				}
				return names, err
			},
			text: printWorkflowNames,
		}.action(),
	}
}

func printWorkflowNames(w io.Writer, names []queue.WorkflowSummary) error {
	if len(names) == 0 {
		_, err := fmt.Fprintln(w, "no named workflows (give a workflow file a \"name\")")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	tabRow(tw, "NAME", "LATEST", "SUBMITTED")
	for _, n := range names {
		tabRow(tw, n.Name, n.ID.String(), formatTime(n.CreatedAt))
	}
	return tw.Flush()
}

// workflowCancelled is what qo workflow cancel prints: how many steps of
// the workflow it cancelled.
type workflowCancelled struct {
	ref string
	n   int
}

func workflowCancelCommand() *cli.Command {
	return &cli.Command{
		Name:      "cancel",
		Usage:     "cancel every step of a workflow that has not ended",
		UsageText: "qo workflow cancel NAME|ID [--reason TEXT] [--json]",
		Description: `Cancels the steps that wait, are pending or run (a running handler is asked to
stop, as qo cancel does), children before parents so each keeps the reason.
Completed and failed steps are left as they are.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "reason", Usage: "why, as `TEXT` kept in each task's cancel_reason"},
			jsonFlag(),
		},
		Action: kit[workflowOptions, workflowCancelled]{
			options: readWorkflowRef,
			run: func(ctx context.Context, env *runEnv, o workflowOptions) (workflowCancelled, error) {
				q, err := env.openQueue()
				if err != nil {
					return workflowCancelled{}, err
				}
				n, err := q.Workflows().Cancel(ctx, o.Ref, o.Reason)
				return workflowCancelled{ref: o.Ref, n: n}, err
			},
			text: func(w io.Writer, r workflowCancelled) error {
				_, err := fmt.Fprintf(w, "workflow %s: %d step%s cancelled\n", termsafe.Line(r.ref), r.n, plural(r.n))
				return err
			},
			json: func(r workflowCancelled) any { return map[string]int{"cancelled": r.n} },
		}.action(),
	}
}

// printWorkflow prints a workflow's header and, with steps, one row per
// step: name indented by depth, type, status, what it runs after, attempt
// and what it waits for, when it ended or why it failed.
func printWorkflow(w io.Writer, r queue.WorkflowReport, now time.Time, steps bool) error {
	name := r.Name
	if name == "" {
		name = "(no name)"
	}
	ended := ""
	if r.EndedAt != nil {
		ended = fmt.Sprintf(", ended %s after %s", formatTime(*r.EndedAt), roundDuration(r.EndedAt.Sub(r.CreatedAt)))
	}
	fmt.Fprintf(w, "workflow %s  %s  %s\n", termsafe.Line(name), r.ID, r.Status)
	fmt.Fprintf(w, "submitted %s (%s ago)%s; idempotency key %s\n", formatTime(r.CreatedAt), roundDuration(now.Sub(r.CreatedAt)), ended, termsafe.Line(r.IdempotencyKey))
	var counts []string
	for _, st := range queue.Statuses {
		if n := r.Counts[st]; n > 0 {
			counts = append(counts, fmt.Sprintf("%d %s", n, st))
		}
	}
	missing := 0
	for _, s := range r.Steps {
		if s.Status == "" {
			missing++
		}
	}
	if missing > 0 {
		counts = append(counts, fmt.Sprintf("%d missing", missing))
	}
	fmt.Fprintf(w, "%d step%s: %s\n", len(r.Steps), plural(len(r.Steps)), strings.Join(counts, ", "))
	if !steps {
		return nil
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	tabRow(tw, "STEP", "TYPE", "STATUS", "AFTER", "ATTEMPT", "DETAIL")
	for _, s := range r.Steps {
		after := dash(strings.Join(s.After, ", "))
		st := string(s.Status)
		if st == "" {
			st = "missing"
		}
		tabRow(tw, strings.Repeat("  ", min(s.Depth, 20))+s.Name, s.Type, st, cutText(after, 60, "..."), fmt.Sprint(s.Attempt), stepDetail(s, now))
	}
	return tw.Flush()
}

func stepDetail(s queue.StepReport, now time.Time) string {
	switch {
	case s.Problem != "":
		return oneLine(s.Problem)
	case s.Status == queue.StatusWaiting:
		return "after " + s.WaitingFor
	case s.LastError != "" && s.Status == queue.StatusFailed:
		return "failed: " + oneLine(s.LastError)
	case s.CancelReason != "" && s.Status == queue.StatusCancelled:
		return "cancelled: " + oneLine(s.CancelReason)
	case s.CompletedAt != nil:
		return fmt.Sprintf("ended %s ago", roundDuration(now.Sub(*s.CompletedAt)))
	case s.Status == queue.StatusRunning && s.UpdatedAt != nil:
		return fmt.Sprintf("running, last write %s ago", roundDuration(now.Sub(*s.UpdatedAt)))
	}
	return "-"
}
