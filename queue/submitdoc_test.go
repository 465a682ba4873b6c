package queue_test

import (
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store/storetest"
)

func TestDecodeSubmit(t *testing.T) {
	t.Parallel()
	at := time.Date(2031, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name    string
		doc     string
		wantErr string
		check   func(t *testing.T, d queue.SubmitDoc)
	}{
		{"defaults", `{"type":"email","input":{"to":"a"}}`, "", func(t *testing.T, d queue.SubmitDoc) {
			require.Equal(t, "email", d.Request.Type)
			require.JSONEq(t, `{"to":"a"}`, string(d.Request.Input))
			require.Equal(t, queue.DefaultTimeout, d.Request.Timeout)
			require.Equal(t, queue.DefaultMaxRetries, *d.Request.MaxRetries)
		}},
		{"every field", `{"task_type":"email","timeout_seconds":30,"max_retries":0,"delay":"90s","idempotency_key":"k1","retry_policy":{"initial_interval_ms":10}}`, "", func(t *testing.T, d queue.SubmitDoc) {
			require.Equal(t, 30*time.Second, d.Request.Timeout)
			require.Equal(t, 0, *d.Request.MaxRetries)
			require.Equal(t, 90*time.Second, d.Delay)
			require.Equal(t, "k1", d.Request.IdempotencyKey)
			require.Equal(t, int64(10), d.Request.RetryPolicy.InitialIntervalMS)
			require.Equal(t, queue.DefaultRetryPolicy.MaxIntervalMS, d.Request.RetryPolicy.MaxIntervalMS)
		}},
		{"available_at", `{"type":"e","available_at":"2031-01-02T03:04:05Z"}`, "", func(t *testing.T, d queue.SubmitDoc) {
			require.Equal(t, at, d.Request.AvailableAt)
		}},
		{"metadata", `{"type":"e","metadata":{"tenant":"acme","traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}}`, "", func(t *testing.T, d queue.SubmitDoc) {
			require.Equal(t, map[string]string{"tenant": "acme", "traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}, d.Request.Metadata)
		}},
		{"unique while active", `{"type":"e","idempotency_key":"k","unique_while_active":true}`, "", func(t *testing.T, d queue.SubmitDoc) {
			require.True(t, d.Request.UniqueWhileActive)
		}},
		{"unique for", `{"type":"e","idempotency_key":"k","unique_for":"10m"}`, "", func(t *testing.T, d queue.SubmitDoc) {
			require.Equal(t, 10*time.Minute, d.Request.UniqueFor)
		}},
		{"unique without key", `{"type":"e","unique_for":"10m"}`, "need an idempotency_key", nil},
		{"unique both", `{"type":"e","idempotency_key":"k","unique_for":60,"unique_while_active":true}`, "exclude each other", nil},
		{"unique not a bool", `{"type":"e","idempotency_key":"k","unique_while_active":"yes"}`, "want true or false", nil},
		{"metadata not an object", `{"type":"e","metadata":["a"]}`, "metadata: want an object of strings", nil},
		{"metadata number value", `{"type":"e","metadata":{"n":1}}`, "metadata: every value must be a string", nil},
		{"metadata bad key", `{"type":"e","metadata":{"a/b":"x"}}`, `metadata key "a/b" contains "/"`, nil},
		{"not JSON", `{"type":`, "not valid JSON", nil},
		{"not an object", `[1]`, "want a JSON object", nil},
		{"unknown field", `{"type":"e","prio":"high"}`, `unknown field "prio"`, nil},
		{"priority and expiry", `{"type":"e","priority":"HIGH","expires_in":"10m","delay":"1m"}`, "", func(t *testing.T, d queue.SubmitDoc) {
			require.Equal(t, queue.PriorityHigh, d.Request.Priority)
			require.Equal(t, 10*time.Minute, d.ExpiresIn)
			req := d.Resolve(at)
			require.Equal(t, at.Add(time.Minute), req.AvailableAt)
			require.Equal(t, at.Add(11*time.Minute), req.ExpiresAt, "expires_in counts from availability")
		}},
		{"expiry without delay", `{"type":"e","expires_in":"1ms"}`, "", func(t *testing.T, d queue.SubmitDoc) {
			req := d.Resolve(at)
			require.Equal(t, at, req.AvailableAt, "available from the same clock reading")
			require.Equal(t, at.Add(time.Millisecond), req.ExpiresAt)
		}},
		{"expires_at", `{"type":"e","expires_at":"2031-01-02T03:04:05Z"}`, "", func(t *testing.T, d queue.SubmitDoc) {
			require.Equal(t, at, d.Request.ExpiresAt)
		}},
		{"bad priority", `{"type":"e","priority":"urgent"}`, "priority: unknown priority", nil},
		{"numeric priority", `{"type":"e","priority":1}`, "priority: want a string", nil},
		{"both expiries", `{"type":"e","expires_in":"1m","expires_at":"2031-01-02T03:04:05Z"}`, "not both", nil},
		{"zero expires_in", `{"type":"e","expires_in":0}`, "must be positive", nil},
		{"after", `{"type":"e","after":["0b6f4c2e-8d1a-4f7e-9c3b-2a5d6e7f8a9b"],"on_parent_failure":"run"}`, "", func(t *testing.T, d queue.SubmitDoc) {
			require.Equal(t, []uuid.UUID{uuid.MustParse("0b6f4c2e-8d1a-4f7e-9c3b-2a5d6e7f8a9b")}, d.Request.After)
			require.Equal(t, queue.ParentFailureRun, d.Request.OnParentFailure)
		}},
		{"after not a list", `{"type":"e","after":"0b6f4c2e-8d1a-4f7e-9c3b-2a5d6e7f8a9b"}`, "after: want an array of task ids", nil},
		{"after bad id", `{"type":"e","after":["nope"]}`, "after: \"nope\" is not a task id", nil},
		{"policy without after", `{"type":"e","on_parent_failure":"fail"}`, `needs "after"`, nil},
		{"bad policy", `{"type":"e","after":["0b6f4c2e-8d1a-4f7e-9c3b-2a5d6e7f8a9b"],"on_parent_failure":"skip"}`, "want cancel, fail or run", nil},
		{"missing type", `{"input":1}`, `missing "type"`, nil},
		{"bad type", `{"type":"has space"}`, "type:", nil},
		{"wrong field type", `{"type":"e","max_retries":"3"}`, "max_retries: want a whole number, got a string", nil},
		{"negative retries", `{"type":"e","max_retries":-1}`, "negative", nil},
		{"short timeout", `{"type":"e","timeout_seconds":0}`, "below the 1 second minimum", nil},
		{"delay and available_at", `{"type":"e","delay":1,"available_at":"2031-01-02T03:04:05Z"}`, "not both", nil},
		{"bad time", `{"type":"e","available_at":"tomorrow"}`, "RFC 3339", nil},
		{"two values", `{"type":"e"} {}`, "more than one JSON value", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d, err := queue.DecodeSubmit([]byte(tt.doc), queue.DefaultSubmitDefaults)
			if tt.wantErr != "" {
				require.Error(t, err)
				require.True(t, errors.Is(err, queue.ErrInvalidInput), "%v wraps ErrInvalidInput", err)
				require.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err)
			tt.check(t, d)
		})
	}
}

func TestSubmitRefusesNonUTF8(t *testing.T) {
	t.Parallel()
	b := setup(t, storetest.Backends()[0])
	_, _, err := b.q.Submit(b.ctx, queue.SubmitRequest{Type: "e", Input: []byte("{\"name\":\"caf\xe9\"}")})
	require.ErrorIs(t, err, queue.ErrInvalidInput)
	require.Contains(t, err.Error(), "UTF-8")
	require.Empty(t, b.keys(t, queue.TasksPrefix), "nothing written")
}

// A short expiry resolved a moment before the submit (as qo submit
// --expires-in and the HTTP API do) is still after the availability.
func TestShortExpiryResolvedBeforeSubmit(t *testing.T) {
	t.Parallel()
	b := setup(t, storetest.Backends()[0])
	req := queue.SubmitDoc{Request: queue.SubmitRequest{Type: "e"}, ExpiresIn: time.Millisecond}.Resolve(b.q.Now())
	b.clock.Advance(5 * time.Millisecond)
	task, _, err := b.q.Submit(b.ctx, req)
	require.NoError(t, err)
	require.True(t, task.ExpiresAt.After(task.AvailableAt))
}
