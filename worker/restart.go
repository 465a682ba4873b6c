package worker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/queue/registry"
)

// leftover is what an earlier process of this worker id left behind when it
// stopped without deregistering (killed, crashed): the lease entries naming
// the id, and that process's last heartbeat and liveness bound.
//
// A worker restarted under the same id (a StatefulSet pod, a systemd unit)
// heartbeats again under the id, so the monitor, which judges a holder by
// the age of its registry entry, would find the earlier process's tasks held
// by a live worker and leave them until their leases expire, a whole
// timeout later. The new process knows it runs none of them: it takes them
// back itself (see doc.go, "Leases and liveness").
type leftover struct {
	entries   []queue.LeaseEntry
	lastBeat  time.Time
	deadAfter time.Duration
}

// findLeftoverRetrying is findLeftover tried again after a failure (a lost
// or refused request) every heartbeatRetry, until ctx ends; the last error
// is returned then.
func (w *Worker) findLeftoverRetrying(ctx context.Context) (*leftover, error) {
	for {
		lo, err := w.findLeftover(ctx)
		if err == nil {
			return lo, nil
		}
		w.log.Warn("could not look for tasks an earlier process of this worker id left running (will try again)", "err", err)
		t := time.NewTimer(heartbeatRetry)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, err
		case <-t.C:
		}
	}
}

// findLeftover reads the registry entry of the worker's id before the worker
// registers (one GET), then lists the lease index (one LIST per 1,000
// running tasks) for the entries naming the id; the worker has claimed
// nothing yet, so each belongs to an earlier process. The listing is made
// with no entry left too: an earlier process that deregistered with a task
// it could not release (the store failing as it shut down) left a lease
// naming the id, which the monitor, seeing the id heartbeat again, would
// leave until it expires, a whole timeout later.
func (w *Worker) findLeftover(ctx context.Context) (*leftover, error) {
	prev, err := registry.Get(ctx, w.q, w.opts.ID)
	var bad *queue.MalformedError
	switch {
	case errors.Is(err, queue.ErrNotFound), errors.As(err, &bad):
		// Deregistered, pruned, never run, or malformed: when an earlier
		// process last heartbeated is not known, so its tasks are taken
		// back after the whole bound from now.
		if bad != nil {
			w.log.Warn("previous registry entry is malformed; its tasks are taken back after the liveness bound", "err", err)
		}
		prev = &queue.WorkerInfo{LastHeartbeat: w.clock.Now()}
	case err != nil:
		return nil, fmt.Errorf("read the previous registry entry: %w", err)
	}
	lo := &leftover{lastBeat: prev.LastHeartbeat, deadAfter: prev.DeadAfter()}
	after := ""
	for {
		page, next, err := w.q.Recovery().ListLeases(ctx, queue.AllLeases, 0, after)
		if err != nil {
			return nil, fmt.Errorf("list the leases of an earlier process: %w", err)
		}
		for _, e := range page {
			if e.WorkerID == w.opts.ID {
				lo.entries = append(lo.entries, e)
			}
		}
		if next == "" {
			break
		}
		after = next
	}
	if len(lo.entries) == 0 {
		return nil, nil
	}
	return lo, nil
}

// recoverLeftover takes back the earlier process's tasks once its last
// heartbeat is older than its liveness bound plus queue.MaxClockSkew, as the
// monitor would have had the id not heartbeated again: by then that process,
// were it only slow, has stopped its handlers (see stopAfter), so no attempt
// overlaps the next. Each take-back is fenced on the entry's lease id: a task
// that ended or was taken back meanwhile is left alone.
func (w *Worker) recoverLeftover(ctx context.Context, lo *leftover) {
	until := lo.lastBeat.Add(lo.deadAfter + queue.MaxClockSkew)
	w.log.Info("an earlier process of this worker id left running tasks: taking them back once its last heartbeat is older than the liveness bound",
		"tasks", len(lo.entries), "last_heartbeat", lo.lastBeat, "at", until)
	tick := time.NewTicker(supervisePoll)
	defer tick.Stop()
	for w.clock.Now().Before(until) {
		select {
		case <-ctx.Done():
			// Shutting down: the registry entry is removed, and the
			// monitor takes the tasks back from a holder with none.
			return
		case <-tick.C:
		}
	}
	// A take-back that fails (a refused or lost request) is tried again at
	// every tick until it lands or finds the task ended or taken back (by
	// this loop's own lost attempt, the monitor, or the lease's expiry):
	// given up, the task would stay running under the id, which the
	// monitor sees heartbeat, until its lease expired, a whole timeout on.
	taken, pending, warned := 0, lo.entries, map[string]bool{}
	for len(pending) > 0 {
		var failed []queue.LeaseEntry
		for _, e := range pending {
			if ctx.Err() != nil {
				return
			}
			_, err := w.q.Recovery().ReclaimLease(ctx, e, lo.lastBeat, lo.deadAfter)
			switch {
			case err == nil:
				taken++
			case errors.Is(err, queue.ErrConflict) || errors.Is(err, queue.ErrNotFound):
				// Ended, or taken back meanwhile.
			default:
				failed = append(failed, e)
				if !warned[e.Key] {
					warned[e.Key] = true
					w.log.Warn("could not take back a task of an earlier process of this worker id (will try again)", "task", e.ID, "err", err)
				}
			}
		}
		if pending = failed; len(pending) > 0 {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}
	w.log.Info("took back the tasks of an earlier process of this worker id", "taken", taken, "entries", len(lo.entries))
}
