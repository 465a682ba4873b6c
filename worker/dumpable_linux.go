//go:build linux

package worker

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// protectProcess makes the worker process non-dumpable: other processes
// of its user (its exec handlers among them) can then no longer read its
// /proc/PID/environ, /proc/PID/mem or attach to it with ptrace, and so
// cannot take the bucket's credentials from it. A handler is dumpable
// again once it has exec'd its program, so its own /proc stays as usual.
// Root with CAP_SYS_PTRACE still reads everything.
func protectProcess() error {
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("worker: make the process non-dumpable (prctl PR_SET_DUMPABLE): %w", err)
	}
	return nil
}
