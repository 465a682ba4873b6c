package main

// Queue commands: init, submit, status, history, list, replay, archive,
// cancel.
//
// --json output shapes (stable; new fields may be added, none removed):
//
//   - submit, status, replay, archive, cancel: the task object exactly as
//     stored in the bucket (see queue/doc.go, "Task object").
//   - list: {"tasks": [task...], "next_cursor": "..." | "",
//     "malformed": [{"key": "...", "error": "..."}],
//     "stale_index_entries": ["..."]}
//   - history: {"id": "...", "events": [{"event", "at", "status",
//     "worker_id", "attempt", "rev", "version_id", "error", "task"}]}
//   - init: {"format", "shard_chars", "shards", "created_at", "created",
//     "versioning", "lifecycle"}

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/urfave/cli/v2"

	"github.com/qo-queue/qo/internal/termsafe"
	"github.com/qo-queue/qo/monitor/view"
	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store"
)

func init() {
	registerExitCode(queue.ErrInvalidInput, exitUsage)
	registerExitCode(queue.ErrNotFound, exitNotFound)
	registerExitCode(queue.ErrInvalidTransition, exitConflict)
	registerExitCode(queue.ErrConflict, exitConflict)
	registerExitCode(queue.ErrLeaseLost, exitConflict)
	registerExitCode(queue.ErrIdempotencyMismatch, exitConflict)
	registerExitCode(queue.ErrNotInitialized, exitStorage)

	commands = append(commands,
		initCommand(), submitCommand(), statusCommand(), historyCommand(), listCommand(),
		replayCommand(), archiveCommand(), cancelCommand(),
	)
}

// queueStore opens the bucket for the queue commands. Tests replace it.
var queueStore = func(c *cli.Context) (store.Store, error) {
	s, err := openStore(c)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// initStore opens the bucket for qo init: like openStore, but a bucket
// without versioning is fine (init turns it on) and --create-bucket creates
// a missing bucket. Tests replace it.
var initStore = func(c *cli.Context) (store.Store, error) {
	s, cfg, err := newStore(c)
	if err != nil {
		return nil, err
	}
	if c.Bool("create-bucket") {
		if err := s.CreateBucket(c.Context); err != nil {
			return nil, connError(c.Context, cfg, err)
		}
	}
	ctx, cancel := context.WithTimeout(c.Context, connectTimeout)
	defer cancel()
	if _, err := s.Versioning(ctx); err != nil {
		if errors.Is(err, store.ErrBucketNotFound) {
			return nil, storageError("bucket %q does not exist at %s: pass --create-bucket to create it, or check --bucket (S3_BUCKET)",
				cfg.Bucket, endpointName(cfg))
		}
		return nil, connError(c.Context, cfg, err)
	}
	return s, nil
}

// stderrLogger prints warnings (and nothing chattier) on the app's error
// writer.
func stderrLogger(c *cli.Context) *slog.Logger {
	return slog.New(slog.NewTextHandler(c.App.ErrWriter, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// openQueue connects to the bucket and opens the queue in it.
func openQueue(c *cli.Context) (*queue.Queue, error) {
	return openQueueLogged(c, stderrLogger(c))
}

// openQueueLogged is openQueue for long-running commands that have their own
// logger (so the queue's warnings share its format).
func openQueueLogged(c *cli.Context, log *slog.Logger) (*queue.Queue, error) {
	s, err := queueStore(c)
	if err != nil {
		return nil, err
	}
	q, err := queue.Open(c.Context, s, queue.Options{Logger: log})
	if errors.Is(err, queue.ErrNotInitialized) {
		return nil, fmt.Errorf("bucket %q holds no qo queue (no queue.json): run 'qo init' first: %w", connString(c, "bucket"), queue.ErrNotInitialized)
	}
	if errors.Is(err, queue.ErrLayoutOutdated) {
		return nil, fmt.Errorf("bucket %q: %w", connString(c, "bucket"), err)
	}
	return q, err
}

func jsonFlag() cli.Flag {
	return &cli.BoolFlag{Name: "json", Usage: "print JSON for scripts (a stable shape: fields may be added, never removed)"}
}

// positionalArgs returns the command's positional arguments. The flag
// parser stops at the first positional argument, so flags written after it
// ("qo status ID --json") arrive as arguments: they are parsed here with
// the command's own flags and applied to c.
func positionalArgs(c *cli.Context) ([]string, error) {
	args := c.Args().Slice()
	fs := flag.NewFlagSet(c.Command.Name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	for _, f := range c.Command.Flags {
		if err := f.Apply(fs); err != nil {
			return nil, err
		}
	}
	var pos []string
	for rest := args; len(rest) > 0; {
		switch {
		case rest[0] == "--":
			pos = append(pos, rest[1:]...)
			rest = nil
		case !strings.HasPrefix(rest[0], "-") || rest[0] == "-":
			pos = append(pos, rest[0])
			rest = rest[1:]
		default:
			if err := fs.Parse(rest); err != nil {
				return nil, usageError("%s (see 'qo %s --help')", explainFlagError(c.Command, err), c.Command.Name)
			}
			rest = fs.Args()
		}
	}
	var setErr error
	fs.Visit(func(f *flag.Flag) {
		if err := c.Set(f.Name, f.Value.String()); err != nil && setErr == nil {
			setErr = usageError("-%s: %v", f.Name, err)
		}
	})
	return pos, setErr
}

// oneID parses the single task id argument.
func oneID(c *cli.Context) (uuid.UUID, error) {
	args, err := positionalArgs(c)
	if err != nil {
		return uuid.Nil, err
	}
	if len(args) != 1 {
		return uuid.Nil, usageError("want exactly one task id, got %d arguments (usage: %s)", len(args), c.Command.UsageText)
	}
	id, err := queue.ParseID(args[0])
	if err != nil {
		return uuid.Nil, usageError("%s", inputMessage(err))
	}
	return id, nil
}

func noArgs(c *cli.Context) error {
	args, err := positionalArgs(c)
	if err != nil {
		return err
	}
	if len(args) > 0 {
		return usageError("unexpected argument %q (usage: %s)", args[0], c.Command.UsageText)
	}
	return nil
}

// --- init -----------------------------------------------------------------

func initCommand() *cli.Command {
	return &cli.Command{
		Name:      "init",
		Usage:     "create the queue in a bucket (idempotent)",
		UsageText: "qo init [--shard-chars 1|2] [--tasks-retention-days N] [--create-bucket] [--json]",
		Description: `Writes queue.json (the shard width every component reads), turns bucket
versioning on (task history) and installs lifecycle rules that expire old
versions and delete markers of index objects after a day. Tasks and their
history are kept forever unless --tasks-retention-days N is given: then every
task version is tagged as it is written, and finished tasks (completed,
cancelled, expired, archived; not failed ones, the dead letters) expire with
their history N days after they finished. Running init again is safe: it
cannot change the shard width of an existing queue, and it sets the retention
to what it is given (0: keep forever). --json prints {"format",
"shard_chars", "shards", "created_at", "created", "tasks_retention_days",
"versioning", "lifecycle"}.

Examples:
  qo init --bucket jobs
  qo init --bucket jobs --create-bucket --json
  qo init --bucket jobs --shard-chars 2 --tasks-retention-days 90`,
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "shard-chars", Value: 1, Usage: "hex characters of the task id used as shard: 1 (16 shards) or 2 (256 shards)"},
			&cli.IntFlag{Name: "tasks-retention-days", Usage: "expire finished tasks and their history `N` days after they finish (0: keep forever; failed tasks are kept)"},
			&cli.BoolFlag{Name: "create-bucket", Usage: "create the bucket when it does not exist"},
			jsonFlag(),
		},
		Action: func(c *cli.Context) error {
			if err := noArgs(c); err != nil {
				return err
			}
			chars := c.Int("shard-chars")
			if chars != 1 && chars != 2 {
				return usageError("--shard-chars %d: want 1 (16 shards) or 2 (256 shards)", chars)
			}
			days := c.Int("tasks-retention-days")
			if days < 0 {
				return usageError("--tasks-retention-days %d is negative (0 keeps task history forever)", days)
			}
			s, err := initStore(c)
			if err != nil {
				return err
			}
			res, err := queue.InitWithOptions(c.Context, s, queue.InitOptions{
				ShardChars: chars, TasksRetentionDays: days, Logger: stderrLogger(c),
			})
			if err != nil {
				return err
			}
			if c.Bool("json") {
				return emitJSON(c.App.Writer, map[string]any{
					"format":               res.Config.Format,
					"shard_chars":          res.Config.ShardChars,
					"shards":               1 << (4 * res.Config.ShardChars),
					"created_at":           res.Config.CreatedAt,
					"created":              res.Created,
					"tasks_retention_days": res.Config.TasksRetentionDays,
					"versioning":           res.Versioning,
					"lifecycle":            res.Lifecycle,
				})
			}
			verb := "initialised"
			if !res.Created {
				verb = "already initialised"
			}
			w := c.App.Writer
			fmt.Fprintf(w, "queue %s in bucket %s: %d shards (%d hex char%s of the task id)\n", verb,
				connString(c, "bucket"), 1<<(4*res.Config.ShardChars), res.Config.ShardChars, plural(res.Config.ShardChars))
			fmt.Fprintf(w, "versioning: %s\nlifecycle:  %s\n", res.Versioning, res.Lifecycle)
			if d := res.Config.TasksRetentionDays; d > 0 {
				fmt.Fprintf(w, "retention:  finished tasks expire %d days after they finish (failed tasks are kept)\n", d)
			} else {
				fmt.Fprintln(w, "retention:  tasks are kept forever (--tasks-retention-days N to expire finished ones)")
			}
			return nil
		},
	}
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// --- submit -----------------------------------------------------------------

func submitCommand() *cli.Command {
	return &cli.Command{
		Name:  "submit",
		Usage: "add a task to the queue, or one per line of a JSON Lines file",
		UsageText: `qo submit --type TYPE [--input JSON | --input-file FILE|-] [--timeout D] [--retries N] [--delay D | --at TIME] [--priority P] [--expires-in D | --expires-at TIME] [--idempotency-key K] [--after ID,... [--on-parent-failure cancel|fail|run]] [--json]
qo submit --file FILE|- [--type TYPE] [--timeout D] [--retries N] [--delay D | --at TIME] [--priority P] [--expires-in D] [--concurrency N] [--json]
qo submit --workflow FILE|- [--idempotency-key K] [--json]`,
		Description: `Prints the new task's id (or the whole task with --json). With
--idempotency-key, submitting the same type and key again returns the existing
task instead of a new one (a note goes to stderr); the same key with a different
input is refused (exit 4).

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
(the default: the task is cancelled, the reason names the parent), fail (it
becomes a dead letter) or run (it runs anyway once every parent ended).
Replaying a failed parent puts the children it cancelled back to waiting. A
parent that completed long ago counts as done; an unknown id is refused
(exit 2) and nothing is submitted.

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
  priority         high, normal or low (default: --priority)
  expires_in       deadline for starting, after available (default: --expires-in)
  expires_at       RFC 3339 deadline for starting
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
  qo submit --workflow etl.json && qo wait --workflow nightly-etl`,
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "type", Aliases: []string{"t"}, Usage: "task `TYPE` (the handler name; letters, digits, _ . : -); with --file, the default type of the lines"},
			&cli.StringFlag{Name: "input", Aliases: []string{"i"}, Usage: "task input as a `JSON` document"},
			&cli.StringFlag{Name: "input-file", TakesFile: true, Usage: "read the input JSON from `FILE` ('-' for stdin)"},
			&cli.DurationFlag{Name: "timeout", Value: queue.DefaultTimeout, Usage: "lease of one attempt; a worker that does not finish or extend within it loses the task"},
			&cli.IntFlag{Name: "retries", Value: queue.DefaultMaxRetries, Usage: "retries after the first attempt (0: run once)"},
			&cli.DurationFlag{Name: "delay", Usage: "make the task available after `DURATION`"},
			&cli.StringFlag{Name: "at", Usage: "make the task available at `TIME` (RFC 3339, e.g. 2025-06-01T08:00:00Z)"},
			&cli.StringFlag{Name: "idempotency-key", Usage: "deduplicate submits: the same type and `KEY` yield the same task"},
			&cli.StringFlag{Name: "priority", Aliases: []string{"p"}, Value: string(queue.PriorityNormal), Usage: "`LEVEL`: high, normal or low"},
			&cli.DurationFlag{Name: "expires-in", Usage: "expire the task if no worker starts it within `DURATION` of becoming available"},
			&cli.StringFlag{Name: "expires-at", Usage: "expire the task if no worker starts it by `TIME` (RFC 3339)"},
			&cli.StringSliceFlag{Name: "after", Usage: "run after these tasks completed: task `ID`s, comma-separated or repeated"},
			&cli.StringFlag{Name: "on-parent-failure", Usage: "`WHAT` the task does when a parent fails, is cancelled or expires: cancel (default), fail or run"},
			&cli.StringFlag{Name: "workflow", Aliases: []string{"w"}, TakesFile: true, Usage: "submit the workflow in `FILE` ('-' for stdin); see qo workflow --help"},
			jsonFlag(),
		}, bulkFlags()...),
		Action: func(c *cli.Context) error {
			if err := noArgs(c); err != nil {
				return err
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
		},
	}
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
	if c.IsSet("input") && c.IsSet("input-file") {
		return req, usageError("give either --input or --input-file, not both")
	}
	var raw []byte
	switch {
	case c.IsSet("input"):
		raw = []byte(c.String("input"))
	case c.IsSet("input-file"):
		name := c.String("input-file")
		var err error
		if name == "-" {
			raw, err = io.ReadAll(stdin)
		} else {
			raw, err = os.ReadFile(name)
		}
		if err != nil {
			return req, usageError("--input-file: %v", err)
		}
	}
	if raw != nil {
		if !json.Valid(raw) {
			var v any
			err := json.Unmarshal(raw, &v)
			return req, usageError("the input is not valid JSON (%v); quote it for the shell, e.g. --input '{\"to\":\"ann@example.com\"}'", err)
		}
		if !utf8.Valid(raw) {
			return req, usageError("the input is not valid UTF-8 (JSON text must be UTF-8): convert it first, e.g. iconv -f latin1 -t utf-8 FILE")
		}
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
	extra, err := submitExtrasFromFlags(c)
	if err != nil {
		return req, err
	}
	req.Priority, req.ExpiresAt = extra.priority, extra.expiresAt
	for _, s := range c.StringSlice("after") {
		for _, part := range strings.Split(s, ",") {
			if part = strings.TrimSpace(part); part == "" {
				continue
			}
			id, err := queue.ParseID(part)
			if err != nil {
				return req, usageError("--after: %s", inputMessage(err))
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

// inputMessage strips the sentinel's prefix from a queue input error.
func inputMessage(err error) string {
	return strings.TrimPrefix(err.Error(), queue.ErrInvalidInput.Error()+": ")
}

// --- status -----------------------------------------------------------------

func statusCommand() *cli.Command {
	return &cli.Command{
		Name:      "status",
		Usage:     "show one task",
		UsageText: "qo status ID [--json]",
		Description: `Shows the task's current state. A pending task in backoff or delayed shows
when it becomes available; a running task shows when its lease expires.
--json prints the task object as stored in the bucket, except that an input or
output stored in its own object (over 256 KiB) is loaded in; input_ref and
output_ref still say where it lives.

Examples:
  qo status 0b6f4c2e-8d1a-4f7e-9c3b-2a5d6e7f8a9b
  qo status 0b6f4c2e-8d1a-4f7e-9c3b-2a5d6e7f8a9b --json | jq -r .status`,
		Flags: []cli.Flag{jsonFlag()},
		Action: func(c *cli.Context) error {
			id, err := oneID(c)
			if err != nil {
				return err
			}
			q, err := openQueue(c)
			if err != nil {
				return err
			}
			task, err := q.Get(c.Context, id)
			if err != nil {
				return err
			}
			full, loadErr := q.WithPayloads(c.Context, task)
			if loadErr != nil {
				full = task
			}
			if c.Bool("json") {
				err = emitJSON(c.App.Writer, full)
			} else {
				err = printTask(c.App.Writer, full, q.Now())
			}
			if err == nil && loadErr != nil {
				return fmt.Errorf("task shown without its offloaded payload: %w", loadErr)
			}
			return err
		},
	}
}

// printTask renders one task as aligned "field: value" lines. Every value
// comes from the bucket: control characters in it are escaped.
func printTask(w io.Writer, t *queue.Task, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(k, v string) { fmt.Fprintf(tw, "%s:\t%s\n", k, termsafe.Line(v)) }
	row("id", t.ID.String())
	row("type", t.Type)
	row("status", statusLine(t, now))
	row("priority", string(t.Priority))
	row("shard", t.Shard)
	switch t.Status {
	case queue.StatusPending:
		row("available", timeWithCountdown(t.AvailableAt, now, "now"))
	case queue.StatusRunning:
		if t.LeaseExpiresAt != nil {
			row("lease expires", timeWithCountdown(*t.LeaseExpiresAt, now, "expired"))
		}
		row("worker", t.WorkerID)
	}
	row("attempt", fmt.Sprintf("%d (retries used %d of %d; timeout %ds)", t.Attempt, t.RetryCount, t.MaxRetries, t.TimeoutSeconds))
	row("created", formatTime(t.CreatedAt))
	row("updated", fmt.Sprintf("%s (%s, rev %d)", formatTime(t.UpdatedAt), t.LastEvent, t.Rev))
	if t.CompletedAt != nil {
		row("finished", formatTime(*t.CompletedAt))
	}
	if t.Status != queue.StatusRunning && t.WorkerID != "" {
		row("last worker", t.WorkerID)
	}
	if t.LastError != "" {
		row("last error", oneLine(t.LastError))
	}
	if t.CancelRequested {
		row("cancel", fmt.Sprintf("requested %s%s", formatTimePtr(t.CancelRequestedAt), reasonSuffix(t.CancelReason)))
	}
	if len(t.Parents) > 0 {
		open := 0
		for _, p := range t.Parents {
			if p.Done == "" {
				open++
			}
		}
		row("parents", fmt.Sprintf("%d, %d not ended; on parent failure: %s", len(t.Parents), open, t.OnParentFailure))
		for _, p := range t.Parents {
			done := string(p.Done)
			if done == "" {
				done = "not ended"
			}
			row("  after", fmt.Sprintf("%s (%s)", p.ID, done))
		}
	}
	if len(t.Children) > 0 {
		row("children", fmt.Sprintf("%d: %s", len(t.Children), idList(t.Children, 5)))
	}
	for _, f := range slices.Sorted(maps.Keys(t.InputFrom)) {
		src := t.InputFrom[f]
		from := "output"
		if src.Path != "" {
			from += "." + src.Path
		}
		got := "not yet"
		if v, ok := t.FromParents[f]; ok {
			got = jsonText(v)
		}
		row("  input "+f, fmt.Sprintf("from %s of %s: %s", from, src.Parent, got))
	}
	if t.Workflow != nil {
		row("workflow", fmt.Sprintf("%s, step %s", t.Workflow.ID, t.Workflow.Step))
	}
	if t.ExpiresAt != nil {
		past := "expired"
		if t.Status != queue.StatusPending && t.Status != queue.StatusExpired {
			past = "passed"
		}
		row("expires", timeWithCountdown(*t.ExpiresAt, now, past))
	}
	if t.IdempotencyKey != "" {
		row("idempotency key", t.IdempotencyKey)
	}
	row("input", jsonText(t.Input)+refNote(t.InputRef))
	if t.Output != nil || t.OutputRef != nil {
		row("output", jsonText(t.Output)+refNote(t.OutputRef))
	}
	return tw.Flush()
}

// refNote says where an offloaded payload lives.
func refNote(r *queue.DataRef) string {
	if r == nil {
		return ""
	}
	return fmt.Sprintf(" (offloaded: %d bytes in %s)", r.Bytes, r.Key)
}

func statusLine(t *queue.Task, now time.Time) string {
	s := string(t.Status)
	switch {
	case t.Status == queue.StatusPending && t.AvailableAt.After(now) && t.RetryCount > 0:
		s += " (backoff before retry " + fmt.Sprint(t.RetryCount) + ")"
	case t.Status == queue.StatusPending && t.AvailableAt.After(now):
		s += " (delayed)"
	case t.Status == queue.StatusRunning && t.CancelRequested:
		s += " (cancel requested)"
	}
	return s
}

func reasonSuffix(r string) string {
	if r == "" {
		return ""
	}
	return ": " + oneLine(r)
}

func formatTime(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05.000Z") }

func formatTimePtr(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return formatTime(*t)
}

// timeWithCountdown renders t with how far it is from now: "(in 4m12s)",
// or past (pastWord + " 3s ago").
func timeWithCountdown(t, now time.Time, pastWord string) string {
	d := t.Sub(now)
	if d > 0 {
		return fmt.Sprintf("%s (in %s)", formatTime(t), roundDuration(d))
	}
	if pastWord == "now" {
		return fmt.Sprintf("%s (now)", formatTime(t))
	}
	return fmt.Sprintf("%s (%s %s ago)", formatTime(t), pastWord, roundDuration(-d))
}

func roundDuration(d time.Duration) time.Duration {
	if d >= time.Second {
		return d.Round(time.Second)
	}
	return d.Round(time.Millisecond)
}

// oneLine renders text from the bucket (an error, a reason) as one short
// line for a terminal: white space folded, at most 200 bytes, control
// characters escaped.
func oneLine(s string) string { return termsafe.Line(foldSpace(s)) }

// foldSpace folds white space runs into one space and cuts s to 200 bytes
// (on a character boundary).
func foldSpace(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	return cutText(s, 200, "...")
}

// cutText cuts s to at most n bytes on a character boundary, adding more
// when it cut.
func cutText(s string, n int, more string) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + more
}

// jsonText renders a JSON document from the bucket on one line: compacted,
// cut to 200 bytes, control characters escaped.
func jsonText(m json.RawMessage) string {
	if m == nil {
		return "null"
	}
	var b bytes.Buffer
	s := string(m)
	if json.Compact(&b, m) == nil {
		s = b.String()
	}
	return termsafe.Line(cutText(s, 200, "... (--json shows all)"))
}

// tabRow writes cells as one tabwriter row, each escaped (a tab or a
// newline inside a cell would break the table, an ESC the terminal).
func tabRow(w io.Writer, cells ...string) {
	for i, c := range cells {
		cells[i] = termsafe.Line(c)
	}
	fmt.Fprintln(w, strings.Join(cells, "\t"))
}

// --- history ----------------------------------------------------------------

func historyCommand() *cli.Command {
	return &cli.Command{
		Name:      "history",
		Usage:     "show every state a task went through (from bucket versioning)",
		UsageText: "qo history ID [--json]",
		Description: `Lists the task's object versions, oldest first, with the event that made each
(enqueued, claimed, lease_extended, succeeded, failed, retried, timed_out,
requeued, cancel_requested, cancelled, replayed, archived). Versions that
cannot be decoded are shown with their error. --json prints {"id", "events":
[{"event", "at", "status", "worker_id", "attempt", "rev", "version_id",
"error", "task"}]}.

Examples:
  qo history 0b6f4c2e-8d1a-4f7e-9c3b-2a5d6e7f8a9b
  qo history 0b6f4c2e-8d1a-4f7e-9c3b-2a5d6e7f8a9b --json | jq -r '.events[].event'`,
		Flags: []cli.Flag{jsonFlag()},
		Action: func(c *cli.Context) error {
			id, err := oneID(c)
			if err != nil {
				return err
			}
			q, err := openQueue(c)
			if err != nil {
				return err
			}
			events, err := q.History(c.Context, id)
			if err != nil {
				return err
			}
			if c.Bool("json") {
				return emitJSON(c.App.Writer, view.HistoryOf(id, events))
			}
			tw := tabwriter.NewWriter(c.App.Writer, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "REV\tAT\tEVENT\tSTATUS\tATTEMPT\tWORKER\tDETAIL")
			for _, e := range events {
				if e.Task == nil {
					detail := "delete marker"
					if e.Err != nil {
						detail = "unreadable version " + e.VersionID + ": " + oneLine(e.Err.Error())
					}
					tabRow(tw, "-", formatTime(e.At), e.Name, "-", "-", "-", detail)
					continue
				}
				tabRow(tw, fmt.Sprint(e.Rev), formatTime(e.At), e.Name, string(e.Status),
					fmt.Sprint(e.Attempt), dash(e.WorkerID), eventDetail(e))
			}
			return tw.Flush()
		},
	}
}

// eventDetail is the one fact worth showing next to an event.
func eventDetail(e queue.Event) string {
	t := e.Task
	switch e.Name {
	case queue.EventClaimed, queue.EventLeaseExtended:
		if t.LeaseExpiresAt != nil {
			return "lease until " + formatTime(*t.LeaseExpiresAt)
		}
	case queue.EventRetried, queue.EventTimedOut:
		if t.Status == queue.StatusPending {
			return "retry " + fmt.Sprint(t.RetryCount) + " at " + formatTime(t.AvailableAt) + "; " + oneLine(t.LastError)
		}
		return oneLine(t.LastError)
	case queue.EventFailed:
		return oneLine(t.LastError)
	case queue.EventCancelRequested, queue.EventCancelled:
		return strings.TrimPrefix(reasonSuffix(t.CancelReason), ": ")
	case queue.EventEnqueued, queue.EventRequeued, queue.EventReplayed:
		if t.Status == queue.StatusWaiting {
			return "waits for " + t.WaitingFor()
		}
		return "available " + formatTime(t.AvailableAt)
	case queue.EventParentDone:
		return "waits for " + t.WaitingFor()
	case queue.EventReleased:
		return "every parent ended; available " + formatTime(t.AvailableAt)
	case queue.EventChildAdded:
		if n := len(t.Children); n > 0 {
			return "child " + t.Children[n-1].String()
		}
	case queue.EventSucceeded:
		return "output " + oneLine(jsonText(t.Output))
	}
	return ""
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// --- list -------------------------------------------------------------------

// parseSince reads --since: an age ("90m", "1h", "7d") before now, or an
// RFC 3339 time.
func parseSince(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	age, err := parseAge(s)
	if err != nil {
		return time.Time{}, fmt.Errorf("want an age such as 30m, 1h or 7d, or an RFC 3339 time such as 2026-01-02T15:04:05Z")
	}
	return now.Add(-age), nil
}

// parseAge is time.ParseDuration plus whole days ("7d").
func parseAge(s string) (time.Duration, error) {
	if d, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(d)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("bad number of days %q", d)
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("bad age %q", s)
	}
	return d, nil
}

func listCommand() *cli.Command {
	return &cli.Command{
		Name:      "list",
		Usage:     "list tasks, one page at a time",
		UsageText: "qo list [--shard S] [--status STATUS] [--type TYPE] [--since AGE|TIME] [--limit N] [--cursor C] [--json]",
		Description: `Pending, running and failed tasks (the dead letters, newest failure first)
come from their indexes, whatever their age. Every other status, and a list
without --status (every task but archived ones), shows the tasks CREATED in a
window, newest first: the last 24 hours, or since --since (a duration such as
1h or 7d, or an RFC 3339 time). Either way a page costs what it shows, not the
size of the bucket's history. A page may hold fewer tasks than --limit and
still have more after it: pass the printed cursor back with --cursor. Objects
that cannot be decoded are reported on stderr and skipped. --json prints
{"tasks": [task...], "next_cursor", "since", "malformed": [{"key", "error"}],
"stale_index_entries": [key...]}.

Examples:
  qo list --status failed
  qo list --status completed --since 1h
  qo list --status pending --type send_email --limit 20
  qo list --shard a --json | jq -r '.tasks[].id'`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "shard", Usage: "only this `SHARD` (e.g. 0..f)"},
			&cli.StringFlag{Name: "status", Usage: "pending, running, completed, failed, cancelled or archived"},
			&cli.StringFlag{Name: "type", Usage: "only tasks of this `TYPE`"},
			&cli.IntFlag{Name: "limit", Value: queue.DefaultListLimit, Usage: fmt.Sprintf("tasks per page (at most %d)", queue.MaxListLimit)},
			&cli.StringFlag{Name: "cursor", Usage: "continue after the page that printed this `CURSOR`"},
			&cli.StringFlag{Name: "since", Usage: "window of the statuses not served by an index: tasks created in the last `AGE` (1h, 7d) or since a TIME (RFC 3339); default 24h"},
			jsonFlag(),
		},
		Action: func(c *cli.Context) error {
			if err := noArgs(c); err != nil {
				return err
			}
			qry := queue.ListQuery{Shard: c.String("shard"), Type: c.String("type"), Limit: c.Int("limit"), Cursor: c.String("cursor")}
			if s := c.String("since"); s != "" {
				since, err := parseSince(s, time.Now())
				if err != nil {
					return usageError("--since %q: %v", s, err)
				}
				qry.Since = since
			}
			if s := c.String("status"); s != "" {
				st, err := queue.ParseStatus(s)
				if err != nil {
					return usageError("--status: %s", inputMessage(err))
				}
				qry.Status = st
			}
			if qry.Type != "" {
				if err := queue.ValidateType(qry.Type); err != nil {
					return usageError("--type: %s", inputMessage(err))
				}
			}
			if qry.Limit < 1 || qry.Limit > queue.MaxListLimit {
				return usageError("--limit %d: want 1..%d", qry.Limit, queue.MaxListLimit)
			}
			q, err := openQueue(c)
			if err != nil {
				return err
			}
			if qry.Shard != "" && !q.ValidShard(qry.Shard) {
				shards := q.Shards()
				return usageError("--shard %q: this queue's shards are %s..%s", qry.Shard, shards[0], shards[len(shards)-1])
			}
			page, err := q.List(c.Context, qry)
			if err != nil {
				return err
			}
			for _, m := range page.Malformed {
				fmt.Fprintf(c.App.ErrWriter, "qo: skipped malformed object %s: %s\n", termsafe.Line(m.Key), oneLine(m.Err.Error()))
			}
			if c.Bool("json") {
				return emitJSON(c.App.Writer, view.PageOf(page))
			}
			now := q.Now()
			w := c.App.Writer
			if len(page.Tasks) == 0 {
				fmt.Fprintln(w, "no tasks on this page")
			} else {
				tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
				fmt.Fprintln(tw, "ID\tTYPE\tPRIORITY\tSTATUS\tATTEMPT\tUPDATED\tWHEN")
				for _, t := range page.Tasks {
					tabRow(tw, t.ID.String(), t.Type, string(t.Priority), string(t.Status), fmt.Sprint(t.Attempt), formatTime(t.UpdatedAt), listWhen(t, now))
				}
				if err := tw.Flush(); err != nil {
					return err
				}
			}
			if len(page.Stale) > 0 {
				fmt.Fprintf(c.App.ErrWriter, "qo: skipped %d stale index entries (cleaned up by workers and the monitor)\n", len(page.Stale))
			}
			if page.Cursor != "" {
				fmt.Fprintf(w, "more: qo list%s --cursor %s\n", listFlagsEcho(c), page.Cursor)
			}
			return nil
		},
	}
}

// listWhen is the countdown column: availability of pending tasks, lease
// expiry of running ones, end time of finished ones.
func listWhen(t *queue.Task, now time.Time) string {
	switch t.Status {
	case queue.StatusWaiting:
		return "after " + t.WaitingFor()
	case queue.StatusPending:
		if d := t.AvailableAt.Sub(now); d > 0 {
			return "available in " + roundDuration(d).String()
		}
		return "available"
	case queue.StatusRunning:
		if t.LeaseExpiresAt == nil {
			return "-"
		}
		if d := t.LeaseExpiresAt.Sub(now); d > 0 {
			return "lease " + roundDuration(d).String() + " left (" + t.WorkerID + ")"
		}
		return "lease expired (" + t.WorkerID + ")"
	}
	if t.CompletedAt != nil {
		return "finished " + formatTime(*t.CompletedAt)
	}
	return "-"
}

// listFlagsEcho repeats the filters so the "more:" line is copy-pastable.
func listFlagsEcho(c *cli.Context) string {
	var b strings.Builder
	for _, f := range []string{"shard", "status", "type"} {
		if v := c.String(f); v != "" {
			fmt.Fprintf(&b, " --%s %s", f, v)
		}
	}
	if c.IsSet("limit") {
		fmt.Fprintf(&b, " --limit %d", c.Int("limit"))
	}
	return b.String()
}

// --- replay, archive, cancel ----------------------------------------------------

// operatorCommand builds a command that applies one operator action to a task.
func operatorCommand(name, usage, description string, extra []cli.Flag,
	do func(ctx context.Context, c *cli.Context, q *queue.Queue, id uuid.UUID) (*queue.Task, error)) *cli.Command {
	usageText := "qo " + name + " ID"
	for _, f := range extra {
		usageText += " [--" + f.Names()[0] + " ...]"
	}
	usageText += " [--json]"
	return &cli.Command{
		Name:        name,
		Usage:       usage,
		UsageText:   usageText,
		Description: description,
		Flags:       append(extra, jsonFlag()),
		Action: func(c *cli.Context) error {
			id, err := oneID(c)
			if err != nil {
				return err
			}
			q, err := openQueue(c)
			if err != nil {
				return err
			}
			before, err := q.Get(c.Context, id)
			if err != nil {
				return err
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
		},
	}
}

func replayCommand() *cli.Command {
	return operatorCommand("replay", "run a failed or cancelled task again",
		`Puts the task back to pending, available now, with its retry count reset.
--json prints the task object after the change.

Examples:
  qo replay 0b6f4c2e-8d1a-4f7e-9c3b-2a5d6e7f8a9b
  qo list --status failed --json | jq -r '.tasks[].id' | xargs -n1 qo replay`, nil,
		func(ctx context.Context, _ *cli.Context, q *queue.Queue, id uuid.UUID) (*queue.Task, error) {
			return q.Replay(ctx, id)
		})
}

func archiveCommand() *cli.Command {
	return operatorCommand("archive", "hide a finished task from default listings",
		`Archives a completed, failed or cancelled task. The object and its history
stay; 'qo list --status archived' still finds it. --json prints the task
object after the change.

Examples:
  qo archive 0b6f4c2e-8d1a-4f7e-9c3b-2a5d6e7f8a9b
  qo list --status completed --json | jq -r '.tasks[].id' | xargs -n1 qo archive`, nil,
		func(ctx context.Context, _ *cli.Context, q *queue.Queue, id uuid.UUID) (*queue.Task, error) {
			return q.Archive(ctx, id)
		})
}

func cancelCommand() *cli.Command {
	return operatorCommand("cancel", "cancel a pending or running task",
		`A pending task is cancelled at once. A running task is marked
cancel_requested: its worker notices on its next lease extension, stops the
handler and confirms (if the worker is gone, the lease expiry cancels it).
--json prints the task object after the change.

Examples:
  qo cancel 0b6f4c2e-8d1a-4f7e-9c3b-2a5d6e7f8a9b --reason "customer withdrew"
  qo cancel 0b6f4c2e-8d1a-4f7e-9c3b-2a5d6e7f8a9b && qo wait 0b6f4c2e-8d1a-4f7e-9c3b-2a5d6e7f8a9b`,
		[]cli.Flag{&cli.StringFlag{Name: "reason", Usage: "why, as `TEXT` kept in the task's cancel_reason"}},
		func(ctx context.Context, c *cli.Context, q *queue.Queue, id uuid.UUID) (*queue.Task, error) {
			return q.Cancel(ctx, id, c.String("reason"))
		})
}

// idList renders up to max ids, then how many more.
func idList(ids []uuid.UUID, max int) string {
	var parts []string
	for i, id := range ids {
		if i == max {
			parts = append(parts, fmt.Sprintf("and %d more", len(ids)-max))
			break
		}
		parts = append(parts, id.String())
	}
	return strings.Join(parts, ", ")
}
