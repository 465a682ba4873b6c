// Package devenv runs qo on one machine with no S3 account: the local
// environment of qo dev, usable from tests and Go programs as well.
//
// Start starts, in this order, each step its own function:
//
//   - the embedded S3 server (package gateway, in a child process of the
//     same binary) on Config.Addr, its data under Config.DataDir, with
//     root credentials generated once and kept there;
//   - the versioned bucket Config.Bucket holding a queue, created on
//     first use (a queue an older qo wrote is converted to the current
//     layout), its CORS open to every origin for the web UI;
//   - the state file, which lets other processes find the environment
//     (Discover: qo's commands given no S3 settings use it);
//   - a worker with the built-in handlers (echo, sleep, fail) and any exec
//     handlers, with its embedded timeout monitor, and optionally a
//     steady trickle of demo tasks.
//
// Close stops them in the reverse order: the demo, the worker (running
// tasks get Config.ShutdownTimeout to finish and are released otherwise),
// the state file, the gateway. Done reports an environment that stopped by
// itself (the gateway exited). A program that calls Start must call
// gateway.MaybeRunChild first thing in main, or in TestMain.
//
//	env, err := devenv.Start(ctx, devenv.Config{DataDir: dir, Addr: "127.0.0.1:0"})
//	if err != nil {
//		return err
//	}
//	defer env.Close()
//	task, _, err := env.Queue().Submit(ctx, queue.SubmitRequest{Type: "echo"})
//
// # The data directory
//
// DataDir resolves it: an explicit directory, else QO_DEV_DATA_DIR, else
// the per-user default ($XDG_DATA_HOME/qo/dev or ~/.local/share/qo/dev;
// %LocalAppData%\qo\dev on Windows). It holds:
//
//	credentials.json  the gateway's access key and secret, generated once (0600)
//	state.json        present only while an environment runs (0600): endpoint,
//	                  bucket, credentials, region, pid, started_at
//	gateway/          the embedded S3 gateway's buckets and object versions
//	dev.log           qo dev's log when it runs on a terminal
//
// Invariant: state.json is written after the gateway answers and the queue
// exists, and removed on a clean exit. A crash leaves it behind, so a
// reader trusts it only while its pid is alive AND its endpoint answers
// (Running, Discover); a stale file is overwritten by the next Start.
// Data survives a restart (same directory, same credentials, same tasks);
// Wipe deletes it, leaving files it did not create alone.
//
// The gateway serves the bucket with root keys and CORS open to every
// origin, over plain HTTP: Config.Addr belongs on loopback (qo dev refuses
// anything else unless told otherwise).
package devenv
