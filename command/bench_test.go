package command

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/metrics"
	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/worker"
)

// The bench reads a worker process's requests and finished attempts from
// its /metrics: requests by kind whatever their outcome, and the attempts
// that ended the task (completed or failed for good), not retries.
func TestScrapeWorker(t *testing.T) {
	t.Parallel()
	m := metrics.New()
	var c store.Counters
	m.WatchStore(&c, store.AWSStandardPrices)
	for range 5 {
		c.Add(store.OpPut, false)
	}
	c.Add(store.OpPut, true)
	c.Add(store.OpList, false)
	c.Add(store.OpGet, true)
	for _, o := range []worker.Outcome{worker.OutcomeCompleted, worker.OutcomeCompleted, worker.OutcomeFailed, worker.OutcomeRetried} {
		m.Finished("echo", o, time.Millisecond)
	}
	m.Finished("other", worker.OutcomeCompleted, time.Millisecond)
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()

	counts, done, err := scrapeWorker(context.Background(), strings.TrimPrefix(srv.URL, "http://"))
	require.NoError(t, err)
	require.Equal(t, int64(4), done)
	require.Equal(t, int64(6), counts.Total(store.OpPut))
	require.Equal(t, int64(1), counts.Failed[store.OpPut])
	require.Equal(t, int64(1), counts.Total(store.OpList))
	require.Equal(t, int64(1), counts.Failed[store.OpGet])
	require.Zero(t, counts.Total(store.OpDelete))

	_, _, err = scrapeWorker(context.Background(), "127.0.0.1:1")
	require.ErrorContains(t, err, "scrape 127.0.0.1:1")
}
