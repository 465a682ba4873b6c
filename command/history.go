package command

// qo history: every state a task went through, from bucket versioning.
//
// --json output shape (stable; new fields may be added, none removed):
// {"id": "...", "events": [{"event", "at", "status", "worker_id",
// "attempt", "rev", "version_id", "error", "task"}]}.

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"github.com/qo-queue/qo/monitor/view"
	"github.com/qo-queue/qo/queue"
)

func historyCommand() *cli.Command {
	return &cli.Command{
		Name:      "history",
		Usage:     "show every state a task went through (from bucket versioning)",
		UsageText: "qo history ID [--json]",
		Description: `Lists the task's object versions, oldest first, with the event that made each
(enqueued, claimed, lease_extended, succeeded, failed, retried, timed_out,
requeued, cancel_requested, cancelled, replayed, archived); the versions an
operator made name who, as the task's actor field records it (e.g. "by
alice@ops-1, qo replay"). Versions that cannot be decoded are shown with
their error. --json prints {"id", "events":
[{"event", "at", "status", "worker_id", "attempt", "rev", "version_id",
"error", "task"}]}.

Examples:
  qo history 0b6f4c2e-8d1a-4f7e-9c3b-2a5d6e7f8a9b
  qo history 0b6f4c2e-8d1a-4f7e-9c3b-2a5d6e7f8a9b --json | jq -r '.events[].event'`,
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
			events, err := q.History(c.Context, id)
			if err != nil {
				return taskError(id, err)
			}
			if c.Bool("json") {
				return emitJSON(c.App.Writer, view.HistoryOf(id, events))
			}
			tw := tabwriter.NewWriter(c.App.Writer, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "REV\tAT\tEVENT\tSTATUS\tATTEMPT\tWORKER\tDETAIL")
			for _, e := range events {
				if e.Task == nil {
					detail := "delete marker"
					if e.Err != nil {
						detail = "unreadable version " + e.VersionID + ": " + oneLine(e.Err.Error())
					}
					tabRow(tw, "-", formatTime(e.At), e.Name, "-", "-", "-", detail)
					continue
				}
				tabRow(tw, fmt.Sprint(e.Rev), formatTime(e.At), e.Name, string(e.Status),
					fmt.Sprint(e.Attempt), dash(e.WorkerID), withActor(eventDetail(e), e.Task.Actor))
			}
			return tw.Flush()
		},
	}
}

// withActor adds to an event's detail who made the version, when an
// operator did (the task's actor field), unless the detail (a cancel
// reason) names them already.
func withActor(detail, actor string) string {
	switch {
	case actor == "" || strings.Contains(detail, actor):
		return detail
	case detail == "":
		return "by " + oneLine(actor)
	}
	return detail + "; by " + oneLine(actor)
}

// eventDetail is the one fact worth showing next to an event.
func eventDetail(e queue.Event) string {
	t := e.Task
	switch e.Name {
	case queue.EventClaimed, queue.EventLeaseExtended:
		if t.LeaseExpiresAt != nil {
			return "lease until " + formatTime(*t.LeaseExpiresAt)
		}
	case queue.EventRetried, queue.EventTimedOut:
		if t.Status == queue.StatusPending {
			return "retry " + fmt.Sprint(t.RetryCount) + " at " + formatTime(t.AvailableAt) + "; " + oneLine(t.LastError)
		}
		return oneLine(t.LastError)
	case queue.EventSnoozed:
		d := fmt.Sprintf("snooze %d of %d, available %s", t.SnoozeCount, queue.MaxSnoozes, formatTime(t.AvailableAt))
		if t.LastError != "" {
			d += "; " + oneLine(t.LastError)
		}
		return d
	case queue.EventFailed:
		return oneLine(t.LastError)
	case queue.EventCancelRequested, queue.EventCancelled:
		return strings.TrimPrefix(reasonSuffix(t.CancelReason), ": ")
	case queue.EventEnqueued:
		// Metadata never changes: shown once, with the submit.
		meta := ""
		if len(t.Metadata) > 0 {
			meta = "; metadata " + strings.Join(queue.MetadataLines(t.Metadata), " ")
		}
		if t.Status == queue.StatusWaiting {
			return "waits for " + t.WaitingFor() + meta
		}
		return "available " + formatTime(t.AvailableAt) + meta
	case queue.EventRequeued, queue.EventReplayed:
		if t.Status == queue.StatusWaiting {
			return "waits for " + t.WaitingFor()
		}
		return "available " + formatTime(t.AvailableAt)
	case queue.EventParentDone:
		return "waits for " + t.WaitingFor()
	case queue.EventReleased:
		return "every parent ended; available " + formatTime(t.AvailableAt)
	case queue.EventChildAdded:
		if n := len(t.Children); n > 0 {
			return "child " + t.Children[n-1].String()
		}
	case queue.EventSucceeded:
		return "output " + oneLine(jsonText(t.Output))
	}
	return ""
}
