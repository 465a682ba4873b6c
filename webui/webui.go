// Package webui is qo's static dashboard: HTML, CSS and one JavaScript
// bundle that talk to the bucket straight from the browser (signing S3
// requests with SigV4), or to qo's HTTP API when told to. The files are
// built from src/ by scripts/build-webui.sh into dist/, checked in, and
// embedded here; CI rebuilds them and fails when they differ.
//
// The page applies operator actions (replay, archive, cancel) with the same
// conditional PUTs and rules as the Go code: src/transitions.json is
// generated from queue.Transitions, src/constants.json from the queue's
// statuses, keys and numbers and the statuses each action applies to
// (queue.OperatorFrom), and the JavaScript rules are tested on cases
// produced by queue.ApplyOperator (testdata/cases.json). A test fails when
// a source file writes out a status list, a key or a format version itself.
package webui

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"html"
	"io/fs"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

//go:embed dist
var dist embed.FS

// Files returns the built UI: index.html, app.js, style.css.
func Files() fs.FS {
	sub, err := fs.Sub(dist, "dist")
	if err != nil {
		panic(err) // the embedded tree always has dist/
	}
	return sub
}

// Handler serves the UI's files. The page reads its configuration from the
// URL fragment, which browsers never send to a server. connect lists the
// origins other than the page's own that it may send requests to (the S3
// endpoint of qo ui serve and qo dev; none for qo serve, whose page talks
// to its own API): the Content-Security-Policy header allows no other, so a
// script injected into the page could not send what it reads elsewhere.
// Each origin must be scheme://host[:port].
func Handler(connect ...string) (http.Handler, error) {
	csp, err := CSP(connect)
	if err != nil {
		return nil, err
	}
	// A header can say what a meta element cannot: no frames.
	csp += "; frame-ancestors 'none'"
	fsrv := http.FileServerFS(Files())
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		// The page holds credentials in memory: keep it out of frames and
		// caches, and allow scripts from itself only.
		h.Set("X-Frame-Options", "DENY")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-store")
		h.Set("Content-Security-Policy", csp)
		fsrv.ServeHTTP(w, r)
	}), nil
}

// CSP is the Content-Security-Policy of the page, however it is served:
// scripts and styles from the page's own origin only (no inline script),
// requests only to its own origin and connect (the S3 endpoint, and an API
// the page may be pointed at), no plugins, frames, base or form targets.
// Each origin must be scheme://host[:port]. Handler adds what only a
// header can say; DeployedIndex carries it as a meta element.
func CSP(connect []string) (string, error) {
	origins := []string{"'self'"}
	for _, o := range connect {
		u, err := url.Parse(o)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil ||
			strings.Trim(u.Path, "/") != "" || u.RawQuery != "" || u.Fragment != "" || strings.ContainsAny(u.Host, " ;,'\"") {
			return "", fmt.Errorf("connect origin %q: want scheme://host[:port], e.g. https://s3.eu-west-1.amazonaws.com", o)
		}
		if o := u.Scheme + "://" + u.Host; !slices.Contains(origins, o) {
			origins = append(origins, o)
		}
	}
	return "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src " + strings.Join(origins, " ") +
		"; base-uri 'none'; form-action 'none'; object-src 'none'", nil
}

// DeployedIndex is index.html as qo ui deploy writes it: with a
// Content-Security-Policy meta element (CSP), since a bucket
// cannot send the header qo's own server sends (Handler). A meta element
// cannot set frame-ancestors: the page itself refuses to run framed
// (src/frame.js).
func DeployedIndex(connect []string) ([]byte, error) {
	csp, err := CSP(connect)
	if err != nil {
		return nil, err
	}
	index, err := fs.ReadFile(Files(), "index.html")
	if err != nil {
		return nil, err
	}
	const charset = "<meta charset=\"utf-8\">\n"
	i := bytes.Index(index, []byte(charset))
	if i < 0 {
		return nil, errors.New("index.html has no <meta charset> to put the policy after")
	}
	i += len(charset)
	meta := "<meta http-equiv=\"Content-Security-Policy\" content=\"" + html.EscapeString(csp) + "\">\n"
	return slices.Concat(index[:i], []byte(meta), index[i:]), nil
}
