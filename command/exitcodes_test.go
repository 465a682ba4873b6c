package command

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/urfave/cli/v2"

	"github.com/qo-queue/qo/devenv"
	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store"
)

func TestExitCode(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		err  error
		want int
	}{
		{"nil", nil, exitOK},
		{"plain", errors.New("boom"), exitInternal},
		{"usage", usageError("bad --x %q", "y"), exitUsage},
		{"usage wrapped", fmt.Errorf("submit: %w", usageError("bad")), exitUsage},
		{"explicit", withExitCode(exitTaskFailed, errors.New("task failed")), exitTaskFailed},
		{"cli.Exit", cli.Exit("x", 6), 6},
		{"queue not found", fmt.Errorf("status: %w", queue.ErrNotFound), exitNotFound},
		{"queue invalid input", fmt.Errorf("submit: %w", queue.ErrInvalidInput), exitUsage},
		{"queue conflict", fmt.Errorf("cancel: %w", queue.ErrInvalidTransition), exitConflict},
		{"queue not initialised", fmt.Errorf("open: %w", queue.ErrNotInitialized), exitStorage},
		{"queue layout outdated", fmt.Errorf("open: %w", queue.ErrLayoutOutdated), exitStorage},
		{"older qo running", fmt.Errorf("migrate: %w", queue.ErrOlderVersionRunning), exitConflict},
		{"wait timeout", fmt.Errorf("wait: %w", queue.ErrWaitTimeout), exitWaitTimeout},
		{"dev environment running", fmt.Errorf("start: %w", devenv.ErrRunning), exitConflict},
		{"dev address in use", fmt.Errorf("start: %w", devenv.ErrAddrInUse), exitConflict},
		{"dev configuration", fmt.Errorf("start: %w", devenv.ErrConfig), exitUsage},
		{"store not found", fmt.Errorf("get: %w", store.ErrNotFound), exitNotFound},
		{"precondition", fmt.Errorf("put: %w", store.ErrPreconditionFailed), exitConflict},
		{"unreachable", fmt.Errorf("list: %w", store.ErrUnreachable), exitStorage},
		{"access denied", fmt.Errorf("list: %w", store.ErrAccessDenied), exitStorage},
		{"bucket missing", fmt.Errorf("list: %w", store.ErrBucketNotFound), exitStorage},
		{"storage kind", storageKind(store.ErrUnreachable, "cannot reach"), exitStorage},
		{"interrupted", fmt.Errorf("wait: %w", context.Canceled), exitInterrupted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, exitCode(tt.err))
		})
	}
	boom := errors.New("boom")
	require.Equal(t, boom.Error(), withExitCode(3, boom).Error())
	require.Nil(t, withExitCode(3, nil))
}
