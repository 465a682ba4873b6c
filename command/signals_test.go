package command

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/urfave/cli/v2"
)

// TestServiceAction: a service stopped by a signal while it starts exits
// cleanly; any other error, and a cancellation without a signal, stays.
func TestServiceAction(t *testing.T) {
	t.Parallel()
	other := errors.New("bucket unreachable")
	tests := []struct {
		name     string
		signaled bool
		err      error
		want     error
	}{
		{"signal while starting", true, fmt.Errorf("open queue: %w", context.Canceled), nil},
		{"cancelled without a signal", false, fmt.Errorf("open queue: %w", context.Canceled), context.Canceled},
		{"another error after a signal", true, other, other},
		{"no error", true, nil, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tc.signaled {
				cancel()
			}
			c := cli.NewContext(&cli.App{}, nil, nil)
			c.Context = ctx
			err := serviceAction(func(*cli.Context) error { return tc.err })(c)
			if tc.want == nil {
				require.NoError(t, err)
			} else {
				require.ErrorIs(t, err, tc.want)
			}
		})
	}
}
