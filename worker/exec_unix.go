//go:build unix

package worker

import (
	"os/exec"
	"syscall"
)

// setProcessGroup puts the child in its own process group so that
// signals reach everything it started.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = sysProcAttr()
}

func terminateGroup(cmd *exec.Cmd) { signalGroup(cmd, syscall.SIGTERM) }

func killGroup(cmd *exec.Cmd) { signalGroup(cmd, syscall.SIGKILL) }

func signalGroup(cmd *exec.Cmd, sig syscall.Signal) {
	if cmd.Process == nil {
		return
	}
	// The group id is the child's pid (Setpgid). ESRCH (already gone) is
	// fine.
	_ = syscall.Kill(-cmd.Process.Pid, sig)
}
