// Package command is qo's command line: the commands, their flags and
// their output. Package main only calls Run.
//
// New builds the app afresh on every call: it calls one constructor per
// command (statusCommand, workerCommand, devCommand, ...; a command group
// such as qo schedule or qo workflow calls one per subcommand) and says
// there which commands talk to a bucket and so get the connection flags
// (--endpoint, --bucket, --region, --path-style, --profile, which work
// before or after the command name). Nothing is registered at init time
// and no command or flag value is shared between two apps: urfave/cli
// writes to both while it runs, and tests run several apps at once.
//
// What a command uses outside its flags comes from the Env given to New
// and Run (env.go): the standard streams, whether a stream is a terminal,
// and the openers of the bucket (the queue commands' and qo init's).
// main passes OSEnv, the process's own; a test passes its own, so the
// command tests run in parallel (t.Parallel) with no package-level hook to
// swap. A command reads it with envOf(c).
//
// The command kit (kit.go) is how a command is written: a typed options
// struct read from the command line, its Validate (usage errors naming the
// flag and the fix, before anything is contacted), a run step
// run(ctx, env, opts) (result, error) that does the work, the result's
// text rendering, and its --json shape (emitJSON of output.go: the result
// itself unless the kit says otherwise). kit[O, R]{...}.action() runs them
// in that order, so a command prints all of its output or none. qo
// schedule, qo workflow, qo list and qo version are written so; the older
// commands read their flags in their action and move to the kit as they
// change.
//
// Each command or command group lives in its own file, named after it
// (status.go, worker.go, pause_resume.go, ...); bulk.go is qo submit
// --file, workflow.go holds qo submit --workflow with qo workflow, and
// devview.go what qo dev shows while it runs. The
// helpers the commands share live in files named for what they are:
//
//	app.go           New and Run, usage errors, the one-line error report
//	env.go           Env: the streams, the terminal check, the store openers
//	kit.go           the command kit: options, Validate, run, text, JSON
//	connect.go       the connection flags, the store and the queue they open
//	exitcodes.go     the exit codes and the sentinel errors that map to them
//	output.go        text and JSON output: times, one-line text, tables
//	args.go          positional arguments, task ids, standard input
//	flags.go         flag helpers, and the --help and --version flags
//	handlerflags.go  --exec, --env, --env-file and --limit (run-worker, dev)
//	logging.go       the logger of long-running commands
//	signals.go       the second-signal handling of long-running commands
//	metrics.go       --metrics-addr: Prometheus metrics and the probes
//	httpserver.go    the HTTP server of qo serve and qo ui serve
//
// The command layer reads flags, prints and maps errors to exit codes;
// what qo does belongs below it, in package queue, worker, monitor and the
// others (qo dev only drives package devenv). Errors are printed once, by
// Run, as one line ("qo: ...") and exit with the code exitCode gives them
// (see exitcodes.go; scripts branch on them, so they never change
// meaning).
//
// What users see (output, errors, exit codes) is tested as scripts in
// testdata/script, one story per command or group of commands, each
// telling what a user does and sees, errors included, run by TestScripts
// (script_test.go) against a real S3 server; helpers and edge cases stay
// in Go tests. A new command gets a story.
package command
