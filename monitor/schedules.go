package monitor

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/qo-queue/qo/queue/schedule"
)

// scheduleLoop runs the cron schedules while this monitor leads: it wakes
// at the next due time, or after ScheduleRefresh to re-read them.
func (m *Monitor) scheduleLoop(ctx context.Context) {
	for {
		wait := m.opts.ScheduleRefresh
		if m.IsLeader() {
			if _, err := m.RunSchedules(ctx); err != nil && ctx.Err() == nil {
				m.log.Warn("running schedules failed", "err", err)
			}
			if next := m.sched.NextDue(); !next.IsZero() {
				wait = min(wait, max(next.Sub(m.opts.Clock.Now()), 100*time.Millisecond))
			}
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-m.schedKick:
			t.Stop()
			m.schedReadAt = time.Time{}
		case <-t.C:
		}
	}
}

// RunSchedules re-reads the schedules when ScheduleRefresh has passed since
// the last read, then submits what is due (see schedule.Scheduler.RunDue) and
// logs it. Not safe for concurrent use; Run calls it from one goroutine.
func (m *Monitor) RunSchedules(ctx context.Context) ([]schedule.Run, error) {
	if m.schedReadAt.IsZero() || time.Since(m.schedReadAt) >= m.opts.ScheduleRefresh {
		malformed, err := m.sched.Refresh(ctx)
		if err != nil {
			return nil, err
		}
		m.schedReadAt = time.Now()
		for _, bad := range malformed {
			m.log.Warn("skipping malformed schedule", "key", bad.Key, "err", bad.Err)
		}
	}
	runs := m.sched.RunDue(ctx)
	for _, r := range runs {
		attrs := []any{"schedule", r.Schedule, "due", r.Due}
		outcome := "submitted"
		switch {
		case r.Err != nil:
			outcome = "failed"
			m.log.Warn("schedule run failed (retried on the next pass)", append(attrs, "err", r.Err)...)
		case r.TaskID == uuid.Nil:
			outcome = "skipped"
			m.log.Warn("schedule skipped a missed run (policy skip, or its expiry passed)", append(attrs, "skipped", r.Skipped)...)
		case !r.Created:
			outcome = "duplicate"
			m.log.Debug("schedule run was submitted by another monitor", append(attrs, "task_id", r.TaskID)...)
		default:
			if r.Late {
				attrs = append(attrs, "late", true)
			}
			if r.Skipped > 0 {
				attrs = append(attrs, "skipped", r.Skipped)
			}
			m.log.Info("schedule submitted a task", append(attrs, "task_id", r.TaskID)...)
		}
		if o := m.opts.Observer; o != nil {
			o.ScheduleRun(r.Schedule, outcome)
		}
	}
	return runs, nil
}
