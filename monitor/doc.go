// Package monitor recovers work that workers could not finish and keeps
// the indexes honest. One monitor is the leader at a time; the others
// stand by.
//
// # Leadership
//
// The leader holds the named lease queue.MonitorLeaderKey: acquired with a
// create-only PUT (or an If-Match take-over once expired), renewed with
// If-Match every LeaderTTL/3, released on shutdown. Lease times come from
// the queue's clock (the store's authoritative time). A standby retries the
// acquisition on the same cadence and takes over within about LeaderTTL
// after a leader dies (at once after a clean shutdown, which releases the
// lease).
//
// Leadership saves requests; it is not needed for correctness: every task
// change the monitor makes is a compare-and-swap that re-checks the task,
// so two monitors that both believe they lead (for at most one TTL after a
// partition) cannot corrupt anything.
//
// # Work done by the leader
//
//   - Leases, every LeaseCheckInterval (5s): walk the lease index (one
//     entry per running task, so one LIST when nothing runs) and take
//     back every task whose lease ran out (timeout_seconds plus
//     queue.LeaseGrace after its claim) or whose holder is dead: its
//     registry entry, rewritten at every heartbeat, is older than its
//     liveness bound (queue.DefaultDeadAfter, 20s) plus queue.MaxClockSkew
//     (the worker stops its handlers at three quarters of the bound, so
//     the attempts never overlap). The task is requeued
//     with backoff, failed when its retries are exhausted, or cancelled
//     when a cancel was requested; every change is fenced on the lease id,
//     so a holder that finishes meanwhile wins. A SIGKILLed worker's
//     tasks are pending again within DeadAfter + MaxClockSkew +
//     LeaseCheckInterval of its last heartbeat. A round lists at most
//     100,000 entries; a larger index is walked in parts, each round
//     going on where the last stopped, so every lease entry is checked
//     within ceil(entries / 100,000) rounds (entries: those the index
//     holds meanwhile), and LeaseCheckInterval in the bound above counts
//     that many times. The position is not kept in the bucket: a new
//     leader starts again at the first shard.
//   - Worker health, every CheckInterval: judge heartbeats (see Judge: the
//     same rule as the lease walk's, so a worker logged dead is one whose
//     tasks are taken back),
//     log workers that turn stale or dead, optionally delete registrations
//     dead for longer than PruneDeadAfter.
//   - Sweep, in a loop of its own (so it never delays the timeout check),
//     every SweepInterval: one page of the ready index (see queue.Sweep:
//     it reads only entries nobody claimed for SweepIdle, so it costs the
//     same with 0 or with millions of finished tasks), the cursor and the
//     pass times kept in the bucket (sweepstate.State) so a new leader
//     resumes the pass; pending tasks past their expires_at become
//     expired and stale entries are removed. Index entries are written
//     before their task, so no single fault leaves one missing; the sweep
//     is the safety net for what nobody claims. A full pass takes
//     ceil(ready entries / SweepPageSize) rounds. Each round also reads one
//     page of the waiting index (queue.SweepWaiting): a parent's end that
//     its writer died before recording on a child is recorded within one
//     SweepInterval (the bound docs/reliability.md states).
//   - Schedules: re-read schedules/ every ScheduleRefresh (1 LIST, plus a
//     GET per changed schedule) and wake at the next due time to submit it
//     (see schedule.Scheduler; each due time submits one task however many
//     monitors run).
//
// # Files
//
// One file per duty of the leader:
//
//   - monitor.go: Options, New, Run and the loops' wiring (workLoop runs
//     the lease check and the worker check; the sweep and the schedules
//     have loops of their own).
//   - leader.go: leadership (Elect, leadLoop, setLeader, resign).
//   - leases.go: the lease check (CheckLeases and the round's walk of the
//     lease index, the judgement of the holders, CheckTimeouts).
//   - sweep.go: the sweeper (sweepLoop, SweepRound, logSweep).
//   - schedules.go: the schedules (scheduleLoop, RunSchedules).
//   - workers.go: worker health (CheckWorkers); health.go holds the
//     liveness rule it shares with the lease check (Judge, beatDead) and
//     rollup.go the throughput rollup it feeds.
package monitor
