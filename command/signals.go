package command

import (
	"os"
	"os/signal"
	"syscall"
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
