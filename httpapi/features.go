package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/qo-queue/qo/monitor/view"
	"github.com/qo-queue/qo/queue"
)

// decodeBody decodes an optional JSON object body into v, refusing unknown
// fields; want describes the expected shape for the error message.
func decodeBody(r *http.Request, v any, want string) error {
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return badInput("body: want %s: %v", want, err)
	}
	return nil
}

// --- pause ------------------------------------------------------------------

func (a *api) getControl(w http.ResponseWriter, r *http.Request) error {
	c, err := a.q.Control(r.Context())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, c)
	return nil
}

// pauseBody is the body of POST /api/pause and /api/resume; an empty type
// means the whole queue.
type pauseBody struct {
	Type   string `json:"type"`
	Reason string `json:"reason"`
}

func (a *api) pause(w http.ResponseWriter, r *http.Request) error {
	var b pauseBody
	if err := decodeBody(r, &b, `{"type": "...", "reason": "..."} (no type: the whole queue)`); err != nil {
		return err
	}
	c, err := a.q.Pause(r.Context(), b.Type, b.Reason)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, c)
	return nil
}

func (a *api) resume(w http.ResponseWriter, r *http.Request) error {
	var b pauseBody
	if err := decodeBody(r, &b, `{"type": "..."} (no type: the whole queue)`); err != nil {
		return err
	}
	if b.Reason != "" {
		return badInput(`resume takes no "reason"`)
	}
	c, err := a.q.Resume(r.Context(), b.Type)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, c)
	return nil
}

// --- schedules --------------------------------------------------------------

// scheduleBody is the body of POST /api/schedules.
type scheduleBody struct {
	Name     string             `json:"name"`
	Cron     string             `json:"cron"`
	Timezone string             `json:"timezone"`
	Missed   queue.MissedPolicy `json:"missed"`
	Disabled bool               `json:"disabled"`
	Task     queue.ScheduleTask `json:"task"`
}

func (a *api) listSchedules(w http.ResponseWriter, r *http.Request) error {
	list, malformed, err := a.q.ListSchedules(r.Context())
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
	s, err := a.q.CreateSchedule(r.Context(), queue.ScheduleSpec{
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
	s, err := a.q.GetSchedule(r.Context(), r.PathValue("name"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, view.ScheduleOf(s))
	return nil
}

func (a *api) deleteSchedule(w http.ResponseWriter, r *http.Request) error {
	if err := a.q.DeleteSchedule(r.Context(), r.PathValue("name")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (a *api) enableSchedule(enabled bool) func(w http.ResponseWriter, r *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		s, err := a.q.SetScheduleEnabled(r.Context(), r.PathValue("name"), enabled)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, view.ScheduleOf(s))
		return nil
	}
}

func (a *api) triggerSchedule(w http.ResponseWriter, r *http.Request) error {
	t, err := a.q.TriggerSchedule(r.Context(), r.PathValue("name"))
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

// taskAction replays or archives any task whose state allows it (the dead
// letter routes do the same for failed tasks only).
func (a *api) taskAction(op string) func(w http.ResponseWriter, r *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		id, err := pathID(r)
		if err != nil {
			return err
		}
		var t *queue.Task
		if op == "replay" {
			t, err = a.q.Replay(r.Context(), id)
		} else {
			t, err = a.q.Archive(r.Context(), id)
		}
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, t)
		return nil
	}
}

// fullTask is a task with offloaded payloads loaded; a payload that cannot
// be loaded is reported in payload_error instead of failing the request.
type fullTask struct {
	*queue.Task
	PayloadError string `json:"payload_error,omitempty"`
}

func (a *api) withPayloads(r *http.Request, t *queue.Task) fullTask {
	full, err := a.q.WithPayloads(r.Context(), t)
	if err != nil {
		return fullTask{Task: t, PayloadError: fmt.Sprintf("offloaded payload not loaded: %v", err)}
	}
	return fullTask{Task: full}
}

// resolveSubmit turns a decoded submit document into a request at the
// queue's current time.
func (a *api) resolveSubmit(doc queue.SubmitDoc) queue.SubmitRequest {
	return doc.Resolve(a.q.Now())
}
