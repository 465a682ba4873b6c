// Package schedule owns the bucket's cron schedules, schedules/{name}.json
// (the rules: queue's doc.go, "Schedules"): a schedule is created, read,
// listed, enabled or disabled, deleted (a tombstone) and triggered with the
// functions of this package, each taking the queue it lives in, and the
// leading monitor submits what is due with a Scheduler. Every write is a
// compare-and-swap of the schedule object; each due time submits one task,
// whose idempotency key (RunKey) is the schedule's name and the due time,
// however many schedulers run.
//
// The package sits in the queue's layer, above package queue: it needs of
// a queue only its store, its clock, its logger and Submit (see Queue), and
// the queue knows nothing of it but the key layout (queue.ScheduleKey,
// queue.ValidateScheduleName).
//
// Files: schedule.go holds the schedule object, its validation and its cron
// arithmetic; store.go the operator's operations on the bucket; scheduler.go
// the Scheduler, which runs the due schedules.
package schedule
