package queue

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Control is the queue-wide switchboard at control.json: whether the whole
// queue or single task types are paused. Workers read it before claiming
// (see doc.go, "Pause"); it is compared-and-swapped, never deleted.
type Control struct {
	Format int `json:"format"`
	// Paused stops claiming of every type.
	Paused bool `json:"paused"`
	// PausedAt and Reason describe the whole-queue pause.
	PausedAt *time.Time `json:"paused_at"`
	Reason   string     `json:"reason"`
	// Types holds the paused task types.
	Types map[string]Pause `json:"paused_types"`
	// Limits holds the fleet-wide limits by task type (see doc.go,
	// "Fleet-wide concurrency caps").
	Limits map[string]Limit `json:"limits,omitempty"`
	// KeyLimits holds the per-key limits by task type (see doc.go, "Task
	// keys"): apart from Limits, so a qo that predates task keys (and
	// never claims a keyed task) reads control.json as before.
	KeyLimits map[string]KeyLimit `json:"key_limits,omitempty"`
	UpdatedAt time.Time           `json:"updated_at"`
	Rev       int64               `json:"rev"`
	// Actor names who made this version (the pause or resume), as the
	// interface knows it (see WithActor); absent when none was given.
	// control.json's versions are the record of who paused and resumed.
	Actor string `json:"actor,omitempty"`
}

// Pause records why and since when a task type is paused.
type Pause struct {
	At     time.Time `json:"at"`
	Reason string    `json:"reason"`
}

// Limit is a fleet-wide limit of one task type: at most Concurrency
// handlers of the type run at once across every worker (0: no cap), and
// at most Rate starts per Per (a second or a minute; Rate 0: no rate
// limit), Burst more in any window (see doc.go, "Fleet-wide rate
// limits").
type Limit struct {
	Concurrency int       `json:"concurrency"`
	Rate        int       `json:"rate,omitempty"`
	Per         string    `json:"per,omitempty"` // "s" or "m"
	Burst       int       `json:"burst,omitempty"`
	SetAt       time.Time `json:"set_at"`
}

// KeyLimit is a per-key limit of one task type: at most Concurrency
// handlers of the type run at once for each task key (0: no cap), and at
// most Rate starts per Per for each key, Burst more in any window (Rate
// 0: none), across every worker (see doc.go, "Task keys"). It has the
// fields of a Limit.
type KeyLimit = Limit

// KeyRateLimit returns the per-key rate limit of typ (false: none).
func (c Control) KeyRateLimit(typ string) (RateLimit, bool) {
	l, ok := c.KeyLimits[typ]
	if !ok || l.Rate <= 0 {
		return RateLimit{}, false
	}
	per := perOf(l.Per)
	b := l.Burst
	if b <= 0 {
		b = DefaultBurst(l.Rate, per)
	}
	return RateLimit{Starts: l.Rate, Per: per, Burst: b}, true
}

// KeyConcurrencyCap returns the per-key cap of typ (false: none).
func (c Control) KeyConcurrencyCap(typ string) (int, bool) {
	l, ok := c.KeyLimits[typ]
	if !ok || l.Concurrency <= 0 {
		return 0, false
	}
	return l.Concurrency, true
}

// MaxRate bounds a fleet-wide rate limit in starts per second.
const MaxRate = 1_000_000

// RateLimit is a fleet-wide rate limit: Starts per Per (time.Second or
// time.Minute), Burst more in any window.
type RateLimit struct {
	Starts int
	Per    time.Duration
	Burst  int
}

// PerMinute returns the rate in starts per minute (the unit the workers
// share it in).
func (r RateLimit) PerMinute() int {
	if r.Per == time.Second {
		return r.Starts * 60
	}
	return r.Starts
}

// String returns the rate as qo limit --rate takes it ("20/s").
func (r RateLimit) String() string {
	if r.Per == time.Second {
		return fmt.Sprintf("%d/s", r.Starts)
	}
	return fmt.Sprintf("%d/m", r.Starts)
}

// DefaultBurst is the burst of a rate limit set without one: a second's
// worth of starts, at least 1.
func DefaultBurst(starts int, per time.Duration) int {
	if per == time.Second {
		return max(1, starts)
	}
	return max(1, (starts+59)/60)
}

// ParseRate parses a rate as qo limit --rate takes it: "20/s" or "600/m".
func ParseRate(s string) (int, time.Duration, error) {
	n, unit, ok := strings.Cut(strings.TrimSpace(s), "/")
	var per time.Duration
	switch unit {
	case "s", "sec", "second":
		per = time.Second
	case "m", "min", "minute":
		per = time.Minute
	}
	v, err := strconv.Atoi(n)
	if !ok || per == 0 || err != nil || v < 1 {
		return 0, 0, invalidInput("rate %q is not a count per second or minute (write it as 20/s or 600/m)", s)
	}
	if v*int(time.Second)/int(per) > MaxRate || (per == time.Minute && v > MaxRate*60) {
		return 0, 0, invalidInput("rate %q is above %d per second", s, MaxRate)
	}
	return v, per, nil
}

func perOf(s string) time.Duration {
	if s == "s" {
		return time.Second
	}
	return time.Minute
}

// RateLimit returns the fleet-wide rate limit of typ (false: none).
func (c Control) RateLimit(typ string) (RateLimit, bool) {
	l, ok := c.Limits[typ]
	if !ok || l.Rate <= 0 {
		return RateLimit{}, false
	}
	per := perOf(l.Per)
	b := l.Burst
	if b <= 0 {
		b = DefaultBurst(l.Rate, per)
	}
	return RateLimit{Starts: l.Rate, Per: per, Burst: b}, true
}

// MaxConcurrencyCap bounds a fleet-wide cap (a larger one is no cap).
const MaxConcurrencyCap = 1_000_000

// ConcurrencyCap returns the fleet-wide cap of typ (false: none).
func (c Control) ConcurrencyCap(typ string) (int, bool) {
	l, ok := c.Limits[typ]
	if !ok || l.Concurrency <= 0 {
		return 0, false
	}
	return l.Concurrency, true
}

// LimitedTypes returns the types with a limit (fleet-wide or per key) in
// name order.
func (c Control) LimitedTypes() []string {
	out := make([]string, 0, len(c.Limits)+len(c.KeyLimits))
	for t := range c.Limits {
		out = append(out, t)
	}
	for t := range c.KeyLimits {
		if _, ok := c.Limits[t]; !ok {
			out = append(out, t)
		}
	}
	slices.Sort(out)
	return out
}

// IsPaused reports whether workers must not claim tasks of type typ.
func (c Control) IsPaused(typ string) bool {
	if c.Paused {
		return true
	}
	_, ok := c.Types[typ]
	return ok
}

// PausedTypes returns the paused types in name order.
func (c Control) PausedTypes() []string {
	out := make([]string, 0, len(c.Types))
	for t := range c.Types {
		out = append(out, t)
	}
	slices.Sort(out)
	return out
}

// DecodeControl parses control.json.
func DecodeControl(body []byte) (Control, error) {
	var c Control
	if err := json.Unmarshal(body, &c); err != nil {
		return Control{}, &MalformedError{Key: ControlKey, Err: err}
	}
	if c.Format != FormatVersion {
		return Control{}, &MalformedError{Key: ControlKey, Err: fmt.Errorf("unknown format version %d (this qo reads format %d)", c.Format, FormatVersion)}
	}
	for t := range c.Types {
		if err := ValidateType(t); err != nil {
			return Control{}, &MalformedError{Key: ControlKey, Err: errors.New(err.Error())}
		}
	}
	for t, l := range c.Limits {
		if err := ValidateType(t); err != nil {
			return Control{}, &MalformedError{Key: ControlKey, Err: errors.New(err.Error())}
		}
		if l.Rate != 0 || l.Per != "" || l.Burst != 0 {
			if l.Rate < 1 || l.Per != "s" && l.Per != "m" || l.Burst < 0 || l.Burst > MaxRate || l.Rate > MaxRate*60 || l.Per == "s" && l.Rate > MaxRate {
				return Control{}, &MalformedError{Key: ControlKey, Err: fmt.Errorf("limit of type %q: rate %d per %q (burst %d) is not a rate of 1 to %d per second", t, l.Rate, l.Per, l.Burst, MaxRate)}
			}
			if l.Concurrency == 0 {
				continue
			}
		}
		if l.Concurrency < 1 || l.Concurrency > MaxConcurrencyCap {
			return Control{}, &MalformedError{Key: ControlKey, Err: fmt.Errorf("limit of type %q: concurrency %d is not between 1 and %d", t, l.Concurrency, MaxConcurrencyCap)}
		}
	}
	for t, l := range c.KeyLimits {
		if err := ValidateType(t); err != nil {
			return Control{}, &MalformedError{Key: ControlKey, Err: errors.New(err.Error())}
		}
		if l.Rate != 0 || l.Per != "" || l.Burst != 0 {
			if l.Rate < 1 || l.Per != "s" && l.Per != "m" || l.Burst < 0 || l.Burst > MaxRate || l.Rate > MaxRate*60 || l.Per == "s" && l.Rate > MaxRate {
				return Control{}, &MalformedError{Key: ControlKey, Err: fmt.Errorf("per-key limit of type %q: rate %d per %q (burst %d) is not a rate of 1 to %d per second", t, l.Rate, l.Per, l.Burst, MaxRate)}
			}
			if l.Concurrency == 0 {
				continue
			}
		}
		if l.Concurrency < 1 || l.Concurrency > MaxConcurrencyCap {
			return Control{}, &MalformedError{Key: ControlKey, Err: fmt.Errorf("per-key limit of type %q: concurrency %d is not between 1 and %d", t, l.Concurrency, MaxConcurrencyCap)}
		}
	}
	return c, nil
}
