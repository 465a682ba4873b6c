package testutil

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"testing"
)

// helperEnv makes the test binary a child that runs until its stdin
// closes.
const helperEnv = "QO_TESTUTIL_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestProcessAlive(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("ProcessAlive answers on Unix only")
	}
	t.Parallel()
	if !ProcessAlive(os.Getpid()) {
		t.Fatal("the test itself does not run")
	}
	child := exec.Command(os.Args[0])
	child.Env = append(os.Environ(), helperEnv+"=1")
	stdin, err := child.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	pid := child.Process.Pid
	if !ProcessAlive(pid) {
		t.Errorf("child %d runs but is not alive", pid)
	}
	// The child exits and stays a zombie until it is waited for: gone.
	_ = stdin.Close()
	if runtime.GOOS == "linux" {
		Eventually(t, func() bool { return !ProcessAlive(pid) }, "exited child %d to be gone", pid)
	}
	if err := child.Wait(); err != nil {
		t.Fatal(err)
	}
	if ProcessAlive(pid) {
		t.Errorf("reaped child %d is alive", pid)
	}
}

func TestFreeAddr(t *testing.T) {
	t.Parallel()
	// Another process may take the port between FreeAddr and the Listen
	// (the race every caller accepts); one of three tries must get it.
	var errs []error
	for range 3 {
		addr := FreeAddr(t)
		host, port, err := net.SplitHostPort(addr)
		if err != nil || host != "127.0.0.1" || port == "0" {
			t.Fatalf("FreeAddr = %q (%v), want 127.0.0.1 and a port", addr, err)
		}
		l, err := net.Listen("tcp", addr)
		if err == nil {
			_ = l.Close()
			return
		}
		errs = append(errs, fmt.Errorf("listen on the free address %s: %w", addr, err))
	}
	t.Fatal(errors.Join(errs...))
}
