package webui

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/store/memstore"
	"github.com/qo-queue/qo/store/storetest"
)

// cancelCase is the shared case of a cancel that tells children: the
// tasks and index entries of a queue before and after queue.Cancel of one
// parent, at one time. The page's cancel makes the same writes from the
// same objects (test/deps-backend.test.js).
type cancelCase struct {
	Now         time.Time     `json:"now"`
	Reason      string        `json:"reason"`
	Actor       string        `json:"actor"` // who the page is (queue.WithActor)
	Parent      uuid.UUID     `json:"parent"`
	Names       []string      `json:"names"` // the tasks' names, for messages
	Before      []*queue.Task `json:"before"`
	After       []*queue.Task `json:"after"`
	IndexBefore []string      `json:"index_before"`
	IndexAfter  []string      `json:"index_after"`
}

// TestCancelCases writes testdata/cancel.json: a pending parent P with
// waiting children of every on_parent_failure (cancel, fail, run, run
// with another parent not ended, cancel with one), grandchildren under
// the children that end, a child an operator cancelled before, and wide
// children whose other parents' ends are edge objects; then P cancelled by
// queue.Cancel.
func TestCancelCases(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	clock := storetest.NewClock(now)
	s := memstore.New(memstore.WithClock(clock)) // objects stamped on the queue's clock
	_, err := queue.Init(ctx, s, 1)
	require.NoError(t, err)
	q, err := queue.Open(ctx, s, queue.Options{Clock: clock, NewID: queue.SequentialIDs("webui-cancel")})
	require.NoError(t, err)

	var names []string
	var ids []uuid.UUID
	submit := func(name string, policy queue.ParentFailure, after ...uuid.UUID) uuid.UUID {
		task, created, err := q.Submit(ctx, queue.SubmitRequest{Type: "job", After: after, OnParentFailure: policy})
		require.NoError(t, err)
		require.True(t, created)
		names = append(names, name)
		ids = append(ids, task.ID)
		return task.ID
	}
	p := submit("P", "")
	other := submit("Q, another parent (pending)", "")
	a := submit("A: cancel", queue.ParentFailureCancel, p)
	b := submit("B: fail", queue.ParentFailureFail, p)
	submit("C: run", queue.ParentFailureRun, p)
	submit("D: run, Q not ended", queue.ParentFailureRun, p, other)
	submit("E: cancel, Q not ended", queue.ParentFailureCancel, p, other)
	submit("G: cancel, child of A", queue.ParentFailureCancel, a)
	submit("H: run, child of B", queue.ParentFailureRun, b)
	x := submit("X: cancelled by hand before", queue.ParentFailureCancel, p)
	clock.Advance(time.Second)
	_, err = q.Cancel(queue.WithActor(ctx, "alice@ops-1, qo cancel"), x, "by hand")
	require.NoError(t, err)

	// Wide children (more than queue.EdgeFanIn parents): P and the K
	// tasks, which complete before P is cancelled, each leaving an edge
	// object on each of them.
	var ks []uuid.UUID
	for i := range queue.EdgeFanIn {
		ks = append(ks, submit(fmt.Sprintf("K%d", i+1), ""))
	}
	wideParents := append([]uuid.UUID{p}, ks...)
	submit("W: run, wide, the other parents completed", queue.ParentFailureRun, wideParents...)
	submit("U: cancel, wide, the other parents completed", queue.ParentFailureCancel, wideParents...)
	submit("V: run, wide, Q not ended", queue.ParentFailureRun, append(wideParents, other)...)
	for _, k := range ks {
		task, err := q.Get(ctx, k)
		require.NoError(t, err)
		e, err := queue.ParseReadyKey(queue.ReadyKey(task))
		require.NoError(t, err)
		l, err := q.Claim(ctx, e, "w1")
		require.NoError(t, err)
		_, err = q.Complete(ctx, l, nil)
		require.NoError(t, err)
	}
	require.NoError(t, q.Settle(ctx))

	snap := func() ([]*queue.Task, []string) {
		tasks := make([]*queue.Task, len(ids))
		for i, id := range ids {
			key := q.TaskKey(id)
			obj, err := s.Get(ctx, key) // the object, without the ends its edges add
			require.NoError(t, err)
			task, err := queue.DecodeTask(key, obj.Body)
			require.NoError(t, err)
			task = task.Clone()
			task.RequestID = "request" // random: fixed here so the file is stable
			tasks[i] = task
		}
		var keys []string
		for _, prefix := range []string{queue.ReadyPrefix, queue.LeasesPrefix, queue.WaitingPrefix, queue.DeadPrefix, queue.EdgesPrefix} {
			page, err := s.List(ctx, store.ListParams{Prefix: prefix})
			require.NoError(t, err)
			require.Empty(t, page.NextToken)
			for _, o := range page.Objects {
				keys = append(keys, o.Key)
			}
		}
		slices.Sort(keys)
		return tasks, keys
	}
	c := cancelCase{Reason: "from the web UI", Actor: "web UI on qo.example:8080, S3 key AKIA…MPLE", Parent: p, Names: names}
	clock.Advance(time.Second)
	c.Now = clock.Now()
	c.Before, c.IndexBefore = snap()
	_, err = q.Cancel(queue.WithActor(ctx, c.Actor), p, c.Reason)
	require.NoError(t, err)
	c.After, c.IndexAfter = snap()
	// The operator's write names them; the writes it caused on the
	// children do not; an earlier operator's write keeps its actor.
	for i, task := range c.After {
		switch names[i] {
		case "P":
			require.Equal(t, c.Actor, task.Actor)
		case "X: cancelled by hand before":
			require.Equal(t, "alice@ops-1, qo cancel", task.Actor)
		default:
			require.Empty(t, task.Actor, names[i])
		}
	}

	// The case covers what it says: each kind of child ended as its
	// on_parent_failure says.
	want := map[string]queue.Status{
		"P": queue.StatusCancelled, "A": queue.StatusCancelled, "B": queue.StatusFailed, "C": queue.StatusPending,
		"D": queue.StatusWaiting, "E": queue.StatusCancelled, "G": queue.StatusCancelled, "H": queue.StatusPending,
		"X": queue.StatusCancelled, "W": queue.StatusPending, "U": queue.StatusCancelled, "V": queue.StatusWaiting,
	}
	for i, task := range c.After {
		if st, ok := want[strings.SplitN(names[i], ":", 2)[0]]; ok {
			require.Equal(t, st, task.Status, names[i])
		}
	}
	// The K tasks' ends reached the wide children as edge objects; P's
	// release of W records them all and removes them; V keeps its edges,
	// P's too.
	edges := 0
	for _, k := range c.IndexBefore {
		if strings.HasPrefix(k, queue.EdgesPrefix) {
			edges++
		}
	}
	require.Equal(t, 3*queue.EdgeFanIn, edges, "edges before")
	edges = 0
	for _, k := range c.IndexAfter {
		if strings.HasPrefix(k, queue.EdgesPrefix) {
			edges++
		}
	}
	require.Equal(t, queue.EdgeFanIn+1, edges, "edges after: V's")
	requireFile(t, filepath.Join("testdata", "cancel.json"), c)
}
