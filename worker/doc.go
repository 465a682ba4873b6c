// Package worker runs task handlers: it claims tasks from a queue, keeps
// their leases alive while handlers run, writes the outcome, heartbeats in
// the worker registry and shuts down without losing a task.
//
// # Handlers, three ways
//
// Go API, for programs that embed qo:
//
//	w := worker.New(q, worker.Options{Concurrency: 4})
//	w.Handle("send_email", func(ctx context.Context, t *queue.Task) (json.RawMessage, error) {
//		var in struct{ To string }
//		if err := json.Unmarshal(t.Input, &in); err != nil {
//			return nil, worker.Permanent(err) // bad input: no retry
//		}
//		if err := send(ctx, in.To); err != nil {
//			return nil, err // retried with the task's backoff
//		}
//		return json.RawMessage(`{"sent":true}`), nil
//	})
//	err := w.Run(ctx) // until ctx is cancelled, then a graceful shutdown
//
// Exec handlers (Exec, and `qo run-worker --exec TYPE=COMMAND`), for any
// language: the input JSON on stdin, the output JSON on stdout, exit 0 =
// success, 75 = retryable, anything else = permanent; see exec.go.
//
// Built-in handlers (Builtins, `--builtins`): echo, sleep and fail, for
// demos and tests; see builtin.go.
//
// # Middleware
//
// (*Worker).Use wraps every handler (Go, exec and built-in alike) in
// Middleware, func(next HandlerFunc) HandlerFunc; the first registered is
// the outermost. Recover always sits innermost (a handler's panic reaches
// the middleware as a *PanicError) and outermost (a middleware's panic
// fails the task, not the worker). Logging (slog) and Measure come with
// this package; metrics.(*Metrics).Middleware feeds Prometheus. See
// middleware.go.
//
// # Outcomes
//
//	handler returns           task becomes
//	nil error                 completed (output stored)
//	Retryable(err), other err pending after backoff, retry_count+1; failed when retries are exhausted
//	Permanent(err)            failed at once
//	Reschedule(d)             pending, available after d, retry_count+1 (bounded by max_retries)
//	Snooze(d)                 pending, available after d, snooze_count+1, no retry used;
//	                          failed after queue.MaxSnoozes snoozes
//	panic                     recovered; as a retryable error carrying the panic message
//	(type not served)         failed: "no handler for task type" (cannot happen through the index)
//
// Execution is at least once: a task whose worker dies, stalls past its
// lease, or shuts down mid-task runs again elsewhere. Handlers must be
// idempotent (or deduplicate their side effects).
//
// # Discovery and cost
//
// A worker only ever lists the ready-index partitions of the types it
// claims now in the shards it polls: the ready index is keyed by type,
// then shard, so another type's entries, however many, are never paged
// through. When idle it sends one LIST per poll, whatever the shard and
// type count, backing off from PollMin to PollMax. Under load it holds
// what a walk of the index found and claims from it oldest first across
// every partition, its own share of it (workers
// split the ready tasks by task id, see peers.go), for up to PageHold
// before it walks again. Another worker's task that it passed (started a
// newer one of its group of turns, a type's task key or its tasks without
// one, or had a free slot for) a page hold ago it claims too: a
// worker with a free slot passes another's task for at most 5/4 PageHold
// longer than one of its own, whatever holds that worker up and however
// deep the backlog. A claim (four requests in a row) starts as soon as a
// slot is free, in that order, and holds the slot while in flight; no
// claim waits for another. See poll.go for order, fairness and the bound
// (the dispatch loop and the poll); view.go holds the held view, walk.go
// the walks that fill it (passed.go what makes others' entries late),
// claim.go the claims, scan.go the fallback scans of
// IndexMode.
//
// # Pause, limits and large inputs
//
// Types paused in the queue's control.json are not claimed (control.go
// says when the switches are read); Options.Limits caps how many tasks of
// a type run at once in this worker, and a fleet-wide cap in control.json
// (qo limit) caps them across every worker: the worker runs at most its
// share of it, published with its heartbeat (caps.go). An input stored in its own object
// (over the queue's offload threshold) is loaded before the handler runs,
// and a large output is offloaded by Complete: handlers see plain JSON.
//
// # Leases and time
//
// A claim's lease is the fence: every later write of the attempt carries
// it, and a write with a lost lease is refused. The lease is not extended:
// a task's timeout_seconds is a hard limit on its attempt (the handler's
// context is cancelled at the deadline, an exec handler gets SIGTERM and
// then SIGKILL after the kill grace, and the attempt is retried or failed
// as timed out). Liveness comes from the heartbeat (below): the monitor
// takes back the tasks of a worker whose heartbeat is older than its
// DeadAfter. A handler that runs longer than LeaseCheckInterval has its
// task re-read that often, to notice a cancel request or a lost lease.
// Deadlines are read from Options.Clock (the store's authoritative time by
// default), never from the local clock alone. See task.go for the reasons
// a handler's context is cancelled, finish.go for how an attempt's end
// becomes the task's next state (decide, then one write), heartbeat.go for
// the heartbeat and its watchdog, shutdown.go for the drain at shutdown.
//
// # Registry and heartbeat
//
// The worker writes workers/{id}.json when it starts, then every
// HeartbeatInterval on its own ticker (independent of running tasks):
// started_at, last_heartbeat, shards (empty: all; with shard leasing, the
// shards held), current_tasks, types, concurrency, tasks_completed,
// tasks_failed (failed attempts, retried or final), host, pid, version,
// and the latest progress report of each running task that made one (see
// ReportProgress: reports ride on the heartbeat, never a write of their
// own). It
// deletes the entry on exit. The heartbeat is the worker's liveness: once
// it is older than the DeadAfter the entry states, the monitor takes the
// worker's tasks back, and a worker that could not write it for three
// quarters of that bound stops its handlers and releases its tasks itself.
// Safety never depends on it: a worker wrongly thought dead is fenced off
// by its leases.
//
// # Shutdown
//
// Cancelling Run's context stops claiming, lets the claims in flight finish
// (a won claim's task counts as running; a claim whose outcome stayed
// unknown is re-read once more), waits up to ShutdownTimeout for running
// handlers, then cancels the rest (cause ErrShuttingDown: an exec handler
// gets SIGTERM, then SIGKILL after its kill grace) and releases each task
// once its handler has returned: pending, available at once, no retry
// counted. A task is never released while its handler still runs, so no
// other worker starts it meanwhile; a Go handler that ignores its context
// keeps its task until it returns or its lease expires. Abort (a second
// signal) skips the wait and kills exec handlers at once. The function Run
// does both on SIGINT and SIGTERM, as qo worker does: the first signal
// cancels the context, a second calls Abort. Then shard leases are released, the embedded monitor resigns, the worker
// deregisters and Run returns nil. A task is never lost on any path: what
// is not completed, retried, failed or released is recovered when its
// lease expires or the monitor finds its worker dead.
//
// # Monitor
//
// Each worker embeds a monitor (package monitor) unless NoMonitor is set;
// only one monitor among all workers does the work at a time.
package worker
