package httpapi

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/qo-queue/qo/queue"
)

// One-time login codes keep long-lived secrets out of printed links, and
// so out of browser history: a link carries a code that the page served
// by qo exchanges once, with a POST, for what it needs (a session cookie
// for the API; short-lived credentials for qo ui serve's page). A code
// seen in history, a terminal's scrollback or a log afterwards is worth
// nothing: it was used, or it expired.

// ErrCodeInvalid is the answer to a code that is unknown, used or
// expired: the three are not told apart.
var ErrCodeInvalid = errors.New("the link's one-time code is used, expired or unknown")

// DefaultCodeTTL is how long a login code may wait for its exchange.
const DefaultCodeTTL = 10 * time.Minute

// maxCodes bounds the codes waiting for their exchange.
const maxCodes = 64

// LoginCodes hands out one-time codes, each redeemable once for its value
// within its lifetime. Safe for concurrent use.
type LoginCodes[T any] struct {
	ttl time.Duration
	now func() time.Time

	mu    sync.Mutex
	codes map[string]loginCode[T]
}

type loginCode[T any] struct {
	value   T
	expires time.Time
}

// NewLoginCodes returns codes that last ttl (DefaultCodeTTL when 0) by
// the clock now (time.Now when nil).
func NewLoginCodes[T any](ttl time.Duration, now func() time.Time) *LoginCodes[T] {
	if ttl <= 0 {
		ttl = DefaultCodeTTL
	}
	if now == nil {
		now = time.Now
	}
	return &LoginCodes[T]{ttl: ttl, now: now, codes: map[string]loginCode[T]{}}
}

// New returns a fresh code (256 random bits) for value and when it
// expires.
func (c *LoginCodes[T]) New(value T) (code string, expires time.Time, err error) {
	code, err = randomString()
	if err != nil {
		return "", time.Time{}, fmt.Errorf("make a login code: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	for k, v := range c.codes {
		if !now.Before(v.expires) {
			delete(c.codes, k)
		}
	}
	if len(c.codes) >= maxCodes {
		return "", time.Time{}, fmt.Errorf("make a login code: %d codes wait for their exchange: use one, or wait %s for them to expire", len(c.codes), c.ttl)
	}
	expires = now.Add(c.ttl)
	c.codes[code] = loginCode[T]{value: value, expires: expires}
	return code, expires, nil
}

// Redeem returns code's value and forgets the code: a second exchange
// fails with ErrCodeInvalid, as an expired or unknown code does.
func (c *LoginCodes[T]) Redeem(code string) (T, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.codes[code]
	delete(c.codes, code)
	if !ok || !c.now().Before(v.expires) {
		var zero T
		return zero, ErrCodeInvalid
	}
	return v.value, nil
}

// randomString is 256 random bits, base64url without padding.
func randomString() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// ReadCode reads the body of a code exchange: {"code": "..."}.
func ReadCode(r *http.Request) (string, error) {
	var body struct {
		Code string `json:"code"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 4096)).Decode(&body); err != nil || body.Code == "" {
		return "", fmt.Errorf(`%w: want the body {"code": "..."}`, errBadCode)
	}
	return body.Code, nil
}

var errBadCode = errors.New("bad code exchange")

// SessionCookie is the name of the API's session cookie.
const SessionCookie = "qo_session"

// DefaultSessionTTL is how long a browser session of the API lasts.
const DefaultSessionTTL = 12 * time.Hour

// maxSessions bounds the sessions kept; the oldest goes first.
const maxSessions = 1024

// sessions are the API's browser sessions, opened by a login code.
type sessions struct {
	ttl time.Duration
	now func() time.Time

	mu   sync.Mutex
	byID map[string]time.Time // expiry
}

func (s *sessions) open() (string, time.Time, error) {
	id, err := randomString()
	if err != nil {
		return "", time.Time{}, fmt.Errorf("open a session: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	oldest, oldestAt := "", time.Time{}
	for k, exp := range s.byID {
		if !now.Before(exp) {
			delete(s.byID, k)
		} else if oldest == "" || exp.Before(oldestAt) {
			oldest, oldestAt = k, exp
		}
	}
	if len(s.byID) >= maxSessions {
		delete(s.byID, oldest)
	}
	exp := now.Add(s.ttl)
	s.byID[id] = exp
	return id, exp, nil
}

func (s *sessions) valid(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	exp, ok := s.byID[id]
	return ok && s.now().Before(exp)
}

// sessionFromCookie reports whether r carries a live session cookie.
func (a *api) sessionFromCookie(r *http.Request) bool {
	if a.opts.LoginCodes == nil {
		return false
	}
	c, err := r.Cookie(SessionCookie)
	return err == nil && c.Value != "" && a.sessions.valid(c.Value)
}

// openSession exchanges a login code for a session: an HttpOnly,
// SameSite=Strict cookie (Secure over HTTPS, see overHTTPS) the API then
// takes in place of the bearer token. The route is public (the code is the credential) and,
// as every POST, refused from another site.
func (a *api) openSession(w http.ResponseWriter, r *http.Request) error {
	if a.opts.LoginCodes == nil {
		return fmt.Errorf("%w: this server takes no login codes (it runs without a token)", queue.ErrNotFound)
	}
	code, err := ReadCode(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_input", err.Error())
		return nil
	}
	if _, err := a.opts.LoginCodes.Redeem(code); err != nil {
		writeError(w, http.StatusUnauthorized, "invalid_code", err.Error()+": get a new link (POST /api/login-codes with the token), or use the token")
		return nil
	}
	id, exp, err := a.sessions.open()
	if err != nil {
		return err
	}
	http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: id, Path: "/", HttpOnly: true, Secure: overHTTPS(r),
		SameSite: http.SameSiteStrictMode, Expires: exp})
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// overHTTPS reports whether the browser reached the server over HTTPS:
// directly, or through a proxy that ended TLS and says so in
// X-Forwarded-Proto or Forwarded's proto. The headers are trusted without
// knowing the proxy because they can only make the session cookie Secure,
// which a browser then sends over HTTPS alone: a forged one locks out only
// its sender.
func overHTTPS(r *http.Request) bool {
	if r.TLS != nil || strings.EqualFold(strings.TrimSpace(r.Header.Get("X-Forwarded-Proto")), "https") {
		return true
	}
	for _, hop := range r.Header.Values("Forwarded") {
		for _, elem := range strings.FieldsFunc(hop, func(c rune) bool { return c == ',' || c == ';' }) {
			k, v, _ := strings.Cut(strings.TrimSpace(elem), "=")
			if strings.EqualFold(k, "proto") && strings.EqualFold(strings.Trim(v, `"`), "https") {
				return true
			}
		}
	}
	return false
}

// newLoginCode makes a login code for a caller that holds the token (or a
// session): a link for a browser that keeps nothing secret in its history.
func (a *api) newLoginCode(w http.ResponseWriter, r *http.Request) error {
	if a.opts.LoginCodes == nil {
		return fmt.Errorf("%w: this server takes no login codes (it runs without a token)", queue.ErrNotFound)
	}
	code, exp, err := a.opts.LoginCodes.New(struct{}{})
	if err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusCreated, map[string]any{"code": code, "expires_at": exp.UTC().Format(time.RFC3339), "link": "/#api=/&code=" + code})
	return nil
}
