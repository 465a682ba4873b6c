// Package command is qo's command line: the commands, their flags and
// their output. Package main only calls Run.
//
// New builds the app afresh on every call: it calls one constructor per
// command (statusCommand, workerCommand, devCommand, ...) and says there
// which commands talk to a bucket and so get the connection flags
// (--endpoint, --bucket, --region, --path-style, --profile, which work
// before or after the command name). Nothing is registered at init time
// and no command or flag value is shared between two apps: urfave/cli
// writes to both while it runs, and tests run several apps at once.
//
// Each command or command group lives in its own file, named after it
// (status.go, worker.go, pause_resume.go, ...); bulk.go is qo submit
// --file and workflow.go holds qo submit --workflow with qo workflow. The
// helpers the commands share live in files named for what they are:
//
//	app.go           New and Run, usage errors, the one-line error report
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
// testdata/script, one story per file, run by TestScripts
// (script_test.go) against a real S3 server; helpers and edge cases stay
// in Go tests.
package command
