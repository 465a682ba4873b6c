package queue_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/queue/control"
	"github.com/qo-queue/qo/store/storetest"
)

// A task's key rides in its ready entry's name, from the submit and
// through a retry, so a worker reads it from a listing without a GET.
func TestTaskKeyInReadyEntry(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		b := setup(t, be)
		task, _, err := b.q.Submit(b.ctx, queue.SubmitRequest{Type: "sync", Key: "customer-42"})
		require.NoError(t, err)
		require.Equal(t, "customer-42", task.TaskKey)
		require.Contains(t, queue.ReadyKey(task), "/-customer-42/", "the entry lies in its key's section")
		plain, _, err := b.q.Submit(b.ctx, queue.SubmitRequest{Type: "sync"})
		require.NoError(t, err)

		es := b.readyEntries(t, queue.ReadyQuery{})
		require.Len(t, es, 2)
		keys := map[string]string{}
		for _, e := range es {
			keys[e.ID.String()] = e.TaskKey
		}
		require.Equal(t, map[string]string{task.ID.String(): "customer-42", plain.ID.String(): ""}, keys)

		got, err := b.q.Get(b.ctx, task.ID)
		require.NoError(t, err)
		require.Equal(t, "customer-42", got.TaskKey)

		l := b.claim(t, task, "w1")
		_, err = b.q.Retry(b.ctx, l, "boom", time.Second)
		require.NoError(t, err)
		b.clock.Advance(2 * time.Second)
		for _, e := range b.readyEntries(t, queue.ReadyQuery{}) {
			if e.ID == task.ID {
				require.Equal(t, "customer-42", e.TaskKey, "the retry's ready entry")
			}
		}
	})
}

func TestTaskKeyValidated(t *testing.T) {
	t.Parallel()
	b := setup(t, storetest.Backends()[0])
	for _, bad := range []string{"a/b", "a~b", "..", strings.Repeat("k", 65), "a b"} {
		_, _, err := b.q.Submit(b.ctx, queue.SubmitRequest{Type: "sync", Key: bad})
		require.ErrorIs(t, err, queue.ErrInvalidInput, bad)
		require.ErrorContains(t, err, "task key", bad)
	}
	doc, err := queue.DecodeSubmit([]byte(`{"type":"sync","key":"customer-7"}`), queue.DefaultSubmitDefaults)
	require.NoError(t, err)
	require.Equal(t, "customer-7", doc.Key)
	_, err = queue.DecodeSubmit([]byte(`{"type":"sync","key":"a/b"}`), queue.DefaultSubmitDefaults)
	require.ErrorContains(t, err, `"key": task key`)
}

func TestParseReadyKeyTaskKey(t *testing.T) {
	t.Parallel()
	const name = "1767323045000~normal~01a22085-3fd1-7e0a-b742-b16a0516ee53"
	const base = "ready/sync/3/" + name
	e, err := queue.ParseReadyKey(base)
	require.NoError(t, err)
	require.Empty(t, e.TaskKey)
	e, err = queue.ParseReadyKey("ready/sync/3/-customer-42/" + name)
	require.NoError(t, err)
	require.Equal(t, "customer-42", e.TaskKey)
	require.Equal(t, "sync/3", e.Partition())
	e, err = queue.ParseReadyKey("ready/sync/3/--x/" + name)
	require.NoError(t, err)
	require.Equal(t, "-x", e.TaskKey, "a key may itself begin with the mark")
	for _, bad := range []string{
		base + "~customer-42", // layout 4's form: a stray, converted by the sweeper
		base + "~", "ready/sync/3/-/" + name, "ready/sync/3/-a b/" + name, "ready/sync/3/x/" + name,
		"ready/sync/3/-k/" + name + "~k", "ready/sync/3/-k/x/" + name,
	} {
		_, err := queue.ParseReadyKey(bad)
		require.Error(t, err, bad)
	}
}

// The end of a key's section sorts after its every entry and before the
// partition's next section and its entries without a key.
func TestReadyKeySectionEnd(t *testing.T) {
	t.Parallel()
	const name = "1767323045000~normal~01a22085-3fd1-7e0a-b742-b16a0516ee53"
	end, ok := queue.ReadyKeySectionEnd("ready/sync/3/-a/" + name)
	require.True(t, ok)
	require.Equal(t, "ready/sync/3/-a/~", end)
	for _, after := range []string{"ready/sync/3/-a/" + name, "ready/sync/3/-a/9999999999999~low~x"} {
		require.Less(t, after, end)
	}
	for _, before := range []string{"ready/sync/3/-a0/" + name, "ready/sync/3/-b/" + name, "ready/sync/3/" + name, "ready/sync/4/" + name} {
		require.Greater(t, before, end)
	}
	for _, none := range []string{"ready/sync/3/" + name, "ready/sync/3/", "leases/3/x/y/z", "ready/sync/3/x/" + name} {
		_, ok := queue.ReadyKeySectionEnd(none)
		require.False(t, ok, none)
	}
}

func TestDecodeTaskRefusesBadKey(t *testing.T) {
	t.Parallel()
	b := setup(t, storetest.Backends()[0])
	task, _, err := b.q.Submit(b.ctx, queue.SubmitRequest{Type: "sync", Key: "k"})
	require.NoError(t, err)
	body, err := queue.EncodeTask(task)
	require.NoError(t, err)
	body = []byte(strings.Replace(string(body), `"key":"k"`, `"key":"../x"`, 1))
	_, err = queue.DecodeTask(task.Key(), body)
	var m *queue.MalformedError
	require.ErrorAs(t, err, &m)
}

// A workflow step may carry a key; a waiting step gets it in its ready
// entry once its parents completed.
func TestWorkflowStepKey(t *testing.T) {
	t.Parallel()
	b := setup(t, storetest.Backends()[0])
	spec := decodeFlow(t, `{"name": "keyed", "steps": [
    {"name": "a", "type": "sync", "key": "customer-1"},
    {"name": "b", "type": "sync", "key": "customer-1", "after": ["a"]}
  ]}`)
	w, _, err := b.q.Workflows().Submit(b.ctx, spec)
	require.NoError(t, err)
	a := b.step(t, w, "a")
	require.Equal(t, "customer-1", a.TaskKey)
	require.Equal(t, "customer-1", readyEntryOf(a).TaskKey)
	b.run(t, w, "a", `{}`)
	next := b.step(t, w, "b")
	require.Equal(t, queue.StatusPending, next.Status)
	require.Equal(t, "customer-1", next.TaskKey)
	found := false
	for _, e := range b.readyEntries(t, queue.ReadyQuery{}) {
		if e.ID == next.ID {
			found = true
			require.Equal(t, "customer-1", e.TaskKey)
		}
	}
	require.True(t, found, "the released step's ready entry")
}

// Per-key limits live in control.json's key_limits, apart from limits:
// a cap and a rate each, kept by the other's setter, cleared together.
func TestKeyLimits(t *testing.T) {
	t.Parallel()
	b := setup(t, storetest.Backends()[0])
	_, err := control.SetKeyLimit(b.ctx, b.q, "sync", 2)
	require.NoError(t, err)
	ctl, err := control.SetKeyRate(b.ctx, b.q, "sync", 5, time.Second, 0)
	require.NoError(t, err)
	n, ok := ctl.KeyConcurrencyCap("sync")
	require.True(t, ok)
	require.Equal(t, 2, n)
	r, ok := ctl.KeyRateLimit("sync")
	require.True(t, ok)
	require.Equal(t, "5/s", r.String())
	_, capped := ctl.ConcurrencyCap("sync")
	require.False(t, capped, "a per-key cap is not a fleet-wide one")
	require.Equal(t, []string{"sync"}, ctl.LimitedTypes())
	for _, bad := range []error{
		func() error { _, err := control.SetKeyLimit(b.ctx, b.q, "sync", 0); return err }(),
		func() error { _, err := control.SetKeyRate(b.ctx, b.q, "sync", 0, time.Second, 0); return err }(),
		func() error { _, err := control.SetKeyRate(b.ctx, b.q, "a b", 1, time.Second, 0); return err }(),
	} {
		require.ErrorIs(t, bad, queue.ErrInvalidInput)
	}
	ctl, err = control.ClearLimit(b.ctx, b.q, "sync")
	require.NoError(t, err)
	require.Empty(t, ctl.LimitedTypes())
}
