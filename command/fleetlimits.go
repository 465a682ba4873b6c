package command

import (
	"fmt"
	"io"
	"strconv"

	"github.com/urfave/cli/v2"

	"github.com/qo-queue/qo/internal/termsafe"
	"github.com/qo-queue/qo/queue"
)

func limitCommand() *cli.Command {
	return &cli.Command{
		Name:      "limit",
		Usage:     "cap how many tasks of a type run at once across every worker",
		UsageText: "qo limit TYPE --concurrency N [--json]\nqo limit TYPE --clear [--json]",
		Description: `A fleet-wide cap: at most N handlers of the type run at once across all
workers, however many join, drain, are paused or killed. Workers hold
shares of N in their registry entries, written with their heartbeats, so
a cap costs no request per task. A new or larger share is taken within a
heartbeat or two; a killed worker's share is free again once it is found
dead (22s after its last heartbeat with the defaults). 'qo limits' lists
the caps.

Examples:
  qo limit call_partner_api --concurrency 5
  qo limit call_partner_api --clear`,
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "concurrency", Usage: "at most `N` running at once, fleet-wide"},
			&cli.BoolFlag{Name: "clear", Usage: "remove the type's limit"},
			jsonFlag(),
		},
		Action: func(c *cli.Context) error {
			args, err := positionalArgs(c)
			if err != nil {
				return err
			}
			if len(args) != 1 {
				return usageError("name one task type (usage: qo limit TYPE --concurrency N)")
			}
			typ := args[0]
			if err := queue.ValidateType(typ); err != nil {
				return usageError("%s", inputMessage(err))
			}
			set, clr := c.IsSet("concurrency"), c.Bool("clear")
			switch {
			case set && clr:
				return usageError("give either --concurrency N or --clear, not both")
			case !set && !clr:
				return usageError("give --concurrency N to set a cap, or --clear to remove it")
			case set && (c.Int("concurrency") < 1 || c.Int("concurrency") > queue.MaxConcurrencyCap):
				return usageError("--concurrency %d is not between 1 and %d (to remove the cap, use --clear)", c.Int("concurrency"), queue.MaxConcurrencyCap)
			}
			q, err := openQueue(c)
			if err != nil {
				return err
			}
			var ctl queue.Control
			if clr {
				ctl, err = q.ClearLimit(c.Context, typ)
			} else {
				ctl, err = q.SetLimit(c.Context, typ, c.Int("concurrency"))
			}
			if err != nil {
				return err
			}
			if c.Bool("json") {
				return emitJSON(c.App.Writer, limitsJSON(ctl))
			}
			if n, ok := ctl.ConcurrencyCap(typ); ok {
				fmt.Fprintf(c.App.Writer, "%s: at most %d running at once across the fleet\n", termsafe.Line(typ), n)
			} else {
				fmt.Fprintf(c.App.Writer, "%s: no fleet-wide limit\n", termsafe.Line(typ))
			}
			return nil
		},
	}
}

func limitsCommand() *cli.Command {
	return &cli.Command{
		Name:      "limits",
		Usage:     "list the fleet-wide limits",
		UsageText: "qo limits [--json]",
		Flags:     []cli.Flag{jsonFlag()},
		Action: func(c *cli.Context) error {
			if _, err := positionalArgs(c); err != nil {
				return err
			}
			q, err := openQueue(c)
			if err != nil {
				return err
			}
			ctl, err := q.Control(c.Context)
			if err != nil {
				return err
			}
			if c.Bool("json") {
				return emitJSON(c.App.Writer, limitsJSON(ctl))
			}
			writeLimits(c.App.Writer, ctl)
			return nil
		},
	}
}

// limitJSON is one limit as --json shows it.
type limitJSON struct {
	Type        string `json:"type"`
	Concurrency int    `json:"concurrency"`
	SetAt       string `json:"set_at"`
}

func limitsJSON(ctl queue.Control) map[string]any {
	out := []limitJSON{}
	for _, t := range ctl.LimitedTypes() {
		l := ctl.Limits[t]
		out = append(out, limitJSON{Type: t, Concurrency: l.Concurrency, SetAt: l.SetAt.UTC().Format("2006-01-02T15:04:05Z")})
	}
	return map[string]any{"limits": out}
}

// writeLimits prints one line per limit ("no fleet-wide limits" for none).
func writeLimits(w io.Writer, ctl queue.Control) {
	types := ctl.LimitedTypes()
	if len(types) == 0 {
		fmt.Fprintln(w, "no fleet-wide limits")
		return
	}
	for _, t := range types {
		fmt.Fprintf(w, "%s\tconcurrency %s\n", termsafe.Line(t), strconv.Itoa(ctl.Limits[t].Concurrency))
	}
}
