package command

import (
	"context"

	"github.com/google/uuid"
	"github.com/urfave/cli/v2"

	"github.com/qo-queue/qo/queue"
)

func archiveCommand() *cli.Command {
	return operatorCommand("archive", "hide a finished task from default listings",
		`Archives a completed, failed or cancelled task. The object and its history
stay; 'qo list --status archived' still finds it. With one id, --json
prints the task object after the change.

Examples:
  qo archive 0b6f4c2e-8d1a-4f7e-9c3b-2a5d6e7f8a9b
  qo archive --status completed --since 7d --dry-run
  qo archive --all --type resize
  qo list --status failed --json | jq -r '.tasks[].id' | qo archive -`, nil,
		func(ctx context.Context, _ *cli.Context, q *queue.Queue, id uuid.UUID) (*queue.Task, error) {
			return q.Archive(ctx, id)
		})
}
