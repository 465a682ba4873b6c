package httpapi

import (
	"net/http"
	"strings"
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

// limitBody is the body of POST /api/limit: the flags of qo limit.
// Concurrency is a pointer so that 0 is refused as qo limit --concurrency 0
// is, rather than read as no cap given.
type limitBody struct {
	Type        string `json:"type"`
	Concurrency *int   `json:"concurrency"`
	Rate        string `json:"rate"`
	Burst       int    `json:"burst"`
	PerKey      bool   `json:"per_key"`
	Clear       bool   `json:"clear"`
}

// limitShapes describes the bodies POST /api/limit takes.
const limitShapes = `{"type": "...", "concurrency": N}, {"type": "...", "rate": "20/s", "burst": N}, either with "per_key": true, or {"type": "...", "clear": true}`

// limitChange is a checked body: what it sets, nothing written yet.
type limitChange struct {
	typ    string
	cap    int // 0: none
	starts int // 0: no rate
	per    time.Duration
	burst  int
	perKey bool
	clear  bool
}

// checkLimit checks a body as qo limit checks its flags, all of it before
// anything is written: a body that sets a cap and a bad rate sets neither.
func checkLimit(b limitBody) (limitChange, error) {
	ch := limitChange{typ: b.Type, burst: b.Burst, perKey: b.PerKey, clear: b.Clear}
	set, rated := b.Concurrency != nil, b.Rate != ""
	if err := queue.ValidateType(b.Type); err != nil {
		return ch, err
	}
	switch {
	case b.PerKey && !set && !rated:
		return ch, badInput(`"per_key" goes with "concurrency" or "rate": {"type": "...", "concurrency": 1, "per_key": true}`)
	case b.Burst != 0 && !rated:
		return ch, badInput(`"burst" goes with "rate": {"type": "...", "rate": "20/s", "burst": 5}`)
	case b.Clear && (set || rated):
		return ch, badInput(`give either "concurrency" or "rate", or "clear", not both`)
	case !set && !rated && !b.Clear:
		return ch, badInput(`give "concurrency": N to set a cap, "rate": "20/s" to set a rate, or "clear": true to remove them`)
	case set && (*b.Concurrency < 1 || *b.Concurrency > queue.MaxConcurrencyCap):
		return ch, badInput(`"concurrency" %d is not between 1 and %d (to remove the cap: {"type": "...", "clear": true})`, *b.Concurrency, queue.MaxConcurrencyCap)
	case rated && (b.Burst < 0 || b.Burst > queue.MaxRate):
		return ch, badInput(`"burst" %d is not between 1 and %d (leave it out for a second's worth)`, b.Burst, queue.MaxRate)
	}
	if set {
		ch.cap = *b.Concurrency
	}
	if rated {
		var err error
		if ch.starts, ch.per, err = queue.ParseRate(b.Rate); err != nil {
			return ch, badInput(`"rate": %s`, strings.TrimPrefix(err.Error(), queue.ErrInvalidInput.Error()+": "))
		}
	}
	return ch, nil
}

// limit sets or clears a type's fleet-wide or per-key concurrency cap and
// rate limit, as qo limit does.
func (a *api) limit(w http.ResponseWriter, r *http.Request) error {
	var b limitBody
	if err := decodeBody(r, &b, limitShapes); err != nil {
		return err
	}
	ch, err := checkLimit(b)
	if err != nil {
		return err
	}
	ctx := r.Context()
	var c queue.Control
	switch {
	case ch.clear:
		c, err = control.ClearLimit(ctx, a.q, ch.typ)
	case ch.cap != 0 && ch.perKey:
		c, err = control.SetKeyLimit(ctx, a.q, ch.typ, ch.cap)
	case ch.cap != 0:
		c, err = control.SetLimit(ctx, a.q, ch.typ, ch.cap)
	}
	if err == nil && ch.starts != 0 && ch.perKey {
		c, err = control.SetKeyRate(ctx, a.q, ch.typ, ch.starts, ch.per, ch.burst)
	} else if err == nil && ch.starts != 0 {
		c, err = control.SetRate(ctx, a.q, ch.typ, ch.starts, ch.per, ch.burst)
	}
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, c)
	return nil
}
