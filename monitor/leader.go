package monitor

import (
	"context"
	"errors"
	"time"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/queue/namedlease"
)

func (m *Monitor) leadLoop(ctx context.Context) {
	every := m.opts.LeaderTTL / 3
	for {
		m.Elect(ctx)
		t := time.NewTimer(every)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// Elect runs one leadership step: renew the lease when leading, else try to
// acquire it. It reports whether this monitor leads afterwards.
func (m *Monitor) Elect(ctx context.Context) bool {
	m.mu.Lock()
	held := m.leader
	m.mu.Unlock()

	if held != nil {
		renewed := *held // namedlease.Renew updates its argument; IsLeader reads m.leader
		err := namedlease.Renew(ctx, m.q, &renewed, m.opts.LeaderTTL)
		switch {
		case err == nil:
			m.mu.Lock()
			if m.leader == held {
				m.leader = &renewed
			}
			m.mu.Unlock()
			return true
		case errors.Is(err, queue.ErrLeaseLost):
			m.log.Warn("lost monitor leadership")
			m.setLeader(nil)
		default:
			if ctx.Err() != nil {
				return m.IsLeader()
			}
			// Keep believing until the lease's own expiry: a renewal may
			// succeed on the next try.
			m.log.Warn("renewing monitor leadership failed", "err", err)
			if !m.IsLeader() {
				m.setLeader(nil)
			}
			return m.IsLeader()
		}
	}

	l, err := namedlease.Acquire(ctx, m.q, queue.MonitorLeaderKey, m.opts.ID, m.opts.LeaderTTL)
	switch {
	case err == nil:
		m.setLeader(l)
		m.log.Info("monitor is now the leader", "lease_expires_at", l.ExpiresAt)
		m.mu.Lock()
		m.sweepState = nil // read the shared position again
		m.leaseCursor = "" // the lease walk starts at the first shard
		m.mu.Unlock()
		for _, k := range []chan struct{}{m.kick, m.schedKick, m.sweepKick} {
			select {
			case k <- struct{}{}:
			default:
			}
		}
		return true
	case errors.Is(err, queue.ErrConflict):
		return false
	default:
		if ctx.Err() == nil {
			m.log.Warn("acquiring monitor leadership failed", "err", err)
		}
		return false
	}
}

func (m *Monitor) setLeader(l *queue.NamedLease) {
	m.mu.Lock()
	was := m.leader != nil
	m.leader = l
	m.mu.Unlock()
	if o := m.opts.Observer; o != nil && was != (l != nil) {
		o.Leadership(l != nil)
	}
}

// resign releases the leader lease so a standby takes over at once.
func (m *Monitor) resign(ctx context.Context) {
	m.mu.Lock()
	l := m.leader
	m.leader = nil
	m.mu.Unlock()
	if l == nil {
		return
	}
	if o := m.opts.Observer; o != nil {
		o.Leadership(false)
	}
	if err := namedlease.Release(ctx, m.q, l); err != nil && !errors.Is(err, queue.ErrLeaseLost) {
		m.log.Warn("releasing monitor leadership failed", "err", err)
		return
	}
	m.log.Info("released monitor leadership")
}
