package worker

import (
	"time"
)

// abortGrace bounds how long an aborted shutdown waits for the handlers it
// stopped: exec handlers are killed at once, so only a Go handler that
// ignores its context takes longer.
const abortGrace = 2 * time.Second

// drain waits for running handlers. Past ShutdownTimeout (or at Abort) it
// stops the ones still running and waits for them to return: each task is
// released by its own runTask once its handler has returned (an exec
// handler: once its process exited, after SIGTERM and, at the kill grace,
// SIGKILL), never while the handler still runs, so no other worker can
// start the task meanwhile. A handler that has not returned HandlerGrace
// after it was stopped (a Go handler that ignores its context) keeps its
// task: drain waits for it until its lease expires (the monitor's
// ExpireLease is then the way back) or Abort. It reports whether Abort
// left handlers running, whose tasks the registry entry must then keep
// (see Run).
func (w *Worker) drain() (keepEntry bool) {
	n := w.runningCount()
	allDone := make(chan struct{})
	go func() {
		w.tasks.Wait()
		close(allDone)
	}()
	if n == 0 {
		<-allDone
		return false
	}
	w.log.Info("shutting down: waiting for running tasks", "running", n, "timeout", w.opts.ShutdownTimeout.String())
	timer := time.NewTimer(w.opts.ShutdownTimeout)
	defer timer.Stop()
	cause := ErrShuttingDown
	select {
	case <-allDone:
		w.log.Info("running tasks finished")
		return false
	case <-timer.C:
	case <-w.abort:
		cause = errAbort
	}
	running := w.snapshotRunning()
	w.log.Warn("stopping the handlers still running; each task is released once its handler has returned", "running", len(running), "reason", cause)
	for _, rt := range running {
		rt.cancel(cause)
	}
	aborted := cause == errAbort
	grace := w.opts.HandlerGrace
	if aborted {
		grace = min(grace, abortGrace)
	}
	done, ab := w.awaitHandlers(allDone, grace, aborted, time.Time{})
	if done {
		return false
	}
	if !aborted && !ab {
		until := w.lastLeaseExpiry()
		w.log.Error("handlers did not return after they were stopped: their tasks are not released while they run; waiting until they return or their leases expire (stop waiting with a second signal, or Abort)",
			"running", w.runningCount(), "handler_grace", w.opts.HandlerGrace.String(), "leases_expire", until)
		if done, ab = w.awaitHandlers(allDone, 0, false, until); done {
			return false
		}
		if !ab {
			w.log.Warn("the leases of the handlers still running have expired: their tasks are the monitor's to take back", "running", w.runningCount())
			return false
		}
	}
	if !aborted {
		// Aborted while waiting: exec handlers still running are killed
		// now (see handlerEnv); wait briefly for them.
		if done, _ := w.awaitHandlers(allDone, min(w.opts.HandlerGrace, abortGrace), true, time.Time{}); done {
			return false
		}
	}
	w.log.Error("shutdown aborted while handlers still run: their tasks are not released; the registry entry is left for the monitor, which takes them back once it is older than the liveness bound",
		"running", w.runningCount(), "dead_after", w.opts.DeadAfter.String())
	return true
}

// awaitHandlers waits until every handler returned (done), for at most d
// (when d > 0) and until the queue clock reaches until (when not zero).
// Unless aborted already, an Abort ends the wait (ab).
func (w *Worker) awaitHandlers(allDone <-chan struct{}, d time.Duration, aborted bool, until time.Time) (done, ab bool) {
	var timeout <-chan time.Time
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		timeout = t.C
	}
	var abort <-chan struct{}
	if !aborted {
		abort = w.abort
	}
	// The queue clock is not the machine's: look at it every supervisePoll.
	tick := time.NewTicker(supervisePoll)
	defer tick.Stop()
	for {
		select {
		case <-allDone:
			return true, false
		case <-abort:
			return false, true
		case <-timeout:
			return false, false
		case <-tick.C:
			if !until.IsZero() && !w.clock.Now().Before(until) {
				return false, false
			}
		}
	}
}

// lastLeaseExpiry is the latest lease_expires_at of the running tasks.
func (w *Worker) lastLeaseExpiry() time.Time {
	var last time.Time
	for _, rt := range w.snapshotRunning() {
		if rt.expires.After(last) {
			last = rt.expires
		}
	}
	return last
}
