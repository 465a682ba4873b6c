// Package httpapi is qo's HTTP API: the queue's reads and operator actions
// as JSON over HTTP, with the same shapes as the CLI's --json output
// (package view), plus /health, /metrics and the OpenAPI document.
//
// Every route is listed in openapi.json (served at /api/openapi.json); a
// test keeps the two in step. Errors are {"error": {"code", "message"}}
// with the HTTP status of the condition (see errorStatus).
package httpapi

import (
	"bytes"
	"context"
	"crypto/subtle"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"golang.org/x/sync/singleflight"

	"github.com/qo-queue/qo/inspect"
	"github.com/qo-queue/qo/internal/termsafe"
	"github.com/qo-queue/qo/metrics"
	"github.com/qo-queue/qo/monitor"
	"github.com/qo-queue/qo/monitor/view"
	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/queue/registry"
	"github.com/qo-queue/qo/store"
)

//go:embed openapi.json
var openAPI []byte

// DefaultMaxBody is the default request body limit (a task input of up to
// about 1 MiB).
const DefaultMaxBody = 1 << 20

// Options configures the API.
type Options struct {
	// Token, when set, is required as "Authorization: Bearer TOKEN" on
	// every route but /health. The command refuses to listen on a
	// non-loopback address without one.
	Token string
	// MaxBody bounds request bodies (default DefaultMaxBody).
	MaxBody int64
	// UI, when set, is served at / (the static web UI).
	UI http.Handler
	// Metrics, when set, is served at /metrics and counts submits; New
	// adds the queue's backlog gauges to it (Metrics.WatchBacklog), read
	// from the stats cache of GET /api/stats. One Metrics serves one API.
	Metrics *metrics.Metrics
	// AllowOrigin, when set, is sent as Access-Control-Allow-Origin on
	// /api/ responses (a web page served from another origin).
	AllowOrigin string
	// RequestTimeout bounds the S3 work of one request (default 30s).
	RequestTimeout time.Duration
	// AllowedHosts, when set, are the only host names a request's Host
	// header may carry (the port is not compared): a page whose DNS name
	// was rebound to this server's address is refused (421). The command
	// sets localhost, 127.0.0.1 and ::1 when it listens on loopback.
	AllowedHosts []string
	// StatsMaxAge is how long a stats answer is reused before a request
	// refreshes it (default DefaultStatsMaxAge); concurrent requests share
	// one refresh, so no number of requests costs more than one refresh
	// per StatsMaxAge. GET /api/stats and the backlog gauges of /metrics
	// share the answer.
	StatsMaxAge time.Duration
	// S3CheckMaxAge is how long a bucket check of /readyz and
	// /health?check=s3 is reused (default DefaultS3CheckMaxAge).
	S3CheckMaxAge time.Duration
	// LoginCodes, when set with a Token, are the one-time codes a browser
	// exchanges (POST /api/session) for a session cookie the API takes in
	// place of the token; POST /api/login-codes makes one.
	LoginCodes *LoginCodes[struct{}]
	// ShuttingDown, when set, turns /healthz and /readyz to 503 once it
	// reports true.
	ShuttingDown func() bool
	// Logger receives what the public probes do not say, such as why
	// the bucket check failed (default: discarded).
	Logger *slog.Logger
	// ReadOnly refuses every request that would change the queue (403,
	// code "read_only"), whoever sends it: for a production dashboard.
	ReadOnly bool
}

// DefaultStatsMaxAge is the default Options.StatsMaxAge.
const DefaultStatsMaxAge = 2 * time.Second

type api struct {
	q     *queue.Queue
	opts  Options
	model *inspect.Model // the read model: stats, worker health
	s3    *S3Check

	sessions sessions

	statsOnce singleflight.Group
	statsMu   sync.Mutex
	statsView *view.Stats // the last answer
	statsAt   time.Time   // when it was computed (queue clock)
}

// New returns the API's handler over q.
func New(q *queue.Queue, opts Options) http.Handler {
	if opts.MaxBody <= 0 {
		opts.MaxBody = DefaultMaxBody
	}
	if opts.RequestTimeout <= 0 {
		opts.RequestTimeout = 30 * time.Second
	}
	if opts.StatsMaxAge <= 0 {
		opts.StatsMaxAge = DefaultStatsMaxAge
	}
	a := &api{q: q, opts: opts, model: inspect.New(q, inspect.Options{}), s3: NewS3Check(q.Store(), opts.S3CheckMaxAge).SetLogger(opts.Logger)}
	a.sessions = sessions{ttl: DefaultSessionTTL, now: time.Now, byID: map[string]time.Time{}}
	if opts.LoginCodes != nil {
		a.sessions.now = opts.LoginCodes.now
	}
	if opts.Metrics != nil {
		opts.Metrics.WatchBacklog(a.backlog, min(opts.RequestTimeout, metrics.DefaultBacklogTimeout))
	}
	mux := http.NewServeMux()
	for _, r := range a.routes() {
		mux.Handle(r.pattern, a.wrap(r))
	}
	unknown := func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "not_found", fmt.Sprintf("no API route %s %s (the routes are listed at /api/openapi.json)", r.Method, r.URL.Path))
	}
	for _, m := range []string{"GET", "POST", "DELETE", "PUT", "PATCH"} {
		mux.HandleFunc(m+" /api/", unknown)
	}
	return mux
}

// route is one endpoint.
type route struct {
	pattern string // ServeMux pattern: "METHOD /path"
	public  bool   // no token needed
	handler func(w http.ResponseWriter, r *http.Request) error
}

// sessionRoutes log a browser in (a login code for a session); they
// change nothing in the queue, so a read-only server answers them too.
var sessionRoutes = []string{"POST /api/session", "POST /api/login-codes"}

// changesQueue reports whether a route's requests may change the queue:
// every method but GET, HEAD and OPTIONS, the session routes aside.
func changesQueue(pattern string) bool {
	method, _, _ := strings.Cut(pattern, " ")
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	}
	return !slices.Contains(sessionRoutes, pattern)
}

func (a *api) routes() []route {
	rs := []route{
		{"GET /health", true, a.health},
		{"GET /healthz", true, a.healthz},
		{"GET /readyz", true, a.readyz},
		{"POST /api/session", true, a.openSession},
		{"POST /api/login-codes", false, a.newLoginCode},
		{"GET /api/openapi.json", false, a.openapi},
		{"GET /api/stats", false, a.getStats},
		{"GET /api/workers", false, a.getWorkers},
		{"GET /api/tasks", false, a.listTasks},
		{"POST /api/tasks", false, a.submit},
		{"GET /api/tasks/{id}", false, a.getTask},
		{"GET /api/tasks/{id}/history", false, a.history},
		{"POST /api/tasks/{id}/cancel", false, a.cancel},
		{"POST /api/tasks/{id}/replay", false, a.taskAction("replay")},
		{"POST /api/tasks/{id}/archive", false, a.taskAction("archive")},
		{"POST /api/tasks/bulk", false, a.bulk},
		{"GET /api/workflows", false, a.listWorkflows},
		{"POST /api/workflows", false, a.submitWorkflow},
		{"GET /api/workflows/{ref}", false, a.getWorkflow},
		{"POST /api/workflows/{ref}/cancel", false, a.cancelWorkflow},
		{"GET /api/search", false, a.search},
		{"GET /api/dead", false, a.listDead},
		{"POST /api/dead/{id}/retry", false, a.retryDead},
		{"DELETE /api/dead/{id}", false, a.archiveDead},
		{"GET /api/control", false, a.getControl},
		{"POST /api/pause", false, a.pause},
		{"POST /api/resume", false, a.resume},
		{"POST /api/limit", false, a.limit},
		{"GET /api/schedules", false, a.listSchedules},
		{"POST /api/schedules", false, a.createSchedule},
		{"GET /api/schedules/{name}", false, a.getSchedule},
		{"DELETE /api/schedules/{name}", false, a.deleteSchedule},
		{"POST /api/schedules/{name}/enable", false, a.enableSchedule(true)},
		{"POST /api/schedules/{name}/disable", false, a.enableSchedule(false)},
		{"POST /api/schedules/{name}/trigger", false, a.triggerSchedule},
		{"GET /", true, a.index},
	}
	if a.opts.Metrics != nil {
		rs = append(rs, route{"GET /metrics", false, func(w http.ResponseWriter, r *http.Request) error {
			a.opts.Metrics.Handler().ServeHTTP(w, r)
			return nil
		}})
	}
	if a.opts.AllowOrigin != "" {
		rs = append(rs, route{"OPTIONS /api/", true, func(w http.ResponseWriter, r *http.Request) error {
			w.Header().Set("Access-Control-Allow-Methods", "GET, POST, DELETE, OPTIONS")
			w.Header().Set("Access-Control-Allow-Headers", "Authorization, Content-Type")
			w.Header().Set("Access-Control-Max-Age", "600")
			w.WriteHeader(http.StatusNoContent)
			return nil
		}})
	}
	return rs
}

// wrap adds the Host and cross-site checks, authentication, CORS, the body
// limit, the timeout and error rendering to a route.
func (a *api) wrap(rt route) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if a.opts.AllowOrigin != "" && strings.HasPrefix(r.URL.Path, "/api/") {
			w.Header().Set("Access-Control-Allow-Origin", a.opts.AllowOrigin)
			w.Header().Set("Access-Control-Expose-Headers", "X-Qo-Read-Only")
			w.Header().Set("Vary", "Origin")
		}
		if !a.hostAllowed(r.Host) {
			writeError(w, http.StatusMisdirectedRequest, "host_not_allowed",
				fmt.Sprintf("Host %q is not one this server answers to (%s): a page whose name points at this address may not use the API; add the name with --allowed-host if it is yours", r.Host, strings.Join(a.opts.AllowedHosts, ", ")))
			return
		}
		if status, code, msg := a.crossSite(r); status != 0 {
			writeError(w, status, code, msg)
			return
		}
		if a.opts.ReadOnly {
			w.Header().Set("X-Qo-Read-Only", "true") // the web UI offers no write
		}
		if a.opts.ReadOnly && changesQueue(rt.pattern) {
			writeError(w, http.StatusForbidden, "read_only", "this server is read-only (qo serve --readonly): it changes nothing in the queue; use a server without --readonly, or the CLI")
			return
		}
		if !rt.public && a.opts.Token != "" && !a.authorized(r) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="qo"`)
			writeError(w, http.StatusUnauthorized, "unauthorized", "missing or invalid token: send the header 'Authorization: Bearer TOKEN' with the server's QO_API_TOKEN (or open a link with a login code)")
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, a.opts.MaxBody)
		ctx, cancel := context.WithTimeout(queue.WithActor(r.Context(), a.actor(r)), a.opts.RequestTimeout)
		defer cancel()
		if err := rt.handler(w, r.WithContext(ctx)); err != nil {
			status, code := errorStatus(err)
			writeError(w, status, code, err.Error())
		}
	})
}

// hostAllowed reports whether a request's Host header names this server.
func (a *api) hostAllowed(host string) bool {
	if len(a.opts.AllowedHosts) == 0 {
		return true
	}
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	for _, ok := range a.opts.AllowedHosts {
		if strings.EqualFold(host, strings.TrimSuffix(strings.TrimPrefix(ok, "["), "]")) {
			return true
		}
	}
	return false
}

// crossSite refuses state-changing requests a web page on another site
// could make a browser send (a form, or fetch with mode "no-cors"): a
// browser marks them with Sec-Fetch-Site and Origin, which a page cannot
// forge. A POST body must be JSON, a type no cross-site page can send
// without a CORS preflight. Requests without those headers (curl, scripts)
// pass. It returns status 0 when the request may go on.
func (a *api) crossSite(r *http.Request) (status int, code, msg string) {
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return 0, "", ""
	}
	origin := r.Header.Get("Origin")
	sameOrigin := origin == "" || originHost(origin) == r.Host // "null" (an opaque origin) is another site
	allowed := a.opts.AllowOrigin != "" && (a.opts.AllowOrigin == "*" || origin == a.opts.AllowOrigin)
	switch site := r.Header.Get("Sec-Fetch-Site"); {
	case allowed:
	case site == "cross-site" || site == "same-site" || !sameOrigin:
		return http.StatusForbidden, "cross_site", fmt.Sprintf("refusing a %s from another site (Origin %q): only this server's own page, scripts and --allow-origin may change the queue", r.Method, origin)
	}
	if r.Method == http.MethodPost && r.ContentLength != 0 {
		mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
		if err != nil || mt != "application/json" {
			return http.StatusUnsupportedMediaType, "unsupported_media_type", fmt.Sprintf("the request body must be JSON: send the header 'Content-Type: application/json' (got %q)", r.Header.Get("Content-Type"))
		}
	}
	return 0, "", ""
}

// originHost is the host[:port] of an Origin header ("" when unparsable).
func originHost(origin string) string {
	u, err := url.Parse(origin)
	if err != nil {
		return ""
	}
	return u.Host
}

// authorized reports whether r carries the token, or the cookie of a
// session a login code opened.
func (a *api) authorized(r *http.Request) bool {
	if got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		return subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), []byte(a.opts.Token)) == 1
	}
	return a.sessionFromCookie(r)
}

// actor is who the queue records for the operator actions of request r
// (queue.WithActor): this server and what it knows of the caller, e.g.
// "qo serve on ops-1, token from 10.0.0.5" ("session" for a browser's
// login cookie, "no token" on a server that asks for none). The address
// is the connection's peer: behind a proxy, the proxy's. A caller's own
// claims (headers) are not recorded; they prove nothing.
func (a *api) actor(r *http.Request) string {
	how := "no token"
	if a.opts.Token != "" {
		how = "session"
		if strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ") {
			how = "token"
		}
	}
	peer := r.RemoteAddr
	if h, _, err := net.SplitHostPort(peer); err == nil {
		peer = h
	}
	if peer == "" {
		peer = "unknown"
	}
	return "qo serve on " + serverHost() + ", " + how + " from " + peer
}

// serverHost is this machine's host name ("unknown" when the system does
// not tell).
var serverHost = sync.OnceValue(func() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		return "unknown"
	}
	return h
})

// errorStatus maps an error to its HTTP status and a stable code.
func errorStatus(err error) (int, string) {
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return http.StatusRequestEntityTooLarge, "body_too_large"
	case errors.Is(err, queue.ErrInvalidInput):
		return http.StatusBadRequest, "invalid_input"
	case errors.Is(err, queue.ErrAmbiguousID):
		return http.StatusBadRequest, "ambiguous_id"
	case errors.Is(err, queue.ErrSubmitRefused):
		return http.StatusUnprocessableEntity, "submit_refused"
	case errors.Is(err, queue.ErrNotFound), errors.Is(err, store.ErrNotFound):
		return http.StatusNotFound, "not_found"
	case errors.Is(err, queue.ErrInvalidTransition):
		return http.StatusConflict, "invalid_transition"
	case errors.Is(err, queue.ErrIdempotencyMismatch):
		return http.StatusConflict, "idempotency_mismatch"
	case errors.Is(err, queue.ErrConflict):
		return http.StatusConflict, "conflict"
	case errors.Is(err, store.ErrPreconditionFailed):
		return http.StatusPreconditionFailed, "precondition_failed"
	case errors.Is(err, store.ErrUnreachable), errors.Is(err, store.ErrAccessDenied),
		errors.Is(err, store.ErrBucketNotFound), errors.Is(err, context.DeadlineExceeded):
		return http.StatusServiceUnavailable, "storage_unavailable"
	}
	return http.StatusInternalServerError, "internal"
}

// Error is the body of every error response.
type Error struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	var e Error
	e.Error.Code, e.Error.Message = code, msg
	writeJSON(w, status, e)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(termsafe.JSONWriter(w)) // readable on a terminal (curl)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// badInput is an ErrInvalidInput with a message.
func badInput(format string, args ...any) error {
	return fmt.Errorf("%w: %s", queue.ErrInvalidInput, fmt.Sprintf(format, args...))
}

// decodeBody decodes an optional JSON object body into v, refusing unknown
// fields; want describes the expected shape for the error message.
func decodeBody(r *http.Request, v any, want string) error {
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return badInput("body: want %s: %v", want, err)
	}
	return nil
}

// pathID is the task named by the path's {id}: the whole id, or the short
// id lists show (its end, e.g. 264545bf) or its first digits, resolved at
// a bounded cost (queue.ResolveID).
func (a *api) pathID(r *http.Request) (uuid.UUID, error) {
	s := r.PathValue("id")
	if id, err := queue.ParseID(s); err == nil {
		return id, nil
	}
	id, err := a.q.ResolveID(r.Context(), s)
	if errors.Is(err, queue.ErrInvalidInput) {
		return uuid.Nil, badInput("task id %q: want the whole id, or the short id lists show (e.g. 264545bf)", s)
	}
	return id, err
}

// --- handlers -----------------------------------------------------------------

// health answers 200 while the process runs; ?check=s3 also checks that
// the bucket answers (503 when it does not; see S3Check).
func (a *api) health(w http.ResponseWriter, r *http.Request) error {
	out := map[string]any{"status": "ok"}
	if r.URL.Query().Get("check") == "s3" {
		now, _, err := a.s3.Check(r.Context())
		if err != nil {
			// Only a status: the route needs no token (the error is logged).
			writeJSON(w, http.StatusServiceUnavailable, map[string]any{"status": "unavailable", "s3": "unavailable"})
			return nil
		}
		out["s3"], out["time"] = "ok", now
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (a *api) openapi(w http.ResponseWriter, _ *http.Request) error {
	w.Header().Set("Content-Type", "application/json")
	_, err := w.Write(openAPI)
	return err
}

func (a *api) index(w http.ResponseWriter, r *http.Request) error {
	if a.opts.UI != nil {
		a.opts.UI.ServeHTTP(w, r)
		return nil
	}
	if r.URL.Path != "/" {
		return fmt.Errorf("%w: %s (the API is under /api/; see /api/openapi.json)", queue.ErrNotFound, r.URL.Path)
	}
	writeJSON(w, http.StatusOK, map[string]string{"service": "qo", "api": "/api/", "openapi": "/api/openapi.json", "health": "/health"})
	return nil
}

// getStats answers from the stats cache (see cachedStats).
func (a *api) getStats(w http.ResponseWriter, r *http.Request) error {
	v, err := a.cachedStats(r.Context())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}

// cachedStats returns the last stats while they are younger than
// StatsMaxAge; otherwise one refresh runs for every caller waiting on it.
// GET /api/stats and the backlog gauges of /metrics both read here, so
// together they cost at most one refresh per StatsMaxAge. A caller whose
// ctx ends first gets its error; the refresh goes on and fills the cache
// for the next caller.
func (a *api) cachedStats(ctx context.Context) (*view.Stats, error) {
	a.statsMu.Lock()
	v, at := a.statsView, a.statsAt
	a.statsMu.Unlock()
	if v != nil && a.q.Now().Sub(at) < a.opts.StatsMaxAge {
		return v, nil
	}
	done := a.statsOnce.DoChan("stats", func() (any, error) {
		// Not the caller's context: the refresh serves every waiter.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), a.opts.RequestTimeout)
		defer cancel()
		v, err := a.model.Stats(ctx)
		if err != nil {
			return nil, fmt.Errorf("refresh the queue stats: %w", err)
		}
		a.statsMu.Lock()
		a.statsView, a.statsAt = &v, a.q.Now()
		a.statsMu.Unlock()
		return &v, nil
	})
	select {
	case res := <-done:
		if res.Err != nil {
			return nil, res.Err
		}
		return res.Val.(*view.Stats), nil
	case <-ctx.Done():
		return nil, fmt.Errorf("wait for the queue stats: %w", context.Cause(ctx))
	}
}

// backlog reads the stats cache for the backlog gauges of /metrics.
func (a *api) backlog(ctx context.Context) (metrics.Backlog, error) {
	v, err := a.cachedStats(ctx)
	if err != nil {
		return metrics.Backlog{}, err
	}
	return backlogOf(v), nil
}

// backlogOf converts stats to the gauges' plain types. Only the counted
// statuses are carried, per type too, where a counted status without tasks
// is 0: a type's series then stay the same from one scrape to the next.
func backlogOf(v *view.Stats) metrics.Backlog {
	b := metrics.Backlog{
		Tasks:            map[string]int{},
		TypeTasks:        map[string]map[string]int{},
		Delayed:          v.Delayed,
		OldestPendingAge: time.Duration(v.OldestPendingSeconds * float64(time.Second)),
		Workers:          map[string]int{},
		Partial:          v.Partial,
	}
	for _, s := range v.Counted {
		b.Tasks[string(s)] = v.ByStatus[s]
	}
	for typ, byStatus := range v.ByType {
		b.TypeTasks[typ] = map[string]int{}
		for _, s := range v.Counted {
			b.TypeTasks[typ][string(s)] = byStatus[s]
		}
	}
	for state, n := range v.Workers {
		b.Workers[string(state)] = n
	}
	return b
}

func (a *api) health0(ctx context.Context, now time.Time) ([]monitor.WorkerHealth, error) {
	ws, _, err := registry.ListReport(ctx, a.q)
	if err != nil {
		return nil, err
	}
	return monitor.Health(ws, now), nil
}

func (a *api) getWorkers(w http.ResponseWriter, r *http.Request) error {
	now := a.q.Now()
	health, err := a.health0(r.Context(), now)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, view.WorkersOf(health, now))
	return nil
}

// listQuery reads ?status=&type=&shard=&since=&cursor=&limit=.
func (a *api) listQuery(r *http.Request) (queue.ListQuery, error) {
	v := r.URL.Query()
	qry := queue.ListQuery{Type: v.Get("type"), Shard: v.Get("shard"), Cursor: v.Get("cursor")}
	if s := v.Get("status"); s != "" {
		st, err := queue.ParseStatus(s)
		if err != nil {
			return qry, err
		}
		qry.Status = st
	}
	if qry.Type != "" {
		if err := queue.ValidateType(qry.Type); err != nil {
			return qry, err
		}
	}
	if qry.Shard != "" && !a.q.ValidShard(qry.Shard) {
		return qry, badInput("shard %q is not a shard of this queue", qry.Shard)
	}
	if s := v.Get("since"); s != "" {
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			return qry, badInput("since %q: want an RFC 3339 time such as 2026-01-02T15:04:05Z", s)
		}
		qry.Since = t
	}
	if s := v.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > queue.MaxListLimit {
			return qry, badInput("limit %q: want a number from 1 to %d", s, queue.MaxListLimit)
		}
		qry.Limit = n
	}
	for k := range v {
		switch k {
		case "status", "type", "shard", "since", "cursor", "limit":
		default:
			return qry, badInput("unknown query parameter %q (known: status, type, shard, since, cursor, limit)", k)
		}
	}
	return qry, nil
}

func (a *api) listTasks(w http.ResponseWriter, r *http.Request) error {
	qry, err := a.listQuery(r)
	if err != nil {
		return err
	}
	page, err := a.q.List(r.Context(), qry)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, view.PageOf(page))
	return nil
}

func (a *api) listDead(w http.ResponseWriter, r *http.Request) error {
	qry, err := a.listQuery(r)
	if err != nil {
		return err
	}
	if qry.Status != "" && qry.Status != queue.StatusFailed {
		return badInput("/api/dead lists failed tasks only; use /api/tasks?status=%s", qry.Status)
	}
	qry.Status = queue.StatusFailed
	page, err := a.q.List(r.Context(), qry)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, view.PageOf(page))
	return nil
}

func (a *api) submit(w http.ResponseWriter, r *http.Request) error {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return err
	}
	doc, err := queue.DecodeSubmit(body, queue.DefaultSubmitDefaults)
	if err != nil {
		return err
	}
	t, created, err := a.q.Submit(r.Context(), a.resolveSubmit(doc))
	if err != nil {
		return err
	}
	status := http.StatusOK // a duplicate of an idempotency key: the first task
	if created {
		status = http.StatusCreated
		if a.opts.Metrics != nil {
			a.opts.Metrics.Submitted(t.Type)
		}
	}
	w.Header().Set("Location", "/api/tasks/"+t.ID.String())
	writeJSON(w, status, t)
	return nil
}

// resolveSubmit turns a decoded submit document into a request at the
// queue's current time.
func (a *api) resolveSubmit(doc queue.SubmitDoc) queue.SubmitRequest {
	return doc.Resolve(a.q.Now())
}

func (a *api) getTask(w http.ResponseWriter, r *http.Request) error {
	id, err := a.pathID(r)
	if err != nil {
		return err
	}
	t, err := a.q.Get(r.Context(), id)
	if err != nil {
		return err
	}
	// A running task's progress: one GET of its holder's registry entry.
	// Without it (the entry unreadable) the task is shown all the same.
	if withProg, err := registry.WithProgress(r.Context(), a.q, t); err == nil {
		t = withProg
	}
	writeJSON(w, http.StatusOK, a.withPayloads(r, t))
	return nil
}

// fullTask is a task with offloaded payloads loaded; a payload that cannot
// be loaded is reported in payload_error instead of failing the request.
type fullTask struct {
	*queue.Task
	PayloadError string `json:"payload_error,omitempty"`
}

func (a *api) withPayloads(r *http.Request, t *queue.Task) fullTask {
	full, err := a.q.WithPayloads(r.Context(), t)
	if err != nil {
		return fullTask{Task: t, PayloadError: fmt.Sprintf("offloaded payload not loaded: %v", err)}
	}
	return fullTask{Task: full}
}

func (a *api) history(w http.ResponseWriter, r *http.Request) error {
	id, err := a.pathID(r)
	if err != nil {
		return err
	}
	events, err := a.q.History(r.Context(), id)
	if err != nil {
		return err
	}
	if len(events) == 0 {
		return fmt.Errorf("task %s: %w", id, queue.ErrNotFound)
	}
	writeJSON(w, http.StatusOK, view.HistoryOf(id, events))
	return nil
}

func (a *api) cancel(w http.ResponseWriter, r *http.Request) error {
	id, err := a.pathID(r)
	if err != nil {
		return err
	}
	reason, err := cancelReason(r)
	if err != nil {
		return err
	}
	t, err := a.q.Cancel(r.Context(), id, reason)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, t)
	return nil
}

// cancelReason reads a cancel's optional body, {"reason": "..."}.
func cancelReason(r *http.Request) (string, error) {
	var body struct {
		Reason string `json:"reason"`
	}
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		return "", err
	}
	if len(strings.TrimSpace(string(raw))) > 0 {
		dec := json.NewDecoder(strings.NewReader(string(raw)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&body); err != nil {
			return "", badInput("cancel body: want {\"reason\": \"...\"} or nothing: %v", err)
		}
	}
	if body.Reason == "" {
		body.Reason = "cancelled through the HTTP API"
	}
	return body.Reason, nil
}

// taskAction replays or archives any task whose state allows it (the dead
// letter routes do the same for failed tasks only).
func (a *api) taskAction(op string) func(w http.ResponseWriter, r *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		id, err := a.pathID(r)
		if err != nil {
			return err
		}
		var t *queue.Task
		if op == "replay" {
			t, err = a.q.Replay(r.Context(), id)
		} else {
			t, err = a.q.Archive(r.Context(), id)
		}
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, t)
		return nil
	}
}

// deadTask reads a task that must be failed.
func (a *api) deadTask(r *http.Request) (uuid.UUID, error) {
	id, err := a.pathID(r)
	if err != nil {
		return id, err
	}
	t, err := a.q.Get(r.Context(), id)
	if err != nil {
		return id, err
	}
	if t.Status != queue.StatusFailed {
		return id, fmt.Errorf("%w: task %s is %s, not failed (dead-letter actions apply to failed tasks; see /api/tasks/%s)", queue.ErrInvalidTransition, id, t.Status, id)
	}
	return id, nil
}

func (a *api) retryDead(w http.ResponseWriter, r *http.Request) error {
	id, err := a.deadTask(r)
	if err != nil {
		return err
	}
	t, err := a.q.Replay(r.Context(), id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, t)
	return nil
}

// archiveDead archives a failed task: DELETE hides it from the dead
// letters; nothing is deleted from the bucket.
func (a *api) archiveDead(w http.ResponseWriter, r *http.Request) error {
	id, err := a.deadTask(r)
	if err != nil {
		return err
	}
	t, err := a.q.Archive(r.Context(), id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, t)
	return nil
}

// ErrorCode is the HTTP status and the stable code ("not_found",
// "invalid_input", "storage_unavailable", ...; "internal" when nothing
// more is known) the API answers err with. The command line's --json
// errors use the same codes.
func ErrorCode(err error) (status int, code string) { return errorStatus(err) }
