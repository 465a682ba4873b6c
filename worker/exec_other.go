//go:build !unix

package worker

import "os/exec"

// Without process groups the child is killed at once (no SIGTERM on this
// platform).
func setProcessGroup(cmd *exec.Cmd) {}

func terminateGroup(cmd *exec.Cmd) { killGroup(cmd) }

func killGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = cmd.Process.Kill()
	}
}
