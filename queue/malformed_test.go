package queue_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/store/storetest"
)

func TestMalformedObjectsReportedAndSkipped(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		b := setup(t, be)
		good := b.submit(t, "m", `{}`)

		idBadJSON := queue.NewID()
		idFormat := queue.NewID()
		idTypes := queue.NewID()
		idMismatch := queue.NewID()
		idMeta := queue.NewID()
		other := queue.NewID()
		put := func(id uuid.UUID, body string) string {
			key := b.q.TaskKey(id)
			_, err := b.raw.Put(b.ctx, key, []byte(body), store.Condition{})
			require.NoError(t, err)
			return key
		}
		valid, err := queue.EncodeTask(good)
		require.NoError(t, err)
		bad := map[string]string{
			put(idBadJSON, `{"format":1, "id": `):                                                                                                                    "unexpected end",
			put(idFormat, strings.Replace(string(valid), `"format":1`, `"format":9`, 1)):                                                                             "unknown format version 9",
			put(idTypes, strings.Replace(string(valid), `"attempt":0`, `"attempt":"zero"`, 1)):                                                                       "attempt",
			put(idMismatch, strings.Replace(string(valid), good.ID.String(), other.String(), 1)):                                                                     "key says",
			put(idMeta, strings.Replace(strings.ReplaceAll(string(valid), good.ID.String(), idMeta.String()), `"format":1`, `"format":1,"metadata":{"a b":"x"}`, 1)): `metadata key "a b"`,
		}
		// Single reads return a *MalformedError.
		_, err = b.q.Get(b.ctx, idFormat)
		var m *queue.MalformedError
		require.ErrorAs(t, err, &m)
		require.Equal(t, b.q.TaskKey(idFormat), m.Key)

		page, err := b.q.List(b.ctx, queue.ListQuery{})
		require.NoError(t, err)
		require.Len(t, page.Tasks, 1)
		require.Equal(t, good.ID, page.Tasks[0].ID)
		require.Len(t, page.Malformed, len(bad))
		for _, mal := range page.Malformed {
			want, ok := bad[mal.Key]
			require.True(t, ok, mal.Key)
			require.Contains(t, mal.Error(), want)
		}

		var malformed int
		for _, shard := range b.q.Shards() {
			res, _, err := b.q.Recovery().Repair(b.ctx, shard, 100, "")
			require.NoError(t, err)
			malformed += len(res.Malformed)
		}
		require.Equal(t, len(bad), malformed)

		// A malformed ready entry target: claim reports, does not panic.
		_, err = b.q.Claim(b.ctx, queue.ReadyEntry{ID: idTypes, Shard: queue.ShardOf(idTypes, b.q.Config().ShardChars), Type: "m"}, "w1")
		require.ErrorAs(t, err, &m)

		// A history with one bad version among good ones.
		key := good.Key()
		_, err = b.raw.Put(b.ctx, key, []byte(`not json`), store.Condition{})
		require.NoError(t, err)
		_, err = b.raw.Put(b.ctx, key, valid, store.Condition{})
		require.NoError(t, err)
		events, err := b.q.History(b.ctx, good.ID)
		require.NoError(t, err)
		require.Len(t, events, 3)
		require.NoError(t, events[0].Err)
		require.ErrorAs(t, events[1].Err, &m)
		require.Nil(t, events[1].Task)
		require.NoError(t, events[2].Err)

		// Garbage index keys are skipped by the listings.
		for _, k := range []string{"ready/garbage", "ready/0000000000001/zz/t/x", "leases/123/0/x"} {
			_, err := b.raw.Put(b.ctx, k, nil, store.Condition{})
			require.NoError(t, err)
		}
		es, _, err := b.q.ListReady(b.ctx, queue.ReadyQuery{})
		require.NoError(t, err)
		for _, e := range es {
			require.NotEqual(t, uuid.Nil, e.ID)
		}
		_, _, err = b.q.Recovery().ListLeases(b.ctx, queue.ExpiredLeases, 0, "")
		require.NoError(t, err)
	})
}

// TestHolderFieldsFromTheBucketAreValidated: a task object whose
// worker_id or lease_id could step out of the lease-index key
// ("w/../../queue.json") or carry a control character is malformed: it
// is reported and skipped, and no key is built from it.
func TestHolderFieldsFromTheBucketAreValidated(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		for name, field := range map[string]struct{ field, value, want string }{
			"worker id":         {"worker_id", "w/../../../queue.json", "worker id"},
			"worker id escape":  {"worker_id", "w\x1b]0;title\x07", "worker id"},
			"lease id":          {"lease_id", "0/../../queue.json", "lease id"},
			"lease id not uuid": {"lease_id", "lease-1", "lease id"},
		} {
			t.Run(name, func(t *testing.T) {
				b := setup(t, be)
				task := b.submit(t, "m", `{}`)
				l := b.claim(t, task, "w1")
				body, err := queue.EncodeTask(l.Task)
				require.NoError(t, err)
				var m map[string]any
				require.NoError(t, json.Unmarshal(body, &m))
				m[field.field] = field.value
				body, err = json.Marshal(m)
				require.NoError(t, err)
				_, err = b.raw.Put(b.ctx, l.Task.Key(), body, store.Condition{})
				require.NoError(t, err)

				_, err = b.q.Get(b.ctx, task.ID)
				var mal *queue.MalformedError
				require.ErrorAs(t, err, &mal)
				require.Contains(t, mal.Error(), field.want)

				page, err := b.q.List(b.ctx, queue.ListQuery{Status: queue.StatusRunning})
				require.NoError(t, err)
				require.Empty(t, page.Tasks)
				require.Len(t, page.Malformed, 1)

				for _, shard := range b.q.Shards() {
					_, _, err := b.q.Recovery().Repair(b.ctx, shard, 100, "")
					require.NoError(t, err)
				}
				all, err := b.raw.List(b.ctx, store.ListParams{})
				require.NoError(t, err)
				for _, o := range all.Objects {
					require.NotContains(t, o.Key, "..", "no key is built from the planted %s", field.field)
				}
			})
		}
	})
}

// TestDecodeWorkerRefusesBadIDs: a registry record read without its key
// still has its id checked before it is printed or keyed.
func TestDecodeWorkerRefusesBadIDs(t *testing.T) {
	t.Parallel()
	_, err := queue.DecodeWorker("", []byte(`{"format":1,"worker_id":"w/../queue.json"}`))
	var mal *queue.MalformedError
	require.ErrorAs(t, err, &mal)
	require.Contains(t, mal.Error(), "worker id")
}
