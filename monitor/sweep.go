package monitor

import (
	"context"
	"time"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/queue/sweepstate"
)

// sweepLoop runs a sweep round every SweepInterval while this monitor
// leads, and one at once on becoming leader (the position is shared, so a
// leader that changes often still makes progress).
func (m *Monitor) sweepLoop(ctx context.Context) {
	t := time.NewTicker(m.opts.SweepInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-m.sweepKick:
		case <-t.C:
		}
		if !m.IsLeader() {
			continue
		}
		if err := m.SweepRound(ctx); err != nil && ctx.Err() == nil {
			m.log.Warn("sweep round failed", "err", err)
		}
	}
}

// SweepRound sweeps one page of the ready index (see queue.Sweep) and one
// of the waiting index (queue.SweepWaiting) from the positions kept in the
// bucket, and saves the new positions. Cost: 2 LIST + 1 GET per entry
// nobody claimed for SweepIdle + the reads of each waiting task and of its
// parents that have not ended + 1 PUT for the position
// (+ 1 GET to load it on the first round of a leadership).
func (m *Monitor) SweepRound(ctx context.Context) error {
	if !m.IsLeader() {
		return nil
	}
	m.mu.Lock()
	st := m.sweepState
	m.mu.Unlock()
	if st == nil {
		loaded, err := sweepstate.Load(ctx, m.q)
		if err != nil {
			return err
		}
		st = &loaded
	}
	now := m.opts.Clock.Now()
	if st.Cursor == "" {
		st.PassStartedAt = now
	}
	res, next, err := m.q.Recovery().Sweep(ctx, st.Cursor, m.opts.SweepPageSize, m.opts.SweepIdle)
	if err != nil {
		return err
	}
	// And one page of waiting tasks: a parent's end that no child heard
	// of (its writer died in between) is recorded within a round.
	wres, wnext, err := m.q.Recovery().SweepWaiting(ctx, st.WaitingCursor, m.opts.SweepPageSize, m.opts.SweepIdle)
	if err != nil {
		return err
	}
	res.Add(wres)
	st.WaitingCursor = wnext
	m.logSweep(res)
	st.Cursor = next
	if next == "" {
		st.LastPassAt = now
	}
	st.LastRoundAt, st.Holder = now, m.opts.ID
	if err := sweepstate.Save(ctx, m.q, *st); err != nil {
		return err
	}
	m.mu.Lock()
	m.sweepState = st
	m.mu.Unlock()
	return nil
}

func (m *Monitor) logSweep(res queue.SweepResult) {
	for _, bad := range res.Malformed {
		m.log.Warn("sweep: skipping malformed task object", "key", bad.Key, "err", bad.Err)
	}
	attrs := []any{"listed", res.Listed, "scanned", res.Scanned, "stale_removed", res.StaleRemoved,
		"expired", res.Expired, "waiting_decided", res.WaitingDecided, "registered", res.Registered, "errors", res.Errors}
	if res.Converted > 0 {
		m.log.Warn("sweep converted ready entries of an older key layout: a qo of an older version still works on this queue (stop it)", append(attrs, "converted", res.Converted)...)
		return
	}
	if res.StaleRemoved > 0 || res.Expired > 0 || res.WaitingDecided > 0 || res.Registered > 0 || res.Errors > 0 {
		m.log.Info("sweep repaired the indexes or waiting tasks", attrs...)
		return
	}
	m.log.Debug("swept a ready index page", attrs...)
}
