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
		UsageText: "qo migrate [--force] [--json]",
		Description: fmt.Sprintf(`Converts the bucket in place to key layout %d: each ready entry is rewritten
under its task type, then its shard (ready/{type}/{shard}/..., so a worker
lists only the types it claims and no type's backlog stands in front of
another's), a task with a key (qo submit --key) in its key's section of that
(ready/{type}/{shard}/-{key}/..., so one key's backlog stands in front of no
other key's), each entry's fields one name (one key segment, which MinIO and
file-backed S3 servers store and list much faster than a directory per field),
and queue.json is switched last. The new entry is written before the old one
is deleted. From layout 4 only the entries of tasks with a key move; from
layout 2 the lease entries become one name too; from layout 1 the entries
also move under their shard and the dead-letter index is built from the
failed tasks. Task objects, their history and their payloads are not moved or
changed. From layout 2, 3 or 4 it reads each pending and running task that
moves once (1 LIST per 1,000 index entries, 1 GET per task), whatever the history;
from layout 1 it reads every task object once (1 LIST per 1,000 tasks and 1
GET per task). It can be run again after an interruption: it picks up where
it stopped.

A task object that does not decode is reported (on stderr, and under
"malformed" with --json) and left as it is, and so is an index entry no
layout reads (under "unreadable"); everything else is converted and the
switch is made. qo repair and qo list skip such objects too.

Stop every worker, monitor and server of the older version first: they would
keep writing entries of the old layout, which no process of this version
reads. qo migrate refuses while the worker registry holds a live worker of an
older layout (naming it: id, host, pid, version), and, on a bucket not yet
converted, while a monitor holds the leadership. Standalone monitors and qo
serve do not register, so once the bucket is converted they cannot be seen:
stop them yourself. --force converts anyway.

On a queue already in the current layout it looks for stray entries of an
older layout (written by such a process after the switch) in one pass of the
ready and lease indexes, and converts them. The leading monitor does the same
on its own: its sweeper converts stray ready entries within one sweep pass,
and its lease check reads stray lease entries as its own.

--json prints {"from", "to", "already_current", "ready_moved", "leases_moved",
"old_removed", "old_left", "malformed": [{"key", "error"}], "unreadable",
"older_running", "repair": {...}, "seconds"}.

Examples:
  qo migrate --bucket jobs`, queue.LayoutVersion),
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "force", Usage: "convert even while a worker or monitor of an older layout looks alive (what it writes afterwards waits for the sweeper or another qo migrate)"},
			jsonFlag(),
		},
		Action: func(c *cli.Context) error {
			if err := noArgs(c); err != nil {
				return err
			}
			s, err := envOf(c).OpenStore(c)
			if err != nil {
				return err
			}
			progress := func(msg string) {
				if !c.Bool("json") {
					fmt.Fprintln(c.App.ErrWriter, "qo: "+termsafe.Line(msg))
				}
			}
			res, err := queue.Migrate(c.Context, s, queue.Options{Logger: stderrLogger(c)}, queue.MigrateOptions{Force: c.Bool("force"), Progress: progress})
			if err != nil {
				return err
			}
			return printMigrate(c, res)
		},
	}
}

// printMigrate reports a migration: what was skipped on stderr, then the
// result as text or --json.
func printMigrate(c *cli.Context, res queue.MigrateResult) error {
	malformed := []map[string]string{}
	for _, m := range res.Malformed {
		fmt.Fprintf(c.App.ErrWriter, "qo: skipped malformed object %s: %s\n", termsafe.Line(m.Key), oneLine(m.Err.Error()))
		malformed = append(malformed, map[string]string{"key": m.Key, "error": m.Err.Error()})
	}
	for _, k := range res.Unreadable {
		fmt.Fprintf(c.App.ErrWriter, "qo: left index entry no key layout reads: %s\n", termsafe.Line(k))
	}
	if c.Bool("json") {
		unreadable := res.Unreadable
		if unreadable == nil {
			unreadable = []string{}
		}
		older := res.OlderRunning
		if older == nil {
			older = []string{}
		}
		return emitJSON(c.App.Writer, map[string]any{
			"from": res.From, "to": res.To, "already_current": res.AlreadyCurrent,
			"ready_moved": res.ReadyMoved, "leases_moved": res.LeasesMoved, "old_removed": res.OldRemoved,
			"old_left": res.OldLeft, "malformed": malformed, "unreadable": unreadable, "older_running": older,
			"repair": res.Repair, "seconds": res.Duration.Seconds(),
		})
	}
	w := c.App.Writer
	if res.AlreadyCurrent {
		fmt.Fprintf(w, "the queue already uses key layout %d\n", res.To)
		fmt.Fprintf(w, "stray entries of an older layout: %d ready and %d lease entries converted, %d stale removed, %d left\n",
			res.ReadyMoved, res.LeasesMoved, res.OldRemoved-res.ReadyMoved-res.LeasesMoved, res.OldLeft)
		return nil
	}
	fmt.Fprintf(w, "converted from key layout %d to %d in %s\n", res.From, res.To, res.Duration.Round(1e7))
	fmt.Fprintf(w, "ready entries moved: %d, lease entries moved: %d, old entries removed: %d, left: %d\n", res.ReadyMoved, res.LeasesMoved, res.OldRemoved, res.OldLeft)
	fmt.Fprintf(w, "tasks checked: %d, dead letters indexed: %d, missing entries written: %d\n",
		res.Repair.Scanned, res.Repair.DeadRepaired, res.Repair.ReadyRepaired+res.Repair.LeasesRepaired)
	return nil
}
