package httpapi

import "net/http"

// The pause switches (see queue/doc.go, "Pause"): the same calls as qo
// pause and qo resume.

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
