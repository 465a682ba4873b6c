package queue_test

import (
	"os"
	"os/user"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/queue/control"
	"github.com/qo-queue/qo/store/storetest"
)

func TestActorNamesUserAndHost(t *testing.T) {
	t.Parallel()
	u, err := user.Current()
	require.NoError(t, err)
	host, err := os.Hostname()
	require.NoError(t, err)
	require.Equal(t, u.Username+"@"+host, queue.Actor())
	require.Equal(t, "outage ("+u.Username+"@"+host+", qo pause)", queue.ActorReason("outage", "paused", "qo pause"))
	require.Equal(t, "paused ("+u.Username+"@"+host+", qo pause)", queue.ActorReason("  ", "paused", "qo pause"))
}

// An operator action records the actor of its context on the version it
// writes; every other write (a worker's, a cascade's) records none, so
// each version names only its own author.
func TestOperatorWritesRecordTheirActor(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		b := setup(t, be)
		ops := queue.WithActor(b.ctx, "alice@ops-1,\n qo tui")
		require.Equal(t, "alice@ops-1, qo tui", queue.ActorFrom(ops), "kept on one line")
		require.Empty(t, queue.ActorFrom(b.ctx))

		task := b.submit(t, "job", `{}`)
		require.Empty(t, task.Actor)
		b.claim(t, task, "w1")
		got, err := b.q.RequeueNow(ops, task.ID)
		require.NoError(t, err)
		require.Equal(t, "alice@ops-1, qo tui", got.Actor)
		b.claim(t, got, "w2")
		require.Empty(t, b.get(t, task).Actor, "the worker's claim names no operator")

		child := b.after(t, "child", queue.ParentFailureCancel, task)
		got, err = b.q.Cancel(queue.WithActor(b.ctx, "bob@ops-2, qo cancel"), child.ID, "stop")
		require.NoError(t, err)
		require.Equal(t, "bob@ops-2, qo cancel", got.Actor)
		got, err = b.q.Replay(b.ctx, child.ID)
		require.NoError(t, err)
		require.Empty(t, got.Actor, "a replay without an actor does not keep the earlier one")

		ctl, err := control.Pause(ops, b.q, "job", "outage")
		require.NoError(t, err)
		require.Equal(t, "alice@ops-1, qo tui", ctl.Actor)
		ctl, err = control.Resume(b.ctx, b.q, "job")
		require.NoError(t, err)
		require.Empty(t, ctl.Actor)
		ctl, err = control.Read(b.ctx, b.q)
		require.NoError(t, err)
		require.Empty(t, ctl.Actor, "as stored")
	})
}
