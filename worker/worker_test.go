package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/internal/testutil"
	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/queue/registry"
	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/store/storetest"
)

func TestHandlerOutcomes(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, b storetest.Backend) {
		bd := setup(t, b, setupOpts{})
		w := New(bd.q, bd.opts(t))
		RegisterBuiltins(w)
		w.Handle("panics", func(context.Context, *queue.Task) (json.RawMessage, error) { panic("boom") })
		w.Handle("reschedules", func(_ context.Context, task *queue.Task) (json.RawMessage, error) {
			if task.Attempt == 1 {
				return nil, Reschedule(time.Hour)
			}
			return nil, nil
		})
		w.Handle("snoozes", func(_ context.Context, task *queue.Task) (json.RawMessage, error) {
			if task.Attempt == 1 {
				return nil, Snooze(time.Hour)
			}
			return nil, nil
		})
		w.Handle("badjson", func(context.Context, *queue.Task) (json.RawMessage, error) {
			return json.RawMessage("{not json"), nil
		})
		w.Handle("plainerr", func(context.Context, *queue.Task) (json.RawMessage, error) {
			return nil, errors.New("plain error")
		})

		tests := []struct {
			name, typ, input string
			mod              []func(*queue.SubmitRequest)
			want             queue.Status
			check            func(t *testing.T, task *queue.Task)
		}{
			{name: "echo", typ: "echo", input: `{"a":1}`, want: queue.StatusCompleted, check: func(t *testing.T, task *queue.Task) {
				require.JSONEq(t, `{"a":1}`, string(task.Output))
				require.Equal(t, 1, task.Attempt)
			}},
			{name: "sleep", typ: "sleep", input: `{"ms":1}`, want: queue.StatusCompleted, check: func(t *testing.T, task *queue.Task) {
				require.JSONEq(t, `{"slept_ms":1}`, string(task.Output))
			}},
			{name: "permanent", typ: "fail", input: `{"mode":"permanent","message":"nope"}`, mod: []func(*queue.SubmitRequest){retries(3)},
				want: queue.StatusFailed, check: func(t *testing.T, task *queue.Task) {
					require.Equal(t, 0, task.RetryCount)
					require.Contains(t, task.LastError, "nope")
				}},
			{name: "retryable exhausted", typ: "fail", input: `{"mode":"retryable"}`, mod: []func(*queue.SubmitRequest){retries(0)},
				want: queue.StatusFailed, check: func(t *testing.T, task *queue.Task) {
					require.Contains(t, task.LastError, "failed on purpose")
				}},
			{name: "plain error is retryable", typ: "plainerr", input: `{}`, mod: []func(*queue.SubmitRequest){retries(1), func(r *queue.SubmitRequest) {
				r.RetryPolicy = &queue.RetryPolicy{InitialIntervalMS: 1, MaxIntervalMS: 1, Multiplier: 1}
			}}, want: queue.StatusFailed, check: func(t *testing.T, task *queue.Task) {
				require.Equal(t, 1, task.RetryCount)
				require.Equal(t, 2, task.Attempt)
				require.Contains(t, task.LastError, "plain error")
			}},
			{name: "panic is recovered and retryable", typ: "panics", input: `{}`, mod: []func(*queue.SubmitRequest){retries(0)},
				want: queue.StatusFailed, check: func(t *testing.T, task *queue.Task) {
					require.Contains(t, task.LastError, "handler panicked: boom")
				}},
			{name: "invalid output JSON fails permanently", typ: "badjson", input: `{}`, mod: []func(*queue.SubmitRequest){retries(3)},
				want: queue.StatusFailed, check: func(t *testing.T, task *queue.Task) {
					require.Contains(t, task.LastError, "invalid JSON")
					require.Equal(t, 0, task.RetryCount)
				}},
		}
		ids := make([]*queue.Task, len(tests))
		for i, tc := range tests {
			ids[i] = bd.submit(t, tc.typ, tc.input, tc.mod...)
		}
		resched := bd.submit(t, "reschedules", `{}`, retries(5))
		snoozed := bd.submit(t, "snoozes", `{}`, retries(0))
		r := start(t, w)
		for i, tc := range tests {
			task := bd.waitStatus(t, ids[i].ID, tc.want)
			t.Run(tc.name, func(t *testing.T) { tc.check(t, task) })
		}
		// Reschedule: back to pending, an hour out, counted as a retry.
		var task *queue.Task
		testutil.Eventually(t, func() bool {
			task = bd.get(t, resched.ID)
			return task.Status == queue.StatusPending && task.Attempt == 1
		}, "rescheduled task")
		require.Equal(t, 1, task.RetryCount)
		require.WithinDuration(t, bd.q.Now().Add(time.Hour), task.AvailableAt, 5*time.Minute)
		// Snooze: back to pending, an hour out, no retry used (a task
		// without retries can snooze).
		testutil.Eventually(t, func() bool {
			task = bd.get(t, snoozed.ID)
			return task.Status == queue.StatusPending && task.Attempt == 1
		}, "snoozed task")
		require.Equal(t, queue.EventSnoozed, task.LastEvent)
		require.Equal(t, 0, task.RetryCount)
		require.Equal(t, 1, task.SnoozeCount)
		require.WithinDuration(t, bd.q.Now().Add(time.Hour), task.AvailableAt, 5*time.Minute)
		require.NoError(t, r.stop(t))
	})
}

func TestRegistrationAndHeartbeat(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, b storetest.Backend) {
		bd := setup(t, b, setupOpts{})
		o := bd.opts(t)
		o.Concurrency = 3
		o.Version = "v-test"
		w := New(bd.q, o)
		blk := newBlocker(true)
		w.Handle("block", blk.handle)
		w.Handle("echo", echoHandler)
		r := start(t, w)

		info := bd.waitRegistered(t, w.ID())
		require.Equal(t, []string{"block", "echo"}, info.Types)
		require.Equal(t, 3, info.Concurrency)
		require.Equal(t, os.Getpid(), info.PID)
		require.Equal(t, "v-test", info.Version)
		require.Empty(t, info.Shards, "empty means all shards")
		require.False(t, info.StartedAt.IsZero())

		// A running task shows up in the heartbeat, which keeps beating
		// while the handler runs.
		task := bd.submit(t, "block", `{}`)
		blk.waitStarted(t)
		first := info.LastHeartbeat
		testutil.Eventually(t, func() bool {
			cur := bd.waitRegistered(t, w.ID())
			return len(cur.CurrentTasks) == 1 && cur.CurrentTasks[0] == task.ID.String() && cur.LastHeartbeat.After(first)
		}, "heartbeat listing the running task")
		close(blk.release)
		bd.waitStatus(t, task.ID, queue.StatusCompleted)
		testutil.Eventually(t, func() bool {
			cur := bd.waitRegistered(t, w.ID())
			return len(cur.CurrentTasks) == 0 && cur.TasksCompleted == 1 &&
				cur.Requests != nil && cur.Requests.Total(store.OpPut) > 0
		}, "heartbeat with the completed counter and the request counts")

		require.NoError(t, r.stop(t))
		require.False(t, bd.registered(t, w.ID()), "worker must deregister on exit")
	})
}

func TestGracefulShutdown(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, b storetest.Backend) {
		t.Run("idle", func(t *testing.T) {
			t.Parallel()
			bd := setup(t, b, setupOpts{})
			w := New(bd.q, bd.opts(t))
			w.Handle("echo", echoHandler)
			r := start(t, w)
			bd.waitRegistered(t, w.ID())
			require.NoError(t, r.stop(t))
			require.False(t, bd.registered(t, w.ID()))
		})
		t.Run("mid-task finishing", func(t *testing.T) {
			t.Parallel()
			bd := setup(t, b, setupOpts{})
			w := New(bd.q, bd.opts(t)) // ShutdownTimeout: 1 minute
			blk := newBlocker(true)
			w.Handle("block", blk.handle)
			r := start(t, w)
			task := bd.submit(t, "block", `{}`)
			blk.waitStarted(t)
			r.cancel()
			// The worker waits for the handler; it has not returned and
			// the task is still running.
			time.Sleep(100 * time.Millisecond)
			require.False(t, r.finished(), "Run returned while a handler was still running")
			require.Equal(t, queue.StatusRunning, bd.get(t, task.ID).Status)
			close(blk.release)
			require.NoError(t, r.stop(t))
			got := bd.get(t, task.ID)
			require.Equal(t, queue.StatusCompleted, got.Status)
			require.JSONEq(t, `{"ok":true}`, string(got.Output))
			require.False(t, bd.registered(t, w.ID()))
		})
		// (A handler that ignores its context: see
		// TestShutdownKeepsTaskOfHandlerIgnoringContext.)
		t.Run("mid-task released", func(t *testing.T) {
			t.Parallel()
			bd := setup(t, b, setupOpts{})
			o := bd.opts(t)
			o.ShutdownTimeout = 50 * time.Millisecond
			o.HandlerGrace = 50 * time.Millisecond
			w := New(bd.q, o)
			blk := newBlocker(true)
			t.Cleanup(func() {
				select {
				case <-blk.release:
				default:
					close(blk.release)
				}
			})
			w.Handle("block", blk.handle)
			r := start(t, w)
			task := bd.submit(t, "block", `{}`, retries(3))
			blk.waitStarted(t)
			require.NoError(t, r.stop(t))
			got := bd.get(t, task.ID)
			require.Equal(t, queue.StatusPending, got.Status, "a released task is pending again")
			require.Equal(t, 0, got.RetryCount, "a release does not count as a retry")
			require.False(t, got.AvailableAt.After(got.UpdatedAt), "released tasks are available at once")
			require.Contains(t, got.LastError, "shut down")
			require.ErrorIs(t, <-blk.causes, ErrShuttingDown)
		})
		t.Run("abort", func(t *testing.T) {
			t.Parallel()
			bd := setup(t, b, setupOpts{})
			w := New(bd.q, bd.opts(t)) // ShutdownTimeout: 1 minute
			blk := newBlocker(true)
			w.Handle("block", blk.handle)
			r := start(t, w)
			task := bd.submit(t, "block", `{}`)
			blk.waitStarted(t)
			r.cancel()
			time.Sleep(50 * time.Millisecond)
			w.Abort() // second signal
			require.NoError(t, r.stop(t))
			require.Equal(t, queue.StatusPending, bd.get(t, task.ID).Status)
			require.ErrorIs(t, <-blk.causes, ErrShuttingDown)
		})
	})
}

// timeout_seconds is a hard limit: the handler's context is cancelled at
// the timeout, the attempt ends with "timed out after 1s", and the lease
// is never extended.
func TestHardTimeout(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, b storetest.Backend) {
		bd := setup(t, b, setupOpts{})
		w := New(bd.q, bd.opts(t))
		blk := newBlocker(true)
		w.Handle("block", blk.handle)
		r := start(t, w)
		task := bd.submit(t, "block", `{}`, timeout(time.Second), retries(0))
		got := bd.waitStatus(t, task.ID, queue.StatusFailed)
		var te *TimeoutError
		require.ErrorAs(t, <-blk.causes, &te)
		require.Equal(t, time.Second, te.After)
		require.Equal(t, 1, got.Attempt)
		require.Contains(t, got.LastError, "timed out after 1s")
		hist, err := bd.q.History(context.Background(), task.ID)
		require.NoError(t, err)
		for _, ev := range hist {
			require.NotEqual(t, queue.EventLeaseExtended, ev.Name, "a lease is never extended")
		}
		require.NoError(t, r.stop(t))
	})
}

// A worker whose heartbeat has not landed for its liveness bound (a long
// pause, a partition) stops its handlers and releases their tasks, and
// claims nothing until a heartbeat lands again.
func TestPresumedDeadStopsHandlers(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, b storetest.Backend) {
		bd := setup(t, b, setupOpts{fake: true})
		o := bd.opts(t)
		o.HeartbeatInterval, o.DeadAfter = time.Hour, 2*time.Hour
		w := New(bd.q, o)
		blk := newBlocker(true)
		w.Handle("block", blk.handle)
		// Submitted before the worker starts: a claim between the ready
		// entry's write and the task's would find no task and, the fake
		// clock being years ahead of the store's, take the entry for a
		// stale one and delete it.
		task := bd.submit(t, "block", `{}`, timeout(10*time.Hour))
		r := start(t, w)
		blk.waitStarted(t)
		// The handler is stopped a quarter of the bound before the monitor
		// may take the task back (itself only at the bound plus
		// queue.MaxClockSkew), so the two attempts never overlap.
		bd.fake.Advance(90*time.Minute + time.Second)
		select {
		case cause := <-blk.causes:
			require.ErrorIs(t, cause, ErrPresumedDead)
		case <-time.After(10 * time.Second):
			t.Fatal("the handler still runs at three quarters of the liveness bound")
		}
		got := bd.waitStatus(t, task.ID, queue.StatusPending)
		require.Zero(t, got.RetryCount, "released, not retried")
		require.Equal(t, queue.EventRequeued, got.LastEvent)
		require.True(t, w.presumedDead())
		require.NoError(t, r.stop(t))
	})
}

func TestCancelRequestedStopsHandler(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, b storetest.Backend) {
		bd := setup(t, b, setupOpts{})
		w := New(bd.q, bd.opts(t))
		blk := newBlocker(true)
		w.Handle("block", blk.handle)
		r := start(t, w)
		// The timeout is far off: on a loaded machine the cancel may take
		// more than a second to reach the handler, and this test is about
		// the cancel, not the timeout.
		task := bd.submit(t, "block", `{}`, timeout(time.Minute))
		blk.waitStarted(t)
		_, err := bd.q.Cancel(context.Background(), task.ID, "operator said so")
		require.NoError(t, err)
		got := bd.waitStatus(t, task.ID, queue.StatusCancelled)
		require.Equal(t, "operator said so", got.CancelReason)
		require.ErrorIs(t, <-blk.causes, ErrCancelRequested)
		require.NoError(t, r.stop(t))
	})
}

// A worker whose lease ran out (it was stopped past its lease) cannot
// write over the task once another worker owns it.
func TestStaleWorkerCannotComplete(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		bd := setup(t, b, setupOpts{fake: true})
		task := bd.submit(t, "work", `{}`, timeout(10*time.Second), retries(3), func(r *queue.SubmitRequest) {
			r.RetryPolicy = &queue.RetryPolicy{InitialIntervalMS: 1, MaxIntervalMS: 1, Multiplier: 1}
		})

		// Worker A claims and starts running.
		oa := bd.opts(t)
		oa.ID = "worker-a"
		a := New(bd.q, oa)
		a.Handle("work", echoHandler)
		require.NoError(t, a.prepare())
		a.handlerBase = ctx
		entries, _, err := bd.q.ListReady(ctx, queue.ReadyQuery{})
		require.NoError(t, err)
		require.Len(t, entries, 1)
		staleLease, err := bd.q.Claim(ctx, entries[0], a.ID())
		require.NoError(t, err)

		// A is frozen; its lease runs out and the monitor requeues the
		// task; worker B claims it.
		bd.fake.Advance(11*time.Second + queue.LeaseGrace)
		le, _, err := bd.q.Recovery().ListLeases(ctx, queue.ExpiredLeases, 10, "")
		require.NoError(t, err)
		require.Len(t, le, 1)
		_, err = bd.q.Recovery().ExpireLease(ctx, le[0])
		require.NoError(t, err)
		bd.fake.Advance(time.Second)
		entries, _, err = bd.q.ListReady(ctx, queue.ReadyQuery{})
		require.NoError(t, err)
		require.Len(t, entries, 1)
		bLease, err := bd.q.Claim(ctx, entries[0], "worker-b")
		require.NoError(t, err)

		// A resumes and reports success: the write is fenced off.
		rt := &runningTask{id: task.ID, lease: staleLease, cancel: func(error) {}}
		a.finish(ctx, rt, a.log, json.RawMessage(`{"from":"a"}`), nil, time.Second)
		require.Zero(t, a.completed.Load())
		got := bd.get(t, task.ID)
		require.Equal(t, queue.StatusRunning, got.Status)
		require.Equal(t, "worker-b", got.WorkerID)
		require.Equal(t, 2, got.Attempt)

		// Nor can it release, retry or fail it.
		for _, op := range []func() (*queue.Task, error){
			func() (*queue.Task, error) { return bd.q.Release(ctx, staleLease, "x") },
			func() (*queue.Task, error) { return bd.q.Fail(ctx, staleLease, "x") },
			func() (*queue.Task, error) { return bd.q.Retry(ctx, staleLease, "x", 0) },
		} {
			_, err := op()
			require.ErrorIs(t, err, queue.ErrLeaseLost)
		}
		// B finishes normally.
		_, err = bd.q.Complete(ctx, bLease, json.RawMessage(`{"from":"b"}`))
		require.NoError(t, err)
		got = bd.get(t, task.ID)
		require.Equal(t, queue.StatusCompleted, got.Status)
		require.JSONEq(t, `{"from":"b"}`, string(got.Output))
	})
}

// The same through running workers: A's handler ignores its context and
// is resumed after B took over; A's result never lands.
func TestStaleRunningWorker(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		bd := setup(t, b, setupOpts{fake: true})
		task := bd.submit(t, "work", `{}`, timeout(3*time.Second), retries(3), func(r *queue.SubmitRequest) {
			r.RetryPolicy = &queue.RetryPolicy{InitialIntervalMS: 1, MaxIntervalMS: 1, Multiplier: 1}
		})
		oa := bd.opts(t)
		oa.DeadAfter = 10 * time.Hour // only the timeout is under test
		a := New(bd.q, oa)
		blkA := newBlocker(false)
		blkA.result = json.RawMessage(`{"from":"a"}`)
		a.Handle("work", blkA.handle)
		ra := start(t, a)
		blkA.waitStarted(t)

		// Time jumps past A's timeout and lease; A cancels its handler,
		// which ignores that.
		require.ErrorIs(t, advanceUntilCancelled(t, bd, a, task.ID), ErrTimedOut)
		le, _, err := bd.q.Recovery().ListLeases(ctx, queue.ExpiredLeases, 10, "")
		require.NoError(t, err)
		require.Len(t, le, 1)
		_, err = bd.q.Recovery().ExpireLease(ctx, le[0])
		require.NoError(t, err)
		bd.fake.Advance(time.Second)

		ob := bd.opts(t)
		bw := New(bd.q, ob)
		blkB := newBlocker(true)
		blkB.result = json.RawMessage(`{"from":"b"}`)
		bw.Handle("work", blkB.handle)
		rb := start(t, bw)
		blkB.waitStarted(t)

		close(blkA.release) // A resumes and returns success
		testutil.Eventually(t, func() bool { return a.runningCount() == 0 }, "A to finish")
		got := bd.get(t, task.ID)
		require.Equal(t, queue.StatusRunning, got.Status)
		require.Equal(t, bw.ID(), got.WorkerID)
		require.Zero(t, a.completed.Load())

		close(blkB.release)
		got = bd.waitStatus(t, task.ID, queue.StatusCompleted)
		require.JSONEq(t, `{"from":"b"}`, string(got.Output))
		require.NoError(t, ra.stop(t))
		require.NoError(t, rb.stop(t))
	})
}

// advanceUntilCancelled moves the fake clock forward until the running
// task's handler context was cancelled (a renewal racing the first jump
// just moves the lease once more), and returns the cause.
func advanceUntilCancelled(t *testing.T, bd *bundle, w *Worker, id uuid.UUID) error {
	t.Helper()
	var cause error
	testutil.Eventually(t, func() bool {
		bd.fake.Advance(time.Minute)
		w.mu.Lock()
		defer w.mu.Unlock()
		if rt := w.running[id]; rt != nil {
			cause = rt.ctxCause()
		}
		return cause != nil
	}, "handler context of %v to be cancelled", id)
	return cause
}

func TestRunRejectsBadSetup(t *testing.T) {
	t.Parallel()
	bd := setup(t, storetest.Backends()[0], setupOpts{})
	tests := []struct {
		name    string
		mod     func(*Options)
		handler bool
		want    string
	}{
		{name: "no handlers", want: "no handlers"},
		{name: "type without handler", handler: true, mod: func(o *Options) { o.Types = []string{"nope"} }, want: `type "nope" has no handler`},
		{name: "unknown shard", handler: true, mod: func(o *Options) { o.Shards = []string{"zz"} }, want: `unknown shard "zz"`},
		{name: "bad id", handler: true, mod: func(o *Options) { o.ID = "a/b" }, want: "worker id"},
		{name: "renew above ttl", handler: true, mod: func(o *Options) {
			o.ShardLeasing = ShardLeasing{Enabled: true, TTL: time.Second, RenewInterval: 2 * time.Second}
		}, want: "must be shorter"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := bd.opts(t)
			if tc.mod != nil {
				tc.mod(&o)
			}
			w := New(bd.q, o)
			if tc.handler {
				w.Handle("echo", echoHandler)
			}
			err := w.Run(context.Background())
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestErrorHelpers(t *testing.T) {
	t.Parallel()
	base := errors.New("x")
	require.True(t, IsPermanent(Permanent(base)))
	require.True(t, IsPermanent(fmt.Errorf("wrapped: %w", Permanent(base))))
	require.False(t, IsPermanent(Retryable(base)))
	require.ErrorIs(t, Permanent(base), base)
	require.ErrorIs(t, Retryable(base), base)
	var rs *RescheduleError
	require.ErrorAs(t, Reschedule(time.Minute), &rs)
	require.Equal(t, time.Minute, rs.Delay)
	require.Equal(t, time.Millisecond, Reschedule(0).(*RescheduleError).Delay)
	require.True(t, strings.HasPrefix(Retryable(nil).Error(), "retryable"))
}

// A task whose worker died mid-run (its lease lapses) is recovered by the
// monitor embedded in another worker, and completes there.
func TestMonitorRecoversTimeout(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		bd := setup(t, b, setupOpts{fake: true})
		task := bd.submit(t, "echo", `{"v":1}`, timeout(10*time.Second), retries(2))
		entries, _, err := bd.q.ListReady(ctx, queue.ReadyQuery{})
		require.NoError(t, err)
		_, err = bd.q.Claim(ctx, entries[0], "dead-worker")
		require.NoError(t, err)

		o := bd.opts(t)
		o.NoMonitor = false
		o.Monitor.LeaseCheckInterval = 20 * time.Millisecond
		o.Monitor.LeaderTTL = time.Hour // fake time moves in big steps here
		w := New(bd.q, o)
		w.Handle("echo", echoHandler)
		r := start(t, w)
		testutil.Eventually(t, func() bool { return w.Monitor() != nil && w.Monitor().IsLeader() }, "the embedded monitor to lead")

		bd.fake.Advance(11*time.Second + queue.LeaseGrace) // the dead worker's lease runs out
		got := bd.waitStatus(t, task.ID, queue.StatusPending)
		require.Equal(t, 1, got.RetryCount)
		bd.fake.Advance(5 * time.Minute) // past the retry backoff
		got = bd.waitStatus(t, task.ID, queue.StatusCompleted)
		require.Equal(t, 2, got.Attempt)
		require.Equal(t, w.ID(), got.WorkerID)
		require.JSONEq(t, `{"v":1}`, string(got.Output))
		require.NoError(t, r.stop(t))
	})
}

// Several workers racing over the same tasks: every task completes exactly
// once, and each completion is counted by exactly one worker.
func TestWorkersRace(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, b storetest.Backend) {
		bd := setup(t, b, setupOpts{})
		const n = 40
		var mu sync.Mutex
		runs := map[string]int{}
		h := func(_ context.Context, task *queue.Task) (json.RawMessage, error) {
			mu.Lock()
			runs[task.ID.String()]++
			mu.Unlock()
			return task.Input, nil
		}
		tasks := make([]*queue.Task, n)
		for i := range tasks {
			tasks[i] = bd.submit(t, "job", fmt.Sprintf(`{"i":%d}`, i))
		}
		var ws []*Worker
		var rs []*running
		for range 3 {
			o := bd.opts(t)
			o.Concurrency = 4
			w := New(bd.q, o)
			w.Handle("job", h)
			ws = append(ws, w)
			rs = append(rs, start(t, w))
		}
		for i, task := range tasks {
			got := bd.waitStatus(t, task.ID, queue.StatusCompleted)
			require.JSONEq(t, fmt.Sprintf(`{"i":%d}`, i), string(got.Output))
			require.Equal(t, 1, got.Attempt, "a lost claim race must not count as an attempt")
		}
		for _, r := range rs {
			require.NoError(t, r.stop(t))
		}
		var completed int64
		for _, w := range ws {
			completed += w.completed.Load()
		}
		require.Equal(t, int64(n), completed)
		mu.Lock()
		defer mu.Unlock()
		require.Len(t, runs, n)
		for id, c := range runs {
			require.Equal(t, 1, c, "task %s ran more than once without any failure", id)
		}
	})
}

// stopDuringRegistration is a store whose first write of a registry entry
// lands, then loses its response as the worker is told to stop.
type stopDuringRegistration struct {
	store.Store
	stop func()
	once sync.Once
}

func (s *stopDuringRegistration) Put(ctx context.Context, key string, body []byte, cond store.Condition) (store.PutResult, error) {
	res, err := s.Store.Put(ctx, key, body, cond)
	if err == nil && strings.HasPrefix(key, "workers/") {
		lost := false
		s.once.Do(func() { lost = true; s.stop() })
		if lost {
			return store.PutResult{}, fmt.Errorf("put %s: %w", key, context.Canceled)
		}
	}
	return res, err
}

// TestRunStoppedWhileRegistering: a worker told to stop while it
// registers returns nil, as a stop at any later time does, and leaves no
// registry entry behind although its write landed.
func TestRunStoppedWhileRegistering(t *testing.T) {
	t.Parallel()
	bd := setup(t, storetest.Backends()[0], setupOpts{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	q, err := queue.Open(ctx, &stopDuringRegistration{Store: bd.s, stop: cancel}, queue.Options{Logger: testLogger(t)})
	require.NoError(t, err)
	o := bd.opts(t)
	w := New(q, o)
	w.Handle("job", func(context.Context, *queue.Task) (json.RawMessage, error) { return nil, nil })
	require.NoError(t, w.Run(ctx))
	_, err = registry.Get(context.Background(), bd.q, o.ID)
	require.ErrorIs(t, err, queue.ErrNotFound, "the entry written as the stop came is removed")
}

// lateHeartbeat is a store whose heartbeats (registry writes after the
// first) take a while, and which, when a heartbeat's request is
// abandoned, still applies it later, as a server that received it does.
type lateHeartbeat struct {
	store.Store
	writes   atomic.Int32
	inFlight chan struct{} // closed when a heartbeat is being written
	once     sync.Once
	landed   sync.WaitGroup
}

func (s *lateHeartbeat) Put(ctx context.Context, key string, body []byte, cond store.Condition) (store.PutResult, error) {
	if !strings.HasPrefix(key, "workers/") || s.writes.Add(1) == 1 {
		return s.Store.Put(ctx, key, body, cond)
	}
	s.once.Do(func() { close(s.inFlight) })
	select {
	case <-time.After(200 * time.Millisecond):
		return s.Store.Put(ctx, key, body, cond)
	case <-ctx.Done():
		s.landed.Add(1)
		go func() {
			defer s.landed.Done()
			time.Sleep(200 * time.Millisecond)
			_, _ = s.Store.Put(context.Background(), key, body, cond)
		}()
		return store.PutResult{}, ctx.Err()
	}
}

// TestStopDuringHeartbeat: a worker stopped while a heartbeat is in flight
// deregisters after it, so the entry does not come back.
func TestStopDuringHeartbeat(t *testing.T) {
	t.Parallel()
	bd := setup(t, storetest.Backends()[0], setupOpts{})
	s := &lateHeartbeat{Store: bd.s, inFlight: make(chan struct{})}
	q := bd.over(t, s)
	o := bd.opts(t)
	w := New(q, o)
	w.Handle("job", func(context.Context, *queue.Task) (json.RawMessage, error) { return nil, nil })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	<-s.inFlight
	cancel()
	require.NoError(t, <-done)
	s.landed.Wait() // a write abandoned by the worker has reached the store
	_, err := registry.Get(context.Background(), bd.q, o.ID)
	require.ErrorIs(t, err, queue.ErrNotFound, "the registry entry is gone after Run returned")
}

// A Go handler that ignores its context cannot be killed: a shutdown past
// its timeout never releases its task while it runs. Run waits until the
// handler returns (the task is then released), until its lease expires
// (the monitor's way back), or until Abort (the task is left, and the
// registry entry with it, for the monitor).
func TestShutdownKeepsTaskOfHandlerIgnoringContext(t *testing.T) {
	t.Parallel()
	for _, end := range []string{"handler returns", "lease expires", "abort"} {
		t.Run(end, func(t *testing.T) {
			t.Parallel()
			bd := setup(t, storetest.Backends()[0], setupOpts{fake: true})
			rs := &releaseWatch{Store: bd.s}
			q := bd.over(t, rs)
			logs := &testutil.Buffer{}
			o := bd.opts(t)
			o.ShutdownTimeout, o.HandlerGrace = 10*time.Millisecond, 10*time.Millisecond
			o.Logger = slog.New(slog.NewTextHandler(logs, nil))
			w := New(q, o)
			started, stopped, release := make(chan struct{}), make(chan struct{}), make(chan struct{})
			var returned, early atomic.Bool
			w.Handle("stubborn", func(ctx context.Context, _ *queue.Task) (json.RawMessage, error) {
				close(started)
				<-ctx.Done()
				close(stopped)
				<-release
				returned.Store(true)
				return nil, nil
			})
			check := func() {
				if !returned.Load() {
					early.Store(true)
				}
			}
			rs.check.Store(&check)
			task := bd.submit(t, "stubborn", `{}`, timeout(time.Hour))
			r := start(t, w)
			t.Cleanup(func() {
				select {
				case <-release:
				default:
					close(release)
				}
			})
			<-started
			r.cancel()
			<-stopped
			testutil.Eventually(t, func() bool {
				return r.finished() || strings.Contains(logs.String(), "handlers did not return after they were stopped")
			}, "the shutdown to wait for the handler")
			require.False(t, r.finished(), "Run returned while a handler that ignores its context still runs")
			require.Equal(t, queue.StatusRunning, bd.get(t, task.ID).Status)
			switch end {
			case "handler returns":
				close(release)
				require.NoError(t, r.stop(t))
				require.Equal(t, queue.StatusPending, bd.get(t, task.ID).Status, "released once the handler returned")
				require.False(t, bd.registered(t, w.ID()))
			case "lease expires":
				bd.fake.Advance(time.Hour + queue.LeaseGrace)
				require.NoError(t, r.stop(t))
				require.Equal(t, queue.StatusRunning, bd.get(t, task.ID).Status, "not released while the handler runs")
				close(release)
				bd.waitStatus(t, task.ID, queue.StatusPending)
			case "abort":
				w.Abort()
				require.NoError(t, r.stop(t))
				require.Equal(t, queue.StatusRunning, bd.get(t, task.ID).Status, "not released while the handler runs")
				require.True(t, bd.registered(t, w.ID()), "the registry entry is left for the monitor")
				close(release)
				bd.waitStatus(t, task.ID, queue.StatusPending)
			}
			require.False(t, early.Load(), "the task was released while its handler still ran")
		})
	}
}
