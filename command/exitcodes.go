package command

import (
	"context"
	"errors"
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/qo-queue/qo/devenv"
	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/store/doctor"
)

// Exit codes. Scripts branch on them, so they never change meaning.
const (
	exitOK          = 0
	exitInternal    = 1   // a bug, or an error nobody classified
	exitUsage       = 2   // bad flags, arguments or input
	exitNotFound    = 3   // the task (or other object) does not exist
	exitConflict    = 4   // lost a race, or the transition is not allowed
	exitStorage     = 5   // S3 unreachable, credentials rejected, bucket missing or unfit
	exitTaskFailed  = 6   // qo wait: the task ended failed, cancelled or expired
	exitWaitTimeout = 7   // qo wait: --timeout ran out before every task finished
	exitInterrupted = 130 // SIGINT/SIGTERM, as shells report it
)

// exitError is an error with an explicit exit code.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }

func (e *exitError) Unwrap() error { return e.err }

// withExitCode makes err exit with code (nil stays nil).
func withExitCode(code int, err error) error {
	if err == nil {
		return nil
	}
	return &exitError{code: code, err: err}
}

// usageError is bad input from the user: flags, arguments, files. Say what
// is wrong and how to fix it; it exits with code 2.
func usageError(format string, args ...any) error {
	return &exitError{code: exitUsage, err: fmt.Errorf(format, args...)}
}

// storageError is a problem with the bucket or the way to it; exit code 5.
func storageError(format string, args ...any) error {
	return &exitError{code: exitStorage, err: fmt.Errorf(format, args...)}
}

// kindError is a message written for the user that still matches a
// sentinel (errors.Is) without repeating the sentinel's text.
type kindError struct {
	msg  string
	kind error
}

func (e *kindError) Error() string { return e.msg }

func (e *kindError) Unwrap() error { return e.kind }

// storageKind is storageError matching the store sentinel kind.
func storageKind(kind error, format string, args ...any) error {
	return &exitError{code: exitStorage, err: &kindError{msg: fmt.Sprintf(format, args...), kind: kind}}
}

// exitCodes maps the sentinel errors of the packages below to exit codes:
// the first target an error matches (errors.Is) gives its code.
var exitCodes = []struct {
	target error
	code   int
}{
	{queue.ErrLayoutOutdated, exitStorage},
	{queue.ErrInvalidInput, exitUsage},
	{queue.ErrNotFound, exitNotFound},
	{queue.ErrInvalidTransition, exitConflict},
	{queue.ErrConflict, exitConflict},
	{queue.ErrLeaseLost, exitConflict},
	{queue.ErrIdempotencyMismatch, exitConflict},
	{queue.ErrOlderVersionRunning, exitConflict},
	{queue.ErrNotInitialized, exitStorage},
	{queue.ErrWaitTimeout, exitWaitTimeout},
	{devenv.ErrConfig, exitUsage},
	{devenv.ErrRunning, exitConflict},
	{devenv.ErrAddrInUse, exitConflict},
	{doctor.ErrUnsafe, exitStorage},
	{store.ErrUnreachable, exitStorage},
	{store.ErrAccessDenied, exitStorage},
	{store.ErrBucketNotFound, exitStorage},
	{store.ErrNotSupported, exitStorage},
	{store.ErrNotFound, exitNotFound},
	{store.ErrPreconditionFailed, exitConflict},
}

// exitCode returns the process exit code for err: an explicit code
// (withExitCode, usageError, cli.Exit), an interrupt, then the first
// sentinel of exitCodes it matches, else exitInternal.
func exitCode(err error) int {
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	if errors.Is(err, context.Canceled) {
		return exitInterrupted
	}
	var ec cli.ExitCoder
	if errors.As(err, &ec) && ec.ExitCode() != 0 {
		return ec.ExitCode()
	}
	for _, r := range exitCodes {
		if errors.Is(err, r.target) {
			return r.code
		}
	}
	return exitInternal
}
