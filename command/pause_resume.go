package command

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/qo-queue/qo/internal/termsafe"
	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/queue/control"
)

func pauseCommand() *cli.Command {
	return &cli.Command{
		Name:      "pause",
		Usage:     "stop workers from starting tasks of some types, or of all",
		UsageText: "qo pause TYPE... [--reason TEXT] [--json]\nqo pause --all [--reason TEXT] [--json]\nqo pause [--json]",
		Description: `Workers stop claiming the paused types within about a second; tasks
already running finish. Submits are still accepted and wait. 'qo resume' undoes it.
Without arguments, shows what is paused (so does the console, qo tui).

Examples:
  qo pause send_email --reason "mail provider outage"
  qo pause --all --reason "database migration"`,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "all", Usage: "pause the whole queue"},
			&cli.StringFlag{Name: "reason", Usage: "why (shown to operators)"},
			jsonFlag(),
		},
		Action: func(c *cli.Context) error {
			return pauseOrResume(c, true)
		},
	}
}

func resumeCommand() *cli.Command {
	return &cli.Command{
		Name:      "resume",
		Usage:     "let workers start tasks of paused types again",
		UsageText: "qo resume TYPE... [--json]\nqo resume --all [--json]",
		Description: `--all lifts the whole-queue pause; types paused by name stay paused until
resumed by name.`,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "all", Usage: "lift the whole-queue pause"},
			jsonFlag(),
		},
		Action: func(c *cli.Context) error {
			return pauseOrResume(c, false)
		},
	}
}

func pauseOrResume(c *cli.Context, pause bool) error {
	types, err := positionalArgs(c)
	if err != nil {
		return err
	}
	all := c.Bool("all")
	switch {
	case all && len(types) > 0:
		return usageError("give either task types or --all, not both")
	case !all && len(types) == 0 && !pause:
		return usageError("name the task types, or --all for the whole queue (usage: %s)", strings.ReplaceAll(c.Command.UsageText, "\n", " | "))
	}
	for _, t := range types {
		if err := queue.ValidateType(t); err != nil {
			return usageError("%s", inputMessage(err))
		}
	}
	if all {
		types = []string{""}
	}
	q, err := openQueue(c)
	if err != nil {
		return err
	}
	ctl, err := control.Read(c.Context, q)
	if err != nil {
		return err
	}
	for _, t := range types {
		if pause {
			ctl, err = control.Pause(c.Context, q, t, queue.ActorReason(c.String("reason"), "paused", "qo pause"))
		} else {
			ctl, err = control.Resume(c.Context, q, t)
		}
		if err != nil {
			return err
		}
	}
	if c.Bool("json") {
		return emitJSON(c.App.Writer, ctl)
	}
	fmt.Fprintln(c.App.Writer, pauseSummary(ctl))
	return nil
}

// pauseSummary is one line on what is paused.
func pauseSummary(c queue.Control) string {
	var parts []string
	if c.Paused {
		parts = append(parts, "the whole queue is paused"+reasonSuffix(c.Reason))
	}
	if ts := c.PausedTypes(); len(ts) > 0 {
		parts = append(parts, "paused types: "+termsafe.Line(strings.Join(ts, ", ")))
	}
	if len(parts) == 0 {
		return "nothing is paused"
	}
	return strings.Join(parts, "; ")
}
