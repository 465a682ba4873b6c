// Package throughput owns the fleet's throughput rollup, the bucket's
// monitor/throughput/{YYYY-MM-DDTHH}.json objects (the rules: queue's
// doc.go, "Throughput rollup"). It keeps the fleet's finishes by minute
// past the workers' lives: a worker's heartbeat carries only its own last
// queue.DefaultRecentMinutes minutes (queue.WorkerInfo.Recent), gone when
// it stops. The leading monitor folds every registered worker's minutes
// into one Hour per UTC hour at each worker-health check (Load, Fold,
// Close, Save) and deletes the hours older than Keep (Prune); the stats
// views read them back (List, Read).
//
// Only the monitor writes these objects and only the views read them:
// package queue knows nothing of them but the prefix of its key layout
// (queue.ThroughputPrefix). This package needs of a queue only its store
// (see Queue).
package throughput
