package s3store

import (
	"net/http"
	"sync"
	"time"
)

// The server's clock is the authoritative time of a queue: leases and
// schedules written by workers on different machines must agree. The store
// estimates the offset between the server clock and the local clock from
// the Date header of every response it receives anyway, so reading the time
// costs no request once any request has been made.
//
// A Date header has one-second resolution, and some servers (those built on
// fasthttp, such as the embedded gateway) serve a cached value refreshed
// once a second, so it can be up to a further second old. For one response:
//
//	server time when the response was made: T in [Date, Date+2s)
//	local time at that moment:              t in [sent, received]
//
// so the offset T - t lies in [Date - received, Date + 2s - sent]. The
// estimate is therefore good to about a second against any server, well
// inside the queue's clock-skew bound; it never claims more precision than
// the header carries. Every
// response narrows the interval by intersection. If an intersection is
// empty (the local or server clock jumped), the estimate restarts from the
// newest response. To tolerate slow drift between the clocks (NTP slewing
// is bounded by 500 ppm), the kept interval widens by 500 ppm of the local
// time elapsed since it was last updated.
//
// The midpoint of the interval moves as responses narrow it, by up to the
// width of one sample's interval, and it can move back. Read as it is, the
// time could then go back between two reads in one process: a worker that
// saw a task's available_at pass would have its claim refused a moment
// later as "not available until". The time Now returns therefore never
// goes back by less than maxStepBack (it holds at the last value read
// until the clock catches up); a larger step back is a clock that jumped,
// and is followed.

// driftDivisor sets the relative clock drift tolerated between two
// responses: elapsed/2000 is 500 ppm.
const driftDivisor = 2000

// dateResolution is the resolution of the HTTP Date header.
const dateResolution = time.Second

// dateStaleness is how old a server's cached Date header may be.
const dateStaleness = time.Second

// maxStepBack is the furthest the estimate's midpoint moves back as the
// interval narrows: the width of one sample's interval. Now holds over a
// step back up to this long and follows a longer one.
const maxStepBack = dateResolution + dateStaleness

// clockSample is one response's timing: local times around the request and
// the Date header of the response.
type clockSample struct {
	sent, received time.Time // local wall clock
	date           time.Time // server Date header
}

// offsetEstimate is an interval [lo, hi] holding the server clock minus the
// local clock. The zero value holds no estimate.
type offsetEstimate struct {
	lo, hi time.Duration
	at     time.Time // local time of the last update
	ok     bool
}

// interval returns the offset interval one sample alone allows.
func (s clockSample) interval() (lo, hi time.Duration) {
	return s.date.Sub(s.received), s.date.Add(dateResolution + dateStaleness).Sub(s.sent)
}

// add folds a sample into the estimate and returns the new estimate. A
// sample with received before sent or without a date is ignored.
func (e offsetEstimate) add(s clockSample) offsetEstimate {
	if s.date.IsZero() || s.received.Before(s.sent) {
		return e
	}
	lo, hi := s.interval()
	fresh := offsetEstimate{lo: lo, hi: hi, at: s.received, ok: true}
	if !e.ok {
		return fresh
	}
	// Widen the kept interval by the drift allowed since its last update.
	if elapsed := s.received.Sub(e.at); elapsed > 0 {
		w := elapsed / driftDivisor
		e.lo -= w
		e.hi += w
	}
	if lo > e.lo {
		e.lo = lo
	}
	if hi < e.hi {
		e.hi = hi
	}
	if e.lo > e.hi {
		// Inconsistent with what we knew: a clock jumped. Start over.
		return fresh
	}
	e.at = s.received
	return e
}

// offset returns the midpoint of the interval and its half-width.
func (e offsetEstimate) offset() (offset, uncertainty time.Duration) {
	return e.lo + (e.hi-e.lo)/2, (e.hi - e.lo) / 2
}

// serverClock is the concurrency-safe holder of an offsetEstimate.
type serverClock struct {
	mu   sync.Mutex
	est  offsetEstimate
	last time.Time        // the server time read returned last
	now  func() time.Time // local clock; time.Now outside tests
}

// observe records one response.
func (c *serverClock) observe(sent, received time.Time, h http.Header) {
	d := h.Get("Date")
	if d == "" {
		return
	}
	date, err := http.ParseTime(d)
	if err != nil {
		return
	}
	c.mu.Lock()
	c.est = c.est.add(clockSample{sent: sent, received: received, date: date})
	c.mu.Unlock()
}

// read returns the estimated server time, never less than the time it
// returned before unless the estimate moved back by more than maxStepBack;
// ok is false until a response has been seen.
func (c *serverClock) read() (t time.Time, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.est.ok {
		return time.Time{}, false
	}
	off, _ := c.est.offset()
	t = c.now().Add(off)
	if t.Before(c.last) && c.last.Sub(t) <= maxStepBack {
		return c.last, true
	}
	c.last = t
	return t, true
}

// estimate returns the current offset estimate.
func (c *serverClock) estimate() (offset, uncertainty time.Duration, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.est.ok {
		return 0, 0, false
	}
	offset, uncertainty = c.est.offset()
	return offset, uncertainty, true
}
