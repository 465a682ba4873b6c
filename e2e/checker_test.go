//go:build unix

package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store"
)

// The history checker: given what a scenario submitted, it reads the final
// state and the whole version history of every task and checks qo's
// promises. Duplicate executions (allowed: execution is at least once) are
// counted from the handlers' own log.

// verdict is what the checker found.
type verdict struct {
	Tasks          int
	Completed      int
	Failed         int
	Unfinished     int // waiting, pending or running at the end (allowed when the scenario stops early)
	Lost           []string
	DoubleApplied  []string // more than one succeeded/failed event, or a write after the end
	BadTransitions []string
	Unindexed      []string // waiting, pending, running or failed without the index entry its state needs
	// BadEdges: a dependency between two checked tasks broken (a parent
	// that does not list its workflow child, an end recorded wrong or
	// never, a child claimed before a parent ended).
	BadEdges   []string
	Duplicates int // extra executions beyond one per completed task
	Executions int
}

func (v verdict) String() string {
	return fmt.Sprintf("tasks %d: completed %d, failed %d, unfinished %d; lost %d, double-applied %d, bad transitions %d, unindexed %d, bad edges %d; executions %d, duplicates %d",
		v.Tasks, v.Completed, v.Failed, v.Unfinished, len(v.Lost), len(v.DoubleApplied), len(v.BadTransitions), len(v.Unindexed), len(v.BadEdges), v.Executions, v.Duplicates)
}

// requireSound fails the test unless nothing was lost, nothing applied twice,
// every transition was allowed and every task has the index entry its state
// needs (the scenarios run with the sweeper off: nothing repaired them).
func (v verdict) requireSound(t *testing.T) {
	t.Helper()
	t.Logf("history check: %s", v)
	require.Empty(t, v.Lost, "lost tasks")
	require.Empty(t, v.DoubleApplied, "double-applied outcomes")
	require.Empty(t, v.BadTransitions, "transitions outside the lifecycle table or its rules")
	require.Empty(t, v.Unindexed, "tasks without the index entry their state needs")
	require.Empty(t, v.BadEdges, "dependencies between tasks broken")
}

// checkHistories checks every task in ids, and every dependency between
// two of them (checkEdges). execLog, when set, is a file with one task id
// per handler execution.
func checkHistories(t *testing.T, e *wkEnv, ids []uuid.UUID, execLog string) verdict {
	t.Helper()
	q := e.q
	ctx := context.Background()
	v := verdict{Tasks: len(ids)}
	execs := map[string]int{}
	if execLog != "" {
		f, err := os.Open(execLog)
		if err == nil {
			sc := bufio.NewScanner(f)
			for sc.Scan() {
				if id := strings.TrimSpace(sc.Text()); id != "" {
					execs[id]++
					v.Executions++
				}
			}
			f.Close()
		}
	}
	var mu sync.Mutex
	deps := map[uuid.UUID]*depRecord{}
	sem := make(chan struct{}, 16)
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			problems, final, events, err := checkOne(ctx, q, id)
			var rec *depRecord
			if err == nil {
				if missing := unindexed(ctx, e.s, final); missing != "" {
					problems = append(problems, "index: "+missing)
				}
				if len(final.Parents) > 0 || len(final.Children) > 0 {
					rec, err = newDepRecord(ctx, e, final, events)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if rec != nil {
				deps[id] = rec
			}
			switch {
			case errors.Is(err, queue.ErrNotFound):
				v.Lost = append(v.Lost, id.String())
				return
			case err != nil:
				v.BadTransitions = append(v.BadTransitions, fmt.Sprintf("%s: %v", id, err))
				return
			}
			for _, p := range problems {
				if strings.HasPrefix(p, "index: ") {
					v.Unindexed = append(v.Unindexed, id.String()+": "+p)
				} else if strings.HasPrefix(p, "double") {
					v.DoubleApplied = append(v.DoubleApplied, id.String()+": "+p)
				} else {
					v.BadTransitions = append(v.BadTransitions, id.String()+": "+p)
				}
			}
			switch final.Status {
			case queue.StatusCompleted:
				v.Completed++
				if n := execs[id.String()]; n > 1 {
					v.Duplicates += n - 1
				}
			case queue.StatusFailed:
				v.Failed++
			case queue.StatusWaiting, queue.StatusPending, queue.StatusRunning:
				v.Unfinished++
			}
		}()
	}
	wg.Wait()
	v.BadEdges = checkEdges(deps)
	return v
}

// checkOne checks one task's history and returns it.
func checkOne(ctx context.Context, q *queue.Queue, id uuid.UUID) ([]string, *queue.Task, []queue.Event, error) {
	final, err := q.Get(ctx, id)
	if err != nil {
		return nil, nil, nil, err
	}
	events, err := q.History(ctx, id)
	if err != nil {
		return nil, nil, nil, err
	}
	var problems []string
	var prev *queue.Task
	outcomes, releases := 0, 0
	claims := map[int64][]string{} // rev -> the workers of its claimed versions
	for i, e := range events {
		if e.Task == nil {
			problems = append(problems, fmt.Sprintf("version %d (%s) unreadable or deleted: %v", i+1, e.Name, e.Err))
			continue
		}
		// The one validator: table, invariants, rev+1, attempt rules,
		// fresh request_id, identity fields unchanged.
		if err := queue.ValidateTransition(prev, e.Task); err != nil {
			problems = append(problems, fmt.Sprintf("version %d: %v", i+1, err))
		}
		if prev != nil && prev.Status == queue.StatusRunning && e.Task.WorkerID != "" && e.Task.WorkerID != prev.WorkerID &&
			e.Name != queue.EventClaimed {
			problems = append(problems, fmt.Sprintf("version %d: %s written by %s while %s held the lease (a fenced write landed)", i+1, e.Name, e.Task.WorkerID, prev.WorkerID))
		}
		if e.Name == queue.EventSucceeded || (e.Name == queue.EventFailed && e.Task.Status == queue.StatusFailed) {
			outcomes++
		}
		switch e.Name {
		case queue.EventClaimed:
			claims[e.Task.Rev] = append(claims[e.Task.Rev], e.Task.WorkerID)
		case queue.EventReleased:
			releases++
		case queue.EventReplayed:
			releases = 0 // a replayed task may wait and be released again
		}
		if prev != nil {
			problems = append(problems, depProblems(i+1, prev, e)...)
		}
		prev = e.Task
	}
	for rev, by := range claims {
		if len(by) > 1 {
			// Two claims won one compare-and-swap: the second writer's
			// If-Match matched an ETag that was not the body it read.
			problems = append(problems, fmt.Sprintf("double claim: %d claimed versions of rev %d (by %s)", len(by), rev, strings.Join(by, ", ")))
		}
	}
	if outcomes > 1 {
		problems = append(problems, fmt.Sprintf("double outcome: %d succeeded/failed events", outcomes))
	}
	if releases > 1 {
		problems = append(problems, fmt.Sprintf("double release: %d released events", releases))
	}
	if prev != nil && prev.Rev != final.Rev {
		problems = append(problems, fmt.Sprintf("history ends at rev %d but the task is at rev %d", prev.Rev, final.Rev))
	}
	return problems, final, events, nil
}

// depProblems checks what one write did to the dependency fields, beyond
// ValidateTransition (which keeps the parent ids, input_from and the
// children's order): a parent's recorded end never changes once set and
// values taken from parents never change, except by a replay that waits
// for that parent again; a parent_done or released write records at least
// one parent's end.
func depProblems(version int, prev *queue.Task, e queue.Event) []string {
	next := e.Task
	var problems []string
	newEnds := 0
	for i, p := range next.Parents {
		if i >= len(prev.Parents) {
			break // ValidateTransition reports the change of the list
		}
		was := prev.Parents[i].Done
		switch {
		case was == "" && p.Done != "":
			newEnds++
		case was != p.Done && e.Name != queue.EventReplayed:
			problems = append(problems, fmt.Sprintf("version %d (%s): the end of parent %s changed from %q to %q", version, e.Name, p.ID, was, p.Done))
		}
	}
	if (e.Name == queue.EventParentDone || e.Name == queue.EventReleased) && newEnds == 0 {
		problems = append(problems, fmt.Sprintf("version %d: %s without recording a parent's end", version, e.Name))
	}
	if e.Name != queue.EventReplayed {
		for f, v := range prev.FromParents {
			if w, ok := next.FromParents[f]; !ok || string(w) != string(v) {
				problems = append(problems, fmt.Sprintf("version %d (%s): from_parents %q changed from %s to %s", version, e.Name, f, v, w))
			}
		}
	}
	return problems
}

// depRecord is what checkEdges needs of a task with parents or children:
// its final version, its history and when the server stored each version
// (by its own clock, one clock for every writer).
type depRecord struct {
	final  *queue.Task
	events []queue.Event
	stored map[string]time.Time // version id -> LastModified
}

func newDepRecord(ctx context.Context, e *wkEnv, final *queue.Task, events []queue.Event) (*depRecord, error) {
	versions, err := e.s.ListVersions(ctx, e.q.TaskKey(final.ID))
	if err != nil {
		return nil, err
	}
	r := &depRecord{final: final, events: events, stored: map[string]time.Time{}}
	for _, v := range versions {
		r.stored[v.VersionID] = v.LastModified
	}
	return r, nil
}

// firstEnd returns the first version of the task that ended it
// (completed, failed, cancelled or expired).
func (r *depRecord) firstEnd() (queue.Event, bool) {
	for _, e := range r.events {
		switch e.Status {
		case queue.StatusCompleted, queue.StatusFailed, queue.StatusCancelled, queue.StatusExpired:
			return e, true
		}
	}
	return queue.Event{}, false
}

// firstClaim returns the task's first claimed version.
func (r *depRecord) firstClaim() (queue.Event, bool) {
	i := slices.IndexFunc(r.events, func(e queue.Event) bool { return e.Name == queue.EventClaimed })
	if i < 0 {
		return queue.Event{}, false
	}
	return r.events[i], true
}

// replayed reports whether the task was ever replayed (its end may then
// differ from the one its children recorded).
func (r *depRecord) replayed() bool {
	return slices.ContainsFunc(r.events, func(e queue.Event) bool { return e.Name == queue.EventReplayed })
}

// checkEdges checks every dependency between two checked tasks (queue/doc.go,
// "Dependencies" and "Workflows"):
//   - a workflow's parent lists its child (both are created knowing each
//     other), and every listed child lists the parent back;
//   - an end recorded on a child is the end the parent reached, and a
//     parent that ended has its end recorded on every child still waiting
//     (the write ending it, or the sweeper, tells them);
//   - a child is first claimed only after every parent ended: by the
//     server's clock, which stored both versions, and by the times the
//     writers stamped (each writer's estimate of that clock, which may
//     differ by queue.MaxClockSkew).
func checkEdges(recs map[uuid.UUID]*depRecord) []string {
	var problems []string
	bad := func(child uuid.UUID, format string, args ...any) {
		problems = append(problems, child.String()+": "+fmt.Sprintf(format, args...))
	}
	for id, r := range recs {
		for _, c := range r.final.Children {
			if cr, ok := recs[c]; ok && !slices.ContainsFunc(cr.final.Parents, func(p queue.Parent) bool { return p.ID == id }) {
				bad(c, "listed as a child of %s, which is not among its parents", id)
			}
		}
		claim, claimed := r.firstClaim()
		for _, p := range r.final.Parents {
			pr, ok := recs[p.ID]
			if !ok {
				continue // a parent outside the checked set
			}
			if r.final.Workflow != nil && !slices.Contains(pr.final.Children, id) {
				bad(id, "workflow parent %s does not list it as a child", p.ID)
			}
			end, ended := pr.firstEnd()
			switch {
			case p.Done != "" && !ended:
				bad(id, "records parent %s as %s, but that parent never ended", p.ID, p.Done)
			case p.Done != "" && p.Done != end.Status && !pr.replayed():
				bad(id, "records parent %s as %s, but it ended %s", p.ID, p.Done, end.Status)
			case p.Done == "" && ended && r.final.Status == queue.StatusWaiting && !pr.replayed():
				bad(id, "still waiting: the end of parent %s (%s) was never recorded on it", p.ID, end.Status)
			}
			if !claimed {
				continue
			}
			if !ended {
				bad(id, "claimed (rev %d) though parent %s never ended", claim.Rev, p.ID)
				continue
			}
			if at, endAt := r.stored[claim.VersionID], pr.stored[end.VersionID]; at.Before(endAt) {
				bad(id, "claimed at %s by the server's clock, before parent %s ended at %s", at.Format(time.RFC3339Nano), p.ID, endAt.Format(time.RFC3339Nano))
			}
			if claim.At.Add(queue.MaxClockSkew).Before(end.At) {
				bad(id, "claimed at %s, more than the clock skew bound before parent %s ended at %s", claim.At.Format(time.RFC3339Nano), p.ID, end.At.Format(time.RFC3339Nano))
			}
		}
	}
	slices.Sort(problems)
	return problems
}

// unindexed names the index entry t's state needs when it is missing (the
// rule of queue/doc.go, "Index entries are written first": a pending task
// has its ready entry, a running one its lease entry, a failed one its
// dead letter), "" when it is there or the state needs none.
func unindexed(ctx context.Context, s store.Store, t *queue.Task) string {
	for _, key := range queue.IndexKeys(t) {
		if _, err := s.Get(ctx, key); err != nil {
			return fmt.Sprintf("%s task has no %s (%v)", t.Status, key, err)
		}
	}
	return ""
}

// The dependency checks find what they are meant to find: they are run on
// made-up histories here, since a sound run never shows them failing.
func TestCheckerFindsBrokenDependencies(t *testing.T) {
	t.Parallel()
	parentID, childID := uuid.New(), uuid.New()
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	version := func(id uuid.UUID, rev int64, st queue.Status, event string, at time.Time) queue.Event {
		return queue.Event{Name: event, Status: st, Rev: rev, At: at, VersionID: fmt.Sprintf("%s-%d", id, rev),
			Task: &queue.Task{ID: id, Status: st, Rev: rev, LastEvent: event}}
	}
	record := func(final *queue.Task, events ...queue.Event) *depRecord {
		r := &depRecord{final: final, events: events, stored: map[string]time.Time{}}
		for _, e := range events {
			r.stored[e.VersionID] = e.At // the server and the writers agree here
		}
		return r
	}
	wf := &queue.WorkflowRef{ID: uuid.New(), Step: "load"}
	parentEvents := []queue.Event{
		version(parentID, 1, queue.StatusPending, queue.EventEnqueued, base),
		version(parentID, 2, queue.StatusRunning, queue.EventClaimed, base.Add(time.Second)),
		version(parentID, 3, queue.StatusCompleted, queue.EventSucceeded, base.Add(10*time.Second)),
	}
	parent := record(&queue.Task{ID: parentID, Status: queue.StatusCompleted, Children: []uuid.UUID{childID}}, parentEvents...)

	// Sound: released and claimed after the parent completed.
	child := record(&queue.Task{ID: childID, Status: queue.StatusCompleted, Workflow: wf, Parents: []queue.Parent{{ID: parentID, Done: queue.StatusCompleted}}},
		version(childID, 1, queue.StatusWaiting, queue.EventEnqueued, base),
		version(childID, 2, queue.StatusPending, queue.EventReleased, base.Add(10*time.Second)),
		version(childID, 3, queue.StatusRunning, queue.EventClaimed, base.Add(11*time.Second)))
	require.Empty(t, checkEdges(map[uuid.UUID]*depRecord{parentID: parent, childID: child}))

	// Claimed before the parent ended, by the server's clock and by more
	// than the skew bound.
	early := record(child.final,
		version(childID, 1, queue.StatusWaiting, queue.EventEnqueued, base),
		version(childID, 2, queue.StatusPending, queue.EventReleased, base.Add(time.Second)),
		version(childID, 3, queue.StatusRunning, queue.EventClaimed, base.Add(2*time.Second)))
	got := checkEdges(map[uuid.UUID]*depRecord{parentID: parent, childID: early})
	require.Len(t, got, 2)
	require.Contains(t, got[0]+got[1], "by the server's clock")
	require.Contains(t, got[0]+got[1], "skew bound")

	// Still waiting though its parent completed; and a workflow parent
	// that does not list its child.
	waiting := record(&queue.Task{ID: childID, Status: queue.StatusWaiting, Workflow: wf, Parents: []queue.Parent{{ID: parentID}}},
		version(childID, 1, queue.StatusWaiting, queue.EventEnqueued, base))
	orphaned := record(&queue.Task{ID: parentID, Status: queue.StatusCompleted}, parentEvents...)
	got = checkEdges(map[uuid.UUID]*depRecord{parentID: orphaned, childID: waiting})
	require.Len(t, got, 2)
	require.Contains(t, got[0]+got[1], "was never recorded")
	require.Contains(t, got[0]+got[1], "does not list it")

	// An end recorded wrong.
	wrong := record(&queue.Task{ID: childID, Status: queue.StatusCancelled, Parents: []queue.Parent{{ID: parentID, Done: queue.StatusFailed}}},
		version(childID, 1, queue.StatusWaiting, queue.EventEnqueued, base))
	got = checkEdges(map[uuid.UUID]*depRecord{parentID: parent, childID: wrong})
	require.Len(t, got, 1)
	require.Contains(t, got[0], "but it ended completed")

	// Within one history: an end that changes, a parent_done that records
	// nothing, a value taken from a parent that changes.
	prev := &queue.Task{Parents: []queue.Parent{{ID: parentID, Done: queue.StatusCompleted}}, FromParents: map[string]json.RawMessage{"rows": json.RawMessage(`[1]`)}}
	next := &queue.Task{Parents: []queue.Parent{{ID: parentID, Done: queue.StatusFailed}}, FromParents: map[string]json.RawMessage{"rows": json.RawMessage(`[2]`)}}
	got = depProblems(4, prev, queue.Event{Name: queue.EventParentDone, Task: next})
	require.Len(t, got, 3)
	require.Contains(t, got[0], `changed from "completed" to "failed"`)
	require.Contains(t, got[1], "without recording a parent's end")
	require.Contains(t, got[2], `from_parents "rows" changed`)
}
