package httpapi

import (
	"io"
	"net/http"

	"github.com/qo-queue/qo/queue"
)

// Workflows (see queue/doc.go, "Workflows"): the same calls as qo submit
// --workflow and qo workflow.

func (a *api) listWorkflows(w http.ResponseWriter, r *http.Request) error {
	names, err := a.q.Workflows().Names(r.Context(), 0)
	if err != nil {
		return err
	}
	if names == nil {
		names = []queue.WorkflowSummary{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"workflows": names})
	return nil
}

// submitWorkflow takes a workflow file as the body: 201 and the workflow
// when it was created, 200 and the existing one for a repeated
// idempotency key.
func (a *api) submitWorkflow(w http.ResponseWriter, r *http.Request) error {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return err
	}
	spec, err := queue.DecodeWorkflow(body, queue.DefaultSubmitDefaults)
	if err != nil {
		return err
	}
	wf, created, err := a.q.Workflows().Submit(r.Context(), spec)
	if err != nil {
		return err
	}
	v, err := a.q.Workflows().Read(r.Context(), wf.ID.String())
	if err != nil {
		return err
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
		if a.opts.Metrics != nil {
			for _, s := range wf.Steps {
				a.opts.Metrics.Submitted(s.Type)
			}
		}
	}
	w.Header().Set("Location", "/api/workflows/"+wf.ID.String())
	writeJSON(w, status, v.Report())
	return nil
}

func (a *api) getWorkflow(w http.ResponseWriter, r *http.Request) error {
	v, err := a.q.Workflows().Read(r.Context(), r.PathValue("ref"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, v.Report())
	return nil
}

func (a *api) cancelWorkflow(w http.ResponseWriter, r *http.Request) error {
	reason, err := cancelReason(r)
	if err != nil {
		return err
	}
	n, err := a.q.Workflows().Cancel(r.Context(), r.PathValue("ref"), reason)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]int{"cancelled": n})
	return nil
}
