package monitor

import (
	"sort"
	"time"

	"github.com/qo-queue/qo/queue"
)

// State is a worker's health, judged by the age of its last heartbeat.
// Heartbeats are for observability only: correctness never depends on
// them (task leases do that job).
type State string

// Worker states.
const (
	// Active: heartbeat no older than the threshold.
	Active State = "active"
	// Stale: heartbeat older than the threshold; the worker may be
	// overloaded, partitioned from the store, or gone.
	Stale State = "stale"
	// Dead: heartbeat older than DeadFactor x threshold; the worker is
	// presumed gone (its tasks come back when their leases expire).
	Dead State = "dead"
)

// DeadFactor: a worker is dead once its heartbeat is older than
// DeadFactor times the health threshold.
const DeadFactor = 3

// DefaultHealthThreshold is the default heartbeat age after which a worker
// is stale.
const DefaultHealthThreshold = 60 * time.Second

// WorkerHealth is one worker with its judged state.
type WorkerHealth struct {
	Worker *queue.WorkerInfo
	State  State
	// Age is now - last heartbeat (never negative).
	Age time.Duration
}

// StateOf judges one heartbeat time.
func StateOf(lastHeartbeat, now time.Time, threshold time.Duration) State {
	if threshold <= 0 {
		threshold = DefaultHealthThreshold
	}
	age := now.Sub(lastHeartbeat)
	switch {
	case age <= threshold:
		return Active
	case age <= DeadFactor*threshold:
		return Stale
	default:
		return Dead
	}
}

// Health judges every worker at now, sorted by worker id. nil entries are
// skipped.
func Health(workers []*queue.WorkerInfo, now time.Time, threshold time.Duration) []WorkerHealth {
	out := make([]WorkerHealth, 0, len(workers))
	for _, w := range workers {
		if w == nil {
			continue
		}
		age := now.Sub(w.LastHeartbeat)
		if age < 0 {
			age = 0
		}
		out = append(out, WorkerHealth{Worker: w, State: StateOf(w.LastHeartbeat, now, threshold), Age: age})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Worker.ID < out[j].Worker.ID })
	return out
}
