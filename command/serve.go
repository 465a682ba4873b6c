package command

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"math"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/qo-queue/qo/httpapi"
	"github.com/qo-queue/qo/metrics"
	"github.com/qo-queue/qo/webui"
)

const envAPIToken = "QO_API_TOKEN"

func serveCommand() *cli.Command {
	flags := []cli.Flag{
		&cli.StringFlag{Name: "addr", Value: "127.0.0.1:8080", EnvVars: []string{"QO_API_ADDR"},
			Usage: "listen `ADDRESS` (host:port); beyond loopback a token is required"},
		&cli.StringFlag{Name: "token-file", EnvVars: []string{"QO_API_TOKEN_FILE"},
			Usage: "read the bearer token from `FILE` (or set " + envAPIToken + ")"},
		&cli.StringFlag{Name: "token-out",
			Usage: "write the token qo makes (when none is set) to `FILE` (created, mode 0600) instead of printing it to a terminal"},
		&cli.Int64Flag{Name: "max-body", Value: httpapi.DefaultMaxBody, Usage: "largest request body in `BYTES`"},
		&cli.StringFlag{Name: "allow-origin", Usage: "send Access-Control-Allow-Origin: `ORIGIN` on /api/ (a web page served elsewhere)"},
		&cli.BoolFlag{Name: "no-ui", Usage: "do not serve the web UI at /"},
		&cli.BoolFlag{Name: "no-auth", EnvVars: []string{"QO_API_NO_AUTH"},
			Usage: "serve without a token (loopback only): any local process, and any web page the operator opens that passes the cross-site checks, may use the API"},
		&cli.BoolFlag{Name: "readonly", EnvVars: []string{"QO_API_READONLY"},
			Usage: "refuse every request that would change the queue (403 read_only): a dashboard for production"},
		&cli.StringSliceFlag{Name: "allowed-host", EnvVars: []string{"QO_API_ALLOWED_HOSTS"},
			Usage: "also answer requests whose Host header is `NAME` (repeatable; on loopback only localhost, 127.0.0.1 and ::1 are answered, which defeats DNS rebinding)"},
	}
	flags = append(flags, logFlags()...)
	return &cli.Command{
		Name:      "serve",
		Usage:     "serve the HTTP API and Prometheus metrics",
		UsageText: "qo serve [--addr 127.0.0.1:8080] [--token-file FILE] [flags]",
		Description: `Serves the queue over HTTP, with the same JSON shapes as the CLI's --json:

  GET    /health                    liveness (?check=s3 also asks S3); no token
  GET    /healthz                   liveness probe: 200 until shutdown starts
                                    (then 503); no S3 request; no token
  GET    /readyz                    readiness probe: 200 when the bucket answers
                                    (one HeadBucket, reused for 2s whoever asks),
                                    503 when not or shutting down; no token
  GET    /api/stats                 counts by status, shard and type; workers
  GET    /api/workers               the worker registry with health
  GET    /api/tasks                 ?status=&type=&shard=&cursor=&limit= (paged)
  POST   /api/tasks                 submit: {"type", "input", "timeout_seconds",
                                    "max_retries", "delay", "idempotency_key", ...}
  GET    /api/tasks/{id}            one task
  GET    /api/tasks/{id}/history    every version of it
  POST   /api/tasks/{id}/cancel     cancel ({"reason": "..."} optional)
  GET    /api/dead                  failed tasks (paged)
  POST   /api/dead/{id}/retry       replay a failed task
  DELETE /api/dead/{id}             archive a failed task (nothing is deleted)
  GET    /api/openapi.json          the OpenAPI 3 document
  GET    /metrics                   Prometheus metrics, with the queue's backlog
                                    as gauges (qo_queue_tasks{status}, ...)
  GET    /                          the web UI (open /#api=/ to use this API)

Errors are {"error": {"code", "message"}} with status 400 (bad input), 401
(token), 404, 409 (not allowed in the task's state), 412, 413 (body too large)
or 503 (S3 unavailable).

Authentication: every route but /health, /healthz and /readyz needs
"Authorization: Bearer TOKEN".
The token comes from ` + envAPIToken + ` or --token-file; without one, qo serve makes a
random token at start (on loopback only: beyond loopback a token must be
given). qo prints a token only when it made it, and only to a terminal;
otherwise --token-out FILE receives it (or set one). A configured token is
never printed nor logged.

The web UI link qo prints (to a terminal only) carries no token but a
one-time login code: the page exchanges it once (POST /api/session) for a
session cookie (HttpOnly, SameSite=Strict; Secure over TLS, and behind a
proxy that ends TLS and sends X-Forwarded-Proto: https) and the address
keeps neither. A code lasts 10 minutes and works once; a holder of the token
makes another with POST /api/login-codes. Off a terminal, the printed link
carries nothing: the page asks for the token. --no-auth turns the
token off, on loopback only, and never with --allow-origin '*' or 'null'
(any page could then drive the API). Beyond loopback a token must look
random: a placeholder such as REPLACE_ME or one under 128 bits of apparent
entropy (length x log2 of the alphabet it uses) is refused; make one with
openssl rand -hex 16.

--readonly refuses every POST and DELETE with 403 {"error": {"code":
"read_only"}}: the API and the web UI through it only read.

Browsers: a POST body must be JSON (Content-Type: application/json, 415
otherwise), and requests that change the queue from another site's page
(Origin or Sec-Fetch-Site say so) are refused with 403 unless the origin is
--allow-origin; so a page the operator visits cannot submit, cancel or pause.
On loopback the server answers only Host names localhost, 127.0.0.1 and ::1
(421 otherwise; add names with --allowed-host), so a page cannot read the API
through a DNS name rebound to 127.0.0.1. GET /api/stats and the backlog
gauges of /metrics share one computation at most every 2 s, however many
clients ask. The server has read, write and idle timeouts and stops
gracefully on SIGINT or SIGTERM.

Examples:
  qo serve                                   # prints its token (to a terminal)
  qo serve --token-out /run/qo/token         # writes the token it makes
  QO_API_TOKEN=$(openssl rand -hex 16) qo serve --addr 0.0.0.0:8080
  curl -s -H "Authorization: Bearer $QO_API_TOKEN" localhost:8080/api/stats | jq .by_status
  curl -s -H "Authorization: Bearer $QO_API_TOKEN" -H 'Content-Type: application/json' \
    -XPOST localhost:8080/api/tasks -d '{"type":"echo","input":{"hi":1}}'`,
		Flags:  flags,
		Action: serviceAction(runServe),
	}
}

// apiToken reads the token from --token-file or QO_API_TOKEN.
func apiToken(c *cli.Context) (string, error) {
	if path := c.String("token-file"); path != "" {
		b, err := os.ReadFile(path)
		if err != nil {
			return "", usageError("--token-file: %v", err)
		}
		tok := strings.TrimSpace(string(b))
		if tok == "" {
			return "", usageError("--token-file %s is empty", path)
		}
		return tok, nil
	}
	return strings.TrimSpace(os.Getenv(envAPIToken)), nil
}

// newAPIToken returns a random bearer token (128 bits, hex).
func newAPIToken() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("make an API token: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// tokenPlaceholders are tokens of examples and manifests that must be
// replaced before use (deploy/kubernetes's example Secret holds the first).
var tokenPlaceholders = []string{"REPLACE_ME", "CHANGE_ME", "changeme", "token", "secret", "password"}

// minTokenBits is the least apparent entropy of a token served beyond
// loopback: what qo makes (16 random bytes) or openssl rand -hex 16 give.
const minTokenBits = 128

// tokenBits estimates a token's entropy in bits: its length times log2 of
// the alphabet of the character classes it uses (digits, lower case, upper
// case, the rest of printable ASCII, anything else). An estimate from
// above: "aaaa..." scores as a random lower-case string.
func tokenBits(tok string) float64 {
	var digit, lower, upper, punct, other bool
	n := 0
	for _, r := range tok {
		n++
		switch {
		case r >= '0' && r <= '9':
			digit = true
		case r >= 'a' && r <= 'z':
			lower = true
		case r >= 'A' && r <= 'Z':
			upper = true
		case r > ' ' && r < 0x7f:
			punct = true
		default:
			other = true
		}
	}
	alphabet := 0
	for _, c := range []struct {
		used bool
		size int
	}{{digit, 10}, {lower, 26}, {upper, 26}, {punct, 32}, {other, 128}} {
		if c.used {
			alphabet += c.size
		}
	}
	if alphabet < 2 {
		return 0
	}
	return float64(n) * math.Log2(float64(alphabet))
}

// checkTokenStrength refuses a placeholder or a token under minTokenBits
// of apparent entropy.
func checkTokenStrength(tok string) error {
	for _, p := range tokenPlaceholders {
		if strings.EqualFold(tok, p) {
			return usageError("the API token is the placeholder %q: set a random one, e.g. %s=$(openssl rand -hex 16)", tok, envAPIToken)
		}
	}
	if bits := tokenBits(tok); bits < minTokenBits {
		return usageError("the API token is too weak to serve beyond loopback (about %.0f bits, want at least %d): set a random one, e.g. %s=$(openssl rand -hex 16), or listen on 127.0.0.1",
			bits, minTokenBits, envAPIToken)
	}
	return nil
}

// showMadeToken hands over the token qo made for this run: to the
// --token-out file, or printed to a terminal. Anywhere else (a log, a
// pipe) it is not printed: the message says how to get or set one.
func showMadeToken(c *cli.Context, token string) error {
	if path := c.String("token-out"); path != "" {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return usageError("--token-out: %v (give a new file: qo does not overwrite one)", err)
		}
		_, err = fmt.Fprintln(f, token)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("write the API token to %s: %w", path, err)
		}
		fmt.Fprintf(c.App.ErrWriter, "qo: API token made for this run, written to %s\n", path)
		return nil
	}
	if envOf(c).IsTerminal(c.App.ErrWriter) {
		fmt.Fprintf(c.App.ErrWriter, "qo: API token (made for this run; set %s to choose one): %s\n", envAPIToken, token)
		return nil
	}
	fmt.Fprintf(c.App.ErrWriter, "qo: made an API token for this run; it is not printed, as stderr is not a terminal: set %s (or --token-file) to choose one, or pass --token-out FILE\n", envAPIToken)
	return nil
}

func runServe(c *cli.Context) error {
	if c.NArg() > 0 {
		return usageError("serve takes no arguments, got %q", c.Args().First())
	}
	log, err := cmdLogger(c)
	if err != nil {
		return err
	}
	addr := c.String("addr")
	loopback, err := isLoopback(addr)
	if err != nil {
		return err
	}
	token, err := apiToken(c)
	if err != nil {
		return err
	}
	if !loopback && token == "" {
		return usageError("refusing to serve the API on %s without a token: set %s (or --token-file), or listen on 127.0.0.1", addr, envAPIToken)
	}
	noAuth := c.Bool("no-auth")
	if origin := c.String("allow-origin"); noAuth && (origin == "*" || origin == "null") {
		return usageError("--no-auth with --allow-origin %q lets any web page (or sandboxed frame) use the API: name the page's origin in --allow-origin, or serve with a token", origin)
	}
	if !loopback && token != "" {
		if err := checkTokenStrength(token); err != nil {
			return err
		}
	}
	switch {
	case noAuth && !loopback:
		return usageError("--no-auth is for loopback only: %s is reachable from other machines; set %s (or --token-file) instead", addr, envAPIToken)
	case noAuth && token != "":
		return usageError("--no-auth and a token (%s or --token-file) contradict each other: drop one", envAPIToken)
	case noAuth:
		log.Warn("serving the API without a token: every local process may use it")
	case token == "":
		if token, err = newAPIToken(); err != nil {
			return err
		}
		if err := showMadeToken(c, token); err != nil {
			return err
		}
	default:
		if c.String("token-out") != "" {
			return usageError("--token-out is for a token qo makes: this run has one (%s or --token-file)", envAPIToken)
		}
	}
	var hosts []string
	if loopback {
		hosts = append([]string{"localhost", "127.0.0.1", "::1"}, c.StringSlice("allowed-host")...)
	} else {
		hosts = c.StringSlice("allowed-host") // empty: any Host (the token guards the API)
	}
	if c.Int64("max-body") < 1024 {
		return usageError("--max-body %d is too small (at least 1024 bytes)", c.Int64("max-body"))
	}
	m := metrics.New()
	c.Context = withS3Observer(c.Context, m.ObserveS3)
	q, err := openQueueLogged(c, log)
	if err != nil {
		return err
	}
	watchStoreMetrics(m, q)
	var stopping atomic.Bool
	opts := httpapi.Options{Token: token, MaxBody: c.Int64("max-body"), Metrics: m, AllowOrigin: c.String("allow-origin"), AllowedHosts: hosts,
		ShuttingDown: stopping.Load, Logger: log, ReadOnly: c.Bool("readonly")}
	if token != "" {
		opts.LoginCodes = httpapi.NewLoginCodes[struct{}](0, nil)
	}
	if opts.ReadOnly {
		fmt.Fprintln(c.App.ErrWriter, "qo: read-only: requests that would change the queue are refused (403)")
	}
	var showLink func(addr string) error
	if !c.Bool("no-ui") {
		// The page talks to this API only: its own origin.
		if opts.UI, err = webui.Handler(); err != nil {
			return err
		}
		// The link names the address listened on (the port chosen for
		// --addr HOST:0).
		showLink = func(bound string) error {
			link := "http://" + bound + "/#api=/"
			switch {
			case token == "":
				fmt.Fprintf(c.App.ErrWriter, "qo: web UI through this API: %s\n", link)
			case envOf(c).IsTerminal(c.App.ErrWriter):
				code, exp, err := opts.LoginCodes.New(struct{}{})
				if err != nil {
					return err
				}
				fmt.Fprintf(c.App.ErrWriter, "qo: web UI through this API (a one-time link, until %s): %s&code=%s\n", exp.Local().Format(time.TimeOnly), link, code)
			default:
				fmt.Fprintf(c.App.ErrWriter, "qo: web UI through this API: %s (it asks for the token; or POST /api/login-codes with the token for a one-time link)\n", link)
			}
			return nil
		}
	}
	return serveHTTP(c, log, addr, logRequests(log, httpapi.New(q, opts)), "API", &stopping, showLink)
}
