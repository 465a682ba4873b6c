package queue

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"
	"unicode"
	"unicode/utf8"
)

// Progress is what a running attempt's handler last reported of its work:
// a fraction done and a short message. It is carried by the holder's
// registry entry (WorkerInfo.Progress), written at the worker's heartbeat
// and never by a report itself, and is not kept in the task object (see
// doc.go, "Progress").
type Progress struct {
	// Attempt is the attempt that reported it (a registry entry read
	// late may still carry an earlier attempt's report).
	Attempt  int     `json:"attempt"`
	Fraction float64 `json:"fraction"`
	Message  string  `json:"message,omitempty"`
	// At is when the handler reported it, by the worker's clock.
	At time.Time `json:"at"`
}

// MaxProgressMessage bounds a progress message, in bytes.
const MaxProgressMessage = 200

// ValidateProgress checks a progress report: a fraction from 0 to 1 and a
// message of at most MaxProgressMessage bytes of UTF-8 text without
// control characters (it is shown on terminals and in the web UI).
func ValidateProgress(fraction float64, msg string) error {
	if math.IsNaN(fraction) || fraction < 0 || fraction > 1 {
		return invalidInput("progress fraction %v is not between 0 and 1 (report e.g. 0.42 for 42%%)", fraction)
	}
	if len(msg) > MaxProgressMessage {
		return invalidInput("progress message is %d bytes, more than %d: shorten it", len(msg), MaxProgressMessage)
	}
	if !utf8.ValidString(msg) {
		return invalidInput("progress message is not valid UTF-8")
	}
	for _, r := range msg {
		if unicode.IsControl(r) {
			return invalidInput("progress message contains the control character %U: report one line of plain text", r)
		}
	}
	return nil
}

// TaskProgress returns the latest progress of a running task: one GET of
// the registry entry of the worker its lease names, whatever else the
// bucket holds. nil when the task is not running, its holder has reported
// nothing for this attempt or has no (well-formed) entry; a malformed
// entry or report is logged and skipped.
func (q *Queue) TaskProgress(ctx context.Context, t *Task) (*Progress, error) {
	if t == nil || t.Status != StatusRunning || t.WorkerID == "" {
		return nil, nil
	}
	w, err := q.GetWorker(ctx, t.WorkerID)
	var m *MalformedError
	switch {
	case errors.Is(err, ErrNotFound):
		return nil, nil
	case errors.As(err, &m):
		q.log.Warn("skipping malformed worker entry", "key", m.Key, "err", m.Err)
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("progress of task %s: %w", t.ID, err)
	}
	p, ok := w.Progress[t.ID.String()]
	if !ok || p.Attempt != t.Attempt {
		return nil, nil
	}
	if err := ValidateProgress(p.Fraction, p.Message); err != nil {
		q.log.Warn("skipping malformed progress in worker entry", "key", WorkerKey(w.ID), "task_id", t.ID, "err", err)
		return nil, nil
	}
	return &p, nil
}

// WithProgress returns t with its Progress set from its holder's registry
// entry when it is running (see TaskProgress); t itself is not changed.
func (q *Queue) WithProgress(ctx context.Context, t *Task) (*Task, error) {
	p, err := q.TaskProgress(ctx, t)
	if err != nil || p == nil {
		return t, err
	}
	c := *t
	c.Progress = p
	return &c, nil
}
