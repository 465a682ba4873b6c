//go:build !linux

package main

import (
	"os/exec"
	"path/filepath"
)

// inImage runs the image's entrypoint from rootfs (the test skips running
// it off linux; this keeps the package building everywhere).
func inImage(rootfs, dir, entrypoint string, _, _ uint32, args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(rootfs, entrypoint), args...)
	cmd.Dir = filepath.Join(rootfs, dir)
	return cmd
}
