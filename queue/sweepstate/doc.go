// Package sweepstate owns the sweeper's bookkeeping, the bucket's
// monitor/sweep.json (the rules: queue's doc.go, "Sweeper"): where the
// leading monitor's sweep of the ready and waiting indexes stands, so that
// a new leader resumes the pass instead of starting over. Only the monitor
// reads and writes it (Load, Save); package queue knows nothing of it but
// its key (queue.SweepStateKey). This package needs of a queue only its
// store and its logger (see Queue).
package sweepstate
