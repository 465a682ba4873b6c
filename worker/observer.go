package worker

import "time"

// Outcome is how one attempt ended, as an Observer sees it.
type Outcome string

// Outcomes.
const (
	OutcomeCompleted   Outcome = "completed"   // the task succeeded
	OutcomeRetried     Outcome = "retried"     // failed, will run again after a backoff
	OutcomeRescheduled Outcome = "rescheduled" // the handler asked to run again later
	OutcomeSnoozed     Outcome = "snoozed"     // the handler put the task back for a while, no retry used
	OutcomeFailed      Outcome = "failed"      // failed for good (dead letter)
	OutcomeCancelled   Outcome = "cancelled"   // an operator cancelled it while it ran
	OutcomeReleased    Outcome = "released"    // the worker shut down and gave it back
	OutcomeLost        Outcome = "lost"        // the lease was lost; the result was discarded
)

// Observer is told what a worker does, for metrics. Its methods are called
// from the worker's goroutines and must be quick and safe for concurrent
// use. Options.Observer nil means nobody listens.
type Observer interface {
	// Claimed: the worker took a task of this type.
	Claimed(taskType string)
	// ClaimConflict: another worker (or a change) won the race for a task.
	ClaimConflict(taskType string)
	// Finished: an attempt ended; handlerTime is the handler's run time.
	Finished(taskType string, outcome Outcome, handlerTime time.Duration)
	// LeaseChecked: a running task was re-read to see whether its lease
	// still holds and no cancel was asked; ok is false when the read failed.
	LeaseChecked(taskType string, ok bool)
}

type nopObserver struct{}

func (nopObserver) Claimed(string)                          {}
func (nopObserver) ClaimConflict(string)                    {}
func (nopObserver) Finished(string, Outcome, time.Duration) {}
func (nopObserver) LeaseChecked(string, bool)               {}

// observer returns the configured observer or one that ignores everything.
func (w *Worker) observer() Observer {
	if w.opts.Observer == nil {
		return nopObserver{}
	}
	return w.opts.Observer
}
