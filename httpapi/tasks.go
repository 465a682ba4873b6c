// This file: the task routes (list, submit, show, history, cancel and the
// dead-letter actions).

package httpapi

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/qo-queue/qo/monitor/view"
	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/queue/registry"
)

// listQuery reads ?status=&type=&shard=&since=&cursor=&limit=.
func (a *api) listQuery(r *http.Request) (queue.ListQuery, error) {
	v := r.URL.Query()
	qry := queue.ListQuery{Type: v.Get("type"), Shard: v.Get("shard"), Cursor: v.Get("cursor")}
	if s := v.Get("status"); s != "" {
		st, err := queue.ParseStatus(s)
		if err != nil {
			return qry, err
		}
		qry.Status = st
	}
	if qry.Type != "" {
		if err := queue.ValidateType(qry.Type); err != nil {
			return qry, err
		}
	}
	if qry.Shard != "" && !a.q.ValidShard(qry.Shard) {
		return qry, badInput("shard %q is not a shard of this queue", qry.Shard)
	}
	if s := v.Get("since"); s != "" {
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			return qry, badInput("since %q: want an RFC 3339 time such as 2026-01-02T15:04:05Z", s)
		}
		qry.Since = t
	}
	if s := v.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > queue.MaxListLimit {
			return qry, badInput("limit %q: want a number from 1 to %d", s, queue.MaxListLimit)
		}
		qry.Limit = n
	}
	for k := range v {
		switch k {
		case "status", "type", "shard", "since", "cursor", "limit":
		default:
			return qry, badInput("unknown query parameter %q (known: status, type, shard, since, cursor, limit)", k)
		}
	}
	return qry, nil
}

func (a *api) listTasks(w http.ResponseWriter, r *http.Request) error {
	qry, err := a.listQuery(r)
	if err != nil {
		return err
	}
	page, err := a.q.List(r.Context(), qry)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, view.PageOf(page))
	return nil
}

func (a *api) listDead(w http.ResponseWriter, r *http.Request) error {
	qry, err := a.listQuery(r)
	if err != nil {
		return err
	}
	if qry.Status != "" && qry.Status != queue.StatusFailed {
		return badInput("/api/dead lists failed tasks only; use /api/tasks?status=%s", qry.Status)
	}
	qry.Status = queue.StatusFailed
	page, err := a.q.List(r.Context(), qry)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, view.PageOf(page))
	return nil
}

func (a *api) submit(w http.ResponseWriter, r *http.Request) error {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return err
	}
	req, err := queue.DecodeSubmit(body, queue.DefaultSubmitDefaults)
	if err != nil {
		return err
	}
	t, created, err := a.q.Submit(r.Context(), req)
	if err != nil {
		return err
	}
	status := http.StatusOK // a duplicate of an idempotency key: the first task
	if created {
		status = http.StatusCreated
		if a.opts.Metrics != nil {
			a.opts.Metrics.Submitted(t.Type)
		}
	}
	w.Header().Set("Location", "/api/tasks/"+t.ID.String())
	writeJSON(w, status, t)
	return nil
}

func (a *api) getTask(w http.ResponseWriter, r *http.Request) error {
	id, err := a.pathID(r)
	if err != nil {
		return err
	}
	t, err := a.q.Get(r.Context(), id)
	if err != nil {
		return err
	}
	// A running task's progress: one GET of its holder's registry entry.
	// Without it (the entry unreadable) the task is shown all the same.
	if withProg, err := registry.WithProgress(r.Context(), a.q, t); err == nil {
		t = withProg
	}
	writeJSON(w, http.StatusOK, a.withPayloads(r, t))
	return nil
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

func (a *api) history(w http.ResponseWriter, r *http.Request) error {
	id, err := a.pathID(r)
	if err != nil {
		return err
	}
	events, err := a.q.History(r.Context(), id)
	if err != nil {
		return err
	}
	if len(events) == 0 {
		return fmt.Errorf("task %s: %w", id, queue.ErrNotFound)
	}
	writeJSON(w, http.StatusOK, view.HistoryOf(id, events))
	return nil
}

func (a *api) cancel(w http.ResponseWriter, r *http.Request) error {
	id, err := a.pathID(r)
	if err != nil {
		return err
	}
	reason, err := cancelReason(r)
	if err != nil {
		return err
	}
	t, err := a.q.Cancel(r.Context(), id, reason)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, t)
	return nil
}

// cancelReason reads a cancel's optional body, {"reason": "..."}.
func cancelReason(r *http.Request) (string, error) {
	var body struct {
		Reason string `json:"reason"`
	}
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		return "", err
	}
	if len(strings.TrimSpace(string(raw))) > 0 {
		dec := json.NewDecoder(strings.NewReader(string(raw)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&body); err != nil {
			return "", badInput("cancel body: want {\"reason\": \"...\"} or nothing: %v", err)
		}
	}
	if body.Reason == "" {
		body.Reason = "cancelled through the HTTP API"
	}
	return body.Reason, nil
}

// taskAction replays or archives any task whose state allows it (the dead
// letter routes do the same for failed tasks only).
func (a *api) taskAction(op string) func(w http.ResponseWriter, r *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		id, err := a.pathID(r)
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

// deadTask reads a task that must be failed.
func (a *api) deadTask(r *http.Request) (uuid.UUID, error) {
	id, err := a.pathID(r)
	if err != nil {
		return id, err
	}
	t, err := a.q.Get(r.Context(), id)
	if err != nil {
		return id, err
	}
	if t.Status != queue.StatusFailed {
		return id, fmt.Errorf("%w: task %s is %s, not failed (dead-letter actions apply to failed tasks; see /api/tasks/%s)", queue.ErrInvalidTransition, id, t.Status, id)
	}
	return id, nil
}

func (a *api) retryDead(w http.ResponseWriter, r *http.Request) error {
	id, err := a.deadTask(r)
	if err != nil {
		return err
	}
	t, err := a.q.Replay(r.Context(), id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, t)
	return nil
}

// archiveDead archives a failed task: DELETE hides it from the dead
// letters; nothing is deleted from the bucket.
func (a *api) archiveDead(w http.ResponseWriter, r *http.Request) error {
	id, err := a.deadTask(r)
	if err != nil {
		return err
	}
	t, err := a.q.Archive(r.Context(), id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, t)
	return nil
}
