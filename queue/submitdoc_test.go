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
		check   func(t *testing.T, d queue.SubmitRequest)
	}{
		{"defaults", `{"type":"email","input":{"to":"a"}}`, "", func(t *testing.T, d queue.SubmitRequest) {
			require.Equal(t, "email", d.Type)
			require.JSONEq(t, `{"to":"a"}`, string(d.Input))
			require.Equal(t, queue.DefaultTimeout, d.Timeout)
			require.Equal(t, queue.DefaultMaxRetries, *d.MaxRetries)
		}},
		{"every field", `{"task_type":"email","timeout_seconds":30,"max_retries":0,"delay":"90s","idempotency_key":"k1","retry_policy":{"initial_interval_ms":10}}`, "", func(t *testing.T, d queue.SubmitRequest) {
			require.Equal(t, 30*time.Second, d.Timeout)
			require.Equal(t, 0, *d.MaxRetries)
			require.Equal(t, 90*time.Second, d.Delay)
			require.Equal(t, "k1", d.IdempotencyKey)
			require.Equal(t, int64(10), d.RetryPolicy.InitialIntervalMS)
			require.Equal(t, queue.DefaultRetryPolicy.MaxIntervalMS, d.RetryPolicy.MaxIntervalMS)
		}},
		{"available_at", `{"type":"e","available_at":"2031-01-02T03:04:05Z"}`, "", func(t *testing.T, d queue.SubmitRequest) {
			require.Equal(t, at, d.AvailableAt)
		}},
		{"metadata", `{"type":"e","metadata":{"tenant":"acme","traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}}`, "", func(t *testing.T, d queue.SubmitRequest) {
			require.Equal(t, map[string]string{"tenant": "acme", "traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}, d.Metadata)
		}},
		{"unique while active", `{"type":"e","idempotency_key":"k","unique_while_active":true}`, "", func(t *testing.T, d queue.SubmitRequest) {
			require.True(t, d.UniqueWhileActive)
		}},
		{"unique for", `{"type":"e","idempotency_key":"k","unique_for":"10m"}`, "", func(t *testing.T, d queue.SubmitRequest) {
			require.Equal(t, 10*time.Minute, d.UniqueFor)
		}},
		{"unique without key", `{"type":"e","unique_for":"10m"}`, `"unique_while_active" and "unique_for" need "idempotency_key"`, nil},
		{"unique both", `{"type":"e","idempotency_key":"k","unique_for":60,"unique_while_active":true}`, "exclude each other", nil},
		{"unique not a bool", `{"type":"e","idempotency_key":"k","unique_while_active":"yes"}`, "want true or false", nil},
		{"metadata not an object", `{"type":"e","metadata":["a"]}`, "metadata: want an object of strings", nil},
		{"metadata number value", `{"type":"e","metadata":{"n":1}}`, "metadata: every value must be a string", nil},
		{"metadata bad key", `{"type":"e","metadata":{"a/b":"x"}}`, `metadata key "a/b" contains "/"`, nil},
		{"not JSON", `{"type":`, "not valid JSON", nil},
		{"not an object", `[1]`, "want a JSON object", nil},
		{"unknown field", `{"type":"e","prio":"high"}`, `unknown field "prio"`, nil},
		{"priority and expiry", `{"type":"e","priority":"HIGH","expires_in":"10m","delay":"1m"}`, "", func(t *testing.T, d queue.SubmitRequest) {
			require.Equal(t, queue.PriorityHigh, d.Priority)
			require.Equal(t, 10*time.Minute, d.ExpiresIn)
			req := d.Resolve(at)
			require.Equal(t, at.Add(time.Minute), req.AvailableAt)
			require.Equal(t, at.Add(11*time.Minute), req.ExpiresAt, "expires_in counts from availability")
		}},
		{"expiry without delay", `{"type":"e","expires_in":"1ms"}`, "", func(t *testing.T, d queue.SubmitRequest) {
			req := d.Resolve(at)
			require.Equal(t, at, req.AvailableAt, "available from the same clock reading")
			require.Equal(t, at.Add(time.Millisecond), req.ExpiresAt)
		}},
		{"expires_at", `{"type":"e","expires_at":"2031-01-02T03:04:05Z"}`, "", func(t *testing.T, d queue.SubmitRequest) {
			require.Equal(t, at, d.ExpiresAt)
		}},
		{"bad priority", `{"type":"e","priority":"urgent"}`, `"priority": unknown priority "urgent"`, nil},
		{"numeric priority", `{"type":"e","priority":1}`, "priority: want a string", nil},
		{"both expiries", `{"type":"e","expires_in":"1m","expires_at":"2031-01-02T03:04:05Z"}`, "not both", nil},
		{"negative expires_in", `{"type":"e","expires_in":-1}`, `"expires_in" -1s must be positive`, nil},
		{"after", `{"type":"e","after":["0b6f4c2e-8d1a-4f7e-9c3b-2a5d6e7f8a9b"],"on_parent_failure":"run"}`, "", func(t *testing.T, d queue.SubmitRequest) {
			require.Equal(t, []uuid.UUID{uuid.MustParse("0b6f4c2e-8d1a-4f7e-9c3b-2a5d6e7f8a9b")}, d.After)
			require.Equal(t, queue.ParentFailureRun, d.OnParentFailure)
		}},
		{"after not a list", `{"type":"e","after":"0b6f4c2e-8d1a-4f7e-9c3b-2a5d6e7f8a9b"}`, "after: want an array of task ids", nil},
		{"after bad id", `{"type":"e","after":["nope"]}`, "after: \"nope\" is not a task id", nil},
		{"policy without after", `{"type":"e","on_parent_failure":"fail"}`, `needs "after"`, nil},
		{"bad policy", `{"type":"e","after":["0b6f4c2e-8d1a-4f7e-9c3b-2a5d6e7f8a9b"],"on_parent_failure":"skip"}`, "want cancel, fail or run", nil},
		{"missing type", `{"input":1}`, `missing "type"`, nil},
		{"bad type", `{"type":"has space"}`, `"type": task type "has space"`, nil},
		{"wrong field type", `{"type":"e","max_retries":"3"}`, "max_retries: want a whole number, got a string", nil},
		{"negative retries", `{"type":"e","max_retries":-1}`, "negative", nil},
		{"short timeout", `{"type":"e","timeout_seconds":-1}`, `"timeout_seconds" -1s is below the 1s minimum`, nil},
		{"delay and available_at", `{"type":"e","delay":1,"available_at":"2031-01-02T03:04:05Z"}`, "not both", nil},
		{"bad time", `{"type":"e","available_at":"tomorrow"}`, "RFC 3339", nil},
		{"two values", `{"type":"e"} {}`, "more than one JSON value", nil},
		{"null object", `null`, "want a JSON object, got null", nil},
		{"field names are exact", `{"type":"e","Type":"f"}`, `unknown field "Type" (known: type, task_type, input,`, nil},
		{"type and task_type", `{"type":"e","task_type":"f"}`, `give either "type" or "task_type", not both`, nil},
		{"null is absent", `{"type":"e","max_retries":null,"delay":null,"metadata":null}`, "", func(t *testing.T, d queue.SubmitRequest) {
			require.Equal(t, queue.DefaultMaxRetries, *d.MaxRetries)
			require.Zero(t, d.Delay)
			require.Nil(t, d.Metadata)
		}},
		{"durations as seconds", `{"type":"e","delay":1.5,"expires_in":60,"unique_for":"2m","idempotency_key":"k"}`, "", func(t *testing.T, d queue.SubmitRequest) {
			require.Equal(t, 1500*time.Millisecond, d.Delay)
			require.Equal(t, time.Minute, d.ExpiresIn)
			require.Equal(t, 2*time.Minute, d.UniqueFor)
		}},
		{"zero delay", `{"type":"e","delay":0}`, "", func(t *testing.T, d queue.SubmitRequest) { require.Zero(t, d.Delay) }},
		{"zero timeout", `{"type":"e","timeout_seconds":0}`, `"timeout_seconds" 0 must be positive (leave it out for the default)`, nil},
		{"zero expiry", `{"type":"e","expires_in":"0s"}`, `"expires_in" 0 must be positive`, nil},
		{"zero window", `{"type":"e","idempotency_key":"k","unique_for":0}`, `"unique_for" 0 must be positive`, nil},
		{"bad duration", `{"type":"e","expires_in":"soon"}`, `expires_in "soon" is not a duration (e.g. "90s", "1h30m", or a number of seconds)`, nil},
		{"duration of a wrong type", `{"type":"e","unique_for":true}`, "unique_for: want a duration string or a number of seconds, got a boolean", nil},
		{"time of a wrong type", `{"type":"e","available_at":5}`, "available_at: want a string, got a number", nil},
		{"fraction of retries", `{"type":"e","max_retries":1.5}`, "max_retries: want a whole number, got 1.5", nil},
		{"policy of a wrong type", `{"type":"e","retry_policy":5}`, "retry_policy: want a JSON object, got a JSON number", nil},
		{"unknown policy field", `{"type":"e","retry_policy":{"factor":2}}`, `retry_policy: unknown field "factor"`, nil},
		{"input not UTF-8", "{\"type\":\"e\",\"input\":\"caf\xe9\"}", `"input" is not valid UTF-8`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d, err := queue.DecodeSubmit([]byte(tt.doc), queue.DefaultSubmitDefaults)
			if err == nil {
				require.NoError(t, d.Validate(), "what the decoder returns is valid")
			}
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

// A document's field of a pair replaces both of the defaults': a line's
// available_at overrides a default --delay rather than clash with it.
func TestDecodeSubmitPairsReplaceDefaults(t *testing.T) {
	t.Parallel()
	def := queue.DefaultSubmitDefaults
	def.Type, def.Delay, def.ExpiresIn = "e", time.Hour, time.Minute
	d, err := queue.DecodeSubmit([]byte(`{"available_at":"2031-01-02T03:04:05Z","expires_at":"2031-01-02T04:04:05Z"}`), def)
	require.NoError(t, err)
	require.Zero(t, d.Delay)
	require.Zero(t, d.ExpiresIn)
	require.Equal(t, time.Date(2031, 1, 2, 3, 4, 5, 0, time.UTC), d.AvailableAt)
	d, err = queue.DecodeSubmit([]byte(`{"input":1}`), def)
	require.NoError(t, err)
	require.Equal(t, time.Hour, d.Delay, "a line without them keeps the defaults")
	require.Equal(t, "e", d.Type)
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
	req := queue.SubmitRequest{Type: "e", ExpiresIn: time.Millisecond}.Resolve(b.q.Now())
	b.clock.Advance(5 * time.Millisecond)
	task, _, err := b.q.Submit(b.ctx, req)
	require.NoError(t, err)
	require.True(t, task.ExpiresAt.After(task.AvailableAt))
}
