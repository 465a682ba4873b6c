// Package namedlease owns the bucket's named leases, the coordination
// objects shard-leases/{shard}.json (which worker owns a shard) and
// monitor/leader.json (which monitor leads) (the rules: queue's doc.go,
// "Key layout" and "Leases and liveness"). A holder takes a lease with
// Acquire, keeps it with Renew and gives it up with Release; every write
// is a compare-and-swap of the lease object, settled by re-reading when
// its response is lost. Shard owners find the leases worth trying with
// ShardWrites (one LIST, no GET).
//
// The lease's format (queue.NamedLease, queue.EncodeNamedLease,
// queue.DecodeNamedLease) stays in package queue, whose key layout it is
// part of and whose migrate reads the leadership. This package needs of a
// queue only its store, its clock, its logger and its shards (see Queue).
package namedlease
