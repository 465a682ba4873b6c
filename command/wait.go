package command

// qo wait: block until tasks are terminal; the exit code tells how they
// ended.
//
// --json output shape (stable; new fields may be added, none removed):
//
//	{"outcome": "completed" | "failed" | "timeout",
//	 "tasks": [{"id": "...", "outcome": "completed" | "failed" | "cancelled" | "expired" | "unfinished",
//	            "status": "...", "task": {task object as stored}}]}

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/urfave/cli/v2"

	"github.com/qo-queue/qo/internal/termsafe"
	"github.com/qo-queue/qo/queue"
)

// minPollInterval is the shortest --interval of the commands that poll.
const minPollInterval = 10 * time.Millisecond

func waitCommand() *cli.Command {
	return &cli.Command{
		Name:      "wait",
		Usage:     "block until tasks finish; the exit code says how they ended",
		UsageText: "qo wait ID... | - | --workflow NAME|ID [--timeout D] [--interval D] [--max-interval D] [--fail-fast] [--json]",
		Description: `Polls each task (one GET per unfinished task per round) until every one is
terminal: completed, failed, cancelled, expired or archived. Finished tasks
are not polled again. Rounds start --interval apart and stretch by half each time
nothing changed, up to --max-interval; any change brings them back to
--interval. An argument '-' reads the ids from stdin (whitespace separated).
An archived task counts as the status it had before it was archived.
--workflow NAME|ID waits for every step of a workflow (its tasks, read from
the workflow record: 1 GET, then as above); a step's line names it.

Each task is printed as it finishes ("ID completed", "ID failed: error").
--json prints one object at the end instead: {"outcome": "completed" |
"failed" | "timeout", "tasks": [{"id", "outcome", "status", "task"}]}, where a
task's outcome is completed, failed, cancelled, expired or unfinished and task
is the task object as stored (an output kept in its own object loaded in).

Exit codes: 0 every task completed; 6 at least one failed, was cancelled or
expired; 7 --timeout ran out first (the tasks still unfinished are listed); 3 a task
does not exist; 2 bad arguments; 130 interrupted.

Examples:
  qo wait 0b6f4c2e-8d1a-4f7e-9c3b-2a5d6e7f8a9b && echo done
  id=$(qo submit --type resize --input '{"w":64}'); qo wait "$id" --timeout 10m --json
  qo submit --file tasks.jsonl | jq -r '.ids[]' | qo wait - --fail-fast
  qo wait --workflow nightly-etl --timeout 1h`,
		Flags: []cli.Flag{
			&cli.DurationFlag{Name: "timeout", EnvVars: []string{"QO_WAIT_TIMEOUT"},
				Usage: "give up after `DURATION` with exit code 7 (0: wait forever)"},
			&cli.DurationFlag{Name: "interval", Value: queue.DefaultWaitInterval, EnvVars: []string{"QO_WAIT_INTERVAL"},
				Usage: "wait `DURATION` between polls while tasks change"},
			&cli.DurationFlag{Name: "max-interval", Value: queue.DefaultWaitMaxInterval, EnvVars: []string{"QO_WAIT_MAX_INTERVAL"},
				Usage: "wait at most `DURATION` between polls while nothing changes"},
			&cli.BoolFlag{Name: "fail-fast", Usage: "return (exit 6) as soon as one task failed, was cancelled or expired"},
			&cli.StringFlag{Name: "workflow", Aliases: []string{"w"}, Usage: "wait for every step of the workflow `NAME|ID`"},
			jsonFlag(),
		},
		Action: runWait,
	}
}

type waitTaskJSON struct {
	ID      uuid.UUID     `json:"id"`
	Outcome queue.Outcome `json:"outcome"`
	Status  queue.Status  `json:"status"`
	Task    *queue.Task   `json:"task"`
}

func runWait(c *cli.Context) error {
	args, err := positionalArgs(c)
	if err != nil {
		return err
	}
	ids, err := taskIDs(c, args)
	if err != nil {
		return err
	}
	if c.IsSet("workflow") && len(ids) > 0 {
		return usageError("give task ids or --workflow, not both")
	}
	if len(ids) == 0 && !c.IsSet("workflow") {
		return usageError("no task ids given (usage: %s)", c.Command.UsageText)
	}
	interval, err := durationFlag(c, "interval", minPollInterval)
	if err != nil {
		return err
	}
	maxInterval, err := durationFlag(c, "max-interval", minPollInterval)
	if err != nil {
		return err
	}
	timeout := c.Duration("timeout")
	if timeout < 0 {
		return usageError("--timeout %s is negative (0 waits forever)", timeout)
	}
	q, err := openQueue(c)
	if err != nil {
		return err
	}
	if ref := c.String("workflow"); ref != "" {
		w, err := q.Workflows().Get(c.Context, ref)
		if err != nil {
			return err
		}
		ids = w.TaskIDs()
	}
	asJSON := c.Bool("json")
	opt := queue.WaitOptions{Interval: interval, MaxInterval: maxInterval, Timeout: timeout, FailFast: c.Bool("fail-fast")}
	if !asJSON {
		opt.OnDone = func(r queue.WaitResult) { printWaitLine(c.App.Writer, r) }
	}
	results, err := q.Wait(c.Context, ids, opt)
	var te *queue.TaskError
	switch {
	case errors.Is(err, queue.ErrWaitTimeout):
		return waitTimeout(c, results, timeout, asJSON)
	case errors.As(err, &te):
		return taskError(te.ID, te.Err)
	case err != nil:
		return err
	}
	return waitResult(c, results, asJSON)
}

func printWaitLine(w io.Writer, r queue.WaitResult) {
	t := r.Task
	name := r.ID.String()
	if t.Workflow != nil {
		name += " (step " + t.Workflow.Step + ")"
	}
	line := name + " " + string(r.Outcome)
	if t.Status == queue.StatusArchived {
		line = name + " archived (" + string(r.Outcome) + ")"
	}
	switch {
	case r.Outcome == queue.OutcomeFailed && t.LastError != "":
		line += ": " + oneLine(t.LastError)
	case r.Outcome == queue.OutcomeCancelled && t.CancelReason != "":
		line += ": " + oneLine(t.CancelReason)
	}
	fmt.Fprintln(w, termsafe.Line(line))
}

func waitJSON(results []queue.WaitResult, outcome string) any {
	out := struct {
		Outcome string         `json:"outcome"`
		Tasks   []waitTaskJSON `json:"tasks"`
	}{Outcome: outcome, Tasks: []waitTaskJSON{}}
	for _, r := range results {
		j := waitTaskJSON{ID: r.ID, Outcome: r.Outcome, Task: r.Task}
		if r.Task != nil {
			j.Status = r.Task.Status
		}
		out.Tasks = append(out.Tasks, j)
	}
	return out
}

// waitResult is the end of a wait where every task finished (or --fail-fast
// saw a failure).
func waitResult(c *cli.Context, results []queue.WaitResult, asJSON bool) error {
	counts := map[queue.Outcome]int{}
	bad := 0
	for _, r := range results {
		counts[r.Outcome]++
		if r.Outcome.Bad() {
			bad++
		}
	}
	outcome := string(queue.OutcomeCompleted)
	if bad > 0 {
		outcome = string(queue.OutcomeFailed)
	}
	if asJSON {
		if err := emitJSON(c.App.Writer, waitJSON(results, outcome)); err != nil {
			return err
		}
	}
	if bad == 0 {
		return nil
	}
	var parts []string
	for _, o := range []queue.Outcome{queue.OutcomeFailed, queue.OutcomeCancelled, queue.OutcomeExpired, queue.OutcomeUnfinished} {
		if counts[o] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[o], o))
		}
	}
	return withExitCode(exitTaskFailed, fmt.Errorf("%d of %d task%s did not complete (%s)",
		bad, len(results), plural(len(results)), strings.Join(parts, ", ")))
}

func waitTimeout(c *cli.Context, results []queue.WaitResult, timeout time.Duration, asJSON bool) error {
	var open []string
	for _, r := range results {
		if r.Outcome != queue.OutcomeUnfinished {
			continue
		}
		open = append(open, r.ID.String())
		if !asJSON {
			fmt.Fprintf(c.App.Writer, "%s %s\n", r.ID, unfinishedLine(r.Task))
		}
	}
	if asJSON {
		if err := emitJSON(c.App.Writer, waitJSON(results, "timeout")); err != nil {
			return err
		}
	}
	first := open[0]
	if len(open) > 1 {
		first += ", ..."
	}
	return fmt.Errorf("--timeout %s ran out with %d of %d task%s unfinished (%s): %w",
		timeout, len(open), len(results), plural(len(results)), first, queue.ErrWaitTimeout)
}

// unfinishedLine describes a task still pending or running.
func unfinishedLine(t *queue.Task) string {
	if t == nil {
		return "unfinished"
	}
	s := "still " + string(t.Status)
	if t.Attempt > 0 {
		s += fmt.Sprintf(" (attempt %d)", t.Attempt)
	}
	return s
}
