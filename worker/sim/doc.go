// Package sim is the fleet simulation: the real queue, worker and monitor
// code of qo, many workers at once, run over an in-memory bucket in
// simulated time, with faults, and checked against the queue's invariants
// at every tick.
//
// # What runs
//
// Run must be called inside a testing/synctest bubble: every timer, sleep
// and ticker of qo's code then fires in simulated time, which advances
// only when every goroutine waits, so an hour of a busy fleet takes
// seconds. Nothing is modelled: each worker is a worker.Worker with its
// embedded monitor (one leads), opened over its own view of the bucket
// (procStore), and handlers are Go handlers that take a task's time.
//
// A seed draws a Scenario (NewScenario): 2 to 5 workers of unequal
// concurrency (1 to 16), speed (1x to 10x slower), types and type limits,
// each with its own clock error within MaxClockSkew; a page size from 10
// to 1,000 (a small page makes a backlog of hundreds as deep, for the
// dispatcher, as one of hundreds of thousands); steady arrivals of three
// priorities, some with parents; bursts of up to 1,500 tasks (deep
// backlogs); task times from milliseconds to two minutes, a few handlers
// that never return (hard timeouts) and outcomes that retry or fail. Then
// a fault phase: workers killed (SIGKILL: nothing more they send lands,
// their handlers die with them) and restarted under the same or a new id,
// partitions (every request of one worker fails while it lives on),
// rolling restarts, windows where up to a quarter of requests fail or land
// with the response lost, windows of slow requests (up to 3 s more),
// types paused and resumed, tasks cancelled and replayed by an operator.
// Then a calm phase of load without faults (with a burst), then a drain.
//
// # What is checked
//
// At every Tick, with every goroutine of the run waiting (so the check
// sees one instant of the bucket):
//
//   - no task lost: every task a submit returned is in the bucket;
//   - every pending task has its ready entry, every running task the lease
//     entry the lease check finds it by, every waiting task its waiting
//     entry and every failed task its dead-letter entry;
//   - the handlers of a type with a fleet-wide cap running across the
//     fleet, as the handlers' journal has them (not qo's counters), are
//     at most the cap (queue/doc.go, "Fleet-wide concurrency caps").
//
// Once the run stopped, from each task's history and the handlers' own
// journal:
//
//   - none completed twice, no result overwritten, and every result was
//     produced by a handler run that finished under the lease it names;
//   - no two runs of a task overlapped (the worker stops a handler before
//     the monitor may start the task elsewhere);
//   - every task ended within the drain bound after the load stopped:
//     twice the work left over the slots serving it, four times the longest
//     task left at the slowest speed, and five minutes for recovery and
//     backoff;
//   - from Settle after the faults stopped, no task waited more than
//     OvertakeBound (30 s plus one page hold), while some worker could
//     have started it, to start after a newer task of its type, priority
//     and task key had started, whatever the depth of the ready index;
//   - over every window of 10 s and of a minute, the handlers of a type
//     with a fleet-wide rate limit that started, each counted when its
//     claim took its token (the claim's first request), are at most rate x
//     window + burst + one per worker process serving the type in the
//     window (queue/doc.go, "Fleet-wide rate limits").
//
// Half the seeds spread their tasks over task keys (Scenario.Keys: 2 or
// 5, half the keyed tasks on the first key, one task in five without a
// key), so the walks list the keys' sections of the ready index and claim
// round-robin over keys under every fault.
//
// A few seeds draw fleet-wide limits (Scenario.Limits: a cap, a rate or
// both on a type), set before the workers start; the drain bound counts
// the cap as the slots of the type and the tasks left at the rate.
//
// "Could have started it", for the order check: a process that serves
// the type lived, was not partitioned, the type was not paused, and it
// ran fewer handlers than its concurrency and fewer of the type than its
// type limit and, under a cap, than its share of the cap (the cap split
// over the processes serving the type that lived then, by worker id, as
// worker/caps.go splits it: the share the workers use is at most that);
// the fleet ran fewer of the type than the cap; no task of the type and a
// higher priority waited; and the slot was not handed over to a task
// ranked before it: time between a run's end and the next start on the
// process, when that start is the first run of a task of a higher
// priority or of the same one pending earlier (of any type: a worker
// claims in rank order), was the slot on its way to a task due before it,
// not a slot free for it. Without that, a one-slot worker working through
// an older backlog, free for the length of a claim between two of its
// tasks, added those claims up: seed 5 once counted 41 s of them (a
// worker of one slot for the type, another of one slot running an older
// backlog of another type, over 4 min 47 s) as a wait behind a newer task.
// A rate-limited type is
// not held to the order bound: each worker spends its own share of the
// rate, so one holding a page of older tasks and no token leaves them
// while a worker with tokens starts newer ones (seed 4 of the small
// scenarios: up to 47 s behind a newer task at 5/s over four workers).
//
// # Seeds
//
// A seed fixes the scenario: the fleet, the workload and the fault
// timeline and the outcome of every handler run. It fixes too what does
// not depend on the order goroutines run in: each task (its time,
// priority and parents) is drawn from the seed and its number, numbers
// are given in submit order; task ids come from the seed and the order of
// the creates of each process, lease and request ids from a seeded
// source; every request's latency and fault from the process's seed, the
// request and how many such requests the process sent before; the
// queue's backoff jitter from the seed, the worker's from the simulated
// clock. What it cannot fix is the order in which the Go scheduler runs
// goroutines woken at the same simulated instant (and which ready case a
// select takes): a claim that wins in one run may lose in the next, and
// the runs part from there. So a seed injects the same fault timeline in
// every run (the requests it hits differ by a few) but the timings it
// reports vary from run to run, and a failing seed fails again in most
// runs, not all: run it alone with -count, and with -sim.trace DIR for
// the debug log of every process (in simulated time, DIR/seed-N.log) to
// find the cause. The test command runs a few small seeds;
// scripts/simulate.sh runs many, full size, and prints the report
// docs/reliability.md quotes.
package sim
