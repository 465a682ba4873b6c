package httpapi

import (
	"net/http"

	"github.com/qo-queue/qo/monitor/view"
	"github.com/qo-queue/qo/queue/schedule"
)

// Cron schedules (see queue/doc.go, "Schedules"): the same calls as qo
// schedule.

// scheduleBody is the body of POST /api/schedules.
type scheduleBody struct {
	Name     string                `json:"name"`
	Cron     string                `json:"cron"`
	Timezone string                `json:"timezone"`
	Missed   schedule.MissedPolicy `json:"missed"`
	Disabled bool                  `json:"disabled"`
	Task     schedule.Task         `json:"task"`
}

func (a *api) listSchedules(w http.ResponseWriter, r *http.Request) error {
	list, malformed, err := schedule.List(r.Context(), a.q)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, view.SchedulesOf(list, malformed))
	return nil
}

func (a *api) createSchedule(w http.ResponseWriter, r *http.Request) error {
	var b scheduleBody
	const want = `{"name", "cron", "timezone", "missed", "disabled", "task": {"task_type", "input", "priority", "timeout_seconds", "max_retries", "expires_after_seconds"}}`
	if err := decodeBody(r, &b, want); err != nil {
		return err
	}
	s, err := schedule.Create(r.Context(), a.q, schedule.Spec{
		Name: b.Name, Cron: b.Cron, Timezone: b.Timezone, Missed: b.Missed, Disabled: b.Disabled, Task: b.Task,
	})
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/api/schedules/"+s.Name)
	writeJSON(w, http.StatusCreated, view.ScheduleOf(s))
	return nil
}

func (a *api) getSchedule(w http.ResponseWriter, r *http.Request) error {
	s, err := schedule.Get(r.Context(), a.q, r.PathValue("name"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, view.ScheduleOf(s))
	return nil
}

func (a *api) deleteSchedule(w http.ResponseWriter, r *http.Request) error {
	if err := schedule.Delete(r.Context(), a.q, r.PathValue("name")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (a *api) enableSchedule(enabled bool) func(w http.ResponseWriter, r *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		s, err := schedule.SetEnabled(r.Context(), a.q, r.PathValue("name"), enabled)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, view.ScheduleOf(s))
		return nil
	}
}

func (a *api) triggerSchedule(w http.ResponseWriter, r *http.Request) error {
	t, err := schedule.Trigger(r.Context(), a.q, r.PathValue("name"))
	if err != nil {
		return err
	}
	if a.opts.Metrics != nil {
		a.opts.Metrics.Submitted(t.Type)
	}
	w.Header().Set("Location", "/api/tasks/"+t.ID.String())
	writeJSON(w, http.StatusCreated, t)
	return nil
}
