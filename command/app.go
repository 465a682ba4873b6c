package command

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/agnivade/levenshtein"
	"github.com/urfave/cli/v2"

	"github.com/qo-queue/qo/httpapi"
	"github.com/qo-queue/qo/internal/termsafe"
	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store/doctor"
)

// Run runs qo with args (os.Args) in env (OSEnv for the process's own) and
// returns the process exit code, having printed any error as one line on
// env's stderr.
func Run(args []string, env Env, build Build) int {
	env = env.resolved()
	stderr := env.Stderr
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

	app := New(build, env)
	err := app.RunContext(ctx, args)
	if err == nil {
		return exitOK
	}
	code := exitCode(err)
	if jsonRequested(args) {
		fmt.Fprintln(stderr, errorJSON(err, code))
	} else {
		fmt.Fprintln(stderr, errorLine(err))
	}
	return code
}

// jsonRequested reports whether args ask for JSON output (--json, the last
// one winning, before any "--"), read from the arguments so that errors
// found before a command runs (a bad flag) are JSON too.
func jsonRequested(args []string) bool {
	on := false
	for _, a := range args[min(1, len(args)):] {
		if a == "--" {
			break
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || name != "json" {
			continue
		}
		if !hasValue {
			on = true
			continue
		}
		if b, err := strconv.ParseBool(value); err == nil {
			on = b
		}
	}
	return on
}

// errorJSON renders err as one line of JSON, the body the HTTP API
// answers errors with: {"error": {"code": "not_found", "message": "..."}}.
// exit is the process exit code, which picks the code where the error
// matches no sentinel the API knows (a usage error, qo wait's outcomes).
func errorJSON(err error, exit int) string {
	var body httpapi.Error
	body.Error.Code = errorCodeName(err, exit)
	body.Error.Message = strings.TrimPrefix(errorLine(err), "qo: ")
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // "->" stays readable
	if jerr := enc.Encode(body); jerr != nil {
		return errorLine(err)
	}
	return strings.TrimSuffix(string(termsafe.JSON([]byte(b.String()))), "\n")
}

// errorCodeName is the stable code of err for --json: the HTTP API's
// when it agrees with the exit code, else one named after the exit code.
func errorCodeName(err error, exit int) string {
	_, api := httpapi.ErrorCode(err)
	switch exit {
	case exitUsage:
		return "invalid_input"
	case exitNotFound:
		return "not_found"
	case exitConflict:
		if api == "invalid_transition" || api == "idempotency_mismatch" || api == "precondition_failed" {
			return api
		}
		return "conflict"
	case exitStorage:
		if errors.Is(err, doctor.ErrUnsafe) {
			return "storage_unsafe"
		}
		return "storage_unavailable"
	case exitTaskFailed:
		return "task_failed"
	case exitWaitTimeout:
		return "wait_timeout"
	case exitInterrupted:
		return "interrupted"
	}
	return "internal"
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
--timeout ran out, 130 interrupted.

Errors: one line on stderr, "qo: ..."; with --json, one line of JSON on
stderr instead, the body qo serve answers errors with:
  {"error":{"code":"not_found","message":"task ... does not exist ..."}}
Codes: invalid_input (exit 2), not_found (3), conflict, invalid_transition,
idempotency_mismatch, precondition_failed (4), storage_unavailable,
storage_unsafe (5), task_failed (6), wait_timeout (7), interrupted (130),
internal (1).`

// New builds the qo app, to run in env (its zero fields are the process's
// own). Every call makes its commands and flags afresh: urfave/cli writes
// to them while it runs, so two apps (tests run several at once) share
// none.
func New(build Build, env Env) *cli.App {
	build = build.resolved()
	env = env.resolved()
	// The commands that talk to a bucket: each gets the connection flags.
	withBucket := []*cli.Command{
		archiveCommand(), benchCommand(), cancelCommand(), doctorCommand(), historyCommand(),
		initCommand(), limitCommand(), limitsCommand(), listCommand(), migrateCommand(), monitorCommand(), pauseCommand(),
		repairCommand(), replayCommand(), resumeCommand(), scheduleCommand(), serveCommand(),
		statsCommand(), statusCommand(), submitCommand(), tailCommand(), tuiCommand(),
		uiCommand(), waitCommand(), workerCommand(build), workersCommand(), workflowCommand(),
	}
	// The commands that do not: they get no connection flags.
	local := []*cli.Command{
		completionCommand(), completeCommand(build), devCommand(build), gatewayCommand(), versionCommand(build),
	}
	for _, cmd := range withBucket {
		prepareCommand(cmd, true)
	}
	for _, cmd := range local {
		prepareCommand(cmd, false)
	}
	for _, cmd := range withBucket {
		if slices.Contains(operatorCommands, cmd.Name) {
			recordActor(cmd, "qo")
		}
	}
	cmds := append(withBucket, local...)
	sort.Slice(cmds, func(i, j int) bool { return cmds[i].Name < cmds[j].Name })
	return &cli.App{
		Name:                   "qo",
		Usage:                  "a distributed task queue on one S3 bucket",
		UsageText:              "qo [connection flags] COMMAND [flags] [arguments...]",
		Description:            appDescription,
		Version:                build.String(),
		Reader:                 env.Stdin,
		Writer:                 env.Stdout,
		ErrWriter:              env.Stderr,
		Metadata:               map[string]any{envKey: &env, openedKey: &openedQueues{}},
		Flags:                  connectionFlags(),
		Commands:               cmds,
		HideHelpCommand:        true,
		UseShortOptionHandling: true,
		Suggest:                true,
		// Errors are printed once, by Run, as one line.
		ExitErrHandler: func(*cli.Context, error) {},
		After:          settleQueues,
		OnUsageError:   onUsageError,
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				name := c.Args().First()
				if near := nearestCommand(c.App.Commands, name); near != "" {
					return usageError("unknown command %q: did you mean %q? (run 'qo --help' for the list of commands)", name, near)
				}
				return usageError("unknown command %q: run 'qo --help' for the list of commands", name)
			}
			return cli.ShowAppHelp(c)
		},
	}
}

// operatorCommands are the commands whose writes are operator actions:
// each records who ran it, as "user@host, qo COMMAND" (queue.WithActor).
// The worker's, the monitor's and the scheduler's own writes record none;
// the console (qo tui, qo dev) names itself (tui.New).
var operatorCommands = []string{"archive", "cancel", "pause", "replay", "resume", "schedule", "workflow"}

// recordActor makes cmd (and its subcommands) act as queue.CLIActor of
// its full name, e.g. "alice@ops-1, qo schedule enable".
func recordActor(cmd *cli.Command, parent string) {
	tool := parent + " " + cmd.Name
	if action := cmd.Action; action != nil {
		cmd.Action = func(c *cli.Context) error {
			c.Context = queue.WithActor(c.Context, queue.CLIActor(tool))
			return action(c)
		}
	}
	for _, sub := range cmd.Subcommands {
		recordActor(sub, tool)
	}
}

// unknownSubcommand is the action of a command group (qo schedule, ...):
// its help without arguments, else a usage error naming the nearest
// subcommand.
func unknownSubcommand(c *cli.Context) error {
	if c.NArg() == 0 {
		return cli.ShowSubcommandHelp(c)
	}
	name, group := c.Args().First(), "qo "+c.Command.Name
	if near := nearestCommand(c.Command.Subcommands, name); near != "" {
		return usageError("unknown command %q of %s: did you mean %q? (run '%s --help' for its commands)", name, group, near, group)
	}
	return usageError("unknown command %q of %s: run '%s --help' for its commands", name, group, group)
}

// nearestCommand is the command name (or alias) closest to a mistyped
// one, when a typo (at most two edits) explains the difference, the one
// of the typed length among equals (a swap of two letters is two edits);
// "" when none is that close.
func nearestCommand(cmds []*cli.Command, typed string) string {
	best, bestDist := "", 3
	for _, cmd := range cmds {
		for _, name := range cmd.Names() {
			d := levenshtein.ComputeDistance(typed, name)
			if d < bestDist || (d == bestDist && best != "" && len(name) == len(typed) && len(best) != len(typed)) {
				best, bestDist = name, d
			}
		}
	}
	if bestDist >= len(typed) {
		return "" // every letter changed: no typo
	}
	return best
}

// prepareCommand gives cmd (and its subcommands) qo's usage-error handling
// and, when withConnection, the connection flags it lacks.
func prepareCommand(cmd *cli.Command, withConnection bool) {
	// No "help" subcommands: --help works everywhere, and urfave/cli's shared
	// help command would otherwise end up as its own subcommand, a cycle
	// for anything that walks the command tree.
	cmd.HideHelpCommand = true
	if cmd.OnUsageError == nil {
		cmd.OnUsageError = onUsageError
	}
	if len(cmd.Subcommands) > 0 && cmd.Action == nil {
		// urfave/cli answers an unknown subcommand with "No help topic"
		// and exit 3 (not found); it is a usage error, with a guess.
		cmd.Action = unknownSubcommand
	}
	if withConnection {
		for _, f := range connectionFlags() {
			if !hasFlag(cmd, f.Names()[0]) {
				cmd.Flags = append(cmd.Flags, f)
			}
		}
	}
	for _, sub := range cmd.Subcommands {
		prepareCommand(sub, withConnection)
	}
}

func onUsageError(c *cli.Context, err error, isSubcommand bool) error {
	help := "qo --help"
	if c.Command != nil && c.Command.Name != "" && c.Command.Name != c.App.Name {
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
