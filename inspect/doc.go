// Package inspect is qo's read model: the one place the queue's counts,
// worker health, request rate, throughput and task histories are put
// together for the people who watch it. The console (qo tui), qo stats,
// qo workers, qo dev's status line and the HTTP API (and so the web UI in
// API mode) all read a Model; the web UI's direct-to-S3 mode computes the
// same figures in JavaScript and is held to this package by the shared
// cases in webui/testdata/readmodel.json.
//
// The figures:
//
//   - Worker health is the monitor's liveness rule (monitor.Judge): a
//     worker is dead once its heartbeat is older than its liveness bound
//     plus queue.MaxClockSkew (22s by default), the age at which the
//     monitor takes its tasks back; stale from three quarters of the
//     bound (15s), the age at which a worker whose heartbeats do not land
//     stops its own handlers.
//   - The request rate is each live worker's request counters between its
//     last two heartbeats, over the time between the heartbeats' own
//     timestamps (not between two reads), summed over the workers: see
//     RateMeter.
//   - Throughput (Recent, LastHour, LastDay) is the leading monitor's
//     persisted rollup (throughput.Hour) merged with the live
//     heartbeats, so it survives restarts of the workers; reading it costs
//     one LIST plus a GET per hour object that changed since the last read.
//   - Unserved names the types with pending tasks that no live worker
//     serves, or that are paused.
//   - Task histories are read through a cache of immutable versions: a
//     second read of an unchanged task costs its version listing alone.
//
// Words: a dead letter is a task in status failed (by_status.failed, the
// dead index); a failed attempt is one run of a handler that ended in an
// error, retried or not (recent[].failed, the workers' counts).
package inspect
