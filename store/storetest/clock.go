package storetest

import (
	"sync"
	"time"
)

// Clock is a settable store.Clock for tests: they move time forward to
// expire a lease or reach a backoff instead of sleeping. Safe for concurrent
// use.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock returns a Clock reading t.
func NewClock(t time.Time) *Clock { return &Clock{t: t} }

// Now implements store.Clock.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// AdvanceTo moves the clock to at if that is later, and never back.
func (c *Clock) AdvanceTo(at time.Time) {
	c.mu.Lock()
	if at.After(c.t) {
		c.t = at
	}
	c.mu.Unlock()
}

// Set moves the clock to t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}
