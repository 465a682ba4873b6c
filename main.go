// Command qo is a distributed task queue that needs nothing but an
// S3-compatible bucket.
//
// The commands live in one file per group (cmd_*.go); each file appends its
// commands to the package-level commands slice in an init function, and
// newApp sorts them by name. main.go only builds the app, owns the global
// connection flags and turns errors into one line and an exit code
// (exitcodes.go).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"reflect"
	"regexp"
	"runtime"
	"runtime/debug"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	_ "time/tzdata" // schedules name IANA zones; containers often lack zoneinfo

	"github.com/urfave/cli/v2"
	// TLS to S3 works in an image with no CA file (the release image is
	// empty but for qo): these roots are used only when the system has none.
	_ "golang.org/x/crypto/x509roots/fallback"

	"github.com/qo-queue/qo/internal/termsafe"
	"github.com/qo-queue/qo/store/gateway"
)

// Set at build time with -ldflags "-X main.version=... -X main.commit=... -X main.date=...".
var (
	version = "dev"
	commit  = ""
	date    = ""
)

// commands holds every top-level command. Files of this package append to
// it in their init functions; newApp sorts it by name.
var commands []*cli.Command

// localCommands are the commands that do not talk to a bucket, so they do
// not get the connection flags (see localCommand).
var localCommands = map[*cli.Command]bool{}

// localCommand marks cmd as not talking to a bucket and returns it.
func localCommand(cmd *cli.Command) *cli.Command {
	localCommands[cmd] = true
	return cmd
}

func main() {
	gateway.MaybeRunChild() // returns unless this process is the embedded gateway's child
	os.Exit(runApp(os.Args, os.Stdout, os.Stderr))
}

// runApp runs the app with args and returns the exit code, having printed any
// error as one line on stderr.
func runApp(args []string, stdout, stderr io.Writer) int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The first interrupt cancels the context so commands wind down; a
	// second one gets the default action (the process ends).
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	go func() {
		select {
		case <-sigs:
			signal.Stop(sigs)
			cancel()
		case <-ctx.Done():
		}
	}()

	app := newApp()
	app.Writer = stdout
	app.ErrWriter = stderr
	err := app.RunContext(ctx, args)
	if err == nil {
		return exitOK
	}
	fmt.Fprintln(stderr, errorLine(err))
	return exitCode(err)
}

// errorLine renders err as the one line qo prints: "qo: ...".
func errorLine(err error) string {
	msg := err.Error()
	if errors.Is(err, context.Canceled) {
		msg = "interrupted"
	}
	msg = strings.Join(strings.Fields(strings.ReplaceAll(msg, "\n", "; ")), " ")
	msg = strings.TrimPrefix(msg, "qo: ")
	// An error may quote the bucket (a key, a task's error): escape it.
	return "qo: " + termsafe.Line(msg)
}

const appDescription = `qo keeps tasks as JSON objects in one S3-compatible bucket. Every state change
is a conditional PUT (If-Match on the object's ETag) and bucket versioning is the
audit trail, so there is no server to run: only workers and this command.

Connection (flags or their environment variables; the flags work before or
after the command name):
  --endpoint URL    S3_ENDPOINT      e.g. http://127.0.0.1:9000; empty means AWS S3
  --bucket NAME     S3_BUCKET        the queue's bucket (required)
  --region NAME     S3_REGION, AWS_REGION (default us-east-1)
  --path-style      S3_PATH_STYLE    address the bucket as ENDPOINT/BUCKET (the
                                     default when --endpoint is set)
  --profile NAME    AWS_PROFILE      a profile of the shared AWS config files
Credentials come from the standard AWS chain: AWS_ACCESS_KEY_ID and
AWS_SECRET_ACCESS_KEY, AWS_PROFILE, SSO, web identity, instance roles.
The bucket must have versioning on; QO_ALLOW_NO_VERSIONING=1 runs without it
(no task history).

Examples:
  # Check that a bucket can be trusted with a queue (MinIO on this machine):
  export S3_ENDPOINT=http://127.0.0.1:9000 S3_BUCKET=jobs
  export AWS_ACCESS_KEY_ID=minioadmin AWS_SECRET_ACCESS_KEY=minioadmin
  qo doctor

  # The same on AWS S3, as JSON for scripts, adding the recommended
  # lifecycle rules for the index prefixes:
  qo doctor --bucket jobs --region eu-west-1 --fix-lifecycle --json

  # Help on one command:
  qo doctor --help

Exit codes: 0 ok, 1 internal error, 2 usage or invalid input, 3 not found,
4 conflict or invalid transition, 5 S3 unreachable, credentials or bucket
problem, 6 the task ended failed, cancelled or expired (qo wait), 7 qo wait
--timeout ran out, 130 interrupted.`

// connectionFlags returns fresh instances of the connection flags (a flag
// value may not be shared between the app and a command).
func connectionFlags() []cli.Flag {
	const cat = "Connection"
	return []cli.Flag{
		&cli.StringFlag{Name: "endpoint", Category: cat, EnvVars: []string{"S3_ENDPOINT"},
			Usage: "S3 endpoint `URL`, e.g. http://127.0.0.1:9000 (empty: AWS S3)"},
		&cli.StringFlag{Name: "bucket", Category: cat, EnvVars: []string{"S3_BUCKET"},
			Usage: "the queue's bucket `NAME`"},
		&cli.StringFlag{Name: "region", Category: cat, EnvVars: []string{"S3_REGION", "AWS_REGION"},
			Usage: "S3 region `NAME` (default us-east-1)"},
		&cli.BoolFlag{Name: "path-style", Category: cat, EnvVars: []string{"S3_PATH_STYLE"},
			Usage: "address the bucket as ENDPOINT/BUCKET (default: on when --endpoint is set)"},
		&cli.StringFlag{Name: "profile", Category: cat, EnvVars: []string{"AWS_PROFILE"},
			Usage: "shared AWS config `PROFILE` for credentials"},
	}
}

// newApp builds the app. Every call returns fresh command and flag values:
// urfave/cli writes to them while it runs, so two apps (tests run several
// at once) must not share them.
func newApp() *cli.App {
	cmds := make([]*cli.Command, 0, len(commands))
	seen := map[*cli.Command]bool{}
	for _, orig := range commands {
		cmd := cloneCommand(orig)
		prepareCommand(cmd, !localCommands[orig], seen)
		cmds = append(cmds, cmd)
	}
	sort.Slice(cmds, func(i, j int) bool { return cmds[i].Name < cmds[j].Name })
	app := &cli.App{
		Name:                   "qo",
		Usage:                  "a distributed task queue on one S3 bucket",
		UsageText:              "qo [connection flags] COMMAND [flags] [arguments...]",
		Description:            appDescription,
		Version:                versionString(),
		Flags:                  connectionFlags(),
		Commands:               cmds,
		HideHelpCommand:        true,
		UseShortOptionHandling: true,
		Suggest:                true,
		// Errors are printed once, by runApp, as one line.
		ExitErrHandler: func(*cli.Context, error) {},
		OnUsageError:   onUsageError,
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return usageError("unknown command %q: run 'qo --help' for the list of commands", c.Args().First())
			}
			return cli.ShowAppHelp(c)
		},
	}
	return app
}

// cloneCommand copies cmd, its flags and its subcommands.
func cloneCommand(cmd *cli.Command) *cli.Command {
	c := *cmd
	c.Flags = make([]cli.Flag, len(cmd.Flags))
	for i, f := range cmd.Flags {
		c.Flags[i] = cloneFlag(f)
	}
	c.Subcommands = nil
	for _, sub := range cmd.Subcommands {
		if sub.Name != "help" {
			c.Subcommands = append(c.Subcommands, cloneCommand(sub))
		}
	}
	return &c
}

// cloneFlag copies a flag held by pointer to a struct (every urfave/cli
// flag type); other flags are returned as they are.
func cloneFlag(f cli.Flag) cli.Flag {
	v := reflect.ValueOf(f)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return f
	}
	c := reflect.New(v.Elem().Type())
	c.Elem().Set(v.Elem())
	if g, ok := c.Interface().(*cli.GenericFlag); ok {
		// A generic flag's value is a pointer: each run gets its own.
		if v, ok := g.Value.(freshGeneric); ok {
			g.Value = v.fresh()
		}
		if d, ok := g.Destination.(freshGeneric); ok {
			g.Destination = d.fresh()
		}
	}
	if cf, ok := c.Interface().(cli.Flag); ok {
		return cf
	}
	return f
}

// freshGeneric is a generic flag value that can make an empty copy of
// itself.
type freshGeneric interface{ fresh() cli.Generic }

// prepareCommand gives cmd (and its subcommands) qo's usage-error handling
// and, when withConnection, the connection flags it lacks. urfave/cli adds
// its own help command (one shared value) under commands with
// subcommands, so commands are visited once each.
func prepareCommand(cmd *cli.Command, withConnection bool, seen map[*cli.Command]bool) {
	if seen[cmd] || cmd.Name == "help" {
		return
	}
	seen[cmd] = true
	// No "help" subcommands: --help works everywhere, and urfave/cli's shared
	// help command would otherwise end up as its own subcommand, a cycle
	// for anything that walks the command tree.
	cmd.HideHelpCommand = true
	if cmd.OnUsageError == nil {
		cmd.OnUsageError = onUsageError
	}
	if withConnection {
		for _, f := range connectionFlags() {
			if !hasFlag(cmd, f.Names()[0]) {
				cmd.Flags = append(cmd.Flags, f)
			}
		}
	}
	for _, sub := range cmd.Subcommands {
		prepareCommand(sub, withConnection, seen)
	}
}

// staticBoolFlag is a boolean flag that keeps no state of its own. It
// replaces urfave/cli's process-wide --help and --version flags, which
// are written to on every run (a data race when tests run apps
// concurrently).
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

func init() {
	cli.HelpFlag = &staticBoolFlag{names: []string{"help", "h"}, usage: "show help"}
	cli.VersionFlag = &staticBoolFlag{names: []string{"version", "v"}, usage: "print the version"}
}

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

func onUsageError(c *cli.Context, err error, isSubcommand bool) error {
	help := "qo --help"
	if c.Command != nil && c.Command.Name != "" {
		help = "qo " + c.Command.Name + " --help"
	}
	return usageError("%s (see '%s')", explainFlagError(c.Command, err), help)
}

// flagValueError matches the flag package's "invalid value "30" for flag
// -timeout: parse error".
var flagValueError = regexp.MustCompile(`^invalid value "(.*)" for flag -+([A-Za-z0-9-]+): parse error$`)

// explainFlagError says what a flag whose value did not parse wants,
// where the flag package only says "parse error".
func explainFlagError(cmd *cli.Command, err error) string {
	m := flagValueError.FindStringSubmatch(err.Error())
	if m == nil || cmd == nil {
		return err.Error()
	}
	want := ""
	for _, f := range cmd.Flags {
		if !slices.Contains(f.Names(), m[2]) {
			continue
		}
		switch f.(type) {
		case *cli.DurationFlag:
			want = "a duration such as 30s, 5m or 1h30m (a unit is required)"
		case *cli.IntFlag, *cli.Int64Flag, *cli.UintFlag:
			want = "a whole number"
		case *cli.Float64Flag:
			want = "a number"
		case *cli.BoolFlag:
			want = "true or false"
		}
	}
	if want == "" {
		return err.Error()
	}
	return fmt.Sprintf("--%s %q: want %s", m[2], m[1], want)
}

// connString returns the value of a connection flag, wherever on the
// command line it was given (before or after the command name; after wins),
// else its environment variable, else its default.
func connString(c *cli.Context, name string) string {
	base, _ := connEnv(name)
	if ctx := flagSetIn(c, name, func(ctx *cli.Context) bool { return ctx.String(name) != base }); ctx != nil {
		return ctx.String(name)
	}
	return base
}

// connBool is connString for a boolean flag; set reports whether it was
// given at all (on the command line or in the environment).
func connBool(c *cli.Context, name string) (value, set bool) {
	env, inEnv := connEnv(name)
	base := false
	if inEnv {
		base, _ = strconv.ParseBool(env) // urfave/cli already refused a malformed value
	}
	if ctx := flagSetIn(c, name, func(ctx *cli.Context) bool { return ctx.Bool(name) != base }); ctx != nil {
		return ctx.Bool(name), true
	}
	return base, inEnv
}

// connEnv returns the value of the first environment variable of
// connection flag name that is set (the one urfave/cli applies).
func connEnv(name string) (string, bool) {
	for _, f := range connectionFlags() {
		if f.Names()[0] != name {
			continue
		}
		if ev, ok := f.(interface{ GetEnvVars() []string }); ok {
			for _, v := range ev.GetEnvVars() {
				if val, ok := os.LookupEnv(v); ok {
					return strings.TrimSpace(val), true
				}
			}
		}
	}
	return "", false
}

// flagSetIn returns the innermost context in which flag name was set and
// fromCommandLine holds. urfave/cli reports flags set by their environment
// variable as set in every context that defines them, so callers tell the
// command line apart by comparing with the environment's value.
func flagSetIn(c *cli.Context, name string, fromCommandLine func(*cli.Context) bool) *cli.Context {
	for _, ctx := range c.Lineage() {
		if ctx.App == nil {
			continue // the root context has no flags
		}
		for _, n := range ctx.LocalFlagNames() {
			if n == name && fromCommandLine(ctx) {
				return ctx
			}
		}
	}
	return nil
}

func versionString() string {
	v, c, d := buildInfo()
	s := v
	if c != "" {
		s += " (commit " + c
		if d != "" {
			s += ", built " + d
		}
		s += ")"
	}
	return s
}

// buildInfo returns version, commit and date: from -ldflags when set, else
// from the module and VCS information Go embeds in the binary.
func buildInfo() (v, c, d string) {
	v, c, d = version, commit, date
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return v, c, d
	}
	if v == "dev" && info.Main.Version != "" && info.Main.Version != "(devel)" {
		v = info.Main.Version
	}
	for _, s := range info.Settings {
		switch {
		case s.Key == "vcs.revision" && c == "":
			c = s.Value
			if len(c) > 12 {
				c = c[:12]
			}
		case s.Key == "vcs.time" && d == "":
			d = s.Value
		}
	}
	return v, c, d
}

func init() {
	commands = append(commands, localCommand(&cli.Command{
		Name:      "version",
		Usage:     "print qo's version",
		UsageText: "qo version [--json]",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "json", Usage: "print as JSON"},
		},
		Action: func(c *cli.Context) error {
			v, cm, d := buildInfo()
			if c.Bool("json") {
				return emitJSON(c.App.Writer, map[string]string{
					"version": v, "commit": cm, "date": d, "go": runtime.Version(),
					"os": runtime.GOOS, "arch": runtime.GOARCH,
				})
			}
			_, err := fmt.Fprintf(c.App.Writer, "qo %s %s/%s %s\n", versionString(), runtime.GOOS, runtime.GOARCH, runtime.Version())
			return err
		},
	}))
}
