//go:build !linux

package worker

// protectProcess does nothing outside Linux: see dumpable_linux.go.
func protectProcess() error { return nil }
