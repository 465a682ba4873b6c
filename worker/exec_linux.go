//go:build linux

package worker

import "syscall"

// sysProcAttr: a process group of its own, and SIGKILL when the worker
// dies without a chance to clean up (kill -9), so a handler does not run on
// as an orphan while its task is retried elsewhere. (Only the direct child
// gets the parent-death signal; its own children are reached through the
// group on every other path.)
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
