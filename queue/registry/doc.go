// Package registry owns the worker registry, the bucket's workers/{id}.json
// objects (the rules: queue's doc.go, "Key layout" and "Leases and
// liveness"): a worker registers and heartbeats with Put and deregisters
// with Delete; the monitor judges liveness from Beats (the entries' write
// times, one LIST and no GET); the views read the entries with List and
// ListReport, and a running task's latest progress with TaskProgress.
//
// The entry's format, queue.WorkerInfo with queue.DecodeWorker and
// queue.WorkerKey, stays in package queue, whose key layout it is part of
// and whose stats counter reads it. This package needs of a queue only its
// store and its logger (see Queue).
package registry
