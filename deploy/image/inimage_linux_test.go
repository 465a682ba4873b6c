package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
)

// inImage runs the image's entrypoint as a container would, in the image's
// working directory dir: as root, it is chrooted into rootfs (only the
// image's files) as the image's user; otherwise it runs from rootfs as the
// current user.
func inImage(rootfs, dir, entrypoint string, uid, gid uint32, args ...string) *exec.Cmd {
	cmd := exec.Command(entrypoint, args...)
	if os.Geteuid() == 0 {
		cmd.Dir = dir
		cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: rootfs, Credential: &syscall.Credential{Uid: uid, Gid: gid}}
	} else {
		cmd.Path = filepath.Join(rootfs, entrypoint)
		cmd.Dir = filepath.Join(rootfs, dir)
	}
	return cmd
}
