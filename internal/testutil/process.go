package testutil

import (
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// ProcessAlive reports whether process pid runs: it exists and is not a
// zombie waiting for its parent to reap it (nor dead). Zombies are told
// from /proc, so where there is none (macOS) a zombie counts as running.
// It answers on Unix only: on Windows nothing runs.
func ProcessAlive(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	defer p.Release()
	if p.Signal(syscall.Signal(0)) != nil {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	// The state follows the command name, which is in parentheses and may
	// hold anything, spaces and parentheses included.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return true
	}
	return s[i+2] != 'Z' && s[i+2] != 'X'
}

// FreeAddr returns a 127.0.0.1 address nothing listens on right now, for a
// server the test starts (or for one that should not answer).
func FreeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("find a free port: %v", err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatalf("free port %s: %v", addr, err)
	}
	return addr
}
