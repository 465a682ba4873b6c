package worker

import (
	"context"
	"fmt"
	"maps"
	"os"
	"sort"
	"time"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/queue/registry"
	"github.com/qo-queue/qo/store"
)

// info is the registry record as of now.
func (w *Worker) info() *queue.WorkerInfo {
	w.mu.Lock()
	current := make([]string, 0, len(w.running))
	running := make([]*runningTask, 0, len(w.running))
	for id, rt := range w.running {
		current = append(current, id.String())
		running = append(running, rt)
	}
	w.mu.Unlock()
	sort.Strings(current)
	// The handlers' latest progress reports (read outside w.mu: an exec
	// handler's is read from its file).
	var progress map[string]queue.Progress
	for _, rt := range running {
		if p := rt.progressNow(); p != nil {
			if progress == nil {
				progress = map[string]queue.Progress{}
			}
			progress[rt.id.String()] = *p
		}
	}
	var shards []string
	switch {
	case w.leaser != nil:
		shards = w.leaser.owned()
	case len(w.opts.Shards) > 0:
		shards = append([]string(nil), w.opts.Shards...)
	default:
		// Empty means every shard. (Not the full list: leasing workers
		// read the registry to see which shards are taken, and a worker
		// without leasing takes none.)
	}
	var requests *store.Counts
	if c, ok := w.q.Store().(store.Counted); ok {
		snap := c.Requests().Snapshot()
		requests = &snap
	}
	return &queue.WorkerInfo{
		Requests:         requests,
		ID:               w.opts.ID,
		StartedAt:        w.startedAt,
		LastHeartbeat:    w.clock.Now(),
		Shards:           shards,
		CurrentTasks:     current,
		Types:            append([]string(nil), w.types...),
		Concurrency:      w.opts.Concurrency,
		TasksCompleted:   w.completed.Load(),
		TasksFailed:      w.failed.Load(),
		Recent:           w.recent.Snapshot(w.clock.Now()),
		Host:             w.host,
		PID:              os.Getpid(),
		Version:          w.opts.Version,
		DeadAfterSeconds: int(w.opts.DeadAfter.Round(time.Second) / time.Second),
		Progress:         progress,
		Holds:            w.heldShares(),
		Limits:           maps.Clone(w.opts.Limits),
	}
}

// countFinish counts finished attempts (for the totals and the per-minute
// counts of the heartbeat).
func (w *Worker) countFinish(completed, failed int) {
	w.completed.Add(int64(completed))
	w.failed.Add(int64(failed))
	w.recent.Add(w.clock.Now(), completed, failed)
}

// Heartbeat writes the registry record now. The registry entry's age is the
// worker's liveness (see queue.WorkerInfo.DeadAfter), so a heartbeat that
// cannot land within half the bound is abandoned and tried again soon.
//
// A worker serving a type with a fleet-wide cap works out its share of it
// first and confirms a raised share after the write (see caps.go).
func (w *Worker) Heartbeat(ctx context.Context) error {
	w.hbMu.Lock()
	defer w.hbMu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, min(30*time.Second, w.opts.DeadAfter/2))
	defer cancel()
	raised := w.planHolds(ctx)
	sent := w.clock.Now()
	info := w.info()
	if err := registry.Put(ctx, w.q, info); err != nil {
		err = fmt.Errorf("worker %s: heartbeat: %w", w.opts.ID, err)
		w.noteHeartbeat(err)
		return err
	}
	if w.presumedDead() {
		// The last heartbeat before this one grew too old: others may
		// have counted this worker dead and used its shares.
		w.resetShares()
		raised = info.Holds != nil
	}
	w.lastBeat.Store(sent.UnixNano())
	w.noteHeartbeat(nil)
	if raised {
		w.confirmHolds(ctx, info.Holds)
	}
	return nil
}

// requestHeartbeat asks the heartbeat loop to publish soon (after shard
// ownership changed).
func (w *Worker) requestHeartbeat() {
	select {
	case w.hbNow <- struct{}{}:
	default:
	}
}

// heartbeatRetry is how soon a failed heartbeat is tried again.
const heartbeatRetry = time.Second

// heartbeatLoop runs on its own timer, independent of running tasks; a
// failed heartbeat is retried after heartbeatRetry.
func (w *Worker) heartbeatLoop(ctx context.Context) {
	failing := false
	for {
		wait := w.opts.HeartbeatInterval
		if failing || w.capsPending() || w.joining() {
			wait = min(wait, heartbeatRetry)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		case <-w.hbNow:
			t.Stop()
		}
		// A beat already sent is not cancelled when the loop is stopped:
		// Run deregisters only after it returned, so a write the server
		// completes late cannot bring the entry back after the delete.
		// Heartbeat bounds it with its own timeout.
		err := w.Heartbeat(context.WithoutCancel(ctx))
		switch {
		case err != nil && ctx.Err() == nil:
			if !failing {
				w.log.Warn("heartbeat failed (will keep trying)", "err", err)
			}
			failing = true
		case err == nil && failing:
			w.log.Info("heartbeat recovered")
			failing = false
		}
	}
}

// joining reports whether the worker is in its first heartbeat interval and
// serves a type with a fleet-wide limit. Its shares were worked out from the
// registry as it found it, without the workers that started with it (a
// fleet started at once): it beats every heartbeatRetry meanwhile, so the
// first to start shrinks its share as the others appear and theirs are
// confirmed in seconds, not after two heartbeat intervals (some 9 PUTs and
// registry reads more, once per start).
func (w *Worker) joining() bool {
	return w.anyCaps() && w.clock.Now().Sub(w.startedAt) < w.opts.HeartbeatInterval
}

// presumedDead reports whether the last heartbeat that landed is older
// than stopAfter: the worker then claims nothing and stops its handlers.
func (w *Worker) presumedDead() bool {
	return w.clock.Now().Sub(time.Unix(0, w.lastBeat.Load())) >= w.stopAfter()
}

// stopAfter is how old the last landed heartbeat may grow before the
// worker stops its handlers: three quarters of DeadAfter, less the
// watchdog's period, so that they are stopped by three quarters. The
// monitor takes the tasks back only once the heartbeat is older than
// DeadAfter plus queue.MaxClockSkew by its own clock, so a handler that
// stops within the last quarter (an exec handler's kill grace, 5s of the
// default 20s: Options.KillGrace is held to it) has ended before its task
// can run elsewhere, whichever way the clocks are skewed.
func (w *Worker) stopAfter() time.Duration {
	return w.opts.DeadAfter - w.opts.DeadAfter/4 - watchdogEvery(w.opts.DeadAfter)
}

// watchdogEvery is how often the watchdog looks: every DeadAfter/40 of the
// queue's clock, at most every 500ms.
func watchdogEvery(deadAfter time.Duration) time.Duration {
	return min(max(deadAfter/40, 10*time.Millisecond), 500*time.Millisecond)
}

// watchdogLoop stops every handler once the last heartbeat that reached the
// store is older than stopAfter, before the monitor may take the tasks back
// and run them elsewhere (each is released where the lease still holds,
// once its handler has returned, see finish).
func (w *Worker) watchdogLoop(ctx context.Context) {
	t := time.NewTicker(watchdogEvery(w.opts.DeadAfter))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if !w.presumedDead() {
			continue
		}
		last := time.Unix(0, w.lastBeat.Load())
		age := w.clock.Now().Sub(last)
		w.mu.Lock()
		var stopped int
		for _, rt := range w.running {
			if rt.ctx.Err() == nil {
				rt.cancel(fmt.Errorf("%w: last heartbeat %s ago", ErrPresumedDead, age.Round(time.Millisecond)))
				stopped++
			}
		}
		w.mu.Unlock()
		if stopped > 0 {
			w.log.Error("heartbeat has not reached the store for three quarters of the liveness bound: stopping the handlers before their tasks are taken back",
				"last_heartbeat", last, "dead_after", w.opts.DeadAfter.String(), "stopped", stopped)
		}
	}
}

func (w *Worker) deregister(bg context.Context) {
	ctx, cancel := context.WithTimeout(bg, 30*time.Second)
	defer cancel()
	if err := registry.Delete(ctx, w.q, w.opts.ID); err != nil {
		w.log.Warn("deregistering failed; the registry entry will show as stale", "err", err)
	}
}
