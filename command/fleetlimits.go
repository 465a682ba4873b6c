package command

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/qo-queue/qo/internal/termsafe"
	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/queue/control"
)

func limitCommand() *cli.Command {
	return &cli.Command{
		Name:        "limit",
		Usage:       "cap how many tasks of a type run at once, or start per second, across every worker",
		UsageText:   "qo limit TYPE --concurrency N [--per-key] [--json]\nqo limit TYPE --rate 20/s [--burst N] [--json]\nqo limit TYPE --clear [--json]",
		Description: limitDescription,
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "concurrency", Usage: "at most `N` running at once, fleet-wide"},
			&cli.StringFlag{Name: "rate", Usage: "at most `R` starts per second or minute (20/s, 600/m), fleet-wide"},
			&cli.IntFlag{Name: "burst", Usage: "with --rate: at most `N` starts above the rate in any window (default: a second's worth)"},
			&cli.BoolFlag{Name: "per-key", Usage: "with --concurrency or --rate: the limit holds for each task key (qo submit --key)"},
			&cli.BoolFlag{Name: "clear", Usage: "remove the type's limits (per-key ones too)"},
			jsonFlag(),
		},
		Action: runLimit,
	}
}

// limitDescription is the help text of qo limit.
const limitDescription = `A fleet-wide cap: at most N handlers of the type run at once across all
workers, however many join, drain, are paused or killed. Workers hold
shares of N in their registry entries, written with their heartbeats, so
a cap costs no request per task. A new or larger share is taken within a
heartbeat or two; a killed worker's share is free again once it is found
dead (22s after its last heartbeat with the defaults). Where the cap has
fewer units than workers, the workers serving fewest types (then those with
most slots) hold them. 'qo limits' lists the caps; 'qo workers' shows each
worker's share.

A fleet-wide rate (--rate 20/s or 600/m): at most that many tasks of the
type start per second (minute) across all workers, plus --burst more in
any window (default: a second's worth). Workers hold shares of the rate
the same way and each runs a token bucket for its share; a claim takes a
token before it starts. A type may have both a cap and a rate.

A per-key cap (--concurrency N --per-key): at most N handlers of the type
run at once for each task key (qo submit --key), across all workers; a
per-key rate (--rate R --per-key): at most R starts per second (minute)
for each key. Workers hold shares of N (R) as for a cap and run at most
their share of each key (a token bucket per key for a rate), so a worker
whose share is 0 runs no keyed task of the type: give N (R per minute) at
least the number of workers serving the type for all to take part. Tasks
without a key are not limited by them.

Examples:
  qo limit call_partner_api --concurrency 5
  qo limit call_partner_api --rate 20/s --burst 5
  qo limit sync_customer --concurrency 1 --per-key
  qo limit sync_customer --rate 2/s --per-key
  qo limit call_partner_api --clear`

// runLimit is qo limit: it checks the flags, sets or clears the type's
// limits and prints what holds now.
func runLimit(c *cli.Context) error {
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
	set, clr, rated := c.IsSet("concurrency"), c.Bool("clear"), c.IsSet("rate")
	var starts int
	var per time.Duration
	switch {
	case c.Bool("per-key") && !set && !rated:
		return usageError("--per-key goes with --concurrency N or --rate R (qo limit TYPE --concurrency N --per-key)")
	case c.IsSet("burst") && !rated:
		return usageError("--burst goes with --rate (qo limit TYPE --rate 20/s --burst 5)")
	case (set || rated) && clr:
		return usageError("give either --concurrency N or --rate R, or --clear, not both")
	case !set && !rated && !clr:
		return usageError("give --concurrency N to set a cap, --rate 20/s to set a rate, or --clear to remove them")
	case c.IsSet("burst") && (c.Int("burst") < 1 || c.Int("burst") > queue.MaxRate):
		return usageError("--burst %d is not between 1 and %d", c.Int("burst"), queue.MaxRate)
	case set && (c.Int("concurrency") < 1 || c.Int("concurrency") > queue.MaxConcurrencyCap):
		return usageError("--concurrency %d is not between 1 and %d (to remove the cap, use --clear)", c.Int("concurrency"), queue.MaxConcurrencyCap)
	}
	if rated {
		if starts, per, err = queue.ParseRate(c.String("rate")); err != nil {
			return usageError("--rate: %s", inputMessage(err))
		}
	}
	q, err := openQueue(c)
	if err != nil {
		return err
	}
	var ctl queue.Control
	if clr {
		ctl, err = control.ClearLimit(c.Context, q, typ)
	}
	if err == nil && set && c.Bool("per-key") {
		ctl, err = control.SetKeyLimit(c.Context, q, typ, c.Int("concurrency"))
	} else if err == nil && set {
		ctl, err = control.SetLimit(c.Context, q, typ, c.Int("concurrency"))
	}
	if err == nil && rated && c.Bool("per-key") {
		ctl, err = control.SetKeyRate(c.Context, q, typ, starts, per, c.Int("burst"))
	} else if err == nil && rated {
		ctl, err = control.SetRate(c.Context, q, typ, starts, per, c.Int("burst"))
	}
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return emitJSON(c.App.Writer, limitsJSON(ctl))
	}
	printLimit(c.App.Writer, ctl, typ)
	return nil
}

// printLimit prints the limits that hold for typ.
func printLimit(w io.Writer, ctl queue.Control, typ string) {
	if n, ok := ctl.ConcurrencyCap(typ); ok {
		fmt.Fprintf(w, "%s: at most %d running at once across the fleet\n", termsafe.Line(typ), n)
	}
	if r, ok := ctl.RateLimit(typ); ok {
		fmt.Fprintf(w, "%s: at most %s started across the fleet (burst %d)\n", termsafe.Line(typ), r, r.Burst)
	}
	if n, ok := ctl.KeyConcurrencyCap(typ); ok {
		fmt.Fprintf(w, "%s: at most %d running at once for each key across the fleet\n", termsafe.Line(typ), n)
	}
	if r, ok := ctl.KeyRateLimit(typ); ok {
		fmt.Fprintf(w, "%s: at most %s started for each key across the fleet (burst %d)\n", termsafe.Line(typ), r, r.Burst)
	}
	if _, ok := ctl.Limits[typ]; !ok && !slices.Contains(ctl.LimitedTypes(), typ) {
		fmt.Fprintf(w, "%s: no fleet-wide limit\n", termsafe.Line(typ))
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
			ctl, err := control.Read(c.Context, q)
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
	Rate        string `json:"rate,omitempty"` // "20/s", "600/m"
	Burst       int    `json:"burst,omitempty"`
	// PerKeyConcurrency is the per-key cap (qo limit --per-key), 0: none;
	// PerKeyRate and PerKeyBurst the per-key rate.
	PerKeyConcurrency int    `json:"per_key_concurrency,omitempty"`
	PerKeyRate        string `json:"per_key_rate,omitempty"`
	PerKeyBurst       int    `json:"per_key_burst,omitempty"`
	SetAt             string `json:"set_at"`
}

func limitsJSON(ctl queue.Control) map[string]any {
	out := []limitJSON{}
	for _, t := range ctl.LimitedTypes() {
		l := ctl.Limits[t]
		j := limitJSON{Type: t, Concurrency: l.Concurrency, SetAt: l.SetAt.UTC().Format("2006-01-02T15:04:05Z")}
		if r, ok := ctl.RateLimit(t); ok {
			j.Rate, j.Burst = r.String(), r.Burst
		}
		if k, ok := ctl.KeyLimits[t]; ok {
			j.PerKeyConcurrency = k.Concurrency
			if r, ok := ctl.KeyRateLimit(t); ok {
				j.PerKeyRate, j.PerKeyBurst = r.String(), r.Burst
			}
			if l.SetAt.IsZero() || k.SetAt.After(l.SetAt) {
				j.SetAt = k.SetAt.UTC().Format("2006-01-02T15:04:05Z")
			}
		}
		out = append(out, j)
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
		var parts []string
		if n, ok := ctl.ConcurrencyCap(t); ok {
			parts = append(parts, "concurrency "+strconv.Itoa(n))
		}
		if r, ok := ctl.RateLimit(t); ok {
			parts = append(parts, fmt.Sprintf("rate %s burst %d", r, r.Burst))
		}
		if n, ok := ctl.KeyConcurrencyCap(t); ok {
			parts = append(parts, "concurrency "+strconv.Itoa(n)+" per key")
		}
		if r, ok := ctl.KeyRateLimit(t); ok {
			parts = append(parts, fmt.Sprintf("rate %s burst %d per key", r, r.Burst))
		}
		fmt.Fprintf(w, "%s\t%s\n", termsafe.Line(t), strings.Join(parts, ", "))
	}
}
