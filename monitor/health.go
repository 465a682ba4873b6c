package monitor

import (
	"sort"
	"time"

	"github.com/qo-queue/qo/queue"
)

// State is a worker's health, judged by the age of its last heartbeat with
// the rule the monitor recovers work by (see Judge): a worker shown dead is
// one whose tasks the monitor takes back. Heartbeats are for liveness and
// observability only: correctness never depends on them (task leases do
// that job).
type State string

// Worker states.
const (
	// Active: heartbeat no older than StaleAfter of the worker's liveness
	// bound; the worker claims and runs tasks.
	Active State = "active"
	// Stale: heartbeat older than StaleAfter: a worker whose heartbeats
	// do not land stops its handlers and claims at this age (see
	// queue/doc.go, "Leases and liveness"); the monitor takes its tasks
	// back if it stays silent until it is dead.
	Stale State = "stale"
	// Dead: heartbeat older than DeadAt: the monitor takes back the tasks
	// it holds (within one lease check interval).
	Dead State = "dead"
)

// StaleAfter is the heartbeat age after which a worker whose liveness
// bound is bound is stale: three quarters of the bound, the age at which
// the worker itself stops its handlers without a landed heartbeat (15s
// for queue.DefaultDeadAfter).
func StaleAfter(bound time.Duration) time.Duration {
	if bound <= 0 {
		bound = queue.DefaultDeadAfter
	}
	return bound * 3 / 4
}

// DeadAt is the heartbeat age after which a worker whose liveness bound
// is bound is dead: the bound plus queue.MaxClockSkew (22s for
// queue.DefaultDeadAfter), the age at which the monitor takes its tasks
// back (CheckLeases).
func DeadAt(bound time.Duration) time.Duration {
	if bound <= 0 {
		bound = queue.DefaultDeadAfter
	}
	return bound + queue.MaxClockSkew
}

// beatDead is the monitor's liveness rule: a heartbeat at beat from a
// worker with liveness bound bound is dead at now. Judge and CheckLeases
// both decide by it.
func beatDead(beat, now time.Time, bound time.Duration) bool {
	return now.Sub(beat) > DeadAt(bound)
}

// WorkerHealth is one worker with its judged state.
type WorkerHealth struct {
	Worker *queue.WorkerInfo
	State  State
	// Age is now - last heartbeat (never negative).
	Age time.Duration
}

// Judge judges one registry entry at now by its heartbeat time and the
// liveness bound it states (queue.WorkerInfo.DeadAfter).
func Judge(w *queue.WorkerInfo, now time.Time) State {
	bound := w.DeadAfter()
	switch {
	case beatDead(w.LastHeartbeat, now, bound):
		return Dead
	case now.Sub(w.LastHeartbeat) > StaleAfter(bound):
		return Stale
	default:
		return Active
	}
}

// Health judges every worker at now, sorted by worker id. nil entries are
// skipped.
func Health(workers []*queue.WorkerInfo, now time.Time) []WorkerHealth {
	out := make([]WorkerHealth, 0, len(workers))
	for _, w := range workers {
		if w == nil {
			continue
		}
		age := now.Sub(w.LastHeartbeat)
		if age < 0 {
			age = 0
		}
		out = append(out, WorkerHealth{Worker: w, State: Judge(w, now), Age: age})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Worker.ID < out[j].Worker.ID })
	return out
}
