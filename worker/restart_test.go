package worker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/internal/testutil"
	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/queue/registry"
	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/store/memstore"
)

// failLeaseLists fails the first n LISTs of the lease index, and, once
// gets is armed, the first gets GETs of task objects.
type failLeaseLists struct {
	store.Store
	n    atomic.Int32
	gets atomic.Int32
}

func (s *failLeaseLists) List(ctx context.Context, p store.ListParams) (store.ListPage, error) {
	if strings.HasPrefix(p.Prefix, queue.LeasesPrefix) && s.n.Add(-1) >= 0 {
		return store.ListPage{}, errors.New("injected list failure")
	}
	return s.Store.List(ctx, p)
}

func (s *failLeaseLists) Get(ctx context.Context, key string) (*store.Object, error) {
	if strings.HasPrefix(key, queue.TasksPrefix) && s.gets.Add(-1) >= 0 {
		return nil, errors.New("injected get failure")
	}
	return s.Store.Get(ctx, key)
}

// A worker killed while it runs a task and restarted under the same id
// before the monitor judged it dead (a StatefulSet pod, a systemd unit)
// heartbeats again under the id, so the monitor sees the task's holder
// alive. The new process takes the earlier one's task back once that
// process's last heartbeat is older than DeadAfter + MaxClockSkew, the
// bound of a kill without restart, not a whole timeout later; also when
// its first look at the lease index fails, and when the earlier process
// deregistered with a task it could not release (its store failing as it
// shut down): then from the restart, when it last heartbeated being
// unknown; and when its first take-backs fail (the fleet simulation's
// seed 324: one failed GET, and the task stayed running under the id
// until its lease expired).
func TestRestartUnderSameIDTakesBackEarlierTasks(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		failures     int32
		deregistered bool
		failedGets   int32
	}{{0, false, 0}, {2, false, 0}, {0, true, 0}, {0, false, 2}} {
		t.Run(fmt.Sprintf("failed lease lists %d, deregistered %v, failed take-backs %d", c.failures, c.deregistered, c.failedGets), func(t *testing.T) {
			t.Parallel()
			testRestartUnderSameID(t, c.failures, c.deregistered, c.failedGets)
		})
	}
}

func testRestartUnderSameID(t *testing.T, failures int32, deregistered bool, failedGets int32) {
	ctx := context.Background()
	fake := newFakeClock()
	s := memstore.New(memstore.WithClock(fake)) // registry ages by the same clock
	_, err := queue.Init(ctx, s, 1)
	require.NoError(t, err)
	q, err := queue.Open(ctx, s, queue.Options{Logger: testLogger(t), Clock: fake})
	require.NoError(t, err)
	bd := &bundle{s: s, q: q, clock: fake, fake: fake}

	task := bd.submit(t, "echo", `{"v":1}`, timeout(10*time.Minute), retries(2), func(r *queue.SubmitRequest) {
		r.RetryPolicy = &queue.RetryPolicy{InitialIntervalMS: 1, MaxIntervalMS: 1, Multiplier: 1}
	})

	// The first process registered, claimed the task and was killed: its
	// registry entry and its lease are left as they were.
	const id = "w-restarted"
	killedAt := fake.Now()
	require.NoError(t, registry.Put(ctx, q, &queue.WorkerInfo{ID: id, StartedAt: killedAt, LastHeartbeat: killedAt}))
	entries, _, err := q.ListReady(ctx, queue.ReadyQuery{})
	require.NoError(t, err)
	require.Len(t, entries, 1)
	old, err := q.Claim(ctx, entries[0], id)
	require.NoError(t, err)
	if deregistered {
		require.NoError(t, registry.Delete(ctx, q, id))
	}

	// Restarted under the same id well within the liveness bound.
	fake.Advance(5 * time.Second)
	restartedAt := fake.Now()
	o := bd.opts(t)
	o.ID = id
	o.NoMonitor = false
	o.Monitor.LeaseCheckInterval = 20 * time.Millisecond
	o.Monitor.LeaderTTL = time.Hour // fake time moves in big steps here
	fs := &failLeaseLists{Store: s}
	fs.n.Store(failures)
	w := New(bd.over(t, fs), o)
	w.Handle("echo", echoHandler)
	r := start(t, w)
	testutil.Eventually(t, func() bool { return w.Monitor() != nil && w.Monitor().IsLeader() }, "the embedded monitor to lead")
	testutil.Eventually(t, func() bool {
		wi, err := registry.Get(ctx, q, id)
		return err == nil && wi.LastHeartbeat.After(killedAt)
	}, "the new process to register")

	// Past the bound of the first process's last heartbeat, far before the
	// task's lease runs out.
	bound := killedAt.Add(queue.DefaultDeadAfter + queue.MaxClockSkew + time.Second)
	if deregistered {
		bound = restartedAt.Add(queue.DefaultDeadAfter + queue.MaxClockSkew + time.Second)
	}
	// In steps its heartbeats keep up with: a jump past DeadAfter would
	// make the new process itself look dead to the monitor, which would
	// then take the task back whatever the restart did.
	fs.gets.Store(failedGets) // the take-backs' GETs fail first
	for fake.Now().Before(bound) {
		fake.AdvanceTo(minTime(bound, fake.Now().Add(5*time.Second)))
		now := fake.Now()
		testutil.Eventually(t, func() bool {
			wi, err := registry.Get(ctx, q, id)
			return err == nil && !wi.LastHeartbeat.Before(now)
		}, "a heartbeat at %s", now)
	}
	require.True(t, bound.Before(*old.Task.LeaseExpiresAt))
	testutil.Eventually(t, func() bool {
		got := bd.get(t, task.ID)
		return got.Status != queue.StatusRunning || got.Attempt > 1
	}, "the earlier process's attempt to be taken back before its lease runs out")
	fake.Advance(5 * time.Minute) // past the retry backoff
	got := bd.waitStatus(t, task.ID, queue.StatusCompleted)
	require.Equal(t, 2, got.Attempt, "the earlier attempt was taken back, then run again")
	require.Equal(t, 1, got.RetryCount)
	require.JSONEq(t, `{"v":1}`, string(got.Output))
	require.NoError(t, r.stop(t))
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}
