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
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/urfave/cli/v2"

	"github.com/qo-queue/qo/internal/termsafe"
	"github.com/qo-queue/qo/queue"
)

// errWaitTimeout matches the error of a qo wait whose --timeout ran out.
var errWaitTimeout = errors.New("timed out")

const (
	defaultWaitInterval    = 500 * time.Millisecond
	defaultWaitMaxInterval = 5 * time.Second
	minPollInterval        = 10 * time.Millisecond
	// pollConcurrency bounds the GETs in flight while polling many tasks.
	pollConcurrency = 16
)

// Outcomes of a waited-for task.
const (
	outcomeCompleted  = "completed"
	outcomeFailed     = "failed"
	outcomeCancelled  = "cancelled"
	outcomeExpired    = "expired"
	outcomeUnfinished = "unfinished"
)

// badOutcome reports outcomes that make qo wait exit 6.
func badOutcome(o string) bool {
	return o == outcomeFailed || o == outcomeCancelled || o == outcomeExpired
}

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
			&cli.DurationFlag{Name: "interval", Value: defaultWaitInterval, EnvVars: []string{"QO_WAIT_INTERVAL"},
				Usage: "wait `DURATION` between polls while tasks change"},
			&cli.DurationFlag{Name: "max-interval", Value: defaultWaitMaxInterval, EnvVars: []string{"QO_WAIT_MAX_INTERVAL"},
				Usage: "wait at most `DURATION` between polls while nothing changes"},
			&cli.BoolFlag{Name: "fail-fast", Usage: "return (exit 6) as soon as one task failed, was cancelled or expired"},
			&cli.StringFlag{Name: "workflow", Aliases: []string{"w"}, Usage: "wait for every step of the workflow `NAME|ID`"},
			jsonFlag(),
		},
		Action: runWait,
	}
}

// waitItem is one task being waited for.
type waitItem struct {
	id      uuid.UUID
	task    *queue.Task
	outcome string
}

type waitTaskJSON struct {
	ID      uuid.UUID    `json:"id"`
	Outcome string       `json:"outcome"`
	Status  queue.Status `json:"status"`
	Task    *queue.Task  `json:"task"`
}

func runWait(c *cli.Context) error {
	args, err := positionalArgs(c)
	if err != nil {
		return err
	}
	ids, err := taskIDs(args)
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
	if maxInterval < interval {
		maxInterval = interval
	}
	timeout := c.Duration("timeout")
	if timeout < 0 {
		return usageError("--timeout %s is negative (0 waits forever)", timeout)
	}
	q, err := openQueue(c)
	if err != nil {
		return err
	}
	ctx := c.Context
	if ref := c.String("workflow"); ref != "" {
		w, err := q.GetWorkflow(ctx, ref)
		if err != nil {
			return err
		}
		for _, s := range w.Steps {
			ids = append(ids, s.TaskID)
		}
	}
	var deadline time.Time
	if timeout > 0 {
		deadline = time.Now().Add(timeout)
	}
	asJSON := c.Bool("json")
	items := make([]*waitItem, len(ids))
	for i, id := range ids {
		items[i] = &waitItem{id: id, outcome: outcomeUnfinished}
	}
	period := interval
	failFast := false
	for {
		finished, activity, err := pollWait(ctx, q, items)
		if err != nil {
			return err
		}
		for _, it := range finished {
			if !asJSON {
				printWaitLine(c.App.Writer, it)
			}
		}
		if c.Bool("fail-fast") {
			for _, it := range items {
				failFast = failFast || badOutcome(it.outcome)
			}
		}
		open := 0
		for _, it := range items {
			if it.outcome == outcomeUnfinished {
				open++
			}
		}
		if open == 0 || failFast {
			break
		}
		now := time.Now()
		if !deadline.IsZero() && !now.Before(deadline) {
			return waitTimeout(c, items, timeout, asJSON)
		}
		if activity {
			period = interval
		} else {
			period = min(period*3/2, maxInterval)
		}
		sleep := period
		if !deadline.IsZero() {
			sleep = min(sleep, deadline.Sub(now))
		}
		if !sleepCtx(ctx, sleep) {
			return ctx.Err()
		}
	}
	return waitResult(c, items, asJSON)
}

// pollWait GETs every unfinished task (at most pollConcurrency at once). It
// returns the tasks that became terminal, in argument order, and whether any
// task was written since the previous round (activity keeps polling fast).
func pollWait(ctx context.Context, q *queue.Queue, items []*waitItem) (done []*waitItem, activity bool, err error) {
	var open []*waitItem
	for _, it := range items {
		if it.outcome == outcomeUnfinished {
			open = append(open, it)
		}
	}
	tasks := make([]*queue.Task, len(open))
	errs := make([]error, len(open))
	forEachLimit(len(open), pollConcurrency, func(i int) {
		tasks[i], errs[i] = q.Get(ctx, open[i].id)
	})
	for i, it := range open {
		if err := errs[i]; err != nil {
			return nil, false, taskError(it.id, err)
		}
		if it.task != nil && it.task.Rev != tasks[i].Rev {
			activity = true
		}
		it.task = tasks[i]
		if o := outcomeOf(ctx, q, it.task); o != outcomeUnfinished {
			it.outcome = o
			// --json shows the output, also when it was stored in its own
			// object; if that cannot be read, the stored task (with its
			// output_ref) is shown.
			if full, err := q.WithPayloads(ctx, it.task); err == nil {
				it.task = full
			}
			done = append(done, it)
		}
	}
	return done, activity || len(done) > 0, nil
}

// taskError words a failure to read a task: a missing task is one clear
// line with exit code 3.
func taskError(id uuid.UUID, err error) error {
	if errors.Is(err, queue.ErrNotFound) {
		return fmt.Errorf("task %s does not exist in this queue: check the id and --bucket (qo list shows the tasks): %w", id, queue.ErrNotFound)
	}
	return err
}

// outcomeOf classifies a task: unfinished while pending or running; an
// archived task counts as the status it was archived from.
func outcomeOf(ctx context.Context, q *queue.Queue, t *queue.Task) string {
	switch t.Status {
	case queue.StatusCompleted:
		return outcomeCompleted
	case queue.StatusFailed:
		return outcomeFailed
	case queue.StatusCancelled:
		return outcomeCancelled
	case queue.StatusExpired:
		return outcomeExpired
	case queue.StatusArchived:
		return archivedOutcome(ctx, q, t)
	}
	return outcomeUnfinished
}

// archivedOutcome finds the status an archived task had before, from its
// history; without history (versioning off) it guesses from the fields the
// archive kept: last_error means failed, a cancel request without output
// means cancelled.
func archivedOutcome(ctx context.Context, q *queue.Queue, t *queue.Task) string {
	if events, err := q.History(ctx, t.ID); err == nil {
		for i := len(events) - 1; i >= 0; i-- {
			e := events[i]
			if e.Task == nil || e.Rev >= t.Rev || !e.Status.Terminal() || e.Status == queue.StatusArchived {
				continue
			}
			return outcomeOf(ctx, q, e.Task)
		}
	}
	switch {
	case t.ExpiresAt != nil && t.Attempt == 0 && t.Output == nil:
		return outcomeExpired
	case t.LastError != "" && t.Output == nil && !t.CancelRequested:
		return outcomeFailed
	case t.CancelRequested && t.Output == nil:
		return outcomeCancelled
	}
	return outcomeCompleted
}

func printWaitLine(w io.Writer, it *waitItem) {
	t := it.task
	name := it.id.String()
	if t.Workflow != nil {
		name += " (step " + t.Workflow.Step + ")"
	}
	line := name + " " + it.outcome
	if t.Status == queue.StatusArchived {
		line = name + " archived (" + it.outcome + ")"
	}
	switch {
	case it.outcome == outcomeFailed && t.LastError != "":
		line += ": " + oneLine(t.LastError)
	case it.outcome == outcomeCancelled && t.CancelReason != "":
		line += ": " + oneLine(t.CancelReason)
	}
	fmt.Fprintln(w, termsafe.Line(line))
}

func waitJSON(items []*waitItem, outcome string) any {
	out := struct {
		Outcome string         `json:"outcome"`
		Tasks   []waitTaskJSON `json:"tasks"`
	}{Outcome: outcome, Tasks: []waitTaskJSON{}}
	for _, it := range items {
		j := waitTaskJSON{ID: it.id, Outcome: it.outcome, Task: it.task}
		if it.task != nil {
			j.Status = it.task.Status
		}
		out.Tasks = append(out.Tasks, j)
	}
	return out
}

// waitResult is the end of a wait where every task finished (or --fail-fast
// saw a failure).
func waitResult(c *cli.Context, items []*waitItem, asJSON bool) error {
	counts := map[string]int{}
	for _, it := range items {
		counts[it.outcome]++
	}
	bad := counts[outcomeFailed] + counts[outcomeCancelled] + counts[outcomeExpired]
	outcome := outcomeCompleted
	if bad > 0 {
		outcome = outcomeFailed
	}
	if asJSON {
		if err := emitJSON(c.App.Writer, waitJSON(items, outcome)); err != nil {
			return err
		}
	}
	if bad == 0 {
		return nil
	}
	var parts []string
	for _, o := range []string{outcomeFailed, outcomeCancelled, outcomeExpired, outcomeUnfinished} {
		if counts[o] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[o], o))
		}
	}
	return withExitCode(exitTaskFailed, fmt.Errorf("%d of %d task%s did not complete (%s)",
		bad, len(items), plural(len(items)), strings.Join(parts, ", ")))
}

func waitTimeout(c *cli.Context, items []*waitItem, timeout time.Duration, asJSON bool) error {
	var open []string
	for _, it := range items {
		if it.outcome != outcomeUnfinished {
			continue
		}
		open = append(open, it.id.String())
		if !asJSON {
			fmt.Fprintf(c.App.Writer, "%s %s\n", it.id, unfinishedLine(it.task))
		}
	}
	if asJSON {
		if err := emitJSON(c.App.Writer, waitJSON(items, "timeout")); err != nil {
			return err
		}
	}
	first := open[0]
	if len(open) > 1 {
		first += ", ..."
	}
	return fmt.Errorf("--timeout %s ran out with %d of %d task%s unfinished (%s): %w",
		timeout, len(open), len(items), plural(len(items)), first, errWaitTimeout)
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

// forEachLimit calls fn(i) for i in [0, n) with at most par calls at once.
func forEachLimit(n, par int, fn func(i int)) {
	if n == 0 {
		return
	}
	sem := make(chan struct{}, par)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		sem <- struct{}{}
		wg.Add(1)
		go func(i int) {
			defer func() { <-sem; wg.Done() }()
			fn(i)
		}(i)
	}
	wg.Wait()
}
