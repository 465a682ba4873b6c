package httpapi

import (
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/store/storetest"
)

// fakeNow is a settable clock for login codes and sessions.
type fakeNow struct {
	mu sync.Mutex
	t  time.Time
}

func (f *fakeNow) now() time.Time      { f.mu.Lock(); defer f.mu.Unlock(); return f.t }
func (f *fakeNow) add(d time.Duration) { f.mu.Lock(); defer f.mu.Unlock(); f.t = f.t.Add(d) }

// TestLoginCodeOpensOneSession: a login code opens one browser session
// (an HttpOnly, SameSite=Strict cookie the API takes in place of the
// token); a used, expired or unknown code opens nothing; another site's
// page cannot exchange one; a session expires.
func TestLoginCodeOpensOneSession(t *testing.T) {
	t.Parallel()
	clock := &fakeNow{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	codes := NewLoginCodes[struct{}](5*time.Minute, clock.now)
	e := newEnv(t, storetest.Backends()[0], Options{Token: "0123456789abcdef0123456789abcdef", LoginCodes: codes})
	e.token = "" // a browser: no bearer token
	code, _, err := codes.New(struct{}{})
	require.NoError(t, err)

	status, _, _ := e.do(t, "GET", "/api/stats", "")
	require.Equal(t, http.StatusUnauthorized, status)

	// Another site's page cannot spend the code.
	status, body, _ := e.do(t, "POST", "/api/session", `{"code":"`+code+`"}`, "Origin", "https://evil.example", "Sec-Fetch-Site", "cross-site")
	require.Equal(t, http.StatusForbidden, status, "%v", body)

	status, body, hdr := e.do(t, "POST", "/api/session", `{"code":"`+code+`"}`, "Origin", e.srv.URL, "Sec-Fetch-Site", "same-origin")
	require.Equal(t, http.StatusNoContent, status, "%v", body)
	cookies := (&http.Response{Header: hdr}).Cookies()
	require.Len(t, cookies, 1)
	c := cookies[0]
	require.Equal(t, SessionCookie, c.Name)
	require.True(t, c.HttpOnly)
	require.Equal(t, http.SameSiteStrictMode, c.SameSite)
	require.False(t, c.Secure, "plain HTTP (Secure only over TLS)")
	require.Equal(t, "no-store", hdr.Get("Cache-Control"))

	status, body, _ = e.do(t, "GET", "/api/stats", "", "Cookie", SessionCookie+"="+c.Value)
	require.Equal(t, http.StatusOK, status, "%v", body)
	status, _, _ = e.do(t, "GET", "/api/stats", "", "Cookie", SessionCookie+"=forged")
	require.Equal(t, http.StatusUnauthorized, status)

	// The code worked once.
	status, body, hdr = e.do(t, "POST", "/api/session", `{"code":"`+code+`"}`)
	require.Equal(t, http.StatusUnauthorized, status, "%v", body)
	require.Contains(t, body.(map[string]any)["error"].(map[string]any)["message"], "used, expired or unknown")
	require.Empty(t, (&http.Response{Header: hdr}).Cookies())

	// An expired code opens nothing.
	late, _, err := codes.New(struct{}{})
	require.NoError(t, err)
	clock.add(5 * time.Minute)
	status, _, _ = e.do(t, "POST", "/api/session", `{"code":"`+late+`"}`)
	require.Equal(t, http.StatusUnauthorized, status)
	status, _, _ = e.do(t, "POST", "/api/session", `{}`)
	require.Equal(t, http.StatusBadRequest, status)

	// The session lasts DefaultSessionTTL.
	clock.add(DefaultSessionTTL)
	status, _, _ = e.do(t, "GET", "/api/stats", "", "Cookie", SessionCookie+"="+c.Value)
	require.Equal(t, http.StatusUnauthorized, status)
}

// TestSessionCookieSecureBehindTLSProxy: behind a proxy that ends TLS and
// says so (X-Forwarded-Proto, or Forwarded's proto), the session cookie is
// Secure, as it is over TLS; over plain HTTP it is not.
func TestSessionCookieSecureBehindTLSProxy(t *testing.T) {
	t.Parallel()
	codes := NewLoginCodes[struct{}](5*time.Minute, time.Now)
	e := newEnv(t, storetest.Backends()[0], Options{Token: "0123456789abcdef0123456789abcdef", LoginCodes: codes})
	e.token = ""
	for _, c := range []struct {
		header []string
		secure bool
	}{
		{nil, false},
		{[]string{"X-Forwarded-Proto", "https"}, true},
		{[]string{"X-Forwarded-Proto", "http"}, false},
		{[]string{"Forwarded", `for=192.0.2.60;proto=https;by=203.0.113.43`}, true},
		{[]string{"Forwarded", `for=192.0.2.60, for=198.51.100.17;Proto="HTTPS"`}, true},
		{[]string{"Forwarded", `for=192.0.2.60;proto=http`}, false},
	} {
		code, _, err := codes.New(struct{}{})
		require.NoError(t, err)
		hdr := append([]string{"Origin", e.srv.URL, "Sec-Fetch-Site", "same-origin"}, c.header...)
		status, body, resp := e.do(t, "POST", "/api/session", `{"code":"`+code+`"}`, hdr...)
		require.Equal(t, http.StatusNoContent, status, "%v", body)
		cookies := (&http.Response{Header: resp}).Cookies()
		require.Len(t, cookies, 1)
		require.Equal(t, c.secure, cookies[0].Secure, "%v", c.header)
	}
}

// TestLoginCodesRoute: a holder of the token makes a login code (and its
// link) for a browser; without the token, nothing.
func TestLoginCodesRoute(t *testing.T) {
	t.Parallel()
	codes := NewLoginCodes[struct{}](0, nil)
	e := newEnv(t, storetest.Backends()[0], Options{Token: "0123456789abcdef0123456789abcdef", LoginCodes: codes})
	status, body, _ := e.do(t, "POST", "/api/login-codes", "")
	require.Equal(t, http.StatusCreated, status, "%v", body)
	e.documented(t, "POST", "/api/login-codes", status, body)
	got := body.(map[string]any)
	require.Equal(t, "/#api=/&code="+got["code"].(string), got["link"])
	_, err := codes.Redeem(got["code"].(string))
	require.NoError(t, err)

	e.token = ""
	status, _, _ = e.do(t, "POST", "/api/login-codes", "")
	require.Equal(t, http.StatusUnauthorized, status)
}

func TestLoginCodesAreBounded(t *testing.T) {
	t.Parallel()
	codes := NewLoginCodes[int](0, nil)
	seen := map[string]bool{}
	for i := range maxCodes {
		c, _, err := codes.New(i)
		require.NoError(t, err)
		require.Len(t, c, 43, "256 bits, base64url")
		require.False(t, seen[c])
		seen[c] = true
	}
	_, _, err := codes.New(0)
	require.ErrorContains(t, err, "wait for their exchange")
}

// TestReadOnlyServerOpensSessions: qo serve --readonly refuses writes, not
// the login its printed link carries.
func TestReadOnlyServerOpensSessions(t *testing.T) {
	t.Parallel()
	codes := NewLoginCodes[struct{}](5*time.Minute, nil)
	e := newEnv(t, storetest.Backends()[0], Options{Token: "0123456789abcdef0123456789abcdef", LoginCodes: codes, ReadOnly: true})
	status, body, _ := e.do(t, "POST", "/api/login-codes", "")
	require.Equal(t, http.StatusCreated, status, "%v", body)
	e.token = "" // a browser: no bearer token
	code, _, err := codes.New(struct{}{})
	require.NoError(t, err)
	status, body, hdr := e.do(t, "POST", "/api/session", `{"code":"`+code+`"}`, "Origin", e.srv.URL, "Sec-Fetch-Site", "same-origin")
	require.Equal(t, http.StatusNoContent, status, "%v", body)
	cookies := (&http.Response{Header: hdr}).Cookies()
	require.Len(t, cookies, 1)
	status, body, _ = e.do(t, "POST", "/api/pause", `{}`, "Cookie", SessionCookie+"="+cookies[0].Value, "Origin", e.srv.URL, "Sec-Fetch-Site", "same-origin")
	require.Equal(t, http.StatusForbidden, status, "%v", body)
}
