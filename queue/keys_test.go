package queue_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/queue/control"
	"github.com/qo-queue/qo/queue/namedlease"
	"github.com/qo-queue/qo/queue/registry"
	"github.com/qo-queue/qo/queue/schedule"
	"github.com/qo-queue/qo/queue/sweepstate"
	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/store/memstore"
)

// inKeys reports whether key is one of queue.Keys or under one of its
// prefixes.
func inKeys(key string) bool {
	for _, k := range queue.Keys() {
		if key == k || strings.HasSuffix(k, "/") && strings.HasPrefix(key, k) {
			return true
		}
	}
	return false
}

// TestKeysMatchTheDocumentedLayout: every entry of doc.go's key layout
// table is covered by Keys, and every entry of Keys is in the table.
func TestKeysMatchTheDocumentedLayout(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("doc.go")
	require.NoError(t, err)
	_, table, ok := strings.Cut(string(doc), "# Key layout")
	require.True(t, ok)
	table, _, _ = strings.Cut(table, "\n\n{id}")
	var documented []string
	for _, line := range strings.Split(table, "\n") {
		fields := strings.Fields(line)
		if !strings.HasPrefix(line, "\t") || len(fields) == 0 || strings.HasPrefix(line, "\t ") {
			continue
		}
		pattern, _, _ := strings.Cut(fields[0], "{") // the fixed part
		documented = append(documented, pattern)
	}
	require.NotEmpty(t, documented)
	for _, d := range documented {
		require.True(t, inKeys(d), "doc.go documents %s, which queue.Keys does not cover", d)
	}
	for _, k := range queue.Keys() {
		found := false
		for _, d := range documented {
			found = found || strings.HasPrefix(d, k)
		}
		require.True(t, found, "queue.Keys has %s, which doc.go's key layout does not list", k)
	}
}

// TestKeysCoverEveryWrite drives every kind of write the queue makes and
// checks each key it left in the bucket is covered by Keys.
func TestKeysCoverEveryWrite(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := memstore.New()
	_, err := queue.Init(ctx, s, 1)
	require.NoError(t, err)
	q, err := queue.Open(ctx, s, queue.Options{})
	require.NoError(t, err)

	big := json.RawMessage(`{"blob":"` + strings.Repeat("x", queue.DefaultOffloadThreshold) + `"}`)
	run := func(req queue.SubmitRequest) *queue.Lease {
		task, _, err := q.Submit(ctx, req)
		require.NoError(t, err)
		entry, err := queue.ParseReadyKey(queue.ReadyKey(task))
		require.NoError(t, err)
		l, err := q.Claim(ctx, entry, "w1")
		require.NoError(t, err)
		return l
	}
	_, err = q.Complete(ctx, run(queue.SubmitRequest{Type: "big", Input: big, IdempotencyKey: "once"}), big)
	require.NoError(t, err)
	_, err = q.Fail(ctx, run(queue.SubmitRequest{Type: "bad", MaxRetries: new(int)}), "boom")
	require.NoError(t, err)
	run(queue.SubmitRequest{Type: "slow"}) // stays running: a lease entry
	_, _, err = q.Submit(ctx, queue.SubmitRequest{Type: "later", AvailableAt: time.Now().Add(time.Hour)})
	require.NoError(t, err)
	_, err = control.Pause(ctx, q, "bad", "incident")
	require.NoError(t, err)
	_, err = schedule.Create(ctx, q, schedule.Spec{Name: "nightly", Cron: "0 3 * * *", Task: schedule.Task{Type: "report"}})
	require.NoError(t, err)
	require.NoError(t, registry.Put(ctx, q, &queue.WorkerInfo{Format: 1, ID: "w1", StartedAt: q.Now(), LastHeartbeat: q.Now()}))
	_, err = namedlease.Acquire(ctx, q, queue.MonitorLeaderKey, "m1", time.Minute)
	require.NoError(t, err)
	_, err = namedlease.Acquire(ctx, q, queue.ShardLeaseKey("0"), "w1", time.Minute)
	require.NoError(t, err)
	require.NoError(t, sweepstate.Save(ctx, q, sweepstate.State{Format: 1}))

	roots := map[string]bool{}
	token := ""
	for {
		page, err := s.List(ctx, store.ListParams{Token: token})
		require.NoError(t, err)
		for _, o := range page.Objects {
			require.True(t, inKeys(o.Key), "the queue wrote %s, which queue.Keys does not cover", o.Key)
			root, _, _ := strings.Cut(o.Key, "/")
			roots[root] = true
		}
		if token = page.NextToken; token == "" {
			break
		}
	}
	for _, want := range []string{"queue.json", "tasks", "ready", "leases", "dead", "data", "control.json", "schedules", "workers", "shard-leases", "monitor", "idempotency"} {
		require.True(t, roots[want], "the scenario wrote nothing under %s: %v", want, roots)
	}
}
