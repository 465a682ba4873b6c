package worker

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/store/storetest"
)

// lostClaim is a store that lands the first write turning a task running
// (a claim) but loses its response, and fails the re-read that follows
// once: the claim's outcome stays unknown to its worker.
type lostClaim struct {
	store.Store
	mu      sync.Mutex
	lost    bool
	failGet bool
}

func (s *lostClaim) Put(ctx context.Context, key string, body []byte, cond store.Condition) (store.PutResult, error) {
	res, err := s.Store.Put(ctx, key, body, cond)
	if err == nil && strings.HasPrefix(key, queue.TasksPrefix) && bytes.Contains(body, []byte(`"status":"running"`)) {
		s.mu.Lock()
		defer s.mu.Unlock()
		if !s.lost {
			s.lost, s.failGet = true, true
			return store.PutResult{}, errors.New("connection reset by peer (response lost)")
		}
	}
	return res, err
}

func (s *lostClaim) Get(ctx context.Context, key string) (*store.Object, error) {
	s.mu.Lock()
	fail := s.failGet && strings.HasPrefix(key, queue.TasksPrefix)
	if fail {
		s.failGet = false
	}
	s.mu.Unlock()
	if fail {
		return nil, errors.New("injected get failure")
	}
	return s.Store.Get(ctx, key)
}

// A claim whose outcome stays unknown does not leave its task running
// until its lease expires (an hour here): the worker re-reads the task,
// finds its claim landed, releases it, and the task runs (on the next
// claim).
func TestUnknownClaimIsResolved(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, b storetest.Backend) {
		bd := setup(t, b, setupOpts{})
		s := &lostClaim{Store: bd.s}
		runReleasedOnce(t, bd, s, "the first claim landed unseen, the second ran")
		require.True(t, s.lost, "the claim's response was lost")
	})
}

// failedFinish is a store that refuses every write completing a task
// until the task has been put back to pending once: the worker's every
// try to write the first attempt's outcome fails.
type failedFinish struct {
	store.Store
	mu       sync.Mutex
	refused  int
	released bool
}

func (s *failedFinish) Put(ctx context.Context, key string, body []byte, cond store.Condition) (store.PutResult, error) {
	if strings.HasPrefix(key, queue.TasksPrefix) {
		s.mu.Lock()
		fail := !s.released && bytes.Contains(body, []byte(`"status":"completed"`))
		if fail {
			s.refused++
		}
		s.released = s.released || s.refused > 0 && bytes.Contains(body, []byte(`"status":"pending"`))
		s.mu.Unlock()
		if fail {
			return store.PutResult{}, errors.New("injected: 503 SlowDown")
		}
	}
	return s.Store.Put(ctx, key, body, cond)
}

// A task whose outcome could not be written (every try failed) does not
// stay running under the worker's lease until it expires (an hour here)
// while the worker's heartbeats land: the worker releases it once the
// store answers, and it runs again.
func TestFailedFinishIsReleased(t *testing.T) {
	t.Parallel()
	bd := setup(t, storetest.Backends()[0], setupOpts{})
	s := &failedFinish{Store: bd.s}
	runReleasedOnce(t, bd, s, "the first attempt's outcome was lost, the second ran")
}

// runReleasedOnce runs a worker over s (bd's store with faults) until a
// task with an hour's timeout completes, and checks that it got there
// through a release (not a retry, not its lease expiring): completed on
// its second attempt, why says why.
func runReleasedOnce(t *testing.T, bd *bundle, s store.Store, why string) {
	t.Helper()
	q := bd.over(t, s)
	w := New(q, bd.opts(t))
	w.Handle("echo", echoHandler)
	task := bd.submit(t, "echo", `{"n":1}`, timeout(time.Hour))
	r := start(t, w)
	got := bd.waitStatus(t, task.ID, queue.StatusCompleted)
	require.Equal(t, 2, got.Attempt, why)
	require.Zero(t, got.RetryCount, "a release does not count as a retry")
	hist, err := bd.q.History(context.Background(), task.ID)
	require.NoError(t, err)
	var released bool
	for _, ev := range hist {
		released = released || ev.Name == queue.EventRequeued
	}
	require.True(t, released, "the task was released")
	require.NoError(t, r.stop(t))
}
