package worker

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/qo-queue/qo/queue"
)

// Claims whose outcome stayed unknown, and writes that failed
//
// A claim whose task PUT lost its response, and whose re-read failed too,
// may have left the task running under this worker's lease without the
// worker knowing. The monitor would not take it back (the holder is
// alive) before the lease expires, a whole timeout later. So the worker
// remembers the claim and re-reads its task (queue.ResolveClaim, 1 GET)
// after heartbeatRetry, then at doubling intervals up to the heartbeat
// interval, until the store answers: if the claim landed, the task is
// released (fenced, no retry counted) and is pending again at once; if it
// did not, there is nothing to do. The task is therefore pending again
// within a heartbeat interval of the store answering again. While the
// store does not answer, the worker's heartbeats do not land either, and
// the monitor takes the task back like any of a dead worker's. At
// shutdown each claim still unknown is re-read once more before the
// worker deregisters.
//
// A task whose final write failed on store errors (its outcome, or its
// release when the worker stopped its handlers without a landed
// heartbeat) is in the same place: still running under this worker's
// lease while the worker no longer runs it. It is released the same way
// (releaseLater), so it too is pending again within a heartbeat interval
// of the store answering again, not a whole timeout later.

// resolveLater settles the unknown claim c in the background.
func (w *Worker) resolveLater(c queue.UnknownClaim) {
	w.resolving.Add(1)
	go func() {
		defer w.resolving.Done()
		w.resolveClaim(c, nil)
	}()
}

// releaseLater releases, in the background in the same way, the task of a
// lease whose final write (outcome or release) failed on store errors: the
// task may still be running under it, and nobody else would take it back
// before the lease expires while this worker's heartbeats land.
func (w *Worker) releaseLater(l *queue.Lease) {
	w.resolving.Add(1)
	go func() {
		defer w.resolving.Done()
		w.resolveClaim(queue.UnknownClaim{TaskID: l.Task.ID, LeaseID: l.Task.LeaseID}, l)
	}()
}

// stopResolving makes every claim still unknown try once more, now, and
// waits for them.
func (w *Worker) stopResolving() {
	w.resolveStop.Do(func() { close(w.resolveNow) })
	w.resolving.Wait()
}

// resolveClaim settles c: re-reads its task until the claim is known
// (lease nil), then releases the task under the lease if it landed.
func (w *Worker) resolveClaim(c queue.UnknownClaim, lease *queue.Lease) {
	log := w.log.With("task_id", c.TaskID)
	if lease == nil {
		log.Warn("the outcome of a claim is unknown: the task is re-read until it is known, and released if the claim landed")
	} else {
		log.Warn("the task's last write failed: it is released once the store answers again")
	}
	wait := min(heartbeatRetry, w.opts.HeartbeatInterval)
	for {
		last := false
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-w.resolveNow:
			t.Stop()
			last = true
		}
		if w.resolveStep(c, &lease, log) {
			return
		}
		if last {
			log.Error("the outcome of a claim is still unknown at shutdown: if it landed, the monitor takes the task back once this worker's registry entry is gone")
			return
		}
		wait = min(2*wait, w.opts.HeartbeatInterval)
	}
}

// resolveStep re-reads the task of c (once the claim is known to have
// landed: releases it) and reports whether nothing is left to do.
func (w *Worker) resolveStep(c queue.UnknownClaim, lease **queue.Lease, log *slog.Logger) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if *lease == nil {
		l, err := w.q.ResolveClaim(ctx, c)
		switch {
		case errors.Is(err, queue.ErrConflict):
			log.Info("the claim whose outcome was unknown did not land", "reason", err)
			return true
		case err != nil:
			log.Warn("re-reading the task of a claim whose outcome is unknown failed; trying again", "err", err)
			return false
		}
		*lease = l
	}
	t, err := w.q.Release(ctx, *lease, "worker "+w.opts.ID+" could not learn whether its claim landed")
	switch {
	case err == nil:
		log.Info("the claim whose outcome was unknown had landed: task released", "status", statusOf(t))
		return true
	case errors.Is(err, queue.ErrLeaseLost), errors.Is(err, queue.ErrConflict), errors.Is(err, queue.ErrNotFound):
		log.Info("the claim whose outcome was unknown had landed, and its lease is gone already", "reason", err)
		return true
	default:
		log.Warn("releasing the task of a claim whose outcome was unknown failed; trying again", "err", err)
		return false
	}
}
