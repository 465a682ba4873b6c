package queue_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
)

// TestOperatorFrom pins the statuses each operator action applies to, as
// the transition table credits them, and checks that ApplyOperator refuses
// every other status before it changes anything.
func TestOperatorFrom(t *testing.T) {
	t.Parallel()
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		op   string
		want []queue.Status
	}{
		{queue.OpCancel, []queue.Status{queue.StatusWaiting, queue.StatusPending, queue.StatusRunning}},
		{queue.OpReplay, []queue.Status{queue.StatusFailed, queue.StatusCancelled, queue.StatusExpired}},
		{queue.OpArchive, []queue.Status{queue.StatusCompleted, queue.StatusFailed, queue.StatusCancelled, queue.StatusExpired}},
		{queue.OpRequeue, []queue.Status{queue.StatusPending, queue.StatusRunning}},
		{"delete", nil},
	} {
		t.Run(tc.op, func(t *testing.T) {
			t.Parallel()
			from := queue.OperatorFrom(tc.op)
			require.Equal(t, tc.want, from)
			if from == nil {
				return
			}
			for _, st := range queue.Statuses {
				if slices.Contains(from, st) {
					continue
				}
				base := &queue.Task{ID: uuid.Must(uuid.NewV7()), Status: st, Rev: 3}
				next, err := queue.ApplyOperator(base, tc.op, "", now, "r")
				require.Nil(t, next, "%s on %s", tc.op, st)
				require.ErrorIs(t, err, queue.ErrInvalidTransition, "%s on %s", tc.op, st)
				var te *queue.TransitionError
				require.True(t, errors.As(err, &te))
				require.Equal(t, st, te.From)
				require.Contains(t, te.Reason, "only ")
			}
		})
	}
}
