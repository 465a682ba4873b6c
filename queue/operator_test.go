package queue_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/store/storetest"
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
				next, err := queue.ApplyOperator(base, tc.op, "", "", now, "r")
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

func TestInvalidTransitionsWriteNothing(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		b := setup(t, be)
		// One task in every status.
		mk := func(st queue.Status) *queue.Task {
			task := b.submit(t, "inv", `{}`)
			switch st {
			case queue.StatusWaiting:
				var err error
				task, _, err = b.q.Submit(b.ctx, queue.SubmitRequest{Type: "inv", After: []uuid.UUID{task.ID}})
				require.NoError(t, err)
			case queue.StatusPending:
			case queue.StatusRunning:
				b.claim(t, task, "w1")
			case queue.StatusCompleted:
				_, err := b.q.Complete(b.ctx, b.claim(t, task, "w1"), nil)
				require.NoError(t, err)
			case queue.StatusFailed:
				_, err := b.q.Fail(b.ctx, b.claim(t, task, "w1"), "x")
				require.NoError(t, err)
			case queue.StatusCancelled:
				_, err := b.q.Cancel(b.ctx, task.ID, "")
				require.NoError(t, err)
			case queue.StatusArchived:
				_, err := b.q.Fail(b.ctx, b.claim(t, task, "w1"), "x")
				require.NoError(t, err)
				_, err = b.q.Archive(b.ctx, task.ID)
				require.NoError(t, err)
			case queue.StatusExpired:
				task = b.expired(t, "inv")
			}
			got := b.get(t, task)
			require.Equal(t, st, got.Status)
			return got
		}
		type op struct {
			name  string
			run   func(id uuid.UUID) error
			valid map[queue.Status]bool
		}
		ops := []op{
			{"cancel", func(id uuid.UUID) error { _, err := b.q.Cancel(b.ctx, id, ""); return err },
				map[queue.Status]bool{queue.StatusWaiting: true, queue.StatusPending: true, queue.StatusRunning: true}},
			{"replay", func(id uuid.UUID) error { _, err := b.q.Replay(b.ctx, id); return err },
				map[queue.Status]bool{queue.StatusFailed: true, queue.StatusCancelled: true, queue.StatusExpired: true}},
			{"archive", func(id uuid.UUID) error { _, err := b.q.Archive(b.ctx, id); return err },
				map[queue.Status]bool{queue.StatusCompleted: true, queue.StatusFailed: true, queue.StatusCancelled: true, queue.StatusExpired: true}},
			{"requeue", func(id uuid.UUID) error { _, err := b.q.RequeueNow(b.ctx, id); return err },
				map[queue.Status]bool{queue.StatusPending: true, queue.StatusRunning: true}},
		}
		for _, o := range ops {
			for _, st := range queue.Statuses {
				if o.valid[st] {
					continue
				}
				task := mk(st)
				before := b.counts()
				err := o.run(task.ID)
				require.ErrorIs(t, err, queue.ErrInvalidTransition, "%s on %s", o.name, st)
				require.Contains(t, err.Error(), string(st), "message names the from status")
				require.Zero(t, b.counts().Sub(before).Total(store.OpPut), "%s on %s wrote", o.name, st)
				require.Zero(t, b.counts().Sub(before).Total(store.OpDelete), "%s on %s deleted", o.name, st)
				require.Equal(t, task.Rev, b.get(t, task).Rev)
			}
		}
		// AckCancel without a cancel request.
		task := b.submit(t, "inv", `{}`)
		l := b.claim(t, task, "w1")
		before := b.counts()
		_, err := b.q.AckCancel(b.ctx, l)
		require.ErrorIs(t, err, queue.ErrInvalidTransition)
		require.Zero(t, b.counts().Sub(before).Total(store.OpPut))
		// A worker op on a lease whose task is not running is fenced, no write.
		for _, st := range []queue.Status{queue.StatusPending, queue.StatusCompleted, queue.StatusFailed} {
			fake := &queue.Lease{Task: mk(st), ETag: "whatever"}
			fake.Task.LeaseID = uuid.NewString()
			before := b.counts()
			_, err := b.q.Complete(b.ctx, fake, nil)
			require.ErrorIs(t, err, queue.ErrLeaseLost)
			require.Zero(t, b.counts().Sub(before).Total(store.OpPut))
		}
	})
}
