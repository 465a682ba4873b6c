//go:build unix

package e2e

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

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
	Unfinished     int // pending or running at the end (allowed when the scenario stops early)
	Lost           []string
	DoubleApplied  []string // more than one succeeded/failed event, or a write after the end
	BadTransitions []string
	Unindexed      []string // pending, running or failed without the index entry its state needs
	Duplicates     int      // extra executions beyond one per completed task
	Executions     int
}

func (v verdict) String() string {
	return fmt.Sprintf("tasks %d: completed %d, failed %d, unfinished %d; lost %d, double-applied %d, bad transitions %d, unindexed %d; executions %d, duplicates %d",
		v.Tasks, v.Completed, v.Failed, v.Unfinished, len(v.Lost), len(v.DoubleApplied), len(v.BadTransitions), len(v.Unindexed), v.Executions, v.Duplicates)
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
}

// checkHistories checks every task in ids. execLog, when set, is a file
// with one task id per handler execution.
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
	sem := make(chan struct{}, 16)
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			problems, final, err := checkOne(ctx, q, id)
			if err == nil {
				if missing := unindexed(ctx, e.s, final); missing != "" {
					problems = append(problems, "index: "+missing)
				}
			}
			mu.Lock()
			defer mu.Unlock()
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
			case queue.StatusPending, queue.StatusRunning:
				v.Unfinished++
			}
		}()
	}
	wg.Wait()
	return v
}

// checkOne checks one task's history.
func checkOne(ctx context.Context, q *queue.Queue, id uuid.UUID) ([]string, *queue.Task, error) {
	final, err := q.Get(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	events, err := q.History(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	var problems []string
	var prev *queue.Task
	outcomes := 0
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
		prev = e.Task
	}
	if outcomes > 1 {
		problems = append(problems, fmt.Sprintf("double outcome: %d succeeded/failed events", outcomes))
	}
	if prev != nil && prev.Rev != final.Rev {
		problems = append(problems, fmt.Sprintf("history ends at rev %d but the task is at rev %d", prev.Rev, final.Rev))
	}
	return problems, final, nil
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
