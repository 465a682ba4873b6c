package worker

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Readiness
//
// Ready answers an orchestrator's readiness probe from what the worker
// already tracks, without a request of its own. In order:
//
//	not ready  starting: Run has not registered the worker yet
//	not ready  stopped: Run returned
//	not ready  shutting down: Run's context was cancelled (or Abort was
//	           called); the worker claims nothing and drains
//	not ready  bucket unreachable: the last heartbeat that landed is older
//	           than ReadyBound (2 x HeartbeatInterval, at most three
//	           quarters of DeadAfter, when the worker stops claiming)
//	not ready  poll failing: the last poll of the ready index failed
//	ready      paused: every type the worker serves is paused (control.json)
//	ready      standby: shard leasing is on and no shard is free to hold
//	ready      claiming
//
// A poll failure lasts until the next poll succeeds (at most PollMax
// later once the bucket answers again), and a heartbeat failure is tried
// again every second, so a worker is ready again soon after the bucket is.

// Readiness is the worker's answer to a readiness probe.
type Readiness struct {
	// Ready is true while the worker reaches the bucket and claims (or is
	// deliberately idle: paused, or waiting for a shard lease).
	Ready bool `json:"ready"`
	// Reason says why, in a few words ("claiming", "paused: ...",
	// "bucket unreachable: ...").
	Reason string `json:"reason"`
	// Since is when the condition began, for the not-ready ones where it
	// is known (the last heartbeat that landed, the first failed poll, the
	// start of the shutdown); queue clock.
	Since time.Time `json:"since,omitzero"`
}

// Worker states for Ready.
const (
	stateNew int32 = iota
	stateRegistered
	stateDraining
	stateStopped
)

// health is what the dispatch and heartbeat loops publish for Ready.
type health struct {
	mu            sync.Mutex
	drainingSince time.Time
	pollErr       string    // the last poll's error ("" when it succeeded)
	pollErrSince  time.Time // the first of the current run of failed polls
	hbErr         string    // the last heartbeat's error ("" when it landed)
	allPaused     string    // the pause summary when every served type is paused
	standby       bool      // shard leasing on and no shard held
}

// Ready reports whether the worker is ready (see Readiness) and why. It is
// cheap (no request) and safe to call from any goroutine, before, during
// and after Run.
func (w *Worker) Ready() (bool, string) {
	r := w.Readiness()
	return r.Ready, r.Reason
}

// ReadyBound is how old the last heartbeat that landed may be before the
// worker reports the bucket unreachable: twice the heartbeat interval
// (one heartbeat missed), at most three quarters of DeadAfter (when the
// worker stops claiming and stops its handlers).
func (w *Worker) ReadyBound() time.Duration {
	return min(2*w.opts.HeartbeatInterval, w.stopAfter())
}

// Readiness is Ready with the time the condition began.
func (w *Worker) Readiness() Readiness {
	h := &w.health
	h.mu.Lock()
	defer h.mu.Unlock()
	switch w.state.Load() {
	case stateNew:
		return Readiness{Reason: "starting: not registered yet"}
	case stateStopped:
		return Readiness{Reason: "stopped"}
	case stateDraining:
		return Readiness{Reason: fmt.Sprintf("shutting down: %d running tasks to finish or release", w.runningCount()), Since: h.drainingSince}
	}
	last := time.Unix(0, w.lastBeat.Load())
	if age := w.clock.Now().Sub(last); age >= w.ReadyBound() {
		reason := fmt.Sprintf("bucket unreachable: no heartbeat has landed for %s", age.Round(time.Millisecond))
		if h.hbErr != "" {
			reason += ": " + h.hbErr
		}
		return Readiness{Reason: reason, Since: last}
	}
	if h.pollErr != "" {
		return Readiness{Reason: "poll failing: " + h.pollErr, Since: h.pollErrSince}
	}
	if h.allPaused != "" {
		return Readiness{Ready: true, Reason: "paused: not claiming " + h.allPaused}
	}
	if h.standby {
		return Readiness{Ready: true, Reason: "standby: no shard lease held (every shard is taken)"}
	}
	return Readiness{Ready: true, Reason: "claiming"}
}

// watchShutdown marks the worker draining as soon as ctx ends or Abort is
// called; the returned stop ends the watch.
func (w *Worker) watchShutdown(ctx context.Context) (stop func()) {
	done := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
		case <-w.abort:
		case <-done:
			return
		}
		w.setDraining()
	}()
	return func() { close(done) }
}

func (w *Worker) setDraining() {
	w.health.mu.Lock()
	defer w.health.mu.Unlock()
	if w.state.CompareAndSwap(stateRegistered, stateDraining) {
		w.health.drainingSince = w.clock.Now()
	}
}

// notePoll publishes the outcome of a poll (from the dispatch loop).
func (w *Worker) notePoll(err error, standby bool) {
	allPaused := ""
	if s := w.pauseSummary(); s != "" && w.allTypesPaused() {
		allPaused = s
	}
	h := &w.health
	h.mu.Lock()
	defer h.mu.Unlock()
	h.allPaused, h.standby = allPaused, standby
	if err == nil {
		h.pollErr, h.pollErrSince = "", time.Time{}
		return
	}
	if h.pollErr == "" {
		h.pollErrSince = w.clock.Now()
	}
	h.pollErr = err.Error()
}

// noteHeartbeat publishes the outcome of a heartbeat.
func (w *Worker) noteHeartbeat(err error) {
	h := &w.health
	h.mu.Lock()
	defer h.mu.Unlock()
	if err == nil {
		h.hbErr = ""
		return
	}
	h.hbErr = err.Error()
}

// allTypesPaused reports whether every served type is paused (dispatch
// loop only: it reads the control state).
func (w *Worker) allTypesPaused() bool {
	for _, t := range w.types {
		if !w.control.ctl.IsPaused(t) {
			return false
		}
	}
	return len(w.types) > 0
}
