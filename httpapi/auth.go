// This file: which requests the API accepts (host, origin, token) and
// who it records as the actor.

package httpapi

import (
	"crypto/subtle"
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
)

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
