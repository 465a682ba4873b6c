package gateway

import (
	"os/exec"
	"syscall"
)

// setChildAttrs asks the kernel to send the child SIGTERM when the parent
// dies, in addition to the stdin-EOF rule that works everywhere.
func setChildAttrs(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}
