package command

import (
	"context"
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
			scheduleCreateCommand(), scheduleListCommand(), scheduleShowCommand(),
			scheduleEnableCommand(), scheduleDisableCommand(), scheduleDeleteCommand(),
			scheduleTriggerCommand(),
		},
	}
}

// scheduleNameOptions name one schedule: the NAME of qo schedule show,
// enable, disable, delete and trigger.
type scheduleNameOptions struct{ Name string }

func readScheduleName(c *cli.Context) (scheduleNameOptions, error) {
	args, err := positionalArgs(c)
	if err != nil {
		return scheduleNameOptions{}, err
	}
	if len(args) != 1 {
		return scheduleNameOptions{}, usageError("want exactly one schedule name, got %d arguments (usage: %s)", len(args), c.Command.UsageText)
	}
	return scheduleNameOptions{Name: args[0]}, nil
}

func (o scheduleNameOptions) Validate() error {
	if err := queue.ValidateScheduleName(o.Name); err != nil {
		return usageError("%s", inputMessage(err))
	}
	return nil
}

// scheduleShown is a schedule as the queue's clock saw it: what create,
// show, enable and disable print.
type scheduleShown struct {
	s   *schedule.Schedule
	now time.Time
}

func printScheduleShown(w io.Writer, r scheduleShown) error { return printSchedule(w, r.s, r.now) }
func scheduleShownJSON(r scheduleShown) any                 { return view.ScheduleOf(r.s) }

// showSchedule is the kit of a command that changes or reads one
// schedule (do) and prints it.
func showSchedule(do func(ctx context.Context, q *queue.Queue, name string) (*schedule.Schedule, error)) cli.ActionFunc {
	return kit[scheduleNameOptions, scheduleShown]{
		options: readScheduleName,
		run: func(ctx context.Context, env *runEnv, o scheduleNameOptions) (scheduleShown, error) {
			q, err := env.openQueue()
			if err != nil {
				return scheduleShown{}, err
			}
			s, err := do(ctx, q, o.Name)
			return scheduleShown{s: s, now: q.Now()}, err
		},
		text: printScheduleShown,
		json: scheduleShownJSON,
	}.action()
}

// scheduleCreateOptions are the flags of qo schedule create.
type scheduleCreateOptions struct {
	Name, Cron, Timezone, Missed string
	Disabled                     bool
	Task                         queue.SubmitRequest // what each run submits
}

// scheduleSpecFields are the task spec fields a schedule's task carries.
var scheduleSpecFields = []string{"type", "input", "priority", "timeout_seconds", "max_retries", "expires_in"}

func readScheduleCreate(c *cli.Context) (scheduleCreateOptions, error) {
	n, err := readScheduleName(c) // first: it applies flags given after NAME
	o := scheduleCreateOptions{
		Name: n.Name, Cron: c.String("cron"), Timezone: c.String("tz"),
		Missed: c.String("missed"), Disabled: c.Bool("disabled"),
	}
	if err != nil {
		return o, err
	}
	o.Task, err = taskSpecOf(c, scheduleSpecFields...)
	return o, err
}

func (o scheduleCreateOptions) Validate() error {
	if err := (scheduleNameOptions{Name: o.Name}).Validate(); err != nil {
		return err
	}
	if o.Cron == "" {
		return usageError("--cron is required (5 fields: minute hour day-of-month month day-of-week, e.g. --cron \"30 2 * * *\")")
	}
	// The rules of qo submit: a schedule refused here is not one refused
	// at every run.
	return checkTaskSpec(o.Task)
}

// spec is the schedule the options describe.
func (o scheduleCreateOptions) spec() schedule.Spec {
	return schedule.Spec{
		Name: o.Name, Cron: o.Cron, Timezone: o.Timezone,
		Missed: schedule.MissedPolicy(o.Missed), Disabled: o.Disabled,
		Task: schedule.TaskOf(o.Task),
	}
}

func scheduleCreateCommand() *cli.Command {
	return &cli.Command{
		Name:      "create",
		Usage:     "create a schedule",
		UsageText: "qo schedule create NAME --cron EXPR --type TYPE [--input JSON | --input-file FILE|-] [--tz ZONE] [--missed catch-up|skip] [--priority P] [--timeout D] [--retries N] [--expires-in D] [--disabled] [--json]",
		Description: `Examples:
  qo schedule create nightly-report --cron "30 2 * * *" --tz Europe/Berlin --type report --input '{"kind":"daily"}'
  qo schedule create poll-feeds --cron "*/5 * * * *" --type poll --missed skip --expires-in 4m`,
		Flags: append(append([]cli.Flag{
			&cli.StringFlag{Name: "cron", Usage: "`EXPR`: 5 fields (minute hour day-of-month month day-of-week) or @hourly, @daily, @weekly, @monthly"},
			&cli.StringFlag{Name: "tz", Value: "UTC", Usage: "IANA time `ZONE` the cron fields are read in (e.g. Europe/Berlin)"},
			&cli.StringFlag{Name: "missed", Value: string(schedule.MissedCatchUp), Usage: "`POLICY` for due times missed while no monitor ran: catch-up (run the latest once) or skip"},
		}, taskSpecFlags(scheduleSpecFields...)...), []cli.Flag{
			&cli.BoolFlag{Name: "disabled", Usage: "create it disabled (enable it later with 'qo schedule enable')"},
			jsonFlag(),
		}...),
		Action: kit[scheduleCreateOptions, scheduleShown]{
			options: readScheduleCreate,
			run: func(ctx context.Context, env *runEnv, o scheduleCreateOptions) (scheduleShown, error) {
				spec := o.spec()
				q, err := env.openQueue()
				if err != nil {
					return scheduleShown{}, err
				}
				s, err := schedule.Create(ctx, q, spec)
				return scheduleShown{s: s, now: q.Now()}, err
			},
			text: printScheduleShown,
			json: scheduleShownJSON,
		}.action(),
	}
}

// scheduleList is what qo schedule list prints.
type scheduleList struct {
	list      []*schedule.Schedule
	malformed []queue.MalformedError
	now       time.Time
}

func scheduleListCommand() *cli.Command {
	return &cli.Command{
		Name:      "list",
		Usage:     "list schedules with their next due time",
		UsageText: "qo schedule list [--json]",
		Flags:     []cli.Flag{jsonFlag()},
		Action: kit[noOptions, scheduleList]{
			options: readNoOptions,
			run: func(ctx context.Context, env *runEnv, _ noOptions) (scheduleList, error) {
				q, err := env.openQueue()
				if err != nil {
					return scheduleList{}, err
				}
				list, malformed, err := schedule.List(ctx, q)
				if err != nil {
					return scheduleList{}, err
				}
				for _, m := range malformed {
					fmt.Fprintf(env.Stderr, "qo: skipping %s\n", oneLine(m.Error()))
				}
				return scheduleList{list: list, malformed: malformed, now: q.Now()}, nil
			},
			text: printSchedules,
			json: func(r scheduleList) any { return view.SchedulesOf(r.list, r.malformed) },
		}.action(),
	}
}

func printSchedules(w io.Writer, r scheduleList) error {
	if len(r.list) == 0 {
		fmt.Fprintln(w, "no schedules (create one with: qo schedule create NAME --cron EXPR --type TYPE)")
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tCRON\tTZ\tTYPE\tSTATE\tNEXT\tLAST TASK")
	for _, s := range r.list {
		tabRow(tw, s.Name, s.Cron, s.Timezone, s.Task.Type, enabledWord(s.Enabled), nextDueText(s, r.now), dash(s.LastTaskID))
	}
	return tw.Flush()
}

func scheduleShowCommand() *cli.Command {
	return &cli.Command{
		Name:      "show",
		Usage:     "show one schedule",
		UsageText: "qo schedule show NAME [--json]",
		Flags:     []cli.Flag{jsonFlag()},
		Action: showSchedule(func(ctx context.Context, q *queue.Queue, name string) (*schedule.Schedule, error) {
			return schedule.Get(ctx, q, name)
		}),
	}
}

// setEnabled is the run step of qo schedule enable and disable.
func setEnabled(enabled bool) func(ctx context.Context, q *queue.Queue, name string) (*schedule.Schedule, error) {
	return func(ctx context.Context, q *queue.Queue, name string) (*schedule.Schedule, error) {
		return schedule.SetEnabled(ctx, q, name, enabled)
	}
}

func scheduleEnableCommand() *cli.Command {
	return &cli.Command{
		Name: "enable", Usage: "enable a schedule (due times start from now)", UsageText: "qo schedule enable NAME [--json]",
		Flags: []cli.Flag{jsonFlag()}, Action: showSchedule(setEnabled(true)),
	}
}

func scheduleDisableCommand() *cli.Command {
	return &cli.Command{
		Name: "disable", Usage: "disable a schedule (no runs until enabled)", UsageText: "qo schedule disable NAME [--json]",
		Flags: []cli.Flag{jsonFlag()}, Action: showSchedule(setEnabled(false)),
	}
}

func scheduleDeleteCommand() *cli.Command {
	return &cli.Command{
		Name:      "delete",
		Usage:     "delete a schedule (tasks it submitted stay)",
		UsageText: "qo schedule delete NAME",
		Action: kit[scheduleNameOptions, string]{
			options: readScheduleName,
			run: func(ctx context.Context, env *runEnv, o scheduleNameOptions) (string, error) {
				q, err := env.openQueue()
				if err != nil {
					return "", err
				}
				return o.Name, schedule.Delete(ctx, q, o.Name)
			},
			text: func(w io.Writer, name string) error {
				fmt.Fprintf(w, "deleted schedule %s\n", name)
				return nil
			},
		}.action(),
	}
}

func scheduleTriggerCommand() *cli.Command {
	return &cli.Command{
		Name:      "trigger",
		Usage:     "submit the schedule's task now (its due times stay as they are)",
		UsageText: "qo schedule trigger NAME [--json]",
		Flags:     []cli.Flag{jsonFlag()},
		Action: kit[scheduleNameOptions, *queue.Task]{
			options: readScheduleName,
			run: func(ctx context.Context, env *runEnv, o scheduleNameOptions) (*queue.Task, error) {
				q, err := env.openQueue()
				if err != nil {
					return nil, err
				}
				return schedule.Trigger(ctx, q, o.Name)
			},
			text: func(w io.Writer, t *queue.Task) error {
				_, err := fmt.Fprintln(w, t.ID)
				return err
			},
		}.action(),
	}
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
