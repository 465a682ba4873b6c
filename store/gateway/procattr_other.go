//go:build !linux

package gateway

import "os/exec"

// setChildAttrs: outside Linux the child relies on its stdin closing when
// the parent dies.
func setChildAttrs(cmd *exec.Cmd) {}
