package monitor

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/internal/testutil"
	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/queue/namedlease"
	"github.com/qo-queue/qo/queue/registry"
	"github.com/qo-queue/qo/queue/schedule"
	"github.com/qo-queue/qo/queue/sweepstate"
	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/store/storetest"
)

var discard = slog.New(slog.NewTextHandler(io.Discard, nil))

// setup returns a queue on a fresh store; with fake, on a fake clock.
func setup(t *testing.T, b storetest.Backend, fake bool) (*queue.Queue, store.Store, *storetest.Clock) {
	t.Helper()
	ctx := context.Background()
	s := b.New(t)
	_, err := queue.Init(ctx, s, 1)
	require.NoError(t, err)
	var clock *storetest.Clock
	o := queue.Options{}
	if fake {
		clock = storetest.NewClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
		o.Clock = clock
	}
	q, err := queue.Open(ctx, s, o)
	require.NoError(t, err)
	return q, s, clock
}

func submitAndClaim(t *testing.T, q *queue.Queue, maxRetries int) *queue.Lease {
	t.Helper()
	ctx := context.Background()
	task, _, err := q.Submit(ctx, queue.SubmitRequest{Type: "job", Input: json.RawMessage(`{}`), Timeout: 10 * time.Second, MaxRetries: &maxRetries})
	require.NoError(t, err)
	e := queue.ReadyEntry{Key: queue.ReadyKey(task), ID: task.ID, Shard: task.Shard, Type: task.Type, AvailableAt: task.AvailableAt}
	return claimAs(t, q, e, "long-lived")
}

func claimAs(t *testing.T, q *queue.Queue, e queue.ReadyEntry, worker string) *queue.Lease {
	t.Helper()
	l, err := q.Claim(context.Background(), e, worker)
	require.NoError(t, err)
	return l
}

// beat writes a heartbeat for worker at the queue's time.
func beat(t *testing.T, q *queue.Queue, worker string, deadAfter time.Duration) {
	t.Helper()
	require.NoError(t, registry.Put(context.Background(), q, &queue.WorkerInfo{ID: worker, LastHeartbeat: q.Now(), DeadAfterSeconds: int(deadAfter / time.Second)}))
}

func TestHealth(t *testing.T) {
	t.Parallel()
	now := time.Date(2030, 1, 1, 0, 10, 0, 0, time.UTC)
	tests := []struct {
		age   time.Duration
		bound int // the worker's stated DeadAfterSeconds (0: the default, 20s)
		want  State
	}{
		{age: 0, want: Active},
		{age: -5 * time.Second, want: Active}, // clock skew: a heartbeat from the future
		{age: 15 * time.Second, want: Active},
		{age: 15*time.Second + time.Millisecond, want: Stale}, // the worker stops its handlers
		{age: 22 * time.Second, want: Stale},
		{age: 22*time.Second + time.Millisecond, want: Dead}, // the monitor takes its tasks back
		{age: time.Hour, want: Dead},
		{age: 45 * time.Second, bound: 60, want: Active},
		{age: 46 * time.Second, bound: 60, want: Stale},
		{age: 62 * time.Second, bound: 60, want: Stale},
		{age: 63 * time.Second, bound: 60, want: Dead},
	}
	var workers []*queue.WorkerInfo
	for i, tc := range tests {
		w := &queue.WorkerInfo{ID: string(rune('a' + i)), LastHeartbeat: now.Add(-tc.age), DeadAfterSeconds: tc.bound}
		require.Equal(t, tc.want, Judge(w, now), "age %s, bound %ds", tc.age, tc.bound)
		workers = append(workers, w)
	}
	hs := Health(append(workers, nil), now)
	require.Len(t, hs, len(tests))
	for i, h := range hs {
		require.Equal(t, tests[i].want, h.State)
		require.GreaterOrEqual(t, h.Age, time.Duration(0))
	}
}

// TestHealthAgreesWithRecovery: a worker is shown dead exactly when the
// lease walk takes its tasks back, not minutes later.
func TestHealthAgreesWithRecovery(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	q, _, clock := setup(t, storetest.Backends()[0], true)
	beat(t, q, "long-lived", 0)
	submitAndClaim(t, q, 3)
	m := New(q, Options{Logger: discard})
	for _, step := range []time.Duration{10 * time.Second, 5 * time.Second, 7 * time.Second, time.Second} {
		clock.Advance(step)
		hs, err := m.CheckWorkers(ctx)
		require.NoError(t, err)
		require.Len(t, hs, 1)
		r, err := m.CheckLeases(ctx)
		require.NoError(t, err)
		shownDead := hs[0].State == Dead
		require.Equal(t, r.Reclaimed == 1, shownDead, "at heartbeat age %s: shown %s, reclaimed %d", hs[0].Age, hs[0].State, r.Reclaimed)
		if shownDead {
			require.LessOrEqual(t, hs[0].Age, DeadAt(0)+time.Second)
			return
		}
	}
	t.Fatal("the worker was never shown dead")
}

func TestCheckTimeouts(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		q, _, clock := setup(t, b, true)
		beat(t, q, "long-lived", time.Hour) // only the leases are under test
		retry := submitAndClaim(t, q, 3)
		exhausted := submitAndClaim(t, q, 0)
		m := New(q, Options{Logger: discard})

		n, err := m.CheckTimeouts(ctx)
		require.NoError(t, err)
		require.Zero(t, n, "nothing expired yet")

		clock.Advance(5 * time.Second)
		fresh := submitAndClaim(t, q, 3) // lease runs 10s + grace from here
		clock.Advance(6*time.Second + queue.LeaseGrace)
		n, err = m.CheckTimeouts(ctx)
		require.NoError(t, err)
		require.Equal(t, 2, n)

		got, err := q.Get(ctx, retry.Task.ID)
		require.NoError(t, err)
		require.Equal(t, queue.StatusPending, got.Status)
		require.Equal(t, 1, got.RetryCount)
		require.True(t, got.AvailableAt.After(q.Now()), "requeued with backoff")
		require.Contains(t, got.LastError, "lease expired")

		got, err = q.Get(ctx, exhausted.Task.ID)
		require.NoError(t, err)
		require.Equal(t, queue.StatusFailed, got.Status)

		got, err = q.Get(ctx, fresh.Task.ID)
		require.NoError(t, err)
		require.Equal(t, queue.StatusRunning, got.Status, "an unexpired lease is left alone")

		n, err = m.CheckTimeouts(ctx)
		require.NoError(t, err)
		require.Zero(t, n, "idempotent")
	})
}

// A worker that stops heartbeating loses its tasks within its liveness
// bound, however long their timeouts; live workers, and workers that state
// a longer bound, keep theirs; a holder without a registry entry loses its
// tasks once the claim is older than the bound.
func TestCheckLeasesDeadHolders(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		q, _, clock := setup(t, b, true)
		claim := func(worker string) *queue.Lease {
			task, _, err := q.Submit(ctx, queue.SubmitRequest{Type: "job", Timeout: time.Hour})
			require.NoError(t, err)
			return claimAs(t, q, queue.ReadyEntry{Key: queue.ReadyKey(task), ID: task.ID, Shard: task.Shard, Type: task.Type}, worker)
		}
		beat(t, q, "alive", 0)
		beat(t, q, "killed", 0)
		beat(t, q, "patient", time.Minute)
		alive, killed, patient := claim("alive"), claim("killed"), claim("patient")
		killed2 := claim("killed") // claimed after its last heartbeat
		ghost := claim("ghost")    // never registered
		m := New(q, Options{Logger: discard})

		r, err := m.CheckLeases(ctx)
		require.NoError(t, err)
		require.Equal(t, LeaseCheck{Leases: 5}, r, "everyone is fresh")

		// Past the bound but within the clock skew bound: the workers may
		// see their heartbeat as younger (they stop their handlers at three
		// quarters of the bound by their own clocks), so nothing is taken.
		clock.Advance(queue.DefaultDeadAfter + time.Second)
		beat(t, q, "alive", 0)
		r, err = m.CheckLeases(ctx)
		require.NoError(t, err)
		require.Zero(t, r.Reclaimed, "taken back within the clock skew bound")

		clock.Advance(queue.MaxClockSkew)
		beat(t, q, "alive", 0)
		r, err = m.CheckLeases(ctx)
		require.NoError(t, err)
		require.Equal(t, 3, r.Reclaimed)
		require.Equal(t, []string{"ghost", "killed"}, r.Dead)
		for _, l := range []*queue.Lease{killed, killed2, ghost} {
			got, err := q.Get(ctx, l.Task.ID)
			require.NoError(t, err)
			require.Equal(t, queue.StatusPending, got.Status)
			require.Equal(t, 1, got.RetryCount)
			require.Equal(t, queue.EventTimedOut, got.LastEvent)
			require.Contains(t, got.LastError, "stopped heartbeating")
		}
		for _, l := range []*queue.Lease{alive, patient} {
			got, err := q.Get(ctx, l.Task.ID)
			require.NoError(t, err)
			require.Equal(t, queue.StatusRunning, got.Status)
		}
		// The reclaimed holders' late writes are fenced off.
		_, err = q.Complete(ctx, killed, nil)
		require.ErrorIs(t, err, queue.ErrLeaseLost)

		// The patient worker is dead once its own bound passed.
		clock.Advance(time.Minute)
		beat(t, q, "alive", 0)
		r, err = m.CheckLeases(ctx)
		require.NoError(t, err)
		require.Equal(t, 1, r.Reclaimed)
		require.Equal(t, []string{"patient"}, r.Dead)
	})
}

// A worker of key layout 2 that outlived the migration claimed a task (its
// lease entry has a key segment per field) and died: the lease check finds
// the task and takes it back.
func TestCheckLeasesTakesBackOlderLayoutLease(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		q, s, clock := setup(t, b, true)
		l := submitAndClaim(t, q, 3)
		e, err := queue.ParseLeaseKey(queue.LeaseKey(l.Task))
		require.NoError(t, err)
		old := fmt.Sprintf("leases/%s/%013d/%s/%s/%s/%s", e.Shard, e.ExpiresAt.UnixMilli(), e.Type, e.ID, e.LeaseID, e.WorkerID)
		_, err = s.Put(ctx, old, nil, store.Condition{})
		require.NoError(t, err)
		require.NoError(t, s.Delete(ctx, e.Key, store.Condition{}))
		m := New(q, Options{Logger: discard})

		clock.Advance(queue.DefaultDeadAfter + queue.MaxClockSkew + time.Second)
		r, err := m.CheckLeases(ctx)
		require.NoError(t, err)
		require.Equal(t, 1, r.Leases)
		require.Equal(t, 1, r.Reclaimed)
		require.Equal(t, []string{"long-lived"}, r.Dead)
		got, err := q.Get(ctx, l.Task.ID)
		require.NoError(t, err)
		require.Equal(t, queue.StatusPending, got.Status)
		_, err = s.Get(ctx, queue.ReadyKey(got))
		require.NoError(t, err, "the task has its current ready entry")
	})
}

// With nothing running, a lease round is one LIST, with or without
// workers registered.
func TestCheckLeasesIdleCost(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		s := b.New(t)
		_, err := queue.Init(ctx, s, 2)
		require.NoError(t, err)
		q, err := queue.Open(ctx, s, queue.Options{})
		require.NoError(t, err)
		beat(t, q, "w1", 0)
		m := New(q, Options{Logger: discard})
		counted := s.(store.Counted)
		before := counted.Requests().Snapshot()
		_, err = m.CheckLeases(ctx)
		require.NoError(t, err)
		d := counted.Requests().Snapshot().Sub(before)
		require.Equal(t, int64(1), d.Total(store.OpList), "%s", d)
		require.Equal(t, int64(1), d.All(), "%s", d)
	})
}

// While every holder's newest lease entry is younger than a quarter of
// DeadAfter none of them can be dead yet, so a lease round does not list
// the registry; once one is older it does, and a dead holder is still
// found.
func TestCheckLeasesListsRegistryOnlyWhenAHolderMayBeDead(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		s := b.New(t)
		_, err := queue.Init(ctx, s, 1)
		require.NoError(t, err)
		// The queue's clock starts at the store's, so lease entries' ages
		// (by the store's LastModified) are what the clock says.
		start, err := s.Now(ctx)
		require.NoError(t, err)
		clock := storetest.NewClock(start)
		q, err := queue.Open(ctx, s, queue.Options{Clock: clock})
		require.NoError(t, err)
		beat(t, q, "w1", 0)
		task, _, err := q.Submit(ctx, queue.SubmitRequest{Type: "job", Timeout: time.Hour})
		require.NoError(t, err)
		claimAs(t, q, queue.ReadyEntry{Key: queue.ReadyKey(task), ID: task.ID, Shard: task.Shard, Type: task.Type, AvailableAt: task.AvailableAt}, "w1")
		m := New(q, Options{Clock: clock, Logger: discard})
		counted := s.(store.Counted)

		round := func() (LeaseCheck, store.Counts) {
			t.Helper()
			before := counted.Requests().Snapshot()
			r, err := m.CheckLeases(ctx)
			require.NoError(t, err)
			return r, counted.Requests().Snapshot().Sub(before)
		}
		r, d := round()
		require.Equal(t, 1, r.Leases)
		require.Equal(t, int64(1), d.All(), "a young lease: the lease index only (%s)", d)

		clock.Advance(queue.DefaultDeadAfter/4 + 2*time.Second)
		r, d = round()
		require.Zero(t, r.Reclaimed, "the holder's heartbeat is recent")
		require.Equal(t, int64(2), d.Total(store.OpList), "an older lease: the registry is listed too (%s)", d)

		clock.Advance(queue.DefaultDeadAfter + queue.MaxClockSkew)
		r, _ = round()
		require.Equal(t, 1, r.Reclaimed, "the holder stopped heartbeating")
		require.Equal(t, []string{"w1"}, r.Dead)
	})
}

func TestLeaderElection(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		q, _, clock := setup(t, b, true)
		m1 := New(q, Options{ID: "m1", LeaderTTL: 30 * time.Second, Logger: discard})
		m2 := New(q, Options{ID: "m2", LeaderTTL: 30 * time.Second, Logger: discard})

		require.True(t, m1.Elect(ctx))
		require.False(t, m2.Elect(ctx))
		require.True(t, m1.IsLeader())
		require.False(t, m2.IsLeader())

		// Renewal keeps it.
		clock.Advance(20 * time.Second)
		require.True(t, m1.Elect(ctx))
		clock.Advance(20 * time.Second)
		require.True(t, m1.IsLeader())
		require.False(t, m2.Elect(ctx))

		// The leader stops renewing (dies): the standby takes over once
		// the lease expired, and the old leader finds out.
		clock.Advance(31 * time.Second)
		require.False(t, m1.IsLeader())
		require.True(t, m2.Elect(ctx))
		require.False(t, m1.Elect(ctx))
		require.False(t, m1.IsLeader())
		l, err := namedlease.Read(ctx, q, queue.MonitorLeaderKey)
		require.NoError(t, err)
		require.Equal(t, "m2", l.Holder)

		// A clean shutdown hands over at once.
		m2.resign(ctx)
		require.False(t, m2.IsLeader())
		require.True(t, m1.Elect(ctx))
	})
}

// Two running monitors: exactly one leads; when it stops, the other takes
// over.
func TestTwoMonitorsOneLeader(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, b storetest.Backend) {
		q, _, _ := setup(t, b, false)
		opts := Options{CheckInterval: 20 * time.Millisecond, LeaderTTL: 3 * time.Second, SweepInterval: -1, Logger: discard}
		o1, o2 := opts, opts
		o1.ID, o2.ID = "m1", "m2"
		ms := []*Monitor{New(q, o1), New(q, o2)}
		cancels := make([]context.CancelFunc, 2)
		dones := make([]chan struct{}, 2)
		for i, m := range ms {
			ctx, cancel := context.WithCancel(context.Background())
			cancels[i] = cancel
			dones[i] = make(chan struct{})
			go func() {
				defer close(dones[i])
				_ = m.Run(ctx)
			}()
			t.Cleanup(func() { cancel(); <-dones[i] })
		}
		leader := -1
		testutil.Eventually(t, func() bool {
			for i, m := range ms {
				if m.IsLeader() {
					leader = i
					return true
				}
			}
			return false
		}, "a leader")
		for range 50 {
			require.False(t, ms[0].IsLeader() && ms[1].IsLeader(), "two leaders at once")
			time.Sleep(5 * time.Millisecond)
		}
		cancels[leader]()
		<-dones[leader]
		other := ms[1-leader]
		testutil.Eventually(t, other.IsLeader, "the standby to take over")
	})
}

func TestCheckWorkers(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		q, _, clock := setup(t, b, true)
		now := clock.Now()
		for id, age := range map[string]time.Duration{"fresh": time.Second, "late": 2 * time.Minute, "gone": time.Hour, "ancient": 48 * time.Hour} {
			require.NoError(t, registry.Put(ctx, q, &queue.WorkerInfo{ID: id, StartedAt: now.Add(-age), LastHeartbeat: now.Add(-age)}))
		}
		m := New(q, Options{PruneDeadAfter: 24 * time.Hour, Logger: discard})
		hs, err := m.CheckWorkers(ctx)
		require.NoError(t, err)
		got := map[string]State{}
		for _, h := range hs {
			got[h.Worker.ID] = h.State
		}
		require.Equal(t, map[string]State{"fresh": Active, "late": Dead, "gone": Dead, "ancient": Dead}, got)
		require.Len(t, m.WorkerHealth(), 4)
		ws, err := registry.List(ctx, q)
		require.NoError(t, err)
		require.Len(t, ws, 3, "the registration dead for over PruneDeadAfter is pruned")
	})
}

func TestSweepRound(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		q, _, clock := setup(t, b, true)
		// Tasks of a type nobody serves: one will expire, four just wait.
		exp, _, err := q.Submit(ctx, queue.SubmitRequest{Type: "nobody", ExpiresAt: clock.Now().Add(time.Second)})
		require.NoError(t, err)
		for i := 0; i < 4; i++ {
			_, _, err = q.Submit(ctx, queue.SubmitRequest{Type: "nobody"})
			require.NoError(t, err)
		}
		clock.Advance(2 * time.Minute)

		opts := Options{Clock: clock, Logger: discard, SweepPageSize: 1}
		opts.ID = "m1"
		m1 := New(q, opts)
		require.NoError(t, m1.SweepRound(ctx))
		st, err := sweepstate.Load(ctx, q)
		require.NoError(t, err)
		require.Zero(t, st, "only the leader sweeps")

		// The leader sweeps one page per round and keeps its place in the
		// bucket; a new leader resumes there instead of starting over.
		require.True(t, m1.Elect(ctx))
		var cursors []string
		for i := 0; i < 2; i++ {
			require.NoError(t, m1.SweepRound(ctx))
			st, err = sweepstate.Load(ctx, q)
			require.NoError(t, err)
			require.Equal(t, "m1", st.Holder)
			cursors = append(cursors, st.Cursor)
		}
		require.NotEqual(t, cursors[0], cursors[1])
		m1.resign(ctx)
		opts.ID = "m2"
		m2 := New(q, opts)
		require.True(t, m2.Elect(ctx))
		require.NoError(t, m2.SweepRound(ctx))
		st, err = sweepstate.Load(ctx, q)
		require.NoError(t, err)
		require.Equal(t, "m2", st.Holder)
		require.Greater(t, st.Cursor, cursors[1], "resumed after the last key m1 swept")
		// The pass ends and the next one starts over.
		for st.Cursor != "" {
			require.NoError(t, m2.SweepRound(ctx))
			st, err = sweepstate.Load(ctx, q)
			require.NoError(t, err)
		}
		require.False(t, st.LastPassAt.IsZero())
		got, err := q.Get(ctx, exp.ID)
		require.NoError(t, err)
		require.Equal(t, queue.StatusExpired, got.Status, "the sweep expires a task nobody claimed before its deadline")
	})
}

func TestSweepReadsOnlyIdleEntries(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		q, s, _ := setup(t, b, false) // the server's clock: entries' ages are real
		for i := 0; i < 3; i++ {
			_, _, err := q.Submit(ctx, queue.SubmitRequest{Type: "job"})
			require.NoError(t, err)
		}
		counted := s.(store.Counted)
		before := counted.Requests().Snapshot()
		res, next, err := q.Recovery().Sweep(ctx, "", 0, time.Hour)
		require.NoError(t, err)
		require.Empty(t, next)
		require.Equal(t, 3, res.Listed)
		require.Zero(t, res.Scanned, "entries younger than the idle bound are not read")
		d := counted.Requests().Snapshot().Sub(before)
		require.Equal(t, int64(1), d.Total(store.OpList), "%s", d)
		require.Zero(t, d.Total(store.OpGet), "%s", d)
		res, _, err = q.Recovery().Sweep(ctx, "", 0, 0)
		require.NoError(t, err)
		require.Equal(t, 3, res.Scanned, "idle for long enough: each task is read once")
		require.Zero(t, res.Expired+res.StaleRemoved)
	})
}

func TestRunSchedules(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		q, _, clock := setup(t, b, true)
		_, err := schedule.Create(ctx, q, schedule.Spec{Name: "minutely", Cron: "* * * * *", Task: schedule.Task{Type: "job"}})
		require.NoError(t, err)
		// Two monitors, as after a leadership change.
		obs := &scheduleObserver{}
		m1 := New(q, Options{Clock: clock, Logger: discard, Observer: obs})
		m2 := New(q, Options{Clock: clock, Logger: discard, Observer: obs})
		for _, m := range []*Monitor{m1, m2} {
			runs, err := m.RunSchedules(ctx)
			require.NoError(t, err)
			require.Empty(t, runs)
		}
		clock.Advance(time.Minute)
		runs, err := m1.RunSchedules(ctx)
		require.NoError(t, err)
		require.Len(t, runs, 1)
		require.True(t, runs[0].Created)
		runs, err = m2.RunSchedules(ctx)
		require.NoError(t, err)
		require.Empty(t, runs, "the other monitor finds the due time handled")
		page, err := q.List(ctx, queue.ListQuery{Status: queue.StatusPending})
		require.NoError(t, err)
		require.Len(t, page.Tasks, 1)
		require.Equal(t, "job", page.Tasks[0].Type)
		require.Equal(t, []string{"minutely submitted"}, obs.get())
	})
}

// scheduleObserver records schedule runs.
type scheduleObserver struct {
	mu   sync.Mutex
	runs []string
}

func (o *scheduleObserver) Leadership(bool) {}
func (o *scheduleObserver) TimedOut(string) {}
func (o *scheduleObserver) ScheduleRun(s, outcome string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.runs = append(o.runs, s+" "+outcome)
}

func (o *scheduleObserver) get() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.runs...)
}

// A lease index larger than a round's budget is walked in parts, each
// round going on where the last stopped: an expired lease in the last
// shard is taken back within ceil(entries / (page size x pages)) rounds,
// and no round lists more than its budget (one LIST more when it wraps).
func TestCheckLeasesWalksALargeIndexInParts(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		s := b.New(t)
		_, err := queue.Init(ctx, s, 1)
		require.NoError(t, err)
		clock := storetest.NewClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
		// Task n lands in shard n mod 16: 20 running tasks, two in each of
		// shards 0-3 and one in every other; the last key is shard f's.
		var n byte
		lists := &leaseLists{Store: s}
		q, err := queue.Open(ctx, lists, queue.Options{Clock: clock, NewID: func(at time.Time) uuid.UUID {
			id := queue.NewIDAt(at)
			id[15] = id[15]&0xf0 | n%16
			n++
			return id
		}})
		require.NoError(t, err)
		beat(t, q, "w1", time.Hour) // only the leases are under test
		const entries, pageSize, pages = 20, 2, 3
		var last *queue.Lease
		for i := range entries {
			timeout := time.Hour
			if i == 15 {
				timeout = time.Second
			}
			task, _, err := q.Submit(ctx, queue.SubmitRequest{Type: "job", Timeout: timeout})
			require.NoError(t, err)
			l := claimAs(t, q, queue.ReadyEntry{Key: queue.ReadyKey(task), ID: task.ID, Shard: task.Shard, Type: task.Type}, "w1")
			if i == 15 {
				last = l
			}
		}
		require.Equal(t, "f", last.Task.Shard)
		keys := listKeys(t, s, queue.LeasesPrefix)
		require.Len(t, keys, entries)
		require.Equal(t, last.LeaseKey, keys[len(keys)-1], "the expired lease is the index's last entry")
		clock.Advance(time.Second + queue.LeaseGrace)

		m := New(q, Options{Clock: clock, Logger: discard})
		m.leasePageSize, m.leasePages = pageSize, pages
		bound := (entries + pageSize*pages - 1) / (pageSize * pages) // 4
		rounds := 0
		for taken := false; !taken; {
			rounds++
			require.LessOrEqual(t, rounds, bound, "the expired lease in the last shard is taken back within %d rounds", bound)
			before := lists.n.Load()
			r, err := m.CheckLeases(ctx)
			require.NoError(t, err)
			require.LessOrEqual(t, lists.n.Load()-before, int64(pages+1), "at most the budget, one more at the wrap")
			require.LessOrEqual(t, r.Leases, pageSize*pages)
			taken = r.Expired == 1
		}
		require.Equal(t, bound, rounds)
		got, err := q.Get(ctx, last.Task.ID)
		require.NoError(t, err)
		require.Equal(t, queue.StatusPending, got.Status)

		// The round that reached the end went on from the first shard with
		// what was left of its budget, so the next begins where it stopped;
		// and a small index is listed whole each round, from the first shard.
		m.leasePageSize, m.leasePages = 1000, 1
		before := lists.n.Load()
		r, err := m.CheckLeases(ctx)
		require.NoError(t, err)
		require.False(t, r.More)
		require.Equal(t, entries-1, r.Leases, "each entry once")
		require.Equal(t, int64(2), lists.n.Load()-before, "the rest of the index, then the wrap to its start")
		before = lists.n.Load()
		r, err = m.CheckLeases(ctx)
		require.NoError(t, err)
		require.Equal(t, entries-1, r.Leases)
		require.False(t, r.More)
		require.Equal(t, int64(1), lists.n.Load()-before)
	})
}

// leaseLists counts the LISTs of the lease index.
type leaseLists struct {
	store.Store
	n atomic.Int64
}

func (l *leaseLists) List(ctx context.Context, p store.ListParams) (store.ListPage, error) {
	if strings.HasPrefix(p.Prefix, queue.LeasesPrefix) {
		l.n.Add(1)
	}
	return l.Store.List(ctx, p)
}

// listKeys lists every key under prefix.
func listKeys(t *testing.T, s store.Store, prefix string) []string {
	t.Helper()
	var keys []string
	token := ""
	for {
		page, err := s.List(context.Background(), store.ListParams{Prefix: prefix, Token: token, Limit: 1000})
		require.NoError(t, err)
		for _, o := range page.Objects {
			keys = append(keys, o.Key)
		}
		if page.NextToken == "" {
			return keys
		}
		token = page.NextToken
	}
}
