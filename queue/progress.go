package queue

import (
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
