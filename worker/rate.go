package worker

import (
	"time"

	"golang.org/x/time/rate"

	"github.com/qo-queue/qo/queue"
)

// Fleet-wide rate limits
//
// A rate limit of R starts per minute on a type (control.json's limits,
// a rate per second is taken as 60 times as many per minute) holds across
// the fleet by the shares of the caps (caps.go): the worker holds a share
// of R under the key "rate:TYPE" of its registry entry, worked out,
// published, lowered and raised exactly as a cap's share, so the usable
// shares of the live workers never sum to more than R. Each worker runs a
// token bucket at its usable share (share/60 starts per second) holding
// at most its part of the burst, share/R of it (at least one), and a
// claim of the type takes a token before it starts (a claim that does not
// start its task, lost to another worker, gives its token back). A
// worker whose poll found a type held back by an empty bucket polls again
// when its next token is due, not a poll wait later: a bucket of one
// token (eight workers sharing a burst of 10) would otherwise sit full
// until the poll, its rate lost meanwhile (87% of the rate over a minute
// in the fleet simulation, 97-98% since). The precision is stated in
// queue/doc.go, "Fleet-wide rate limits". Nothing is written or read per
// task.

// rateKey is the key of typ's rate limit in the holds and caps.limits.
func rateKey(typ string) string { return queue.HoldKey(queue.HoldRate, typ) }

// limitType returns the type of a key of caps.limits.
func limitType(key string) string {
	_, typ := queue.ParseHoldKey(key)
	return typ
}

// rateLimits adds the rate limits of the types the worker serves to
// limits (in starts per minute) and returns their bursts.
func (w *Worker) rateLimits(ctl queue.Control, limits map[string]int) map[string]int {
	bursts := map[string]int{}
	for _, t := range w.types {
		if r, ok := ctl.RateLimit(t); ok {
			limits[rateKey(t)] = r.PerMinute()
			bursts[t] = r.Burst
		}
	}
	return bursts
}

// rateAdmits takes a token of typ's rate limit for a claim, reporting
// false when there is none now (w.mu held). Called after capAdmits, as
// the last check before a claim.
func (w *Worker) rateAdmits(typ string) bool {
	lim, ok := w.rateBucket(typ)
	if !ok {
		return true
	}
	if lim == nil {
		return false
	}
	if w.caps.refunds[typ] > 0 {
		w.caps.refunds[typ]--
		return true
	}
	return lim.AllowN(w.clock.Now(), 1)
}

// unclaimRated gives back the slot of a claim of typ that did not start
// its task, and its token: the next claim of the type uses it (the bucket's
// tokens and the refunds together at most its burst). w.mu held.
func (w *Worker) unclaimRated(typ string) {
	w.unclaim(typ)
	lim, ok := w.rateBucket(typ)
	if !ok || lim == nil {
		return
	}
	if w.caps.refunds == nil {
		w.caps.refunds = map[string]int{}
	}
	// Saved tokens (the bucket's and the refunds) stay within the burst.
	room := lim.Burst() - int(lim.TokensAt(w.clock.Now()))
	w.caps.refunds[typ] = max(0, min(w.caps.refunds[typ]+1, room))
}

// rateReady reports whether a claim of typ would get a token now, without
// taking it (w.mu held).
func (w *Worker) rateReady(typ string) bool {
	lim, ok := w.rateBucket(typ)
	if !ok {
		return true
	}
	return lim != nil && (w.caps.refunds[typ] > 0 || lim.TokensAt(w.clock.Now()) >= 1)
}

// rateBucket returns the token bucket of typ set to the usable share
// (nil: the share is nothing; false: the type has no rate limit). w.mu
// held.
func (w *Worker) rateBucket(typ string) (*rate.Limiter, bool) {
	r, b, limited := w.shareRate(rateKey(typ), typ)
	if !limited || r == 0 {
		return nil, limited
	}
	now := w.clock.Now()
	lim := w.caps.buckets[typ]
	if lim == nil {
		if w.caps.buckets == nil {
			w.caps.buckets = map[string]*rate.Limiter{}
		}
		lim = rate.NewLimiter(r, b)
		w.caps.buckets[typ] = lim
		return lim, true
	}
	retune(lim, now, r, b)
	return lim, true
}

// shareRate is the rate and burst of this worker's usable share of the
// rate limit held under k (its burst under burstKey): r 0 when the share
// is nothing; false when no such limit applies. w.mu held.
func (w *Worker) shareRate(k, burstKey string) (r rate.Limit, b int, limited bool) {
	perMin, ok := w.caps.limits[k]
	if !ok {
		return 0, 0, false
	}
	share := w.caps.usable[k]
	if share <= 0 || perMin <= 0 {
		return 0, 0, true
	}
	return rate.Limit(float64(share) / 60), max(1, w.caps.bursts[burstKey]*share/perMin), true
}

// retune sets a bucket to the rate and burst of a share that changed.
func retune(lim *rate.Limiter, now time.Time, r rate.Limit, b int) {
	if lim.Limit() != r {
		lim.SetLimitAt(now, r)
	}
	if lim.Burst() != b {
		lim.SetBurstAt(now, b)
	}
}

// rateWait returns how long until the next token of a rate-limited type
// whose bucket is empty now (false: no bucket waits on a token). The
// dispatcher polls again then rather than after its poll wait: a bucket
// of one token (a share of a small burst) that filled up between polls
// would idle, its share of the rate lost, until the next poll.
func (w *Worker) rateWait() (time.Duration, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.clock.Now()
	wait, ok := time.Duration(0), false
	for _, t := range w.types {
		lim, rated := w.rateBucket(t)
		if !rated || lim == nil || w.caps.refunds[t] > 0 || lim.Limit() <= 0 {
			continue
		}
		tokens := lim.TokensAt(now)
		if tokens >= 1 {
			continue
		}
		// Rounded up to the millisecond, so the token is there on waking.
		d := time.Duration((1-tokens)/float64(lim.Limit())*float64(time.Second)).Truncate(time.Millisecond) + time.Millisecond
		if !ok || d < wait {
			wait, ok = d, true
		}
	}
	return wait, ok
}

// rateReadyNow is rateReady taking w.mu.
func (w *Worker) rateReadyNow(typ string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.rateReady(typ)
}
