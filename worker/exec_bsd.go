//go:build unix && !linux

package worker

import "syscall"

// sysProcAttr: a process group of its own.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
