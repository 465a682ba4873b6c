package command

// qo submit: one task from flags. --file (bulk.go) submits a JSON Lines
// file, --workflow (workflow.go) a workflow.
//
// --json prints the task object exactly as stored in the bucket (see
// queue/doc.go, "Task object"); the shape is stable: new fields may be
// added, none removed.

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/urfave/cli/v2"

	"github.com/qo-queue/qo/internal/termsafe"
	"github.com/qo-queue/qo/queue"
)

// submitDescription is the help text of qo submit.
const submitDescription = `Prints the new task's id (or the whole task with --json). With
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
  type             task type (alias task_type; required unless --type is given)
  input            any JSON document
  timeout_seconds  lease of one attempt (default: --timeout)
  max_retries      retries after the first attempt (default: --retries)
  retry_policy     {"initial_interval_ms", "max_interval_ms", "multiplier",
                   "jitter_percent"}; missing fields keep their defaults
  delay            "90s", "1h30m" or a number of seconds (default: --delay)
  available_at     RFC 3339 time (default: --at)
  idempotency_key  deduplicates like --idempotency-key
  unique_while_active  true: the key holds while its task is active
  unique_for       "10m" or seconds: the key holds that long
  priority         high, normal or low (default: --priority)
  key              the task's key, as --key (default: --key)
  expires_in       deadline for starting, after available (default: --expires-in)
  expires_at       RFC 3339 deadline for starting
  metadata         {"KEY": "VALUE", ...}, as --metadata
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
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "type", Aliases: []string{"t"}, Usage: "task `TYPE` (the handler name; letters, digits, _ . : -); with --file, the default type of the lines"},
			&cli.StringFlag{Name: "input", Aliases: []string{"i"}, Usage: "task input as a `JSON` document"},
			&cli.StringFlag{Name: "input-file", TakesFile: true, Usage: "read the input JSON from `FILE` ('-' for stdin)"},
			&cli.DurationFlag{Name: "timeout", Value: queue.DefaultTimeout, Usage: "lease of one attempt; a worker that does not finish or extend within it loses the task"},
			&cli.IntFlag{Name: "retries", Value: queue.DefaultMaxRetries, Usage: "retries after the first attempt (0: run once)"},
			&cli.DurationFlag{Name: "delay", Usage: "make the task available after `DURATION`"},
			&cli.StringFlag{Name: "at", Usage: "make the task available at `TIME` (RFC 3339, e.g. 2025-06-01T08:00:00Z)"},
			&cli.StringFlag{Name: "idempotency-key", Usage: "deduplicate submits: the same type and `KEY` yield the same task"},
			&cli.BoolFlag{Name: "unique-while-active", Usage: "the --idempotency-key holds only while its task is active: once it ended, the key makes a new task"},
			&cli.DurationFlag{Name: "unique-for", Usage: "the --idempotency-key holds only for `DURATION` after the submit that made its task"},
			&cli.StringFlag{Name: "priority", Aliases: []string{"p"}, Value: string(queue.PriorityNormal), Usage: "`LEVEL`: high, normal or low"},
			&cli.StringFlag{Name: "key", Aliases: []string{"k"}, Usage: "the task's `KEY` (e.g. a customer id; letters, digits, _ . : -): a type's tasks are taken round-robin over keys, and a qo limit --per-key holds for each key"},
			&cli.DurationFlag{Name: "expires-in", Usage: "expire the task if no worker starts it within `DURATION` of becoming available"},
			&cli.StringFlag{Name: "expires-at", Usage: "expire the task if no worker starts it by `TIME` (RFC 3339)"},
			&cli.StringSliceFlag{Name: "after", Usage: "run after these tasks completed: task `ID`s, comma-separated or repeated"},
			&cli.StringFlag{Name: "on-parent-failure", Usage: "`WHAT` the task does when a parent fails, is cancelled or expires: cancel (default), fail or run"},
			&cli.GenericFlag{Name: "metadata", Value: &envEntries{},
				Usage: "attach metadata `KEY=VALUE` to the task (repeatable; a value may hold commas)"},
			&cli.StringFlag{Name: "workflow", Aliases: []string{"w"}, TakesFile: true, Usage: "submit the workflow in `FILE` ('-' for stdin); see qo workflow --help"},
			jsonFlag(),
		}, bulkFlags()...),
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
	req, err := submitRequest(c)
	if err != nil {
		return err
	}
	q, err := openQueue(c)
	if err != nil {
		return err
	}
	extra, _ := submitExtrasFromFlags(c) // validated by submitRequest
	req = queue.SubmitDoc{Request: req, Delay: c.Duration("delay"), ExpiresIn: extra.expiresIn}.Resolve(q.Now())
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

// submitRequest validates the submit flags before anything is contacted.
func submitRequest(c *cli.Context) (queue.SubmitRequest, error) {
	var req queue.SubmitRequest
	req.Type = c.String("type")
	if req.Type == "" {
		return req, usageError("--type is required (the task type a worker handles, e.g. --type send_email)")
	}
	if err := queue.ValidateType(req.Type); err != nil {
		return req, usageError("--type: %s", inputMessage(err))
	}
	raw, err := submitInput(c)
	if err != nil {
		return req, err
	}
	if raw != nil {
		req.Input = raw
	}
	req.Timeout = c.Duration("timeout")
	if req.Timeout < time.Second {
		return req, usageError("--timeout %s is below the 1s minimum", req.Timeout)
	}
	retries := c.Int("retries")
	if retries < 0 {
		return req, usageError("--retries %d is negative (0 runs the task once)", retries)
	}
	req.MaxRetries = &retries
	if c.IsSet("delay") && c.IsSet("at") {
		return req, usageError("give either --delay or --at, not both")
	}
	if c.Duration("delay") < 0 {
		return req, usageError("--delay %s is negative", c.Duration("delay"))
	}
	if c.IsSet("at") {
		at, err := time.Parse(time.RFC3339, c.String("at"))
		if err != nil {
			return req, usageError("--at %q is not an RFC 3339 time (e.g. 2025-06-01T08:00:00Z)", c.String("at"))
		}
		req.AvailableAt = at
	}
	req.IdempotencyKey = c.String("idempotency-key")
	if len(req.IdempotencyKey) > queue.MaxIdempotencyKeyLen {
		return req, usageError("--idempotency-key is %d bytes long (at most %d)", len(req.IdempotencyKey), queue.MaxIdempotencyKeyLen)
	}
	req.UniqueWhileActive, req.UniqueFor = c.Bool("unique-while-active"), c.Duration("unique-for")
	switch {
	case (req.UniqueWhileActive || c.IsSet("unique-for")) && req.IdempotencyKey == "":
		return req, usageError("--unique-while-active and --unique-for need --idempotency-key: the window applies to that key")
	case c.IsSet("unique-for") && req.UniqueFor <= 0:
		return req, usageError("--unique-for %s must be positive (leave it out for a key held for good)", req.UniqueFor)
	case req.UniqueWhileActive && req.UniqueFor > 0:
		return req, usageError("--unique-while-active and --unique-for exclude each other: give one")
	}
	extra, err := submitExtrasFromFlags(c)
	if err != nil {
		return req, err
	}
	req.Priority, req.ExpiresAt = extra.priority, extra.expiresAt
	if req.Key = c.String("key"); c.IsSet("key") {
		if err := queue.ValidateTaskKey(req.Key); err != nil {
			return req, usageError("--key: %s", inputMessage(err))
		}
	}
	for _, s := range c.StringSlice("after") {
		for _, part := range strings.Split(s, ",") {
			if part = strings.TrimSpace(part); part == "" {
				continue
			}
			id, err := resolveTaskID(c, part) // the whole id or the short id qo list shows
			if err != nil {
				return req, fmt.Errorf("--after: %w", err)
			}
			req.After = append(req.After, id)
		}
	}
	if c.IsSet("on-parent-failure") {
		if len(req.After) == 0 {
			return req, usageError("--on-parent-failure needs --after (it says what the task does when a parent does not complete)")
		}
		p, err := queue.ParseParentFailure(c.String("on-parent-failure"))
		if err != nil {
			return req, usageError("--on-parent-failure: %s", inputMessage(err))
		}
		req.OnParentFailure = p
	}
	if req.Metadata, err = submitMetadata(c); err != nil {
		return req, err
	}
	return req, nil
}

// submitExtras are the priority and expiry flags of qo submit.
type submitExtras struct {
	priority  queue.Priority
	expiresIn time.Duration
	expiresAt time.Time
}

func submitExtrasFromFlags(c *cli.Context) (submitExtras, error) {
	var x submitExtras
	var err error
	if x.priority, err = queue.ParsePriority(c.String("priority")); err != nil {
		return x, usageError("--priority: %s", inputMessage(err))
	}
	if c.IsSet("expires-in") && c.IsSet("expires-at") {
		return x, usageError("give either --expires-in or --expires-at, not both")
	}
	if c.IsSet("expires-in") {
		x.expiresIn = c.Duration("expires-in")
		if x.expiresIn <= 0 {
			return x, usageError("--expires-in %s must be positive (leave it out for a task that never expires)", x.expiresIn)
		}
	}
	if c.IsSet("expires-at") {
		if x.expiresAt, err = time.Parse(time.RFC3339, c.String("expires-at")); err != nil {
			return x, usageError("--expires-at %q is not an RFC 3339 time (e.g. 2025-06-01T08:00:00Z)", c.String("expires-at"))
		}
	}
	return x, nil
}

// submitInput reads the input of qo submit (--input or --input-file) and
// checks that it is JSON in UTF-8; nil when neither flag is given.
func submitInput(c *cli.Context) ([]byte, error) {
	if c.IsSet("input") && c.IsSet("input-file") {
		return nil, usageError("give either --input or --input-file, not both")
	}
	var raw []byte
	switch {
	case c.IsSet("input"):
		raw = []byte(c.String("input"))
	case c.IsSet("input-file"):
		name := c.String("input-file")
		var err error
		if name == "-" {
			raw, err = io.ReadAll(envOf(c).Stdin)
		} else {
			raw, err = os.ReadFile(name)
		}
		if err != nil {
			return nil, usageError("--input-file: %v", err)
		}
	}
	if raw != nil {
		if !json.Valid(raw) {
			var v any
			err := json.Unmarshal(raw, &v)
			return nil, usageError("the input is not valid JSON (%v); quote it for the shell, e.g. --input '{\"to\":\"ann@example.com\"}'", err)
		}
		if !utf8.Valid(raw) {
			return nil, usageError("the input is not valid UTF-8 (JSON text must be UTF-8): convert it first, e.g. iconv -f latin1 -t utf-8 FILE")
		}
	}
	return raw, nil
}

// submitMetadata reads the --metadata entries of qo submit; nil when none.
func submitMetadata(c *cli.Context) (map[string]string, error) {
	var md map[string]string
	if e, ok := c.Generic("metadata").(*envEntries); ok && len(e.vals) > 0 {
		md = map[string]string{}
		for _, s := range e.vals {
			k, v, err := queue.ParseMetadataEntry(s)
			if err != nil {
				return nil, usageError("--metadata: %s", inputMessage(err))
			}
			if _, dup := md[k]; dup {
				return nil, usageError("--metadata: key %q given twice", k)
			}
			md[k] = v
		}
		if err := queue.ValidateMetadata(md); err != nil {
			return nil, usageError("--metadata: %s", inputMessage(err))
		}
	}
	return md, nil
}
