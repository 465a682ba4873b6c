package worker

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

// Run runs w until ctx is cancelled or the process receives SIGINT or
// SIGTERM, the way qo worker does, so a program needs no signal code:
//
//   - the first signal starts a graceful shutdown: no more claims, the
//     running tasks get Options.ShutdownTimeout to finish, what is left
//     is released (pending again, no retry counted);
//   - a second signal releases the running tasks at once (Abort).
//
// It returns what w.Run returns: nil after a shutdown. While it runs the
// signals do not kill the process; afterwards their default action is
// back.
func Run(ctx context.Context, w *Worker) error {
	return RunNotify(ctx, w, nil)
}

// RunNotify is Run calling onSignal (when not nil) with the count of
// signals received so far, 1 for the first, before the worker acts on
// each one: qo worker turns its health probes to 503 there.
func RunNotify(ctx context.Context, w *Worker, onSignal func(n int)) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	done := make(chan struct{})
	defer close(done)
	go func() {
		for n := 1; ; n++ {
			select {
			case <-sigs:
			case <-done:
				return
			}
			if onSignal != nil {
				onSignal(n)
			}
			if n == 1 {
				w.log.Info("signal received: shutting down (send it again to release running tasks at once)")
				cancel()
				continue
			}
			w.log.Warn("second signal: releasing running tasks now")
			w.Abort()
		}
	}()
	return w.Run(ctx)
}
