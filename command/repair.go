package command

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/qo-queue/qo/internal/termsafe"
	"github.com/qo-queue/qo/queue"
)

func repairCommand() *cli.Command {
	return &cli.Command{
		Name:      "repair",
		Usage:     "rebuild missing index entries by reading every task object",
		UsageText: "qo repair [--shard S] [--json]",
		Description: `Walks every task object and writes the index entry each one needs and lacks:
the ready entry of a pending task, the lease entry of a running one, the
dead-letter entry of a failed one; pending tasks past their expiry become
expired. qo writes index entries before their task, so no crash or lost
response leaves one missing; this is for a bucket damaged from outside
(objects deleted by hand, a partial restore). It costs 1 LIST per 1,000 tasks
and 1 GET per task, and is safe to run while workers run.

--json prints the totals {"listed", "scanned", "ready_repaired",
"leases_repaired", "dead_repaired", "expired", "errors"}.

Examples:
  qo repair
  qo repair --shard a --json`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "shard", Usage: "only this `SHARD` (e.g. 0..f)"},
			jsonFlag(),
		},
		Action: func(c *cli.Context) error {
			if err := noArgs(c); err != nil {
				return err
			}
			q, err := openQueue(c)
			if err != nil {
				return err
			}
			shards := q.Shards()
			if s := c.String("shard"); s != "" {
				if !q.ValidShard(s) {
					return usageError("--shard %q: this queue's shards are %s..%s", s, shards[0], shards[len(shards)-1])
				}
				shards = []string{s}
			}
			var total queue.SweepResult
			for _, shard := range shards {
				cursor := ""
				for {
					res, next, err := q.Recovery().Repair(c.Context, shard, 0, cursor)
					if err != nil {
						return err
					}
					for _, m := range res.Malformed {
						fmt.Fprintf(c.App.ErrWriter, "qo: skipped malformed object %s: %s\n", termsafe.Line(m.Key), oneLine(m.Err.Error()))
					}
					res.Malformed = nil
					total.Add(res)
					if next == "" {
						break
					}
					cursor = next
				}
			}
			if c.Bool("json") {
				return emitJSON(c.App.Writer, total)
			}
			fmt.Fprintf(c.App.Writer, "tasks checked: %d; written: %d ready, %d lease, %d dead-letter entries; expired: %d; errors: %d\n",
				total.Scanned, total.ReadyRepaired, total.LeasesRepaired, total.DeadRepaired, total.Expired, total.Errors)
			if total.Errors > 0 {
				return storageError("%d reads or writes failed: run qo repair again", total.Errors)
			}
			return nil
		},
	}
}
