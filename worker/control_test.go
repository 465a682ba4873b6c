package worker

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/internal/testutil"
	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/queue/control"
	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/store/memstore"
	"github.com/qo-queue/qo/store/storetest"
)

func TestPauseStopsClaiming(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		bd := setup(t, b, setupOpts{})
		o := bd.opts(t)
		o.Concurrency = 10
		o.ControlRefresh = time.Nanosecond // re-read the switches on every poll
		w := New(bd.q, o)
		w.Handle("a", blockHandler)
		w.Handle("b", blockHandler)
		prepared(t, w)
		for range 2 {
			bd.submit(t, "a", `{}`)
			bd.submit(t, "b", `{}`)
		}

		_, err := control.Pause(ctx, bd.q, "", "maintenance")
		require.NoError(t, err)
		r := w.pollSettled(ctx, 10)
		require.NoError(t, r.err)
		require.Zero(t, r.claimed, "the switches are read before claiming what the listing found")
		before := counts(bd.s)
		r = w.pollSettled(ctx, 10)
		require.NoError(t, r.err)
		require.Zero(t, r.claimed)
		require.Zero(t, counts(bd.s).Sub(before).Total(store.OpList), "a worker that knows it is paused does not even list")

		_, err = control.Resume(ctx, bd.q, "")
		require.NoError(t, err)
		_, err = control.Pause(ctx, bd.q, "a", "")
		require.NoError(t, err)
		r = w.pollSettled(ctx, 10)
		require.NoError(t, r.err)
		require.Equal(t, 2, r.claimed)
		require.Equal(t, map[string]int{"b": 2}, runningTypes(w), "only the type that is not paused")

		_, err = control.Resume(ctx, bd.q, "a")
		require.NoError(t, err)
		require.Equal(t, 2, w.pollSettled(ctx, 10).claimed)
		require.Equal(t, map[string]int{"a": 2, "b": 2}, runningTypes(w))
	})
}

func TestPerTypeLimit(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		bd := setup(t, b, setupOpts{})
		o := bd.opts(t)
		o.Concurrency = 10
		o.Limits = map[string]int{"email": 2}
		w := New(bd.q, o)
		w.Handle("email", blockHandler)
		w.Handle("resize", blockHandler)
		prepared(t, w)
		for range 5 {
			bd.submit(t, "email", `{}`)
		}
		for range 3 {
			bd.submit(t, "resize", `{}`)
		}
		for range 3 {
			require.NoError(t, w.pollSettled(ctx, 10-len(w.snapshotRunning())).err)
		}
		require.Equal(t, map[string]int{"email": 2, "resize": 3}, runningTypes(w))

		bad := New(bd.q, Options{Limits: map[string]int{"other": 1}})
		bad.Handle("email", blockHandler)
		require.ErrorContains(t, bad.prepare(), `does not serve`)
		zero := New(bd.q, Options{Limits: map[string]int{"email": 0}})
		zero.Handle("email", blockHandler)
		require.ErrorContains(t, zero.prepare(), "qo pause email")
	})
}

// A ready entry naming a type the worker serves over a task of a paused
// type (a key written by hand or restored from elsewhere) does not make the
// worker run that task: the claim is refused, the entry removed, and the
// task stays pending under its own entry until its type is resumed.
func TestForeignEntryIsNotRun(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		bd := setup(t, b, setupOpts{})
		o := bd.opts(t)
		o.Concurrency = 10
		o.ControlRefresh = time.Nanosecond
		w := New(bd.q, o)
		w.Handle("echo", blockHandler)
		w.Handle("other", blockHandler)
		prepared(t, w)
		_, err := control.Pause(ctx, bd.q, "other", "maintenance")
		require.NoError(t, err)
		task := bd.submit(t, "other", `{}`)
		forged := fmt.Sprintf("ready/echo/%s/%013d~normal~%s", task.Shard, task.AvailableAt.UnixMilli(), task.ID)
		_, err = bd.s.Put(ctx, forged, nil, store.Condition{})
		require.NoError(t, err)

		require.NoError(t, w.pollSettled(ctx, 10).err)
		require.Empty(t, runningTypes(w), "nothing runs: the task's type is paused")
		got := bd.get(t, task.ID)
		require.Equal(t, queue.StatusPending, got.Status)
		var keys []string
		p, err := bd.s.List(ctx, store.ListParams{Prefix: queue.ReadyPrefix})
		require.NoError(t, err)
		for _, k := range p.Objects {
			if strings.HasSuffix(k.Key, task.ID.String()) {
				keys = append(keys, k.Key)
			}
		}
		require.Equal(t, []string{queue.ReadyKey(got)}, keys, "the forged entry is gone")

		_, err = control.Resume(ctx, bd.q, "other")
		require.NoError(t, err)
		testutil.Eventually(t, func() bool {
			require.NoError(t, w.pollSettled(ctx, 10).err)
			return runningTypes(w)["other"] == 1
		}, "the task to run under its own entry once its type is resumed")
		require.Equal(t, map[string]int{"other": 1}, runningTypes(w))
	})
}

// controlDown fails every read of control.json while down is set (a bucket
// answering only in part, as when a worker starts inside a lossy window).
type controlDown struct {
	store.Store
	down atomic.Bool
}

func (c *controlDown) Get(ctx context.Context, key string) (*store.Object, error) {
	if key == queue.ControlKey && c.down.Load() {
		return nil, errBucketDown
	}
	return c.Store.Get(ctx, key)
}

// A worker that has never read control.json knows neither the pauses nor
// the fleet-wide caps: it claims nothing until it has read it once (the
// fleet simulation's seed 169: a worker restarted while its reads failed
// ran 9 tasks of a type capped at 5 across the fleet).
func TestNoClaimBeforeSwitchesRead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := &controlDown{Store: memstore.New()}
	_, err := queue.Init(ctx, s, 1)
	require.NoError(t, err)
	q, err := queue.Open(ctx, s, queue.Options{Logger: testLogger(t)})
	require.NoError(t, err)
	bd := &bundle{s: s, q: q}
	_, err = control.Pause(ctx, q, "job", "test: paused before the worker starts")
	require.NoError(t, err)
	bd.submit(t, "job", `{}`)
	bd.submit(t, "free", `{}`)

	w := New(q, bd.opts(t))
	w.Handle("job", blockHandler)
	w.Handle("free", blockHandler)
	prepared(t, w)
	s.down.Store(true)
	for range 3 {
		r := w.pollSettled(ctx, 4)
		require.Zero(t, r.claimed, "claimed while the switches are unknown")
	}
	s.down.Store(false)
	require.Equal(t, 1, w.pollSettled(ctx, 4).claimed, "the switches read: the type not paused is claimed")
	require.Equal(t, map[string]int{"free": 1}, runningTypes(w))
}

// A task of a type at its limit that ends wakes the dispatch loop: the
// next task of that type starts then, not a poll wait later (with short
// tasks, waiting would leave the limit mostly unused).
func TestLimitFreedWakesDispatch(t *testing.T) {
	t.Parallel()
	bd := setup(t, storetest.Backends()[0], setupOpts{})
	o := bd.opts(t)
	o.Concurrency = 4
	o.Limits = map[string]int{"email": 1}
	o.PollMin, o.PollMax = time.Hour, time.Hour // a poll wait would outlast the test
	w := New(bd.q, o)
	w.Handle("email", echoHandler)
	var ids []uuid.UUID
	for range 3 {
		ids = append(ids, bd.submit(t, "email", `{}`).ID)
	}
	start(t, w)
	for _, id := range ids {
		bd.waitStatus(t, id, queue.StatusCompleted)
	}
}
