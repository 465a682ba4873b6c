// Package control owns the queue's switches, the bucket's control.json
// (the rules: queue's doc.go, "Pause", "Fleet-wide concurrency caps",
// "Fleet-wide rate limits" and "Task keys"): an operator pauses and
// resumes the whole queue or single task types (Pause, Resume) and sets or
// clears the limits of a type, fleet-wide (SetLimit, SetRate) or per task
// key (SetKeyLimit, SetKeyRate, ClearLimit); workers read the switches
// with Read before claiming. Every change is a compare-and-swap of the one
// object, re-applied over a concurrent writer's; the object's versions
// are the record of who changed what (queue.WithActor).
//
// The object's format (queue.Control and its Pause, Limit and RateLimit,
// queue.DecodeControl, queue.ParseRate) stays in package queue, whose key
// layout it is part of. This package needs of a queue only its store and
// its clock (see Queue).
package control
