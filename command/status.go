package command

// qo status: one task.
//
// --json prints the task object exactly as stored in the bucket (see
// queue/doc.go, "Task object"), with offloaded payloads loaded in; the
// shape is stable: new fields may be added, none removed.

import (
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/qo-queue/qo/internal/termsafe"
	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/queue/registry"
)

func statusCommand() *cli.Command {
	return &cli.Command{
		Name:      "status",
		Usage:     "show one task",
		UsageText: "qo status ID [--json]",
		Description: `Shows the task's current state. A pending task in backoff or delayed shows
when it becomes available; a running task shows when its lease expires.
ID is the whole id or the short id qo list shows (its end, e.g. 264545bf;
every command taking a task id accepts it), looked for in that id's shard
at a fixed cost; one naming several tasks lists them.
A running task whose handler reported progress shows it (the fraction done
and a message, as of the worker's last heartbeat).
--json prints the task object as stored in the bucket, except that an input or
output stored in its own object (over 256 KiB) is loaded in; input_ref and
output_ref still say where it lives; a running task's progress is added as
"progress" ({"attempt","fraction","message","at"}), read from its worker's
registry entry.

Examples:
  qo status 0b6f4c2e-8d1a-4f7e-9c3b-2a5d6e7f8a9b
  qo status 0b6f4c2e-8d1a-4f7e-9c3b-2a5d6e7f8a9b --json | jq -r .status
  qo status 264545bf                             # the short id qo list shows`,
		Flags: []cli.Flag{jsonFlag()},
		Action: func(c *cli.Context) error {
			id, err := oneID(c)
			if err != nil {
				return err
			}
			q, err := openQueue(c)
			if err != nil {
				return err
			}
			task, err := q.Get(c.Context, id)
			if err != nil {
				return taskError(id, err)
			}
			full, loadErr := q.WithPayloads(c.Context, task)
			if loadErr != nil {
				full = task
			}
			// A running task's progress: one GET of its holder's entry.
			if withProg, err := registry.WithProgress(c.Context, q, full); err == nil {
				full = withProg
			}
			if c.Bool("json") {
				err = emitJSON(c.App.Writer, full)
			} else {
				err = printTask(c.App.Writer, full, q.Now())
			}
			if err == nil && loadErr != nil {
				return fmt.Errorf("task shown without its offloaded payload: %w", loadErr)
			}
			return err
		},
	}
}

// printTask renders one task as aligned "field: value" lines. Every value
// comes from the bucket: control characters in it are escaped.
func printTask(w io.Writer, t *queue.Task, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(k, v string) { fmt.Fprintf(tw, "%s:\t%s\n", k, termsafe.Line(v)) }
	row("id", t.ID.String())
	row("type", t.Type)
	row("status", statusLine(t, now))
	row("priority", string(t.Priority))
	if t.TaskKey != "" {
		row("key", t.TaskKey)
	}
	row("shard", t.Shard)
	switch t.Status {
	case queue.StatusPending:
		row("available", timeWithCountdown(t.AvailableAt, now, "now"))
	case queue.StatusRunning:
		if t.LeaseExpiresAt != nil {
			row("lease expires", timeWithCountdown(*t.LeaseExpiresAt, now, "expired"))
		}
		row("worker", t.WorkerID)
		if p := t.Progress; p != nil {
			row("progress", progressText(p, now))
		}
	}
	row("attempt", fmt.Sprintf("%d (retries used %d of %d; timeout %ds)", t.Attempt, t.RetryCount, t.MaxRetries, t.TimeoutSeconds))
	row("created", formatTime(t.CreatedAt))
	row("updated", fmt.Sprintf("%s (%s, rev %d)", formatTime(t.UpdatedAt), t.LastEvent, t.Rev))
	if t.CompletedAt != nil {
		row("finished", formatTime(*t.CompletedAt))
	}
	if t.Status != queue.StatusRunning && t.WorkerID != "" {
		row("last worker", t.WorkerID)
	}
	if t.LastError != "" {
		row("last error", oneLine(t.LastError))
	}
	if t.CancelRequested {
		row("cancel", fmt.Sprintf("requested %s%s", formatTimePtr(t.CancelRequestedAt), reasonSuffix(t.CancelReason)))
	}
	if len(t.Parents) > 0 {
		open := 0
		for _, p := range t.Parents {
			if p.Done == "" {
				open++
			}
		}
		row("parents", fmt.Sprintf("%d, %d not ended; on parent failure: %s", len(t.Parents), open, t.OnParentFailure))
		for _, p := range t.Parents {
			done := string(p.Done)
			if done == "" {
				done = "not ended"
			}
			row("  after", fmt.Sprintf("%s (%s)", p.ID, done))
		}
	}
	if len(t.Children) > 0 {
		row("children", fmt.Sprintf("%d: %s", len(t.Children), idList(t.Children, 5)))
	}
	for _, f := range slices.Sorted(maps.Keys(t.InputFrom)) {
		src := t.InputFrom[f]
		from := "output"
		if src.Path != "" {
			from += "." + src.Path
		}
		got := "not yet"
		if v, ok := t.FromParents[f]; ok {
			got = jsonText(v)
		}
		row("  input "+f, fmt.Sprintf("from %s of %s: %s", from, src.Parent, got))
	}
	if t.Workflow != nil {
		row("workflow", fmt.Sprintf("%s, step %s", t.Workflow.ID, t.Workflow.Step))
	}
	if t.ExpiresAt != nil {
		past := "expired"
		if t.Status != queue.StatusPending && t.Status != queue.StatusExpired {
			past = "passed"
		}
		row("expires", timeWithCountdown(*t.ExpiresAt, now, past))
	}
	if t.IdempotencyKey != "" {
		row("idempotency key", t.IdempotencyKey)
	}
	for _, kv := range queue.MetadataLines(t.Metadata) {
		row("metadata", kv)
	}
	row("input", jsonText(t.Input)+refNote(t.InputRef))
	if t.Output != nil || t.OutputRef != nil {
		row("output", jsonText(t.Output)+refNote(t.OutputRef))
	}
	return tw.Flush()
}

// progressText renders a progress report: "42% resized 42 of 100
// (reported 3s ago)".
func progressText(p *queue.Progress, now time.Time) string {
	s := fmt.Sprintf("%d%%", int(math.Floor(p.Fraction*100)))
	if p.Message != "" {
		s += " " + p.Message
	}
	if d := now.Sub(p.At); !p.At.IsZero() && d > 0 {
		s += fmt.Sprintf(" (reported %s ago)", roundDuration(d))
	}
	return s
}

// refNote says where an offloaded payload lives.
func refNote(r *queue.DataRef) string {
	if r == nil {
		return ""
	}
	return fmt.Sprintf(" (offloaded: %d bytes in %s)", r.Bytes, r.Key)
}

func statusLine(t *queue.Task, now time.Time) string {
	s := string(t.Status)
	switch {
	case t.Status == queue.StatusPending && t.AvailableAt.After(now) && t.RetryCount > 0:
		s += " (backoff before retry " + fmt.Sprint(t.RetryCount) + ")"
	case t.Status == queue.StatusPending && t.AvailableAt.After(now):
		s += " (delayed)"
	case t.Status == queue.StatusRunning && t.CancelRequested:
		s += " (cancel requested)"
	}
	return s
}
