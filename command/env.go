package command

import (
	"io"
	"os"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/urfave/cli/v2"

	"github.com/qo-queue/qo/store"
)

// Env is what the commands use outside their flags: the standard streams,
// whether a stream is a terminal, and how the bucket is opened. Run builds
// the process's own (OSEnv); tests give New their own, so that several apps
// run at once, each with its own streams and bucket.
//
// A zero field means the process's own: os.Stdin, os.Stdout, os.Stderr, a
// terminal check on the file descriptor, the bucket named by the
// connection flags.
type Env struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// IsTerminal reports whether w is a terminal (progress bars and tables
	// are drawn only there).
	IsTerminal func(w io.Writer) bool
	// OpenStore opens the bucket of every command that works on a queue.
	OpenStore func(c *cli.Context) (store.Store, error)
	// OpenInitStore opens the bucket for qo init, where a bucket without
	// versioning is fine and --create-bucket creates a missing one.
	OpenInitStore func(c *cli.Context) (store.Store, error)
	// InitSettleTime is how long qo init re-reads the versioning and the
	// lifecycle rules it set before it concludes the server ignored them
	// (0: the queue's default).
	InitSettleTime time.Duration
}

// OSEnv is the process's environment: its standard streams and the
// bucket the connection flags name.
func OSEnv() Env { return Env{}.resolved() }

// resolved fills the zero fields of e with the process's own.
func (e Env) resolved() Env {
	if e.Stdin == nil {
		e.Stdin = os.Stdin
	}
	if e.Stdout == nil {
		e.Stdout = os.Stdout
	}
	if e.Stderr == nil {
		e.Stderr = os.Stderr
	}
	if e.IsTerminal == nil {
		e.IsTerminal = isTerminal
	}
	if e.OpenStore == nil {
		e.OpenStore = func(c *cli.Context) (store.Store, error) {
			s, err := openStore(c)
			if err != nil {
				return nil, err // not a typed nil in the interface
			}
			return s, nil
		}
	}
	if e.OpenInitStore == nil {
		e.OpenInitStore = openInitStore
	}
	return e
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}

// envKey is the key of the app's Env in cli.App.Metadata.
const envKey = "qo.env"

// envOf returns the Env of the app c runs in (the process's own for an
// app New did not build).
func envOf(c *cli.Context) *Env {
	if c != nil && c.App != nil {
		if e, ok := c.App.Metadata[envKey].(*Env); ok {
			return e
		}
	}
	e := OSEnv()
	return &e
}
