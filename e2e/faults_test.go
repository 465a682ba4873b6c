//go:build unix

package e2e

import (
	"fmt"
	"math/rand"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Shopify/toxiproxy/v2"
	"github.com/Shopify/toxiproxy/v2/collectors"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
)

// faultChain sits between qo processes and MinIO, on 127.0.0.1:
//
//	qo --HTTP--> injector --TCP--> toxiproxy --TCP--> MinIO
//
// The injector answers a share of requests with S3 errors (503 SlowDown,
// 500 InternalError) without forwarding them, and for another share
// forwards a PUT and then loses the response (the write committed, the
// client sees a 500); a "blind" lost response also fails every GET of the
// same key for the next two seconds, so the writer's re-read fails too and
// the outcome stays unknown. Toxiproxy adds latency, resets connections, cuts
// bandwidth, times out, or goes down altogether.
type faultChain struct {
	t      *testing.T
	tox    *toxiproxy.Proxy
	server *httptest.Server

	mu        sync.Mutex
	rnd       *rand.Rand
	errorRate float64 // share of requests answered with an error
	lostRate  float64 // share of PUTs committed with the response lost
	blindRate float64 // share of PUTs committed with the response and the re-reads lost
	blind     map[string]time.Time

	Requests, Errors, Lost, Blind atomic.Int64
}

func newFaultChain(t *testing.T, upstream string) *faultChain {
	t.Helper()
	u, err := url.Parse(upstream)
	require.NoError(t, err)
	srv := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), zerolog.Nop())
	srv.Metrics.ProxyMetrics = collectors.NewProxyMetricCollectors()
	tox := toxiproxy.NewProxy(srv, "minio-"+t.Name(), "127.0.0.1:0", u.Host)
	require.NoError(t, tox.Start())
	t.Cleanup(tox.Stop)

	f := &faultChain{t: t, tox: tox, rnd: rand.New(rand.NewSource(42)), blind: map[string]time.Time{}}
	target := &url.URL{Scheme: "http", Host: tox.Listen}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.Out.Host = pr.In.Host // requests are signed for the host the client used
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			writeS3Error(w, http.StatusBadGateway, "BadGateway", err.Error())
		},
	}
	f.server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.Requests.Add(1)
		fail, slowDown, lose := f.roll(r)
		switch {
		case f.blinded(r):
			f.Errors.Add(1)
			writeS3Error(w, http.StatusInternalServerError, "InternalError", "re-read lost")
		case fail:
			f.Errors.Add(1)
			if slowDown {
				writeS3Error(w, http.StatusServiceUnavailable, "SlowDown", "Please reduce your request rate.")
			} else {
				writeS3Error(w, http.StatusInternalServerError, "InternalError", "We encountered an internal error. Please try again.")
			}
		case lose:
			f.Lost.Add(1)
			rp.ServeHTTP(httptest.NewRecorder(), r)                                           // committed...
			writeS3Error(w, http.StatusInternalServerError, "InternalError", "response lost") // ...but the client never learns
		default:
			rp.ServeHTTP(w, r)
		}
	}))
	t.Cleanup(f.server.Close)
	return f
}

// roll decides a request's fate: fail it (as 503 SlowDown or 500), lose
// its response (and, for a blind loss, the re-reads that follow), or pass
// it through.
func (f *faultChain) roll(r *http.Request) (fail, slowDown, lose bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.errorRate > 0 && f.rnd.Float64() < f.errorRate {
		return true, f.rnd.Intn(2) == 0, false
	}
	if r.Method != http.MethodPut {
		return false, false, false
	}
	if f.blindRate > 0 && f.rnd.Float64() < f.blindRate {
		f.blind[r.URL.Path] = time.Now().Add(2 * time.Second)
		f.Blind.Add(1)
		return false, false, true
	}
	return false, false, f.lostRate > 0 && f.rnd.Float64() < f.lostRate
}

// blinded reports a GET of a key whose PUT response was lost blind less
// than two seconds ago.
func (f *faultChain) blinded(r *http.Request) bool {
	if r.Method != http.MethodGet {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	until, ok := f.blind[r.URL.Path]
	if ok && time.Now().After(until) {
		delete(f.blind, r.URL.Path)
		return false
	}
	return ok
}

// SetBlindRate sets the share of PUTs whose response is lost and whose
// key then fails every GET for two seconds (the writer's re-read).
func (f *faultChain) SetBlindRate(rate float64) {
	f.mu.Lock()
	f.blindRate = rate
	f.mu.Unlock()
}

// Endpoint is the S3 endpoint qo processes should use.
func (f *faultChain) Endpoint() string { return f.server.URL }

// SetRates sets the injector's error and lost-response shares.
func (f *faultChain) SetRates(errorRate, lostRate float64) {
	f.mu.Lock()
	f.errorRate, f.lostRate = errorRate, lostRate
	f.mu.Unlock()
}

// Toxic adds a toxiproxy toxic, e.g. ("latency", "downstream", 1,
// {"latency": 20, "jitter": 10}).
func (f *faultChain) Toxic(kind, stream string, toxicity float64, attrs map[string]any) {
	f.t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, `{"name":"%s_%s","type":"%s","stream":"%s","toxicity":%g,"attributes":{`, kind, stream, kind, stream, toxicity)
	first := true
	for k, v := range attrs {
		if !first {
			b.WriteString(",")
		}
		first = false
		fmt.Fprintf(&b, `"%s":%v`, k, v)
	}
	b.WriteString("}}")
	_, err := f.tox.Toxics.AddToxicJson(strings.NewReader(b.String()))
	require.NoError(f.t, err)
}

// Down takes the TCP proxy down (connections refused); Up brings it back
// on the same address.
func (f *faultChain) Down() { f.tox.Stop() }

func (f *faultChain) Up() {
	f.t.Helper()
	require.NoError(f.t, f.tox.Start())
}

func writeS3Error(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(status)
	fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code><Message>%s</Message></Error>`, code, msg)
}
