package command

// qo init: create the queue in a bucket.
//
// --json output shape (stable; new fields may be added, none removed):
// {"format", "shard_chars", "shards", "created_at", "created",
// "tasks_retention_days", "max_payload_bytes", "versioning", "lifecycle"}.

import (
	"context"
	"errors"
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store"
)

// openInitStore opens the bucket for qo init: like openStore, but a bucket
// without versioning is fine (init turns it on) and --create-bucket creates
// a missing bucket.
func openInitStore(c *cli.Context) (store.Store, error) {
	s, cfg, err := newStore(c)
	if err != nil {
		return nil, err
	}
	if c.Bool("create-bucket") {
		if err := s.CreateBucket(c.Context); err != nil {
			return nil, connError(c.Context, cfg, err)
		}
	}
	ctx, cancel := context.WithTimeout(c.Context, connectTimeout)
	defer cancel()
	if _, err := s.Versioning(ctx); err != nil {
		if errors.Is(err, store.ErrBucketNotFound) {
			return nil, storageError("bucket %q does not exist at %s: pass --create-bucket to create it, or check --bucket (S3_BUCKET)",
				cfg.Bucket, endpointName(cfg))
		}
		return nil, connError(c.Context, cfg, err)
	}
	return s, nil
}

func initCommand() *cli.Command {
	return &cli.Command{
		Name:      "init",
		Usage:     "create the queue in a bucket (idempotent)",
		UsageText: "qo init [--shard-chars 1|2] [--tasks-retention-days N] [--max-payload-bytes N] [--create-bucket] [--json]",
		Description: `First probes the server's conditional writes (three PUTs to
monitor/probe.json, as every worker does when it starts) and refuses a
server that ignores them: qo would run tasks twice there (qo doctor has the
details; docs/providers.md lists the servers tested with qo). Then writes
queue.json (the shard width every component reads), turns bucket versioning
on (task history) and installs lifecycle rules that expire old versions and
delete markers of index objects after a day, and reads both back: a server
that answers success but does not apply them is refused too. Tasks and their
history are kept forever unless --tasks-retention-days N is given: then every
task version is tagged as it is written, and finished tasks (completed,
cancelled, expired, archived; not failed ones, the dead letters) expire with
their history N days after they finished. A task's input and its output are
each at most 64 MiB unless --max-payload-bytes N says otherwise: the limit is
recorded in queue.json, so every producer, worker and reader of the bucket
holds to it. Running init again is safe: it cannot change the shard width of
an existing queue, and it sets the retention and the payload limit to what
it is given (0: keep forever; 0: the default limit). --json prints
{"format", "shard_chars", "shards", "created_at", "created",
"tasks_retention_days", "max_payload_bytes", "versioning", "lifecycle"}.

Examples:
  qo init --bucket jobs
  qo init --bucket jobs --create-bucket --json
  qo init --bucket jobs --shard-chars 2 --tasks-retention-days 90`,
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "shard-chars", Value: 1, Usage: "hex characters of the task id used as shard: 1 (16 shards) or 2 (256 shards)"},
			&cli.IntFlag{Name: "tasks-retention-days", Usage: "expire finished tasks and their history `N` days after they finish (0: keep forever; failed tasks are kept)"},
			&cli.Int64Flag{Name: "max-payload-bytes", Usage: "limit a task's input and its output to `N` bytes each, for every reader and writer of the bucket (0: 64 MiB)"},
			&cli.BoolFlag{Name: "create-bucket", Usage: "create the bucket when it does not exist"},
			jsonFlag(),
		},
		Action: func(c *cli.Context) error {
			if err := noArgs(c); err != nil {
				return err
			}
			chars := c.Int("shard-chars")
			if chars != 1 && chars != 2 {
				return usageError("--shard-chars %d: want 1 (16 shards) or 2 (256 shards)", chars)
			}
			days := c.Int("tasks-retention-days")
			if days < 0 {
				return usageError("--tasks-retention-days %d is negative (0 keeps task history forever)", days)
			}
			maxPayload := c.Int64("max-payload-bytes")
			if maxPayload < 0 {
				return usageError("--max-payload-bytes %d is negative (0: the default of %d bytes)", maxPayload, queue.DefaultMaxPayloadBytes)
			}
			s, err := envOf(c).OpenInitStore(c)
			if err != nil {
				return err
			}
			res, err := queue.InitWithOptions(c.Context, s, queue.InitOptions{
				ShardChars: chars, TasksRetentionDays: days, MaxPayloadBytes: maxPayload, Logger: stderrLogger(c), SettleTime: envOf(c).InitSettleTime,
			})
			if err != nil {
				return err
			}
			if c.Bool("json") {
				return emitJSON(c.App.Writer, map[string]any{
					"format":               res.Config.Format,
					"shard_chars":          res.Config.ShardChars,
					"shards":               1 << (4 * res.Config.ShardChars),
					"created_at":           res.Config.CreatedAt,
					"created":              res.Created,
					"tasks_retention_days": res.Config.TasksRetentionDays,
					"max_payload_bytes":    res.Config.EffectiveMaxPayloadBytes(),
					"versioning":           res.Versioning,
					"lifecycle":            res.Lifecycle,
				})
			}
			verb := "initialised"
			if !res.Created {
				verb = "already initialised"
			}
			w := c.App.Writer
			fmt.Fprintf(w, "queue %s in bucket %s: %d shards (%d hex char%s of the task id)\n", verb,
				connString(c, "bucket"), 1<<(4*res.Config.ShardChars), res.Config.ShardChars, plural(res.Config.ShardChars))
			fmt.Fprintf(w, "versioning: %s\nlifecycle:  %s\n", res.Versioning, res.Lifecycle)
			if d := res.Config.TasksRetentionDays; d > 0 {
				fmt.Fprintf(w, "retention:  finished tasks expire %d days after they finish (failed tasks are kept)\n", d)
			} else {
				fmt.Fprintln(w, "retention:  tasks are kept forever (--tasks-retention-days N to expire finished ones)")
			}
			fmt.Fprintf(w, "payloads:   inputs and outputs up to %d bytes each (--max-payload-bytes N to change)\n", res.Config.EffectiveMaxPayloadBytes())
			return nil
		},
	}
}
