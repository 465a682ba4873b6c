package queue_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/queue/registry"
	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/store/storetest"
	"github.com/qo-queue/qo/worker/bench"
)

// historySize is the number of finished tasks the cost tests put in the
// bucket; every read must cost exactly what it costs in an empty one.
const historySize = 10_000

// TestReadCostIndependentOfHistory runs every read path of qo on the same
// live queue twice, once in an otherwise empty bucket and once beside
// historySize finished tasks, and counts the requests: they must be equal,
// request for request.
func TestReadCostIndependentOfHistory(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		costs := map[int]map[string]string{}
		for _, n := range []int{0, historySize} {
			b := setup(t, be, withIDs("live")) // the same live tasks in both buckets
			require.NoError(t, bench.SeedFinished(b.ctx, b.raw, b.q, bench.Seed{Tasks: n}))
			tasks := live(t, b)
			costs[n] = readCosts(t, b, tasks)
		}
		for op, c := range costs[0] {
			require.Equal(t, c, costs[historySize][op], "%s costs the same with %d finished tasks as with none", op, historySize)
		}
		for op, want := range map[string]string{
			"follow the queue, idle poll":                "LIST=2 LIST-VERSIONS=0 GET=0 PUT=0 DELETE=0",
			"follow the queue, a poll after 3 writes":    "LIST=2 LIST-VERSIONS=0 GET=3 PUT=0 DELETE=0",
			"follow 3 tasks, a poll":                     "LIST=0 LIST-VERSIONS=0 GET=3 PUT=0 DELETE=0",
			"follow 3 tasks, a poll after 2 writes":      "LIST=0 LIST-VERSIONS=1 GET=6 PUT=0 DELETE=0",
			"wait for 4 ended tasks":                     "LIST=0 LIST-VERSIONS=0 GET=4 PUT=0 DELETE=0",
			"wait for 4 ended tasks, 1 of them archived": "LIST=0 LIST-VERSIONS=0 GET=4 PUT=0 DELETE=0", // archived_from tells
		} {
			require.Equal(t, want, costs[0][op], op)
		}
		t.Logf("read costs (the same with 0 and %d finished tasks): %v", historySize, costs[0])
	})
}

// live builds the same live queue in every bucket: waiting, delayed,
// running, recently completed and failed tasks, and a worker heartbeat. It
// returns the 12 tasks of types t0-t2: 2 completed, 2 failed, 3 running
// (their leases in the bundle's claims) and 5 pending.
func live(t *testing.T, b *bundle) []*queue.Task {
	t.Helper()
	var tasks []*queue.Task
	for i := 0; i < 12; i++ {
		tasks = append(tasks, b.submit(t, fmt.Sprintf("t%d", i%3), `{}`))
	}
	_, _, err := b.q.Submit(b.ctx, queue.SubmitRequest{Type: "later", AvailableAt: b.q.Now().Add(time.Hour)})
	require.NoError(t, err)
	for i, task := range tasks[:7] {
		l := b.claim(t, task, "w1")
		switch {
		case i < 2:
			_, err = b.q.Complete(b.ctx, l, json.RawMessage(`1`))
		case i < 4:
			_, err = b.q.Fail(b.ctx, l, "boom")
		}
		require.NoError(t, err)
	}
	var recent queue.MinuteCounter
	recent.Add(b.q.Now(), 2, 2)
	require.NoError(t, registry.Put(b.ctx, b.q, &queue.WorkerInfo{ID: "w1", LastHeartbeat: b.q.Now(), Recent: recent.Snapshot(b.q.Now())}))
	return tasks
}

// readCosts runs each read path once and returns its requests by kind.
// The last ones, following and waiting, write between their reads.
func readCosts(t *testing.T, b *bundle, tasks []*queue.Task) map[string]string {
	t.Helper()
	out := map[string]string{}
	measure := func(name string, fn func()) {
		before := b.counts()
		fn()
		d := b.counts().Sub(before)
		out[name] = fmt.Sprintf("LIST=%d LIST-VERSIONS=%d GET=%d PUT=%d DELETE=%d", d.Total(store.OpList), d.Total(store.OpListVersions),
			d.Total(store.OpGet), d.Total(store.OpPut), d.Total(store.OpDelete))
	}
	list := func(qry queue.ListQuery) func() {
		return func() {
			_, err := b.q.List(b.ctx, qry)
			require.NoError(t, err)
		}
	}
	measure("worker poll (every shard)", func() { b.readyEntries(t, queue.ReadyQuery{}) })
	measure("worker poll (shards 0-7)", func() { b.readyEntries(t, queue.ReadyQuery{Shards: []string{"0", "1", "2", "3", "4", "5", "6", "7"}}) })
	c := b.q.NewStatsCounter(queue.StatsOptions{})
	refresh := func() {
		_, err := c.Refresh(b.ctx)
		require.NoError(t, err)
	}
	measure("stats, cold", refresh)
	measure("stats, warm", refresh)
	measure("dead letters, first page", list(queue.ListQuery{Status: queue.StatusFailed}))
	measure("pending", list(queue.ListQuery{Status: queue.StatusPending}))
	measure("running", list(queue.ListQuery{Status: queue.StatusRunning}))
	measure("completed, last 24 h", list(queue.ListQuery{Status: queue.StatusCompleted}))
	measure("everything, last hour", list(queue.ListQuery{Since: b.q.Now().Add(-time.Hour)}))
	measure("completed of one shard", list(queue.ListQuery{Status: queue.StatusCompleted, Shard: "a"}))
	measure("expiry check", func() {
		_, _, err := b.q.Recovery().ListLeases(b.ctx, queue.ExpiredLeases, 0, "")
		require.NoError(t, err)
	})
	measure("sweep page", func() {
		_, _, err := b.q.Recovery().Sweep(b.ctx, "", 0, time.Hour)
		require.NoError(t, err)
	})

	// Following: the whole queue, and three tasks by id.
	whole := b.q.NewFollower(queue.FollowOptions{})
	byID := b.q.NewFollower(queue.FollowOptions{IDs: []uuid.UUID{tasks[0].ID, tasks[7].ID, tasks[8].ID}, NewOnly: true})
	poll := func(f *queue.Follower) func() {
		return func() {
			_, err := f.Poll(b.ctx)
			require.NoError(t, err)
		}
	}
	measure("follow the queue, first poll", poll(whole))
	measure("follow the queue, idle poll", poll(whole))
	measure("follow 3 tasks, first poll", poll(byID))
	measure("follow 3 tasks, a poll", poll(byID))
	// Writes between polls: a submit, a claim, and two writes of one task
	// (the task follower reads its history to report both).
	b.submit(t, "t0", `{}`)
	b.claim(t, tasks[7], "w2")
	l := b.claim(t, tasks[8], "w2")
	_, err := b.q.Complete(b.ctx, l, nil)
	require.NoError(t, err)
	measure("follow the queue, a poll after 3 writes", poll(whole))
	measure("follow 3 tasks, a poll after 2 writes", poll(byID))

	// Waiting for tasks that ended (the completed and failed ones), and
	// for the same with one archived (its outcome is its archived_from).
	wait := func() {
		rs, err := b.q.Wait(b.ctx, []uuid.UUID{tasks[0].ID, tasks[1].ID, tasks[2].ID, tasks[3].ID}, queue.WaitOptions{})
		require.NoError(t, err)
		for _, r := range rs {
			require.NotEqual(t, queue.OutcomeUnfinished, r.Outcome)
		}
	}
	measure("wait for 4 ended tasks", wait)
	_, err = b.q.Archive(b.ctx, tasks[0].ID)
	require.NoError(t, err)
	measure("wait for 4 ended tasks, 1 of them archived", wait)
	return out
}

// TestDeadLetterPageCost: with 1% of a history of failures, every page of
// 100 dead letters costs one LIST and 100 GETs.
func TestDeadLetterPageCost(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		b := setup(t, be)
		require.NoError(t, bench.SeedFinished(b.ctx, b.raw, b.q, bench.Seed{Tasks: historySize, FailedEvery: 100}))
		qry := queue.ListQuery{Status: queue.StatusFailed, Limit: 50}
		var last time.Time
		for pages := 0; ; pages++ {
			before := b.counts()
			page, err := b.q.List(b.ctx, qry)
			require.NoError(t, err)
			d := b.counts().Sub(before)
			require.Equal(t, int64(1), d.Total(store.OpList), "page %d: %s", pages, d)
			require.Equal(t, int64(len(page.Tasks)), d.Total(store.OpGet), "page %d: %s", pages, d)
			for _, task := range page.Tasks {
				require.Equal(t, queue.StatusFailed, task.Status)
				if !last.IsZero() {
					require.False(t, task.CompletedAt.After(last), "newest failure first")
				}
				last = *task.CompletedAt
			}
			if page.Cursor == "" {
				require.Equal(t, historySize/100/50-1, pages)
				break
			}
			require.Len(t, page.Tasks, 50)
			qry.Cursor = page.Cursor
		}
	})
}
