package httpapi

import (
	"net/http"
	"time"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/queue/control"
)

// The pause switches (see queue/doc.go, "Pause"): the same calls as qo
// pause and qo resume.

func (a *api) getControl(w http.ResponseWriter, r *http.Request) error {
	c, err := control.Read(r.Context(), a.q)
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
	c, err := control.Pause(r.Context(), a.q, b.Type, b.Reason)
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
	c, err := control.Resume(r.Context(), a.q, b.Type)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, c)
	return nil
}

// limitBody is the body of POST /api/limit.
type limitBody struct {
	Type        string `json:"type"`
	Concurrency int    `json:"concurrency"`
	Rate        string `json:"rate"`
	Burst       int    `json:"burst"`
	Clear       bool   `json:"clear"`
}

// limit sets or clears a type's fleet-wide concurrency cap (qo limit).
func (a *api) limit(w http.ResponseWriter, r *http.Request) error {
	var b limitBody
	if err := decodeBody(r, &b, `{"type": "...", "concurrency": N}, {"type": "...", "rate": "20/s", "burst": N} or {"type": "...", "clear": true}`); err != nil {
		return err
	}
	var (
		c   queue.Control
		err error
	)
	switch {
	case b.Clear && (b.Concurrency != 0 || b.Rate != ""):
		return badInput(`give either "concurrency" or "rate", or "clear", not both`)
	case b.Burst != 0 && b.Rate == "":
		return badInput(`"burst" goes with "rate": {"type": "...", "rate": "20/s", "burst": 5}`)
	case b.Clear:
		c, err = control.ClearLimit(r.Context(), a.q, b.Type)
	case b.Concurrency == 0 && b.Rate == "":
		return badInput(`give "concurrency": N to set a cap, "rate": "20/s" to set a rate, or "clear": true to remove them`)
	}
	if err == nil && b.Concurrency != 0 {
		c, err = control.SetLimit(r.Context(), a.q, b.Type, b.Concurrency)
	}
	if err == nil && b.Rate != "" {
		var starts int
		var per time.Duration
		if starts, per, err = queue.ParseRate(b.Rate); err == nil {
			c, err = control.SetRate(r.Context(), a.q, b.Type, starts, per, b.Burst)
		}
	}
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, c)
	return nil
}
