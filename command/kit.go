package command

import (
	"context"
	"io"

	"github.com/urfave/cli/v2"

	"github.com/qo-queue/qo/queue"
)

// The command kit: a command written as typed steps rather than one
// closure over *cli.Context.
//
//	options  reads the command line (flags and arguments) into a struct;
//	Validate checks it, naming the flag and the fix, before anything is
//	         contacted;
//	run      does the work and returns a result, writing nothing but
//	         warnings (on env.Stderr);
//	text     renders the result for people;
//	json     is the --json shape of the result (nil: the result itself).
//
// A command's action is then kit[O, R]{...}.action(): usage errors come
// first, then the bucket, and the output is the result's text or, with
// --json, its JSON (emitJSON), so no command prints half its output before
// failing.

// validator is a command's options: Validate says what is wrong with them
// as a usage error (exit 2) naming the flag or argument and the fix.
type validator interface{ Validate() error }

// kit is one command: O its options, R its result.
type kit[O validator, R any] struct {
	options func(c *cli.Context) (O, error)
	run     func(ctx context.Context, env *runEnv, opts O) (R, error)
	text    func(w io.Writer, r R) error
	json    func(r R) any
}

// action is the cli.ActionFunc of the command k describes.
func (k kit[O, R]) action() cli.ActionFunc {
	return func(c *cli.Context) error {
		opts, err := k.options(c)
		if err != nil {
			return err
		}
		if err := opts.Validate(); err != nil {
			return err
		}
		r, err := k.run(c.Context, newRunEnv(c), opts)
		if err != nil {
			return err
		}
		if c.Bool("json") {
			var v any = r
			if k.json != nil {
				v = k.json(r)
			}
			return emitJSON(c.App.Writer, v)
		}
		return k.text(c.App.Writer, r)
	}
}

// runEnv is what a command's run step may use: the app's Env and the
// queue its connection flags name.
type runEnv struct {
	*Env
	// openQueue connects to the bucket and opens the queue in it.
	openQueue func() (*queue.Queue, error)
}

func newRunEnv(c *cli.Context) *runEnv {
	return &runEnv{Env: envOf(c), openQueue: func() (*queue.Queue, error) { return openQueue(c) }}
}

// noOptions are the options of a command that takes no arguments and
// whose flags need no checking.
type noOptions struct{}

func (noOptions) Validate() error { return nil }

// readNoOptions refuses positional arguments.
func readNoOptions(c *cli.Context) (noOptions, error) { return noOptions{}, noArgs(c) }
