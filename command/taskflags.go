package command

// The flag set of a task spec (queue.SubmitRequest): one flag per field,
// shared by every command that takes task fields (qo submit, its --file
// defaults, qo schedule create). The flags only read values; the rules are
// queue's (SubmitRequest.Validate), worded here with the flags' names.
//
// A new field is one entry in taskFlags (and its rule in queue).

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/qo-queue/qo/queue"
)

// taskFlag is the flag (or flags) of one task spec field.
type taskFlag struct {
	field string     // the field's JSON name (queue.SpecFields)
	flags []cli.Flag // the first one names the field in errors
	// read fills r from the flags; it is called when one of them is set,
	// or when the first has a default (Value).
	read func(c *cli.Context, r *queue.SubmitRequest) error
}

// taskFlags are the flags of the task spec fields, in the order help
// lists them: new ones on every call, as a command's flags hold its
// values.
func taskFlags() []taskFlag {
	return []taskFlag{
		{"type", []cli.Flag{&cli.StringFlag{Name: "type", Aliases: []string{"t"}, Usage: "task `TYPE` (the handler name; letters, digits, _ . : -)"}},
			func(c *cli.Context, r *queue.SubmitRequest) error { r.Type = c.String("type"); return nil }},
		{"input", []cli.Flag{
			&cli.StringFlag{Name: "input", Aliases: []string{"i"}, Usage: "task input as a `JSON` document"},
			&cli.StringFlag{Name: "input-file", TakesFile: true, Usage: "read the input JSON from `FILE` ('-' for stdin)"}},
			readInput},
		{"timeout_seconds", []cli.Flag{&cli.DurationFlag{Name: "timeout", Value: queue.DefaultTimeout, Usage: "lease of one attempt (whole seconds, rounded up); a worker that does not finish or extend within it loses the task"}},
			func(c *cli.Context, r *queue.SubmitRequest) error { r.Timeout = c.Duration("timeout"); return nil }},
		{"max_retries", []cli.Flag{&cli.IntFlag{Name: "retries", Value: queue.DefaultMaxRetries, Usage: "retries after the first attempt (0: run once)"}},
			func(c *cli.Context, r *queue.SubmitRequest) error {
				n := c.Int("retries")
				r.MaxRetries = &n
				return nil
			}},
		{"delay", []cli.Flag{&cli.DurationFlag{Name: "delay", Usage: "make the task available after `DURATION`"}},
			func(c *cli.Context, r *queue.SubmitRequest) error { r.Delay = c.Duration("delay"); return nil }},
		{"available_at", []cli.Flag{&cli.StringFlag{Name: "at", Usage: "make the task available at `TIME` (RFC 3339, e.g. 2025-06-01T08:00:00Z)"}},
			func(c *cli.Context, r *queue.SubmitRequest) (err error) {
				r.AvailableAt, err = timeFlag(c, "at")
				return err
			}},
		{"idempotency_key", []cli.Flag{&cli.StringFlag{Name: "idempotency-key", Usage: "deduplicate submits: the same type and `KEY` yield the same task"}},
			func(c *cli.Context, r *queue.SubmitRequest) error {
				r.IdempotencyKey = c.String("idempotency-key")
				return nil
			}},
		{"unique_while_active", []cli.Flag{&cli.BoolFlag{Name: "unique-while-active", Usage: "the --idempotency-key holds only while its task is active: once it ended, the key makes a new task"}},
			func(c *cli.Context, r *queue.SubmitRequest) error {
				r.UniqueWhileActive = c.Bool("unique-while-active")
				return nil
			}},
		{"unique_for", []cli.Flag{&cli.DurationFlag{Name: "unique-for", Usage: "the --idempotency-key holds only for `DURATION` after the submit that made its task"}},
			func(c *cli.Context, r *queue.SubmitRequest) error { r.UniqueFor = c.Duration("unique-for"); return nil }},
		{"priority", []cli.Flag{&cli.StringFlag{Name: "priority", Aliases: []string{"p"}, Value: string(queue.PriorityNormal), Usage: "`LEVEL`: high, normal or low"}},
			func(c *cli.Context, r *queue.SubmitRequest) error {
				r.Priority = queue.Priority(c.String("priority"))
				return nil
			}},
		{"key", []cli.Flag{&cli.StringFlag{Name: "key", Aliases: []string{"k"}, Usage: "the task's `KEY` (e.g. a customer id; letters, digits, _ . : -): a type's tasks are taken round-robin over keys, and a qo limit --per-key holds for each key"}},
			func(c *cli.Context, r *queue.SubmitRequest) error { r.Key = c.String("key"); return nil }},
		{"expires_in", []cli.Flag{&cli.DurationFlag{Name: "expires-in", Usage: "expire the task if no worker starts it within `DURATION` of becoming available (a schedule's tasks: of each run's due time)"}},
			func(c *cli.Context, r *queue.SubmitRequest) error { r.ExpiresIn = c.Duration("expires-in"); return nil }},
		{"expires_at", []cli.Flag{&cli.StringFlag{Name: "expires-at", Usage: "expire the task if no worker starts it by `TIME` (RFC 3339)"}},
			func(c *cli.Context, r *queue.SubmitRequest) (err error) {
				r.ExpiresAt, err = timeFlag(c, "expires-at")
				return err
			}},
		{"after", []cli.Flag{&cli.StringSliceFlag{Name: "after", Usage: "run after these tasks completed: task `ID`s, comma-separated or repeated"}},
			readAfter},
		{"on_parent_failure", []cli.Flag{&cli.StringFlag{Name: "on-parent-failure", Usage: "`WHAT` the task does when a parent fails, is cancelled or expires: cancel (default), fail or run"}},
			func(c *cli.Context, r *queue.SubmitRequest) error {
				r.OnParentFailure = queue.ParentFailure(c.String("on-parent-failure"))
				return nil
			}},
		{"metadata", []cli.Flag{&cli.GenericFlag{Name: "metadata", Value: &envEntries{}, Usage: "attach metadata `KEY=VALUE` to the task (repeatable; a value may hold commas)"}},
			readMetadata},
	}
}

// taskSpecFlags returns the flags of the given fields (JSON names), in
// taskFlags order.
func taskSpecFlags(fields ...string) []cli.Flag {
	var out []cli.Flag
	for _, f := range taskFlags() {
		if slices.Contains(fields, f.field) {
			out = append(out, f.flags...)
		}
	}
	return out
}

// readTaskSpec fills a task spec from the flags of the given fields, and
// checks it (checkTaskSpec) unless partial: the rules are then checked
// where the spec is completed (the lines of qo submit --file).
func readTaskSpec(c *cli.Context, partial bool, fields ...string) (queue.SubmitRequest, error) {
	r, err := taskSpecOf(c, fields...)
	if err != nil {
		return r, err
	}
	check := r
	if partial && check.Type == "" {
		check.Type = "placeholder" // the lines give the type
	}
	return r, checkTaskSpec(check)
}

// taskSpecOf fills a task spec from the flags of the given fields; it
// checks only that each flag parses.
func taskSpecOf(c *cli.Context, fields ...string) (queue.SubmitRequest, error) {
	var r queue.SubmitRequest
	for _, f := range taskFlags() {
		if !slices.Contains(fields, f.field) || !flagGiven(c, f.flags) {
			continue
		}
		if err := f.read(c, &r); err != nil {
			return r, err
		}
		if d, ok := f.flags[0].(*cli.DurationFlag); ok && c.IsSet(d.Name) && c.Duration(d.Name) == 0 {
			if err := queue.GivenZero(f.field); err != nil {
				return r, specUsageError(err)
			}
		}
	}
	return r, nil
}

// checkTaskSpec checks r (queue.SubmitRequest.Validate): a broken rule is
// a usage error naming the flags.
func checkTaskSpec(r queue.SubmitRequest) error {
	if err := r.Validate(); err != nil {
		return specUsageError(err)
	}
	return nil
}

// flagGiven reports whether one of flags is set, or the first has a
// default value.
func flagGiven(c *cli.Context, flags []cli.Flag) bool {
	for _, fl := range flags {
		if c.IsSet(fl.Names()[0]) {
			return true
		}
	}
	switch fl := flags[0].(type) {
	case *cli.DurationFlag:
		return fl.Value != 0
	case *cli.IntFlag:
		return fl.Value != 0
	case *cli.StringFlag:
		return fl.Value != ""
	}
	return false
}

// flagOf names a spec field as the command line does: its flag.
func flagOf(field string) string {
	for _, f := range taskFlags() {
		if f.field == field {
			return "--" + f.flags[0].Names()[0]
		}
	}
	return field
}

// specUsageError words a broken rule of the task spec with the flags'
// names, as a usage error.
func specUsageError(err error) error {
	var se *queue.SpecError
	if !errors.As(err, &se) {
		return err
	}
	msg := strings.TrimPrefix(se.In(flagOf), queue.ErrInvalidInput.Error()+": ")
	switch {
	case strings.HasPrefix(msg, "missing --type"):
		msg += "; e.g. --type send_email"
	case strings.HasPrefix(msg, "--input is not valid JSON"):
		msg += `; quote it for the shell, e.g. --input '{"to":"ann@example.com"}'`
	}
	return usageError("%s", msg)
}

// timeFlag parses an RFC 3339 flag.
func timeFlag(c *cli.Context, name string) (time.Time, error) {
	at, err := time.Parse(time.RFC3339, c.String(name))
	if err != nil {
		return at, usageError("--%s %q is not an RFC 3339 time (e.g. 2025-06-01T08:00:00Z)", name, c.String(name))
	}
	return at, nil
}

// readInput reads --input or --input-file.
func readInput(c *cli.Context, r *queue.SubmitRequest) error {
	switch {
	case c.IsSet("input") && c.IsSet("input-file"):
		return usageError("give either --input or --input-file, not both")
	case c.IsSet("input"):
		r.Input = []byte(c.String("input"))
	case c.IsSet("input-file"):
		name := c.String("input-file")
		var raw []byte
		var err error
		if name == "-" {
			raw, err = io.ReadAll(envOf(c).Stdin)
		} else {
			raw, err = os.ReadFile(name)
		}
		if err != nil {
			return usageError("--input-file: %v", err)
		}
		r.Input = raw
	}
	return nil
}

// readAfter reads --after: task ids, whole or short (resolveTaskID).
func readAfter(c *cli.Context, r *queue.SubmitRequest) error {
	for _, s := range c.StringSlice("after") {
		for _, part := range strings.Split(s, ",") {
			if part = strings.TrimSpace(part); part == "" {
				continue
			}
			id, err := resolveTaskID(c, part)
			if err != nil {
				return fmt.Errorf("--after: %w", err)
			}
			r.After = append(r.After, id)
		}
	}
	return nil
}

// readMetadata reads the --metadata entries.
func readMetadata(c *cli.Context, r *queue.SubmitRequest) error {
	e, ok := c.Generic("metadata").(*envEntries)
	if !ok || len(e.vals) == 0 {
		return nil
	}
	r.Metadata = map[string]string{}
	for _, s := range e.vals {
		k, v, err := queue.ParseMetadataEntry(s)
		if err != nil {
			return usageError("--metadata: %s", inputMessage(err))
		}
		if _, dup := r.Metadata[k]; dup {
			return usageError("--metadata: key %q given twice", k)
		}
		r.Metadata[k] = v
	}
	return nil
}
