package command

// qo list: tasks, one page at a time.
//
// --json output shape (stable; new fields may be added, none removed):
// {"tasks": [task...], "next_cursor": "..." | "", "since",
// "malformed": [{"key": "...", "error": "..."}],
// "stale_index_entries": ["..."]}.

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/qo-queue/qo/internal/termsafe"
	"github.com/qo-queue/qo/monitor/view"
	"github.com/qo-queue/qo/queue"
)

// parseSince reads --since: an age ("90m", "1h", "7d") before now, or an
// RFC 3339 time.
func parseSince(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	age, err := parseAge(s)
	if err != nil {
		return time.Time{}, fmt.Errorf("want an age such as 30m, 1h or 7d, or an RFC 3339 time such as 2026-01-02T15:04:05Z")
	}
	return now.Add(-age), nil
}

// parseAge is time.ParseDuration plus whole days ("7d").
func parseAge(s string) (time.Duration, error) {
	if d, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(d)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("bad number of days %q", d)
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("bad age %q", s)
	}
	return d, nil
}

func listCommand() *cli.Command {
	return &cli.Command{
		Name:      "list",
		Usage:     "list tasks, one page at a time",
		UsageText: "qo list [--shard S] [--status STATUS] [--type TYPE] [--since AGE|TIME] [--limit N] [--cursor C] [--json]",
		Description: `Pending, running and failed tasks (the dead letters, newest failure first)
come from their indexes, whatever their age. Every other status, and a list
without --status (every task but archived ones), shows the tasks CREATED in a
window, newest first: the last 24 hours, or since --since (a duration such as
1h or 7d, or an RFC 3339 time). Either way a page costs what it shows, not the
size of the bucket's history. A page may hold fewer tasks than --limit and
still have more after it: pass the printed cursor back with --cursor. Objects
that cannot be decoded are reported on stderr and skipped. With --status
failed a LAST ERROR column says why each task died (qo status ID shows the
whole error). --json prints
{"tasks": [task...], "next_cursor", "since", "malformed": [{"key", "error"}],
"stale_index_entries": [key...]}.

Examples:
  qo list --status failed
  qo list --status completed --since 1h
  qo list --status pending --type send_email --limit 20
  qo list --shard a --json | jq -r '.tasks[].id'`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "shard", Usage: "only this `SHARD` (e.g. 0..f)"},
			&cli.StringFlag{Name: "status", Usage: "only tasks in `STATUS`: " + statusChoices()},
			&cli.StringFlag{Name: "type", Usage: "only tasks of this `TYPE`"},
			&cli.IntFlag{Name: "limit", Value: queue.DefaultListLimit, Usage: fmt.Sprintf("tasks per page (at most %d)", queue.MaxListLimit)},
			&cli.StringFlag{Name: "cursor", Usage: "continue after the page that printed this `CURSOR`"},
			&cli.StringFlag{Name: "since", Usage: "window of the statuses not served by an index: tasks created in the last `AGE` (1h, 7d) or since a TIME (RFC 3339); default 24h"},
			jsonFlag(),
		},
		Action: kit[listOptions, listPage]{
			options: readListOptions,
			run:     runList,
			text:    printListPage,
			json:    func(r listPage) any { return view.PageOf(r.page) },
		}.action(),
	}
}

// listOptions are the filters and the page of qo list.
type listOptions struct {
	Shard, Status, Type, Since, Cursor string
	Limit                              int
	JSON                               bool   // no stale-entry note on stderr
	echo                               string // the filters, for the "more:" line
}

func readListOptions(c *cli.Context) (listOptions, error) {
	err := noArgs(c) // first: it applies flags given after an argument
	return listOptions{
		Shard: c.String("shard"), Status: c.String("status"), Type: c.String("type"),
		Since: c.String("since"), Cursor: c.String("cursor"), Limit: c.Int("limit"),
		JSON: c.Bool("json"), echo: listFlagsEcho(c),
	}, err
}

func (o listOptions) Validate() error {
	_, err := o.query(time.Now())
	return err
}

// query is the queue's query for the options, --since counted back from
// now, or the usage error of the first flag that is wrong.
func (o listOptions) query(now time.Time) (queue.ListQuery, error) {
	qry := queue.ListQuery{Shard: o.Shard, Type: o.Type, Limit: o.Limit, Cursor: o.Cursor}
	if s := o.Since; s != "" {
		since, err := parseSince(s, now)
		if err != nil {
			return qry, usageError("--since %q: %v", s, err)
		}
		qry.Since = since
	}
	if s := o.Status; s != "" {
		st, err := queue.ParseStatus(s)
		if err != nil {
			return qry, usageError("--status: %s", inputMessage(err))
		}
		qry.Status = st
	}
	if qry.Type != "" {
		if err := queue.ValidateType(qry.Type); err != nil {
			return qry, usageError("--type: %s", inputMessage(err))
		}
	}
	if qry.Limit < 1 || qry.Limit > queue.MaxListLimit {
		return qry, usageError("--limit %d: want 1..%d", qry.Limit, queue.MaxListLimit)
	}
	return qry, nil
}

// listPage is one page of qo list as the queue's clock saw it.
type listPage struct {
	page        queue.TaskPage
	now         time.Time
	deadLetters bool   // --status failed: a LAST ERROR column
	echo        string // the filters, for the "more:" line
}

func runList(ctx context.Context, env *runEnv, o listOptions) (listPage, error) {
	qry, err := o.query(time.Now())
	if err != nil {
		return listPage{}, err
	}
	q, err := env.openQueue()
	if err != nil {
		return listPage{}, err
	}
	if qry.Shard != "" && !q.ValidShard(qry.Shard) {
		shards := q.Shards()
		return listPage{}, usageError("--shard %q: this queue's shards are %s..%s", qry.Shard, shards[0], shards[len(shards)-1])
	}
	page, err := q.List(ctx, qry)
	if err != nil {
		return listPage{}, err
	}
	for _, m := range page.Malformed {
		fmt.Fprintf(env.Stderr, "qo: skipped malformed object %s: %s\n", termsafe.Line(m.Key), oneLine(m.Err.Error()))
	}
	if len(page.Stale) > 0 && !o.JSON {
		fmt.Fprintf(env.Stderr, "qo: skipped %d stale index entries (cleaned up by workers and the monitor)\n", len(page.Stale))
	}
	return listPage{page: page, now: q.Now(), deadLetters: qry.Status == queue.StatusFailed, echo: o.echo}, nil
}

func printListPage(w io.Writer, r listPage) error {
	if len(r.page.Tasks) == 0 {
		fmt.Fprintln(w, "no tasks on this page")
	} else {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		// Dead letters say why they died: the last error on one line, cut
		// at 200 bytes (qo status ID shows it whole).
		// A KEY column when a task of the page has a key.
		keyed := slices.ContainsFunc(r.page.Tasks, func(t *queue.Task) bool { return t.TaskKey != "" })
		header := "ID\tTYPE\tPRIORITY\tSTATUS\tATTEMPT\tUPDATED\tWHEN"
		if keyed {
			header = "ID\tTYPE\tKEY\tPRIORITY\tSTATUS\tATTEMPT\tUPDATED\tWHEN"
		}
		if r.deadLetters {
			header += "\tLAST ERROR"
		}
		fmt.Fprintln(tw, header)
		for _, t := range r.page.Tasks {
			cells := []string{t.ID.String(), t.Type, string(t.Priority), string(t.Status), fmt.Sprint(t.Attempt), formatTime(t.UpdatedAt), listWhen(t, r.now)}
			if keyed {
				cells = slices.Insert(cells, 2, dash(t.TaskKey))
			}
			if r.deadLetters {
				cells = append(cells, dash(foldSpace(t.LastError)))
			}
			tabRow(tw, cells...)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if r.page.Cursor != "" {
		fmt.Fprintf(w, "more: qo list%s --cursor %s\n", r.echo, r.page.Cursor)
	}
	return nil
}

// listWhen is the countdown column: availability of pending tasks, lease
// expiry of running ones, end time of finished ones.
func listWhen(t *queue.Task, now time.Time) string {
	switch t.Status {
	case queue.StatusWaiting:
		return "after " + t.WaitingFor()
	case queue.StatusPending:
		if d := t.AvailableAt.Sub(now); d > 0 {
			return "available in " + roundDuration(d).String()
		}
		return "available"
	case queue.StatusRunning:
		if t.LeaseExpiresAt == nil {
			return "-"
		}
		if d := t.LeaseExpiresAt.Sub(now); d > 0 {
			return "lease " + roundDuration(d).String() + " left (" + t.WorkerID + ")"
		}
		return "lease expired (" + t.WorkerID + ")"
	}
	if t.CompletedAt != nil {
		return "finished " + formatTime(*t.CompletedAt)
	}
	return "-"
}

// listFlagsEcho repeats the filters so the "more:" line is copy-pastable.
func listFlagsEcho(c *cli.Context) string {
	var b strings.Builder
	for _, f := range []string{"shard", "status", "type"} {
		if v := c.String(f); v != "" {
			fmt.Fprintf(&b, " --%s %s", f, v)
		}
	}
	if c.IsSet("limit") {
		fmt.Fprintf(&b, " --limit %d", c.Int("limit"))
	}
	return b.String()
}
