package queue_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/store/storetest"
)

func TestScheduleValidation(t *testing.T) {
	t.Parallel()
	b := setup(t, storetest.Backends()[0])
	base := queue.ScheduleSpec{Name: "ok", Cron: "*/5 * * * *", Task: queue.ScheduleTask{Type: "t"}}
	for _, tc := range []struct {
		name string
		edit func(*queue.ScheduleSpec)
		want string
	}{
		{"six fields", func(s *queue.ScheduleSpec) { s.Cron = "0 */5 * * * *" }, "5 fields"},
		{"garbage", func(s *queue.ScheduleSpec) { s.Cron = "every day" }, "5 fields"},
		{"zone inside", func(s *queue.ScheduleSpec) { s.Cron = "CRON_TZ=Europe/Berlin 0 9 * * *" }, "--tz"},
		{"every", func(s *queue.ScheduleSpec) { s.Cron = "@every 5m" }, "*/5 * * * *"},
		{"zone", func(s *queue.ScheduleSpec) { s.Timezone = "Mars/Olympus" }, "IANA"},
		{"name", func(s *queue.ScheduleSpec) { s.Name = "a/b" }, "schedule name"},
		{"type", func(s *queue.ScheduleSpec) { s.Task.Type = "" }, "task type"},
		{"missed", func(s *queue.ScheduleSpec) { s.Missed = "all" }, "catch-up"},
		{"input", func(s *queue.ScheduleSpec) { s.Task.Input = json.RawMessage(`{`) }, "not valid JSON"},
		{"priority", func(s *queue.ScheduleSpec) { s.Task.Priority = "top" }, "priority"},
	} {
		spec := base
		tc.edit(&spec)
		_, err := b.q.CreateSchedule(b.ctx, spec)
		require.ErrorIs(t, err, queue.ErrInvalidInput, tc.name)
		require.Contains(t, err.Error(), tc.want, tc.name)
	}
	require.Empty(t, b.keys(t, queue.SchedulesPrefix), "nothing written for bad input")
}

func TestSchedules(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		b := setup(t, be)
		// Start just after a 5-minute boundary.
		start := b.q.Now().Truncate(5 * time.Minute).Add(5*time.Minute + time.Second)
		b.clock.Set(start)
		s, err := b.q.CreateSchedule(b.ctx, queue.ScheduleSpec{
			Name: "every5", Cron: "*/5 * * * *",
			Task: queue.ScheduleTask{Type: "tick", Input: json.RawMessage(`{"n":1}`), Priority: queue.PriorityHigh},
		})
		require.NoError(t, err)
		due := start.Truncate(5 * time.Minute).Add(5 * time.Minute)
		require.Equal(t, due, s.NextDue())
		_, err = b.q.CreateSchedule(b.ctx, queue.ScheduleSpec{Name: "every5", Cron: "@daily", Task: queue.ScheduleTask{Type: "x"}})
		require.ErrorIs(t, err, queue.ErrConflict)

		// Two schedulers at the due time: one task.
		s1, s2 := b.q.NewScheduler(), b.q.NewScheduler()
		for _, sc := range []*queue.Scheduler{s1, s2} {
			_, err := sc.Refresh(b.ctx)
			require.NoError(t, err)
			require.Empty(t, sc.RunDue(b.ctx), "nothing due yet")
		}
		b.clock.Set(due.Add(3 * time.Second))
		r1 := s1.RunDue(b.ctx)
		r2 := s2.RunDue(b.ctx)
		require.Len(t, r1, 1)
		require.NoError(t, r1[0].Err)
		require.True(t, r1[0].Created)
		require.False(t, r1[0].Late)
		require.Empty(t, r2, "the second scheduler sees the run recorded")
		task := b.get(t, &queue.Task{ID: r1[0].TaskID, Shard: b.q.ShardOf(r1[0].TaskID)})
		require.Equal(t, "tick", task.Type)
		require.Equal(t, queue.PriorityHigh, task.Priority)
		require.Equal(t, queue.ScheduleRunKey("every5", due), task.IdempotencyKey)
		// A scheduler that missed the schedule's update still submits nothing new.
		stale := b.q.NewScheduler()
		_, err = stale.Refresh(b.ctx)
		require.NoError(t, err)
		require.Empty(t, stale.RunDue(b.ctx))

		// Downtime of an hour, catch-up (default): one task for the latest
		// missed due time, the others counted as skipped.
		b.clock.Set(due.Add(time.Hour + 3*time.Minute))
		runs := s1.RunDue(b.ctx)
		require.Len(t, runs, 1)
		require.True(t, runs[0].Late)
		require.Equal(t, due.Add(time.Hour), runs[0].Due)
		require.Equal(t, 11, runs[0].Skipped)
		require.True(t, runs[0].Created)
		got, err := b.q.GetSchedule(b.ctx, "every5")
		require.NoError(t, err)
		require.Equal(t, int64(11), got.Skipped)
		require.Equal(t, runs[0].TaskID.String(), got.LastTaskID)

		// Skip policy: the missed run is dropped.
		_, err = b.q.CreateSchedule(b.ctx, queue.ScheduleSpec{Name: "skipper", Cron: "*/5 * * * *", Missed: queue.MissedSkip, Task: queue.ScheduleTask{Type: "tick"}})
		require.NoError(t, err)
		_, err = s1.Refresh(b.ctx)
		require.NoError(t, err)
		b.clock.Advance(time.Hour)
		runs = s1.RunDue(b.ctx)
		require.Len(t, runs, 2)
		for _, r := range runs {
			if r.Schedule == "skipper" {
				require.Equal(t, uuid.Nil, r.TaskID)
				require.True(t, r.Late)
			}
		}

		// Disabled: nothing; enabling starts from now.
		_, err = b.q.SetScheduleEnabled(b.ctx, "every5", false)
		require.NoError(t, err)
		b.clock.Advance(10 * time.Minute)
		for _, r := range s1.RunDue(b.ctx) {
			require.NotEqual(t, "every5", r.Schedule, "a disabled schedule never runs, even from a stale cache")
		}
		en, err := b.q.SetScheduleEnabled(b.ctx, "every5", true)
		require.NoError(t, err)
		require.True(t, en.NextDue().After(b.q.Now()))

		// Trigger: a task now, timing unchanged.
		trig, err := b.q.TriggerSchedule(b.ctx, "every5")
		require.NoError(t, err)
		require.Equal(t, "tick", trig.Type)
		after, err := b.q.GetSchedule(b.ctx, "every5")
		require.NoError(t, err)
		require.Equal(t, trig.ID.String(), after.LastTaskID)
		require.Equal(t, en.NextDue(), after.NextDue())

		// Delete leaves a tombstone; the name can be used again.
		require.NoError(t, b.q.DeleteSchedule(b.ctx, "every5"))
		_, err = b.q.GetSchedule(b.ctx, "every5")
		require.ErrorIs(t, err, queue.ErrNotFound)
		list, _, err := b.q.ListSchedules(b.ctx)
		require.NoError(t, err)
		require.Len(t, list, 1)
		_, err = b.q.CreateSchedule(b.ctx, queue.ScheduleSpec{Name: "every5", Cron: "@hourly", Task: queue.ScheduleTask{Type: "tick"}})
		require.NoError(t, err)
		for _, r := range s1.RunDue(b.ctx) {
			require.NotEqual(t, "every5", r.Schedule, "a deleted schedule never runs from a stale cache")
		}
	})
}

func TestScheduleTimezone(t *testing.T) {
	t.Parallel()
	b := setup(t, storetest.Backends()[0])
	b.clock.Set(time.Date(2026, 1, 14, 12, 0, 0, 0, time.UTC))
	s, err := b.q.CreateSchedule(b.ctx, queue.ScheduleSpec{Name: "nine", Cron: "0 9 * * *", Timezone: "Europe/Berlin", Task: queue.ScheduleTask{Type: "t"}})
	require.NoError(t, err)
	require.Equal(t, time.Date(2026, 1, 15, 8, 0, 0, 0, time.UTC), s.NextDue(), "09:00 in Berlin is 08:00 UTC in winter")
	require.Equal(t, time.Date(2026, 7, 15, 7, 0, 0, 0, time.UTC), s.Next(time.Date(2026, 7, 14, 12, 0, 0, 0, time.UTC)), "and 07:00 UTC in summer")
}

func TestScheduleMalformedSkipped(t *testing.T) {
	t.Parallel()
	b := setup(t, storetest.Backends()[0])
	_, err := b.raw.Put(b.ctx, queue.ScheduleKey("bad"), []byte(`{"format":1,"name":"bad","cron":"nope"}`), store.Condition{})
	require.NoError(t, err)
	_, err = b.q.CreateSchedule(b.ctx, queue.ScheduleSpec{Name: "good", Cron: "@daily", Task: queue.ScheduleTask{Type: "t"}})
	require.NoError(t, err)
	list, malformed, err := b.q.ListSchedules(b.ctx)
	require.NoError(t, err)
	require.Len(t, list, 1)
	require.Len(t, malformed, 1)
	require.Equal(t, queue.ScheduleKey("bad"), malformed[0].Key)
	_, err = b.q.GetSchedule(b.ctx, "bad")
	var m *queue.MalformedError
	require.True(t, errors.As(err, &m))
	require.False(t, errors.Is(err, queue.ErrInvalidInput), "a bad object is not the caller's bad input")
}
