package command

import (
	"context"

	"github.com/google/uuid"
	"github.com/urfave/cli/v2"

	"github.com/qo-queue/qo/queue"
)

func replayCommand() *cli.Command {
	return operatorCommand("replay", "run a failed or cancelled task again",
		`Puts the task back to pending, available now, with its retry count reset.
With one id, --json prints the task object after the change.

Examples:
  qo replay 0b6f4c2e-8d1a-4f7e-9c3b-2a5d6e7f8a9b
  qo replay --status failed --type resize --dry-run
  qo replay --status failed --type resize
  qo list --status failed --json | jq -r '.tasks[].id' | qo replay -`, nil,
		func(ctx context.Context, _ *cli.Context, q *queue.Queue, id uuid.UUID) (*queue.Task, error) {
			return q.Replay(ctx, id)
		})
}
