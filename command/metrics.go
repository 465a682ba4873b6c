package command

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/qo-queue/qo/httpapi"
	"github.com/qo-queue/qo/metrics"
	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store"
)

// watchStoreMetrics exports the queue's store request counters.
func watchStoreMetrics(m *metrics.Metrics, q *queue.Queue) {
	if cs, ok := q.Store().(store.Counted); ok {
		m.WatchStore(cs.Requests(), store.AWSStandardPrices)
	}
}

// startMetricsServer serves /metrics, /healthz and /readyz on addr in the
// background (for workers and monitors); the returned stop shuts it down.
func startMetricsServer(addr string, m *metrics.Metrics, p *probes, log *slog.Logger) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, usageError("--metrics-addr %s: %v", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m.Handler())
	mux.HandleFunc("GET /healthz", p.healthz)
	mux.HandleFunc("GET /readyz", p.readyz)
	srv := newHTTPServer(addr, mux, log)
	go func() { _ = srv.Serve(ln) }()
	log.Info("metrics listening", "addr", ln.Addr().String(), "path", "/metrics", "probes", "/healthz /readyz")
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}, nil
}

// probes answers the liveness (/healthz) and readiness (/readyz) probes of
// a worker or monitor on its --metrics-addr. A nil *probes ignores the
// setters (no --metrics-addr).
type probes struct {
	stopping atomic.Bool
	ready    atomic.Pointer[func(context.Context) httpapi.Readiness]
}

// setReady installs the readiness check (until then /readyz answers 503
// "starting").
func (p *probes) setReady(f func(context.Context) httpapi.Readiness) {
	if p != nil {
		p.ready.Store(&f)
	}
}

// setStopping turns both probes to 503: the process is shutting down.
func (p *probes) setStopping() {
	if p != nil {
		p.stopping.Store(true)
	}
}

func (p *probes) healthz(w http.ResponseWriter, _ *http.Request) {
	httpapi.WriteLiveness(w, p.stopping.Load())
}

func (p *probes) readyz(w http.ResponseWriter, r *http.Request) {
	f := p.ready.Load()
	if f == nil {
		httpapi.WriteReadiness(w, httpapi.Readiness{Reason: "starting: not connected to the bucket yet"})
		return
	}
	rd := (*f)(r.Context())
	if rd.Ready && p.stopping.Load() {
		rd = httpapi.Readiness{Reason: "shutting down"}
	}
	httpapi.WriteReadiness(w, rd)
}

func metricsAddrFlag(category string) cli.Flag {
	return &cli.StringFlag{Name: "metrics-addr", Category: category, EnvVars: []string{"QO_METRICS_ADDR"},
		Usage: "serve Prometheus metrics at http://`ADDRESS`/metrics (e.g. 127.0.0.1:9091), and the probes /healthz and /readyz"}
}

// metricsFromFlag starts the metrics and probes server of --metrics-addr,
// if given, and makes the stores opened from now on report their request
// latency to it. Without the flag it returns nil metrics, nil probes and a
// no-op stop.
func metricsFromFlag(c *cli.Context, log *slog.Logger) (*metrics.Metrics, *probes, func(), error) {
	addr := c.String("metrics-addr")
	if addr == "" {
		return nil, nil, func() {}, nil
	}
	if _, err := isLoopback(addr); err != nil {
		return nil, nil, nil, usageError("invalid --metrics-addr %q: want host:port, e.g. 127.0.0.1:9091", addr)
	}
	m := metrics.New()
	p := &probes{}
	stop, err := startMetricsServer(addr, m, p, log)
	if err != nil {
		return nil, nil, nil, err
	}
	c.Context = withS3Observer(c.Context, m.ObserveS3)
	return m, p, stop, nil
}
