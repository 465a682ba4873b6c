package httpapi

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/qo-queue/qo/store"
)

// Probes
//
//	GET /healthz  liveness: 200 while the process runs and is not shutting
//	              down; no S3 request.
//	GET /readyz   readiness: 200 when the bucket answered a request at most
//	              S3CheckMaxAge ago (one HeadBucket, reused for that long
//	              whoever asks), 503 when it did not or while shutting down.
//
// GET /health?check=s3 answers from the same check.
//
// None of them needs a token, so none says why the bucket failed: an S3
// error names the endpoint, the bucket and the credentials' identity.
// The error goes to the log (S3Check.SetLogger), once per failed check.

// DefaultS3CheckMaxAge is how long a bucket check is reused.
const DefaultS3CheckMaxAge = 2 * time.Second

// s3CheckTimeout bounds one bucket check.
const s3CheckTimeout = 5 * time.Second

// Readiness is the body of a readiness probe's answer.
type Readiness struct {
	Ready  bool      `json:"ready"`
	Reason string    `json:"reason"`
	Since  time.Time `json:"since,omitzero"`
}

// S3Check asks the bucket whether it answers (HeadBucket when the store
// can, else its clock), reusing an answer for maxAge so that no number of
// probes costs more than one request per maxAge. Safe for concurrent use.
type S3Check struct {
	s      store.Store
	maxAge time.Duration

	log *slog.Logger

	mu           sync.Mutex
	at           time.Time // when the last check ran (local clock); zero: never
	serverTime   time.Time
	err          error
	failingSince time.Time // the first failed check of the current run
}

// NewS3Check returns a check of s's bucket (maxAge <= 0:
// DefaultS3CheckMaxAge).
func NewS3Check(s store.Store, maxAge time.Duration) *S3Check {
	if maxAge <= 0 {
		maxAge = DefaultS3CheckMaxAge
	}
	return &S3Check{s: s, maxAge: maxAge, log: slog.New(slog.DiscardHandler)}
}

// SetLogger makes c log the error of each check that fails (the answers
// of the probes carry no error text). It returns c.
func (c *S3Check) SetLogger(l *slog.Logger) *S3Check {
	if l != nil {
		c.log = l
	}
	return c
}

// Check returns the server's time when the bucket answered within maxAge,
// or the error of the last check and when the failures began.
func (c *S3Check) Check(ctx context.Context) (serverTime time.Time, failingSince time.Time, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.at.IsZero() && time.Since(c.at) < c.maxAge {
		return c.serverTime, c.failingSince, c.err
	}
	ctx, cancel := context.WithTimeout(ctx, s3CheckTimeout)
	defer cancel()
	c.serverTime, c.err = ping(ctx, c.s)
	c.at = time.Now()
	switch {
	case c.err == nil:
		c.failingSince = time.Time{}
	case c.failingSince.IsZero():
		c.failingSince = c.at
	}
	if c.err != nil {
		c.log.Warn("bucket check failed", "err", c.err, "failing_since", c.failingSince)
	}
	return c.serverTime, c.failingSince, c.err
}

// Readiness is the check as a probe's answer.
func (c *S3Check) Readiness(ctx context.Context) Readiness {
	if _, since, err := c.Check(ctx); err != nil {
		return Readiness{Reason: "bucket unreachable (the error is in the log)", Since: since}
	}
	return Readiness{Ready: true, Reason: "bucket reachable"}
}

// ping sends one request to the bucket: HeadBucket when the store has it
// (its clock answers from earlier responses without asking), else the
// store's clock.
func ping(ctx context.Context, s store.Store) (time.Time, error) {
	if p, ok := s.(interface{ Ping(context.Context) error }); ok {
		if err := p.Ping(ctx); err != nil {
			return time.Time{}, fmt.Errorf("check the bucket: %w", err)
		}
	}
	now, err := s.Now(ctx)
	if err != nil {
		return time.Time{}, fmt.Errorf("read the server clock: %w", err)
	}
	return now, nil
}

// WriteReadiness answers a readiness probe: 200 when ready, else 503.
func WriteReadiness(w http.ResponseWriter, r Readiness) {
	status := http.StatusOK
	if !r.Ready {
		status = http.StatusServiceUnavailable
	}
	writeJSON(w, status, r)
}

// WriteLiveness answers a liveness probe: 200, or 503 while shutting down.
func WriteLiveness(w http.ResponseWriter, shuttingDown bool) {
	if shuttingDown {
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"alive": false, "reason": "shutting down"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"alive": true})
}

func (a *api) healthz(w http.ResponseWriter, _ *http.Request) error {
	WriteLiveness(w, a.shuttingDown())
	return nil
}

func (a *api) readyz(w http.ResponseWriter, r *http.Request) error {
	if a.shuttingDown() {
		WriteReadiness(w, Readiness{Reason: "shutting down"})
		return nil
	}
	WriteReadiness(w, a.s3.Readiness(r.Context()))
	return nil
}

func (a *api) shuttingDown() bool {
	return a.opts.ShuttingDown != nil && a.opts.ShuttingDown()
}
