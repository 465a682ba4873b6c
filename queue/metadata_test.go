package queue_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store/storetest"
)

func TestValidateMetadata(t *testing.T) {
	t.Parallel()
	many := map[string]string{}
	for i := range queue.MaxMetadataKeys + 1 {
		many[strings.Repeat("k", i+1)] = ""
	}
	for _, tc := range []struct {
		name string
		m    map[string]string
		want string // "" = valid
	}{
		{"nil", nil, ""},
		{"trace context", map[string]string{queue.MetaTraceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", queue.MetaTracestate: "congo=t61rcWkgMzE"}, ""},
		{"unicode value", map[string]string{"tenant.name": "Zürich 東京", "a_b-c.d": ""}, ""},
		{"empty key", map[string]string{"": "x"}, "metadata key is empty"},
		{"space in key", map[string]string{"a b": "x"}, `contains " "`},
		{"slash in key", map[string]string{"a/b": "x"}, `contains "/"`},
		{"long key", map[string]string{strings.Repeat("k", queue.MaxMetadataKeyLen+1): "x"}, "at most 64"},
		{"newline in value", map[string]string{"k": "a\nb"}, "control character"},
		{"bad utf-8", map[string]string{"k": "\xff"}, "not valid UTF-8"},
		{"too many", many, "at most 32"},
		{"too large", map[string]string{"k": strings.Repeat("v", queue.MaxMetadataBytes)}, "at most 4096"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := queue.ValidateMetadata(tc.m)
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, queue.ErrInvalidInput)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

func TestParseMetadataEntry(t *testing.T) {
	t.Parallel()
	k, v, err := queue.ParseMetadataEntry("tenant=a=b")
	require.NoError(t, err)
	require.Equal(t, "tenant", k)
	require.Equal(t, "a=b", v)
	_, _, err = queue.ParseMetadataEntry("tenant")
	require.ErrorContains(t, err, "want KEY=VALUE")
	_, _, err = queue.ParseMetadataEntry("t t=1")
	require.ErrorIs(t, err, queue.ErrInvalidInput)
}

// Metadata is set at submit, refused when out of bounds, and carried
// unchanged by every later write: claims, retries, a failure and a replay.
func TestMetadataCarriedThroughRetriesAndReplay(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		b := setup(t, be)
		_, _, err := b.q.Submit(b.ctx, queue.SubmitRequest{Type: "m", Metadata: map[string]string{"bad key": "x"}})
		require.ErrorIs(t, err, queue.ErrInvalidInput)

		meta := map[string]string{"tenant": "acme", queue.MetaTraceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}
		one := 1
		task, _, err := b.q.Submit(b.ctx, queue.SubmitRequest{Type: "m", Metadata: meta, MaxRetries: &one, RetryPolicy: &queue.RetryPolicy{Multiplier: 1}})
		require.NoError(t, err)
		meta["tenant"] = "changed after submit"
		require.Equal(t, "acme", task.Metadata["tenant"])

		l := b.claim(t, task, "w1")
		require.Equal(t, "acme", l.Task.Metadata["tenant"])
		retried, err := b.q.Retry(b.ctx, l, "boom", 0)
		require.NoError(t, err)
		require.Equal(t, queue.StatusPending, retried.Status)
		l = b.claim(t, retried, "w1")
		failed, err := b.q.Fail(b.ctx, l, "boom again")
		require.NoError(t, err)
		require.Equal(t, queue.StatusFailed, failed.Status)
		replayed, err := b.q.Replay(b.ctx, task.ID)
		require.NoError(t, err)

		got, err := b.q.Get(b.ctx, task.ID)
		require.NoError(t, err)
		want := map[string]string{"tenant": "acme", queue.MetaTraceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}
		for _, v := range []*queue.Task{retried, failed, replayed, got} {
			require.Equal(t, want, v.Metadata)
		}
		// On the bucket it is one JSON object; a task without metadata
		// has no field at all, so older objects read the same.
		body, err := queue.EncodeTask(got)
		require.NoError(t, err)
		var raw map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(body, &raw))
		require.JSONEq(t, `{"tenant":"acme","traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}`, string(raw["metadata"]))
		plain := b.submit(t, "m", `{}`)
		body, err = queue.EncodeTask(plain)
		require.NoError(t, err)
		require.NotContains(t, string(body), "metadata")
	})
}
