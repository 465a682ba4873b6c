package command

// The operator actions on one task: replay, archive and cancel.
//
// --json prints the task object after the change, exactly as stored in the
// bucket (see queue/doc.go, "Task object"); the shape is stable: new
// fields may be added, none removed.

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/urfave/cli/v2"

	"github.com/qo-queue/qo/internal/termsafe"
	"github.com/qo-queue/qo/queue"
)

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
		},
	}
}
