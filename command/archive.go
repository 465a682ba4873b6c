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

Several tasks: give several ids, '-' to read ids from stdin (separated by
spaces or newlines), or a filter: --status, --type, --shard (--all for every
task it applies to). Each task gets the same conditional write as one task;
tasks it does not apply to are skipped, with the reason. The plan and its
request cost are printed on stderr before anything is written; --dry-run
stops there. The summary lists what was done, skipped (and why) and failed;
it is JSON with --json or when stdout is not a terminal. Running the same
command again is safe: what is done is skipped.

Examples:
  qo archive 0b6f4c2e-8d1a-4f7e-9c3b-2a5d6e7f8a9b
  qo archive --status completed --since 7d --dry-run
  qo archive --all --type resize
  qo list --status failed --json | jq -r '.tasks[].id' | qo archive -`, nil,
		func(ctx context.Context, _ *cli.Context, q *queue.Queue, id uuid.UUID) (*queue.Task, error) {
			return q.Archive(ctx, id)
		})
}
