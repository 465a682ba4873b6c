package command

import (
	"flag"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/qo-queue/qo/queue"
)

// staticBoolFlag is a boolean flag that keeps no state of its own: qo's
// --help and --version. urfave/cli v2 knows these two only as the
// package-level cli.HelpFlag and cli.VersionFlag: every app's setup
// appends VersionFlag (unless HideVersion, which also drops the VERSION
// section from qo --help), every command's setup appends HelpFlag, and
// --help is looked up by HelpFlag's names (HideHelp with a flag of the
// app's own makes commands print another help template). Its *BoolFlag
// writes to itself in Apply on every run, so two apps running at once
// (tests do) would race on the shared value; this flag's Apply only
// defines its names on the run's own flag set.
type staticBoolFlag struct {
	names []string
	usage string
}

func (f *staticBoolFlag) Apply(set *flag.FlagSet) error {
	for _, n := range f.names {
		set.Bool(n, false, f.usage)
	}
	return nil
}
func (f *staticBoolFlag) Names() []string        { return f.names }
func (f *staticBoolFlag) IsSet() bool            { return false }
func (f *staticBoolFlag) String() string         { return cli.FlagStringer(f) }
func (f *staticBoolFlag) TakesValue() bool       { return false }
func (f *staticBoolFlag) GetUsage() string       { return f.usage }
func (f *staticBoolFlag) GetValue() string       { return "" }
func (f *staticBoolFlag) GetDefaultText() string { return "" }
func (f *staticBoolFlag) GetEnvVars() []string   { return nil }
func (f *staticBoolFlag) IsVisible() bool        { return true }
func (f *staticBoolFlag) GetCategory() string    { return "" }

// The package-level flags are replaced once, before any app runs.
func init() {
	cli.HelpFlag = &staticBoolFlag{names: []string{"help", "h"}, usage: "show help"}
	cli.VersionFlag = &staticBoolFlag{names: []string{"version", "v"}, usage: "print the version"}
}

// hasFlag reports whether cmd has a flag named name.
func hasFlag(cmd *cli.Command, name string) bool {
	for _, f := range cmd.Flags {
		for _, n := range f.Names() {
			if n == name {
				return true
			}
		}
	}
	return false
}

func jsonFlag() cli.Flag {
	return &cli.BoolFlag{Name: "json", Usage: "print JSON for scripts (a stable shape: fields may be added, never removed); an error is then JSON too, on stderr (see qo --help)"}
}

// cmdDuration reads a duration flag: Go syntax (500ms, 2m) or a bare number
// of seconds (as QO_MONITOR_CHECK_INTERVAL=30).
func cmdDuration(c *cli.Context, name string) (time.Duration, error) {
	s := strings.TrimSpace(c.String(name))
	if s == "" {
		return 0, nil
	}
	d, err := parseSecondsOrDuration(s)
	if err != nil {
		return 0, usageError("invalid --%s %q: want a duration such as 500ms, 30s or 2m, or a number of seconds", name, s)
	}
	if d < 0 {
		return 0, usageError("invalid --%s %q: must not be negative", name, s)
	}
	return d, nil
}

func parseSecondsOrDuration(s string) (time.Duration, error) {
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		return time.Duration(f * float64(time.Second)), nil
	}
	return time.ParseDuration(s)
}

// splitList flattens repeated and comma-separated values, dropping blanks.
func splitList(vals []string) []string {
	var out []string
	for _, v := range vals {
		for _, p := range strings.Split(v, ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
	}
	return out
}

// durationFlag reads a positive duration flag (at least min).
func durationFlag(c *cli.Context, name string, min time.Duration) (time.Duration, error) {
	d := c.Duration(name)
	if d < min {
		return 0, usageError("--%s %s: want at least %s", name, d, min)
	}
	return d, nil
}

// statusChoices lists every task status, in lifecycle order, for the help
// of a flag that takes one: "waiting, pending, ... or archived".
func statusChoices() string {
	names := make([]string, len(queue.Statuses))
	for i, st := range queue.Statuses {
		names[i] = string(st)
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}
