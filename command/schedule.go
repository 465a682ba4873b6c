package command

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
	_ "time/tzdata" // schedules name IANA zones; containers often lack zoneinfo

	"github.com/urfave/cli/v2"

	"github.com/qo-queue/qo/internal/termsafe"
	"github.com/qo-queue/qo/monitor/view"
	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/queue/schedule"
)

func scheduleCommand() *cli.Command {
	nameArg := func(c *cli.Context) (string, error) {
		args, err := positionalArgs(c)
		if err != nil {
			return "", err
		}
		if len(args) != 1 {
			return "", usageError("want exactly one schedule name, got %d arguments (usage: %s)", len(args), c.Command.UsageText)
		}
		if err := queue.ValidateScheduleName(args[0]); err != nil {
			return "", usageError("%s", inputMessage(err))
		}
		return args[0], nil
	}
	show := func(c *cli.Context, q *queue.Queue, s *schedule.Schedule) error {
		if c.Bool("json") {
			return emitJSON(c.App.Writer, view.ScheduleOf(s))
		}
		return printSchedule(c.App.Writer, s, q.Now())
	}
	// onSchedule makes the action of a subcommand on one schedule: it reads
	// NAME and opens the queue, then runs fn.
	onSchedule := func(fn func(c *cli.Context, q *queue.Queue, name string) error) cli.ActionFunc {
		return func(c *cli.Context) error {
			name, err := nameArg(c)
			if err != nil {
				return err
			}
			q, err := openQueue(c)
			if err != nil {
				return err
			}
			return fn(c, q, name)
		}
	}
	toggle := func(enabled bool) cli.ActionFunc {
		return onSchedule(func(c *cli.Context, q *queue.Queue, name string) error {
			s, err := schedule.SetEnabled(c.Context, q, name, enabled)
			if err != nil {
				return err
			}
			return show(c, q, s)
		})
	}
	return &cli.Command{
		Name:  "schedule",
		Usage: "run tasks on a cron schedule",
		Description: `A schedule submits one task at every due time of a 5-field cron expression
(minute hour day-of-month month day-of-week) in a time zone. Schedules live in
the bucket (schedules/NAME.json) and are run by every 'qo monitor' (and 'qo
dev'): however many run, each due time submits exactly one task, because its
idempotency key is the schedule name plus the due time.

Missed runs: when no monitor ran at a due time (more than 2 minutes late),
--missed catch-up (the default) submits one task for the latest missed due time
when a monitor is back; --missed skip submits nothing and waits for the next
due time. Either way a long outage never floods the queue.`,
		Subcommands: []*cli.Command{
			{
				Name:      "create",
				Usage:     "create a schedule",
				UsageText: "qo schedule create NAME --cron EXPR --type TYPE [--input JSON] [--tz ZONE] [--missed catch-up|skip] [--priority P] [--timeout D] [--retries N] [--expires-in D] [--disabled] [--json]",
				Description: `Examples:
  qo schedule create nightly-report --cron "30 2 * * *" --tz Europe/Berlin --type report --input '{"kind":"daily"}'
  qo schedule create poll-feeds --cron "*/5 * * * *" --type poll --missed skip --expires-in 4m`,
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "cron", Usage: "`EXPR`: 5 fields (minute hour day-of-month month day-of-week) or @hourly, @daily, @weekly, @monthly"},
					&cli.StringFlag{Name: "tz", Value: "UTC", Usage: "IANA time `ZONE` the cron fields are read in (e.g. Europe/Berlin)"},
					&cli.StringFlag{Name: "type", Aliases: []string{"t"}, Usage: "task `TYPE` each run submits"},
					&cli.StringFlag{Name: "input", Aliases: []string{"i"}, Usage: "task input as a `JSON` document"},
					&cli.StringFlag{Name: "missed", Value: string(schedule.MissedCatchUp), Usage: "`POLICY` for due times missed while no monitor ran: catch-up (run the latest once) or skip"},
					&cli.StringFlag{Name: "priority", Aliases: []string{"p"}, Value: string(queue.PriorityNormal), Usage: "`LEVEL` of the tasks: high, normal or low"},
					&cli.DurationFlag{Name: "timeout", Value: queue.DefaultTimeout, Usage: "lease of one attempt of each task"},
					&cli.IntFlag{Name: "retries", Value: queue.DefaultMaxRetries, Usage: "retries after the first attempt (0: run once)"},
					&cli.DurationFlag{Name: "expires-in", Usage: "each run expires if no worker starts it within `DURATION` of its due time"},
					&cli.BoolFlag{Name: "disabled", Usage: "create it disabled (enable it later with 'qo schedule enable')"},
					jsonFlag(),
				},
				Action: func(c *cli.Context) error {
					name, err := nameArg(c)
					if err != nil {
						return err
					}
					spec, err := scheduleSpecFromFlags(c, name) // before anything is contacted
					if err != nil {
						return err
					}
					q, err := openQueue(c)
					if err != nil {
						return err
					}
					s, err := schedule.Create(c.Context, q, spec)
					if err != nil {
						return err
					}
					return show(c, q, s)
				},
			},
			{
				Name:      "list",
				Usage:     "list schedules with their next due time",
				UsageText: "qo schedule list [--json]",
				Flags:     []cli.Flag{jsonFlag()},
				Action: func(c *cli.Context) error {
					if err := noArgs(c); err != nil {
						return err
					}
					q, err := openQueue(c)
					if err != nil {
						return err
					}
					list, malformed, err := schedule.List(c.Context, q)
					if err != nil {
						return err
					}
					for _, m := range malformed {
						fmt.Fprintf(c.App.ErrWriter, "qo: skipping %s\n", oneLine(m.Error()))
					}
					if c.Bool("json") {
						return emitJSON(c.App.Writer, view.SchedulesOf(list, malformed))
					}
					if len(list) == 0 {
						fmt.Fprintln(c.App.Writer, "no schedules (create one with: qo schedule create NAME --cron EXPR --type TYPE)")
						return nil
					}
					now := q.Now()
					tw := tabwriter.NewWriter(c.App.Writer, 0, 0, 2, ' ', 0)
					fmt.Fprintln(tw, "NAME\tCRON\tTZ\tTYPE\tSTATE\tNEXT\tLAST TASK")
					for _, s := range list {
						tabRow(tw, s.Name, s.Cron, s.Timezone, s.Task.Type, enabledWord(s.Enabled), nextDueText(s, now), dash(s.LastTaskID))
					}
					return tw.Flush()
				},
			},
			{
				Name:      "show",
				Usage:     "show one schedule",
				UsageText: "qo schedule show NAME [--json]",
				Flags:     []cli.Flag{jsonFlag()},
				Action: onSchedule(func(c *cli.Context, q *queue.Queue, name string) error {
					s, err := schedule.Get(c.Context, q, name)
					if err != nil {
						return err
					}
					return show(c, q, s)
				}),
			},
			{
				Name: "enable", Usage: "enable a schedule (due times start from now)", UsageText: "qo schedule enable NAME [--json]",
				Flags: []cli.Flag{jsonFlag()}, Action: toggle(true),
			},
			{
				Name: "disable", Usage: "disable a schedule (no runs until enabled)", UsageText: "qo schedule disable NAME [--json]",
				Flags: []cli.Flag{jsonFlag()}, Action: toggle(false),
			},
			{
				Name:      "delete",
				Usage:     "delete a schedule (tasks it submitted stay)",
				UsageText: "qo schedule delete NAME",
				Action: onSchedule(func(c *cli.Context, q *queue.Queue, name string) error {
					if err := schedule.Delete(c.Context, q, name); err != nil {
						return err
					}
					fmt.Fprintf(c.App.Writer, "deleted schedule %s\n", name)
					return nil
				}),
			},
			{
				Name:      "trigger",
				Usage:     "submit the schedule's task now (its due times stay as they are)",
				UsageText: "qo schedule trigger NAME [--json]",
				Flags:     []cli.Flag{jsonFlag()},
				Action: onSchedule(func(c *cli.Context, q *queue.Queue, name string) error {
					t, err := schedule.Trigger(c.Context, q, name)
					if err != nil {
						return err
					}
					if c.Bool("json") {
						return emitJSON(c.App.Writer, t)
					}
					_, err = fmt.Fprintln(c.App.Writer, t.ID)
					return err
				}),
			},
		},
	}
}

func scheduleSpecFromFlags(c *cli.Context, name string) (schedule.Spec, error) {
	spec := schedule.Spec{
		Name: name, Cron: c.String("cron"), Timezone: c.String("tz"),
		Missed: schedule.MissedPolicy(c.String("missed")), Disabled: c.Bool("disabled"),
	}
	if spec.Cron == "" {
		return spec, usageError("--cron is required (5 fields: minute hour day-of-month month day-of-week, e.g. --cron \"30 2 * * *\")")
	}
	spec.Task.Type = c.String("type")
	if spec.Task.Type == "" {
		return spec, usageError("--type is required (the task type each run submits, e.g. --type report)")
	}
	if err := queue.ValidateType(spec.Task.Type); err != nil {
		return spec, usageError("--type: %s", inputMessage(err))
	}
	if c.IsSet("input") {
		raw := []byte(c.String("input"))
		if !json.Valid(raw) {
			return spec, usageError("--input is not valid JSON; quote it for the shell, e.g. --input '{\"kind\":\"daily\"}'")
		}
		spec.Task.Input = raw
	}
	p, err := queue.ParsePriority(c.String("priority"))
	if err != nil {
		return spec, usageError("--priority: %s", inputMessage(err))
	}
	spec.Task.Priority = p
	timeout := c.Duration("timeout")
	if timeout < time.Second {
		return spec, usageError("--timeout %s is below the 1s minimum", timeout)
	}
	spec.Task.TimeoutSeconds = int((timeout + time.Second - 1) / time.Second)
	retries := c.Int("retries")
	if retries < 0 {
		return spec, usageError("--retries %d is negative (0 runs the task once)", retries)
	}
	spec.Task.MaxRetries = &retries
	if d := c.Duration("expires-in"); c.IsSet("expires-in") {
		if d < time.Second {
			return spec, usageError("--expires-in %s must be at least 1s", d)
		}
		spec.Task.ExpiresAfterSeconds = int(d / time.Second)
	}
	return spec, nil
}

func printSchedule(w io.Writer, s *schedule.Schedule, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(k, v string) { fmt.Fprintf(tw, "%s:\t%s\n", k, termsafe.Line(v)) }
	row("name", s.Name)
	row("cron", s.Cron+" ("+s.Timezone+")")
	row("state", enabledWord(s.Enabled))
	row("next due", nextDueText(s, now))
	if s.Enabled {
		var more []string
		for d, i := s.NextDue(), 0; !d.IsZero() && i < 3; d, i = s.Next(d), i+1 {
			more = append(more, d.In(mustLocation(s.Timezone)).Format("Mon 2006-01-02 15:04 MST"))
		}
		row("upcoming", strings.Join(more, ", "))
	}
	row("missed runs", string(s.Missed))
	task := s.Task.Type + ", priority " + string(s.Task.Priority)
	if s.Task.ExpiresAfterSeconds > 0 {
		task += fmt.Sprintf(", expires %s after its due time", time.Duration(s.Task.ExpiresAfterSeconds)*time.Second)
	}
	row("task", task)
	row("input", jsonText(s.Task.Input))
	row("last due", formatTimePtr(s.LastDue))
	if s.LastTaskID != "" {
		row("last task", fmt.Sprintf("%s (submitted %s)", s.LastTaskID, formatTimePtr(s.LastSubmittedAt)))
	}
	if s.Skipped > 0 {
		row("skipped", fmt.Sprintf("%d due times (missed, or superseded by a later one)", s.Skipped))
	}
	row("created", formatTime(s.CreatedAt))
	return tw.Flush()
}

func mustLocation(tz string) *time.Location {
	loc, err := time.LoadLocation(tz)
	if err != nil {
		return time.UTC
	}
	return loc
}

func nextDueText(s *schedule.Schedule, now time.Time) string {
	d := s.NextDue()
	if d.IsZero() {
		return "-"
	}
	return timeWithCountdown(d, now, "due")
}

func enabledWord(on bool) string {
	if on {
		return "enabled"
	}
	return "disabled"
}
