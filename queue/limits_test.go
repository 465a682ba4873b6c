package queue_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/queue/registry"
	"github.com/qo-queue/qo/queue/schedule"
	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/store/storetest"
)

// jsonOfSize is a JSON string value of exactly n bytes.
func jsonOfSize(n int) json.RawMessage {
	return json.RawMessage(`"` + strings.Repeat("a", n-2) + `"`)
}

// An input over the queue's limit is refused before anything is written;
// an output over it too, and the task stays running.
func TestPayloadLimit(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		const limit = 1000
		b := setup(t, be, withMaxPayload(limit))
		require.EqualValues(t, limit, b.q.Config().EffectiveMaxPayloadBytes())

		before := b.counts()
		_, _, err := b.q.Submit(b.ctx, queue.SubmitRequest{Type: "big", Input: jsonOfSize(limit + 1)})
		require.ErrorIs(t, err, queue.ErrInvalidInput)
		for _, want := range []string{"input is 1001 bytes", "limit of 1000 bytes", "--max-payload-bytes"} {
			require.Contains(t, err.Error(), want)
		}
		require.Zero(t, b.counts().Sub(before).Total(store.OpPut), "nothing written")
		require.Empty(t, b.keys(t, queue.TasksPrefix))

		task := b.submitReq(t, queue.SubmitRequest{Type: "big", Input: jsonOfSize(limit)})
		l := b.claim(t, task, "w1")
		before = b.counts()
		_, err = b.q.Complete(b.ctx, l, jsonOfSize(limit+1))
		require.ErrorIs(t, err, queue.ErrInvalidInput)
		require.Contains(t, err.Error(), "output is 1001 bytes")
		require.Zero(t, b.counts().Sub(before).Total(store.OpPut), "nothing written")
		require.Equal(t, queue.StatusRunning, b.get(t, task).Status)
		done, err := b.q.Complete(b.ctx, l, jsonOfSize(limit))
		require.NoError(t, err)
		require.Equal(t, queue.StatusCompleted, done.Status)
	})
}

// The default limit holds when queue.json sets none; qo init records
// another, and running it again changes it.
func TestPayloadLimitInQueueJSON(t *testing.T) {
	t.Parallel()
	b := setup(t, storetest.Backends()[0])
	require.EqualValues(t, queue.DefaultMaxPayloadBytes, b.q.Config().EffectiveMaxPayloadBytes())
	res, err := queue.InitWithOptions(b.ctx, b.raw, queue.InitOptions{ShardChars: 1, MaxPayloadBytes: 4096})
	require.NoError(t, err)
	require.EqualValues(t, 4096, res.Config.MaxPayloadBytes)
	q, err := queue.Open(b.ctx, b.raw, queue.Options{})
	require.NoError(t, err)
	require.EqualValues(t, 4096, q.Config().EffectiveMaxPayloadBytes())
	obj, err := b.raw.Get(b.ctx, queue.ConfigKey)
	require.NoError(t, err)
	require.Contains(t, string(obj.Body), `"max_payload_bytes":4096`)

	_, err = queue.InitWithOptions(b.ctx, b.raw, queue.InitOptions{ShardChars: 1, MaxPayloadBytes: -1})
	require.ErrorIs(t, err, queue.ErrInvalidInput)
}

// Every reader refuses an object over its bound before loading it: a
// single read says which key and which bound, lists and stats report the
// object and skip it.
func TestOversizedObjectsRefused(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		const limit = 1000
		b := setup(t, be, withMaxPayload(limit))
		good := b.submit(t, "m", `{}`)
		// The task bound: two inline payloads and 4 MiB for the rest,
		// whatever the payload limit.
		taskBound := 2*queue.MaxInlinePayload + 4<<20
		bigTask := queue.NewID()
		bigKey := b.q.TaskKey(bigTask)
		_, err := b.raw.Put(b.ctx, bigKey, bytes.Repeat([]byte(" "), taskBound+1), store.Condition{})
		require.NoError(t, err)

		_, err = b.q.Get(b.ctx, bigTask)
		var m *queue.MalformedError
		require.ErrorAs(t, err, &m)
		require.Equal(t, bigKey, m.Key)
		require.ErrorIs(t, err, store.ErrTooLarge)
		require.Contains(t, err.Error(), bigKey)
		require.Contains(t, err.Error(), "limit of 6291456 bytes")

		page, err := b.q.List(b.ctx, queue.ListQuery{})
		require.NoError(t, err)
		require.Len(t, page.Tasks, 1)
		require.Equal(t, good.ID, page.Tasks[0].ID)
		require.Len(t, page.Malformed, 1)
		require.Equal(t, bigKey, page.Malformed[0].Key)

		// Worker records are small: 1 MiB at most.
		bigWorker := queue.WorkerKey("big")
		_, err = b.raw.Put(b.ctx, bigWorker, bytes.Repeat([]byte(" "), 1<<20+1), store.Condition{})
		require.NoError(t, err)
		_, err = registry.Get(b.ctx, b.q, "big")
		require.ErrorIs(t, err, store.ErrTooLarge)
		_, bad, err := registry.ListReport(b.ctx, b.q)
		require.NoError(t, err)
		require.Len(t, bad, 1)
		require.Equal(t, bigWorker, bad[0].Key)
		c := b.q.NewStatsCounter(queue.StatsOptions{})
		st, err := c.Refresh(b.ctx)
		require.NoError(t, err, "stats stay up")
		require.Len(t, st.Malformed, 1)
		require.Equal(t, bigWorker, st.Malformed[0].Key)
		require.Contains(t, st.Malformed[0].Error(), "too large: 1048577 bytes, over the limit of 1048576 bytes")
		// Kept by its ETag: the next refresh does not read it again.
		before := b.counts()
		st, err = c.Refresh(b.ctx)
		require.NoError(t, err)
		require.Len(t, st.Malformed, 1)
		require.Zero(t, b.counts().Sub(before).Total(store.OpGet))

		// A schedule holds an input: an inline payload and 1 MiB.
		bigSchedule := queue.ScheduleKey("big")
		_, err = b.raw.Put(b.ctx, bigSchedule, bytes.Repeat([]byte(" "), 2<<20+1), store.Condition{})
		require.NoError(t, err)
		_, bad, err = schedule.List(b.ctx, b.q)
		require.NoError(t, err)
		require.Len(t, bad, 1)
		require.Equal(t, bigSchedule, bad[0].Key)

		// queue.json: 1 MiB.
		_, err = b.raw.Put(b.ctx, queue.ConfigKey, bytes.Repeat([]byte(" "), 1<<20+1), store.Condition{})
		require.NoError(t, err)
		_, err = queue.Open(b.ctx, b.raw, queue.Options{})
		require.ErrorIs(t, err, store.ErrTooLarge)
		require.Contains(t, err.Error(), queue.ConfigKey)
	})
}

// An offloaded payload is read within the size its reference gives.
func TestOffloadedPayloadBounded(t *testing.T) {
	t.Parallel()
	b := setup(t, storetest.Backends()[0], withMaxPayload(1000))
	q, err := queue.Open(b.ctx, b.s, queue.Options{OffloadThreshold: 100})
	require.NoError(t, err)
	task, _, err := q.Submit(b.ctx, queue.SubmitRequest{Type: "x", Input: jsonOfSize(500)})
	require.NoError(t, err)
	require.NotNil(t, task.InputRef)
	// Someone replaces the payload with a larger object.
	_, err = b.raw.Put(b.ctx, task.InputRef.Key, bytes.Repeat([]byte(" "), 501), store.Condition{})
	require.NoError(t, err)
	task.InputRef.VersionID = ""
	_, err = q.LoadPayload(b.ctx, task, queue.InputPayload)
	require.ErrorIs(t, err, store.ErrTooLarge)
	require.Contains(t, err.Error(), "limit of 500 bytes")
}

// A task object holds at most MaxInlinePayload of input or output inline,
// whatever the offload threshold asked for, so its bound holds for every
// writer; a schedule refuses a larger input.
func TestInlinePayloadBounded(t *testing.T) {
	t.Parallel()
	b := setup(t, storetest.Backends()[0])
	for _, threshold := range []int{-1, 8 << 20} {
		q, err := queue.Open(b.ctx, b.s, queue.Options{OffloadThreshold: threshold})
		require.NoError(t, err)
		task, _, err := q.Submit(b.ctx, queue.SubmitRequest{Type: "x", Input: jsonOfSize(queue.MaxInlinePayload + 1)})
		require.NoError(t, err)
		require.NotNil(t, task.InputRef, "threshold %d: offloaded", threshold)
		task, _, err = q.Submit(b.ctx, queue.SubmitRequest{Type: "x", Input: jsonOfSize(queue.MaxInlinePayload)})
		require.NoError(t, err)
		require.Nil(t, task.InputRef, "threshold %d: inline", threshold)
	}

	_, err := schedule.Create(b.ctx, b.q, schedule.Spec{Name: "big", Cron: "*/5 * * * *",
		Task: schedule.Task{Type: "t", Input: jsonOfSize(queue.MaxInlinePayload + 1)}})
	require.ErrorIs(t, err, queue.ErrInvalidInput)
	require.Contains(t, err.Error(), "over the 1048576 bytes a schedule holds")
	_, err = schedule.Create(b.ctx, b.q, schedule.Spec{Name: "ok", Cron: "*/5 * * * *",
		Task: schedule.Task{Type: "t", Input: jsonOfSize(queue.MaxInlinePayload)}})
	require.NoError(t, err)
}
