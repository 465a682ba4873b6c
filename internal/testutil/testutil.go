// Package testutil holds what qo's tests share, written once: waiting for
// a condition with a clear message when it never comes (Eventually, Poll),
// a buffer a process or goroutine writes while the test reads it (Buffer),
// whether a process still runs (ProcessAlive), a free loopback address
// (FreeAddr) and a README's Go snippet checked against the example that
// compiles it (READMESnippet).
//
// It imports nothing of qo, so the tests of every package may use it, and
// nothing that is built into a program imports it.
package testutil
