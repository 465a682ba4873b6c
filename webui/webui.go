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
	"embed"
	"io/fs"
	"net/http"
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
// URL fragment, which browsers never send to a server.
func Handler() http.Handler {
	fsrv := http.FileServerFS(Files())
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		// The page holds credentials in memory: keep it out of frames and
		// caches, and allow scripts from itself only.
		h.Set("X-Frame-Options", "DENY")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-store")
		h.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; connect-src *; img-src 'self' data:; frame-ancestors 'none'")
		fsrv.ServeHTTP(w, r)
	})
}
