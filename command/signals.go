package command

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"syscall"

	"github.com/urfave/cli/v2"
)

// onSignals calls f with a running count for each SIGINT or SIGTERM until
// the returned stop is called. While registered, signals do not kill the
// process.
func onSignals(f func(n int)) (stop func()) {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		n := 0
		for {
			select {
			case <-sigs:
				n++
				f(n)
			case <-done:
				return
			}
		}
	}()
	return func() {
		signal.Stop(sigs)
		close(done)
	}
}

// serviceAction wraps the action of a long-running service (worker,
// monitor, serve): a SIGTERM or SIGINT that arrives while it is still
// starting (opening the queue, registering) stops it as cleanly as one
// that arrives later, with exit code 0, as an orchestrator stopping a pod
// early expects. Other commands report an interrupt (exit 130).
func serviceAction(action cli.ActionFunc) cli.ActionFunc {
	return func(c *cli.Context) error {
		err := action(c)
		if err != nil && c.Context.Err() != nil && errors.Is(err, context.Canceled) {
			return nil
		}
		return err
	}
}
