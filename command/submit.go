package command

// qo submit: one task from flags. --file (bulk.go) submits a JSON Lines
// file, --workflow (workflow.go) a workflow.
//
// --json prints the task object exactly as stored in the bucket (see
// queue/doc.go, "Task object"); the shape is stable: new fields may be
// added, none removed.

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/qo-queue/qo/internal/termsafe"
	"github.com/qo-queue/qo/queue"
)

// submitDescription is the help text of qo submit.
var submitDescription = `Prints the new task's id (or the whole task with --json). With
--idempotency-key, submitting the same type and key again returns the existing
task instead of a new one (a note goes to stderr); the same key with a different
input is refused (exit 4). The key holds for good, unless
--unique-while-active (only while its task waits, is pending or runs: once it
ended, the same key makes a new task) or --unique-for D (only for D after the
submit that made its task).

--priority high|normal|low moves the task in line: workers take a high task
ahead of normal ones that became ready up to 15 minutes earlier, and a low one
after normal ones that become ready up to 15 minutes later (so nothing waits
forever). --expires-in/--expires-at give a deadline for starting: a task no
worker started by then becomes "expired" instead of running. Inputs over 256 KiB
are stored in their own object and loaded back transparently.

--after ID,ID... makes the task wait (status "waiting", never claimed) until
every one of those tasks has ended, and run once they all completed. No worker
polls it: whoever ends its last parent releases it. A parent that ends
otherwise (failed, cancelled, expired) decides by --on-parent-failure: cancel
(the default: the task is cancelled, the reason names the parents), fail (it
becomes a dead letter) or run (it runs anyway once every parent ended).
Replaying a failed parent puts the children it cancelled back to waiting. A
parent that completed long ago counts as done; an unknown id is refused
(exit 2) and nothing is submitted.

--metadata KEY=VALUE (repeatable) attaches string headers to the task: shown by
qo status and qo history, carried unchanged through retries and replays. Keys
are letters, digits, _ . - (at most 64); at most 32 entries and 4096 bytes in
all. traceparent and tracestate are reserved for the W3C trace context (exec
handlers get them as TRACEPARENT and TRACESTATE).

Workflows: --workflow FILE ('-' for stdin) submits a workflow of named steps
and prints its id (--json: the workflow as qo workflow show --json prints
it); see qo workflow --help for the file. A bad file is refused (exit 2) and
nothing is submitted.

Bulk: --file FILE ('-' for stdin) submits one task per line of a JSON Lines
file. Each line is an object with any of these fields:
` + specFieldsHelp() + `Fields a line leaves out take the flags' values (--type, --timeout, --retries,
--delay or --at, --priority, --key, --expires-in or --expires-at). Durations
are "90s", "1h30m" or a number of seconds.
Every line is checked before anything is sent: a bad line refuses the whole
file (exit 2, each bad line named with its number) and nothing is submitted.
Then --concurrency submits run at once, with a progress bar on a terminal
(stderr). The summary is JSON when stdout is not a terminal or with --json:
{"submitted", "duplicates", "failed", "skipped", "ids", "errors": [{"line",
"error"}]}. Lines whose idempotency key already made a task (same input) are
counted as duplicates, not errors; a line repeating an earlier line's type and
key is not sent at all (the first one wins). Failed lines are listed with their numbers
and the exit code is that of the first failure (4 conflict, 5 storage); a
storage error stops the run and the remaining lines are counted as skipped.

Examples:
  qo submit --type send_email --input '{"to":"ann@example.com"}'
  echo '{"n": 3}' | qo submit --type resize --input-file - --timeout 10m --retries 5
  qo submit --file tasks.jsonl --type resize | jq -r '.ids[]' | qo wait -
  a=$(qo submit --type extract); qo submit --type load --after "$a"
  qo submit --workflow etl.json && qo wait --workflow nightly-etl`

func submitCommand() *cli.Command {
	return &cli.Command{
		Name:  "submit",
		Usage: "add a task to the queue, or one per line of a JSON Lines file",
		UsageText: `qo submit --type TYPE [--input JSON | --input-file FILE|-] [--timeout D] [--retries N] [--delay D | --at TIME] [--priority P] [--key K] [--expires-in D | --expires-at TIME] [--idempotency-key K [--unique-while-active | --unique-for D]] [--after ID,... [--on-parent-failure cancel|fail|run]] [--metadata KEY=VALUE]... [--json]
qo submit --file FILE|- [--type TYPE] [--timeout D] [--retries N] [--delay D | --at TIME] [--priority P] [--key K] [--expires-in D] [--concurrency N] [--json]
qo submit --workflow FILE|- [--idempotency-key K] [--json]`,
		Description: submitDescription,
		Flags: append(append(taskSpecFlags(submitSpecFields...),
			&cli.StringFlag{Name: "workflow", Aliases: []string{"w"}, TakesFile: true, Usage: "submit the workflow in `FILE` ('-' for stdin); see qo workflow --help"},
			jsonFlag(),
		), bulkFlags()...),
		Action: runSubmit,
	}
}

// runSubmit is qo submit: one task, or --file or --workflow.
func runSubmit(c *cli.Context) error {
	if err := noArgs(c); err != nil {
		return err
	}
	if c.IsSet("metadata") && (c.IsSet("workflow") || c.IsSet("file")) {
		return usageError(`--metadata applies to one task: with --file or --workflow give each line or step a "metadata" field`)
	}
	if (c.IsSet("unique-while-active") || c.IsSet("unique-for")) && (c.IsSet("workflow") || c.IsSet("file")) {
		return usageError(`--unique-while-active and --unique-for apply to one task: with --file give each line "unique_while_active" or "unique_for"`)
	}
	if c.IsSet("workflow") {
		return runWorkflowSubmit(c)
	}
	if c.IsSet("file") {
		return runBulkSubmit(c)
	}
	req, err := readTaskSpec(c, false, submitSpecFields...)
	if err != nil {
		return err
	}
	q, err := openQueue(c)
	if err != nil {
		return err
	}
	task, created, err := q.Submit(c.Context, req)
	if err != nil {
		return err
	}
	if !created {
		fmt.Fprintf(c.App.ErrWriter, "qo: task %s already exists for idempotency key %q (%s); nothing submitted\n",
			task.ID, req.IdempotencyKey, termsafe.Line(string(task.Status)))
	}
	if c.Bool("json") {
		return emitJSON(c.App.Writer, task)
	}
	_, err = fmt.Fprintln(c.App.Writer, task.ID)
	return err
}

// specFieldsHelp lists the task spec fields of a JSON line, one a line.
func specFieldsHelp() string {
	var b strings.Builder
	for _, f := range queue.SpecFields {
		name := f.Name
		if len(name) > 15 {
			name += "\n" + strings.Repeat(" ", 19)
		} else {
			name += strings.Repeat(" ", 17-len(name))
		}
		fmt.Fprintf(&b, "  %s%s\n", name, f.Doc)
	}
	return b.String()
}

// submitSpecFields are the task spec fields qo submit takes (all).
var submitSpecFields = func() []string {
	var names []string
	for _, f := range queue.SpecFields {
		names = append(names, f.Name)
	}
	return names
}()
