// Package layers holds no code. Its test keeps qo's packages in layers,
// each importing only layers below it:
//
//	internal/...                  leaf helpers (termsafe, testutil): nothing of qo
//	store/...                     the bucket: S3, the memory store, doctor, gateway
//	queue                         the task lifecycle
//	queue/control, namedlease,    one kind of bucket object each, above queue; none
//	registry, schedule,           imports another
//	sweepstate, throughput
//	monitor/...                   recovery and the shared JSON shapes (view)
//	connect/                      opening a queue from the CLI's settings, beside monitor
//	worker/...                    handlers, which embed a monitor
//	inspect/                      the read model every interface reads, beside worker
//	metrics/...                   Prometheus metrics, a worker.Observer
//	queuetest/                    the test kit for users' tests, beside metrics
//	qotel/                        OpenTelemetry spans, beside metrics; nothing below imports it
//	tui/, webui/, httpapi/        the interfaces; none imports another
//	devenv/                       the local environment of qo dev, beside them
//	command/...                   the commands
//	qo (the root), deploy/...,    programs
//	examples/...                  (examples/gotasks is README.md's Go program)
//	e2e/                          tests only
//
// A package may import its own tree (store/memstore imports store) and any
// layer below its own. Tests may reach upward (queue's tests run workers):
// only what is built into a program is checked. Every package must have a
// layer, so a new one is placed on purpose; the nested modules deploy/ and
// e2e/ (modules of their own, so that what only they need stays out of the
// library's go.mod) are checked with the rest. The check parses
// the import clauses of every file with go/parser, whatever its build
// constraints, so code built for one OS only is checked on every OS.
//
// A second test lists, with the go command, the modules the library
// layers (0-6, the embedded gateway aside) link: fewer than 50, and none
// that only the binary needs (the gateway, the console, the CLI).
package layers
