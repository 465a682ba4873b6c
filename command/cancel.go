package command

import (
	"context"

	"github.com/google/uuid"
	"github.com/urfave/cli/v2"

	"github.com/qo-queue/qo/queue"
)

func cancelCommand() *cli.Command {
	return operatorCommand("cancel", "cancel a waiting, pending or running task",
		`A waiting or pending task is cancelled at once (a waiting task's children
then follow their on_parent_failure). A running task is marked
cancel_requested: its worker notices at its next lease check, stops the
handler and confirms (if the worker is gone, the expiry check cancels it).
A task that has ended cannot be cancelled.
With one id, --json prints the task object after the change.

Examples:
  qo cancel 0b6f4c2e-8d1a-4f7e-9c3b-2a5d6e7f8a9b --reason "customer withdrew"
  qo cancel --status pending --type resize --dry-run
  qo cancel --status pending --type resize --json
  qo cancel - < ids.txt
  qo cancel 0b6f4c2e-8d1a-4f7e-9c3b-2a5d6e7f8a9b && qo wait 0b6f4c2e-8d1a-4f7e-9c3b-2a5d6e7f8a9b`,
		[]cli.Flag{&cli.StringFlag{Name: "reason", Usage: "why, as `TEXT` kept in the task's cancel_reason"}},
		func(ctx context.Context, c *cli.Context, q *queue.Queue, id uuid.UUID) (*queue.Task, error) {
			return q.Cancel(ctx, id, queue.ActorReason(c.String("reason"), "cancelled", "qo cancel"))
		})
}
