package command

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/google/uuid"
	"github.com/urfave/cli/v2"

	"github.com/qo-queue/qo/queue"
)

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
	return resolveTaskID(c, args[0])
}

// resolveTaskID turns a task id argument into the id: the whole id, or
// the short form lists show (the end of the id, e.g. 264545bf), or its
// first digits, resolved in the bucket at a bounded cost
// (queue.ResolveID). An id naming several tasks lists them.
func resolveTaskID(c *cli.Context, s string) (uuid.UUID, error) {
	if id, err := queue.ParseID(s); err == nil {
		return id, nil
	}
	if _, _, err := queue.CanonicalIDPrefix(s); err != nil {
		return uuid.Nil, usageError("%q is not a task id (give the whole id, or the short id qo list shows, e.g. 264545bf)", s)
	}
	q, err := openQueue(c)
	if err != nil {
		return uuid.Nil, err
	}
	id, err := q.ResolveID(c.Context, s)
	switch {
	case errors.Is(err, queue.ErrAmbiguousID):
		return uuid.Nil, usageError("%s", inputMessage(err))
	case errors.Is(err, queue.ErrNotFound):
		return uuid.Nil, fmt.Errorf("no task of this queue has an id ending (or starting) with %q: check the id and --bucket, or give the whole id: %w", s, queue.ErrNotFound)
	case err != nil:
		return uuid.Nil, err
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

// inputMessage strips the sentinel's prefix from a queue input error.
func inputMessage(err error) string {
	return strings.TrimPrefix(err.Error(), queue.ErrInvalidInput.Error()+": ")
}

// taskIDs parses the id arguments of wait and tail: each a task id (whole
// or short, see resolveTaskID), or "-" for ids read from stdin. Duplicates are dropped, order kept.
func taskIDs(c *cli.Context, args []string) ([]uuid.UUID, error) {
	var words []string
	for _, a := range args {
		if a != "-" {
			words = append(words, a)
			continue
		}
		sc := bufio.NewScanner(envOf(c).Stdin)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		sc.Split(bufio.ScanWords)
		for sc.Scan() {
			words = append(words, sc.Text())
		}
		if err := sc.Err(); err != nil {
			return nil, usageError("reading task ids from stdin: %v", err)
		}
	}
	seen := map[uuid.UUID]bool{}
	var ids []uuid.UUID
	for _, w := range words {
		id, err := resolveTaskID(c, w)
		if err != nil {
			return nil, err
		}
		if !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	return ids, nil
}

// taskError words a failure to read a task: a missing task is one clear
// line with exit code 3.
func taskError(id uuid.UUID, err error) error {
	if errors.Is(err, queue.ErrNotFound) {
		return fmt.Errorf("task %s does not exist in this queue: check the id and --bucket (qo list shows the tasks): %w", id, queue.ErrNotFound)
	}
	return err
}
