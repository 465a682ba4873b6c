package command

// qo tail: follow task events.
//
// --json prints one JSON object per line (stable; new fields may be added,
// none removed):
//
//	{"at": "...", "event": "claimed", "task_type": "...", "id": "...",
//	 "status": "running", "attempt": 1, "worker_id": "...", "rev": 2,
//	 "error": "..." (failed, retried, timed_out only),
//	 "missed": N (writes tail knows it did not see, when > 0)}

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/google/uuid"
	"github.com/urfave/cli/v2"

	"github.com/qo-queue/qo/internal/termsafe"
	"github.com/qo-queue/qo/queue"
)

const defaultTailInterval = time.Second

func tailCommand() *cli.Command {
	return &cli.Command{
		Name:      "tail",
		Usage:     "follow task events as they happen",
		UsageText: "qo tail [ID... | -] [--interval D] [--json] [--new-only] [--until-done] [--count N]",
		Description: `Prints one line per task event until interrupted (Ctrl+C exits 0):

  TIME EVENT TYPE ID attempt=N worker=W [error="..."] [missed=N]

` + ansi.Wordwrap("TIME is the time of the write (UTC), EVENT one of "+strings.Join(tailEventNames(), ", ")+
			" (the names qo history and the console use). --json prints one object per line: "+
			`{"at", "event", "task_type", "id", "status", "attempt", "worker_id", "rev", `+
			`"error" (failed, retried, timed_out), "missed" (when > 0)}.`, 78, "") + `

With task ids: prints each task's history so far (unless --new-only), then
polls each task with one GET per --interval and prints every new version.
When several writes happened between two polls, the task's history (one
LIST-VERSIONS and a GET per version) fills the gap, so no event is lost on a
versioned bucket. --until-done exits once every task is terminal.

Without ids: follows the whole queue through its index objects. Each poll
LISTs ready/ and leases/ (one request per 1000 pending or running tasks, so an
idle queue costs 2 LISTs per --interval) and GETs only the tasks whose index
entries changed: new ready entries (enqueued, retried, requeued, replayed),
new or moved lease entries (claimed, lease_extended) and vanished ones
(succeeded, failed, cancelled, timed_out). Limits: events between two polls
are coalesced into the task's latest one (missed=N says how many were
skipped when tail knows); a task enqueued and finished between two polls is
not seen; cancel requests of running tasks show when the worker confirms;
archiving changes no index and is not shown. Follow ids for a complete log.

Examples:
  qo tail
  qo tail 0b6f4c2e-8d1a-4f7e-9c3b-2a5d6e7f8a9b --until-done
  qo tail --json --interval 5s | jq -c 'select(.event == "failed")'`,
		Flags: []cli.Flag{
			&cli.DurationFlag{Name: "interval", Value: defaultTailInterval, EnvVars: []string{"QO_TAIL_INTERVAL"},
				Usage: "wait `DURATION` between polls"},
			&cli.BoolFlag{Name: "new-only", Usage: "with ids: skip the events that happened before tail started"},
			&cli.BoolFlag{Name: "until-done", Usage: "with ids: exit once every task is completed, failed, cancelled or archived"},
			&cli.IntFlag{Name: "count", Aliases: []string{"n"}, Usage: "exit after printing `N` events (0: no limit)"},
			&cli.BoolFlag{Name: "json", Usage: "print one JSON object per event and line (shape above)"},
		},
		Action: runTail,
	}
}

// tailEventNames lists every event tail prints: the queue's events, a task
// deleted by hand, and a write whose event cannot be told.
func tailEventNames() []string {
	return append(slices.Clone(queue.Events), queue.EventDeleted, queue.EventUnknown)
}

// tailEvent is one printed event: queue.Event in tail's stable JSON shape.
type tailEvent struct {
	At       time.Time    `json:"at"`
	Event    string       `json:"event"`
	Type     string       `json:"task_type"`
	ID       uuid.UUID    `json:"id"`
	Status   queue.Status `json:"status"`
	Attempt  int          `json:"attempt"`
	WorkerID string       `json:"worker_id"`
	Rev      int64        `json:"rev"`
	Error    string       `json:"error,omitempty"`
	Missed   int64        `json:"missed,omitempty"`
}

func tailEventOf(e queue.Event) tailEvent {
	ev := tailEvent{At: e.At, Event: e.Name, Type: e.Type, ID: e.TaskID, Status: e.Status,
		Attempt: e.Attempt, WorkerID: e.WorkerID, Rev: e.Rev, Missed: e.Missed}
	switch e.Name {
	case queue.EventFailed, queue.EventRetried, queue.EventTimedOut:
		if e.Task != nil {
			ev.Error = e.Task.LastError
		}
	}
	return ev
}

// tailPrinter writes events and counts them against --count.
type tailPrinter struct {
	w       io.Writer
	json    bool
	limit   int
	printed int
}

// print writes one event; it returns queue.ErrStopFollowing once --count
// events are printed.
func (p *tailPrinter) print(ev tailEvent) error {
	var err error
	if p.json {
		var b []byte
		b, err = json.Marshal(ev)
		if err == nil {
			_, err = fmt.Fprintf(p.w, "%s\n", termsafe.JSON(b))
		}
	} else {
		_, err = fmt.Fprintln(p.w, humanEvent(ev))
	}
	if err != nil {
		return err
	}
	p.printed++
	if p.limit > 0 && p.printed >= p.limit {
		return queue.ErrStopFollowing
	}
	return nil
}

func humanEvent(ev tailEvent) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %-16s %s %s attempt=%d worker=%s", ev.At.UTC().Format("2006-01-02T15:04:05.000Z"),
		termsafe.Line(ev.Event), termsafe.Line(dash(ev.Type)), ev.ID, ev.Attempt, termsafe.Line(dash(ev.WorkerID)))
	if ev.Error != "" {
		// strconv.Quote escapes every control character itself.
		b.WriteString(" error=" + strconv.Quote(foldSpace(ev.Error)))
	}
	if ev.Missed > 0 {
		fmt.Fprintf(&b, " missed=%d", ev.Missed)
	}
	return b.String()
}

func runTail(c *cli.Context) error {
	args, err := positionalArgs(c)
	if err != nil {
		return err
	}
	ids, err := taskIDs(c, args)
	if err != nil {
		return err
	}
	interval, err := durationFlag(c, "interval", minPollInterval)
	if err != nil {
		return err
	}
	if c.Int("count") < 0 {
		return usageError("--count %d is negative (0: no limit)", c.Int("count"))
	}
	if len(ids) == 0 && len(args) > 0 {
		return usageError("no task ids on stdin (usage: %s)", c.Command.UsageText)
	}
	if len(ids) == 0 {
		for _, f := range []string{"new-only", "until-done"} {
			if c.Bool(f) {
				return usageError("--%s needs task ids (the whole queue is always followed from now on)", f)
			}
		}
	}
	q, err := openQueue(c)
	if err != nil {
		return err
	}
	p := &tailPrinter{w: c.App.Writer, json: c.Bool("json"), limit: c.Int("count")}
	warn := &warner{w: c.App.ErrWriter}
	opt := queue.FollowOptions{
		IDs:       ids,
		NewOnly:   c.Bool("new-only"),
		UntilDone: c.Bool("until-done"),
		Interval:  interval,
		OnPoll:    warn.warn,
		OnStart: func(pending, running int) {
			fmt.Fprintf(c.App.ErrWriter, "qo: following every task from now on (%d pending, %d running); Ctrl+C stops\n", pending, running)
		},
	}
	err = q.Follow(c.Context, opt, func(e queue.Event) error { return p.print(tailEventOf(e)) })
	if c.Context.Err() != nil {
		return nil // interrupted: the normal way to stop following
	}
	var te *queue.TaskError
	if errors.As(err, &te) {
		return taskError(te.ID, te.Err)
	}
	return err
}

// warner prints a transient error once, not on every poll.
type warner struct {
	w    io.Writer
	last string
}

func (w *warner) warn(err error) {
	if err == nil {
		w.last = ""
		return
	}
	if msg := err.Error(); msg != w.last {
		w.last = msg
		fmt.Fprintf(w.w, "qo: warning: %s (retrying)\n", oneLine(msg))
	}
}
