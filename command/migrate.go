package command

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/qo-queue/qo/internal/termsafe"
	"github.com/qo-queue/qo/queue"
)

func migrateCommand() *cli.Command {
	return &cli.Command{
		Name:      "migrate",
		Usage:     "convert a queue written by an older qo to the current key layout",
		UsageText: "qo migrate [--json]",
		Description: fmt.Sprintf(`Converts the bucket in place to key layout %d: each ready and lease entry
is rewritten as one name under its shard (one key segment, which MinIO and
file-backed S3 servers store and list much faster than a directory per field),
and queue.json is switched last. From layout 1 the entries also move under
their shard and the dead-letter index is built from the failed tasks. Task
objects, their history and their payloads are not moved or changed. From
layout 2 it reads each pending and running task once (1 LIST per 1,000 index
entries, 1 GET per task), whatever the history; from layout 1 it reads every
task object once (1 LIST per 1,000 tasks and 1 GET per task). It can be run
again after an interruption: it picks up where it stopped. A queue already in
the current layout is left alone.

Stop every worker, monitor and server of the older version first: they would
keep writing entries of the old layout. Once the switch is made they refuse to
start, and qo of this version refuses to work on an unconverted bucket.

--json prints {"from", "to", "already_current", "ready_moved", "leases_moved",
"old_removed", "repair": {...}, "seconds"}.

Examples:
  qo migrate --bucket jobs`, queue.LayoutVersion),
		Flags: []cli.Flag{jsonFlag()},
		Action: func(c *cli.Context) error {
			if err := noArgs(c); err != nil {
				return err
			}
			s, err := queueStore(c)
			if err != nil {
				return err
			}
			progress := func(msg string) {
				if !c.Bool("json") {
					fmt.Fprintln(c.App.ErrWriter, "qo: "+termsafe.Line(msg))
				}
			}
			res, err := queue.Migrate(c.Context, s, queue.Options{Logger: stderrLogger(c)}, progress)
			if err != nil {
				return err
			}
			if c.Bool("json") {
				return emitJSON(c.App.Writer, map[string]any{
					"from": res.From, "to": res.To, "already_current": res.AlreadyCurrent,
					"ready_moved": res.ReadyMoved, "leases_moved": res.LeasesMoved, "old_removed": res.OldRemoved,
					"repair": res.Repair, "seconds": res.Duration.Seconds(),
				})
			}
			w := c.App.Writer
			if res.AlreadyCurrent {
				fmt.Fprintf(w, "the queue already uses key layout %d: nothing to do\n", res.To)
				return nil
			}
			fmt.Fprintf(w, "converted from key layout %d to %d in %s\n", res.From, res.To, res.Duration.Round(1e7))
			fmt.Fprintf(w, "ready entries moved: %d, lease entries moved: %d, old entries removed: %d\n", res.ReadyMoved, res.LeasesMoved, res.OldRemoved)
			fmt.Fprintf(w, "tasks checked: %d, dead letters indexed: %d, missing entries written: %d\n",
				res.Repair.Scanned, res.Repair.DeadRepaired, res.Repair.ReadyRepaired+res.Repair.LeasesRepaired)
			for _, m := range res.Repair.Malformed {
				fmt.Fprintf(c.App.ErrWriter, "qo: skipped malformed object %s: %s\n", termsafe.Line(m.Key), oneLine(m.Err.Error()))
			}
			return nil
		},
	}
}
