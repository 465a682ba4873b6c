package command

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync/atomic"

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
random token at start and prints it with a ready link to the web UI (on
loopback only: beyond loopback a token must be given). --no-auth turns the
token off, on loopback only.

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
  qo serve                                   # prints its token
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
		fmt.Fprintf(c.App.ErrWriter, "qo: API token (made for this run; set %s to choose one): %s\n", envAPIToken, token)
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
		ShuttingDown: stopping.Load, ReadOnly: c.Bool("readonly")}
	if opts.ReadOnly {
		fmt.Fprintln(c.App.ErrWriter, "qo: read-only: requests that would change the queue are refused (403)")
	}
	if !c.Bool("no-ui") {
		opts.UI = webui.Handler()
		link := "http://" + addr + "/#api=/"
		if token != "" {
			link += "&token=" + url.QueryEscape(token)
		}
		fmt.Fprintf(c.App.ErrWriter, "qo: web UI through this API: %s\n", link)
	}
	return serveHTTP(c, log, addr, logRequests(log, httpapi.New(q, opts)), "API", &stopping)
}
