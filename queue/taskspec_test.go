package queue_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store/storetest"
)

// Every rule of the task spec, with the fields it names and its words.
func TestSubmitRequestValidate(t *testing.T) {
	t.Parallel()
	at := time.Date(2031, 1, 2, 3, 4, 5, 0, time.UTC)
	n := func(i int) *int { return &i }
	id := uuid.MustParse("0b6f4c2e-8d1a-4f7e-9c3b-2a5d6e7f8a9b")
	tests := []struct {
		name   string
		req    queue.SubmitRequest
		fields []string // nil: valid
		want   string
	}{
		{"minimal", queue.SubmitRequest{Type: "t"}, nil, ""},
		{"every field", queue.SubmitRequest{Type: "t", Input: json.RawMessage(`{"a":1}`), Timeout: time.Second, MaxRetries: n(0),
			RetryPolicy: &queue.DefaultRetryPolicy, Delay: time.Minute, IdempotencyKey: "k", UniqueFor: time.Hour, Priority: "HIGH",
			Key: "c-1", ExpiresIn: time.Minute, After: []uuid.UUID{id}, OnParentFailure: queue.ParentFailureRun,
			Metadata: map[string]string{"tenant": "acme"}}, nil, ""},
		{"zero values are defaults", queue.SubmitRequest{Type: "t", Timeout: 0, UniqueFor: 0, ExpiresIn: 0}, nil, ""},
		{"no type", queue.SubmitRequest{}, []string{"type"}, `missing "type" (the task type a worker handles)`},
		{"bad type", queue.SubmitRequest{Type: "a b"}, []string{"type"}, `"type": task type "a b" contains " "`},
		{"input not JSON", queue.SubmitRequest{Type: "t", Input: json.RawMessage(`{`)}, []string{"input"}, `"input" is not valid JSON (unexpected end of JSON input)`},
		{"input not UTF-8", queue.SubmitRequest{Type: "t", Input: json.RawMessage("\"caf\xe9\"")}, []string{"input"}, `"input" is not valid UTF-8`},
		{"short timeout", queue.SubmitRequest{Type: "t", Timeout: time.Millisecond}, []string{"timeout_seconds"}, `"timeout_seconds" 1ms is below the 1s minimum`},
		{"negative timeout", queue.SubmitRequest{Type: "t", Timeout: -time.Second}, []string{"timeout_seconds"}, `"timeout_seconds" -1s is below the 1s minimum`},
		{"negative retries", queue.SubmitRequest{Type: "t", MaxRetries: n(-1)}, []string{"max_retries"}, `"max_retries" -1 is negative (0 runs the task once)`},
		{"bad policy", queue.SubmitRequest{Type: "t", RetryPolicy: &queue.RetryPolicy{Multiplier: 0.5}}, []string{"retry_policy"}, `"retry_policy": retry policy: multiplier 0.5`},
		{"negative delay", queue.SubmitRequest{Type: "t", Delay: -time.Second}, []string{"delay"}, `"delay" -1s is negative`},
		{"long key", queue.SubmitRequest{Type: "t", IdempotencyKey: strings.Repeat("k", queue.MaxIdempotencyKeyLen+1)}, []string{"idempotency_key"}, `"idempotency_key" is 257 bytes long (at most 256)`},
		{"negative unique_for", queue.SubmitRequest{Type: "t", IdempotencyKey: "k", UniqueFor: -time.Second}, []string{"unique_for"}, `"unique_for" -1s is negative`},
		{"negative expiry", queue.SubmitRequest{Type: "t", ExpiresIn: -time.Second}, []string{"expires_in"}, `"expires_in" -1s must be positive (leave it out for a task that never expires)`},
		{"bad priority", queue.SubmitRequest{Type: "t", Priority: "urgent"}, []string{"priority"}, `"priority": unknown priority "urgent"`},
		{"bad key", queue.SubmitRequest{Type: "t", Key: "a/b"}, []string{"key"}, `"key": task key "a/b" contains "/"`},
		{"parent twice", queue.SubmitRequest{Type: "t", After: []uuid.UUID{id, id}}, []string{"after"}, `"after": parent ` + id.String() + ` is listed twice`},
		{"bad policy choice", queue.SubmitRequest{Type: "t", After: []uuid.UUID{id}, OnParentFailure: "skip"}, []string{"on_parent_failure"}, `want cancel, fail or run`},
		{"bad metadata", queue.SubmitRequest{Type: "t", Metadata: map[string]string{"a/b": "x"}}, []string{"metadata"}, `"metadata": metadata key "a/b" contains "/"`},
		{"delay and available_at", queue.SubmitRequest{Type: "t", Delay: time.Second, AvailableAt: at}, []string{"delay", "available_at"}, `give either "delay" or "available_at", not both`},
		{"window without key", queue.SubmitRequest{Type: "t", UniqueWhileActive: true}, []string{"unique_while_active", "unique_for", "idempotency_key"}, `"unique_while_active" and "unique_for" need "idempotency_key": the window applies to that key`},
		{"two windows", queue.SubmitRequest{Type: "t", IdempotencyKey: "k", UniqueWhileActive: true, UniqueFor: time.Second}, []string{"unique_while_active", "unique_for"}, `"unique_while_active" and "unique_for" exclude each other: give one`},
		{"two expiries", queue.SubmitRequest{Type: "t", ExpiresIn: time.Second, ExpiresAt: at}, []string{"expires_in", "expires_at"}, `give either "expires_in" or "expires_at", not both`},
		{"expiry before availability", queue.SubmitRequest{Type: "t", AvailableAt: at, ExpiresAt: at}, []string{"expires_at", "available_at"}, `"expires_at" is not after "available_at": the task could never run`},
		{"policy without parents", queue.SubmitRequest{Type: "t", OnParentFailure: queue.ParentFailureFail}, []string{"on_parent_failure", "after"}, `"on_parent_failure" needs "after"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := tt.req.Validate()
			if tt.fields == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, queue.ErrInvalidInput)
			var se *queue.SpecError
			require.True(t, errors.As(err, &se), "%v is a *SpecError", err)
			require.Equal(t, tt.fields, se.Fields)
			require.Contains(t, err.Error(), tt.want)
		})
	}
}

// SpecError words its fields with the names of the way in (the flags).
func TestSpecErrorIn(t *testing.T) {
	t.Parallel()
	err := queue.SubmitRequest{Type: "t", Delay: time.Second, AvailableAt: time.Now()}.Validate()
	var se *queue.SpecError
	require.True(t, errors.As(err, &se))
	flag := map[string]string{"delay": "--delay", "available_at": "--at"}
	require.Equal(t, "invalid input: give either --delay or --at, not both", se.In(func(f string) string { return flag[f] }))
	// A value holding a percent sign is kept as written.
	err = queue.SubmitRequest{Type: "t", Key: "50%"}.Validate()
	require.True(t, errors.As(err, &se))
	require.Contains(t, se.In(func(f string) string { return "--" + f }), `--key: task key "50%" contains "%"`)
}

// Submit checks the request with Validate, whatever the way in.
func TestSubmitValidates(t *testing.T) {
	t.Parallel()
	b := setup(t, storetest.Backends()[0])
	_, _, err := b.q.Submit(b.ctx, queue.SubmitRequest{Type: "t", ExpiresIn: -time.Second})
	var se *queue.SpecError
	require.True(t, errors.As(err, &se), "%v", err)
	require.Equal(t, []string{"expires_in"}, se.Fields)
	require.Empty(t, b.keys(t, queue.TasksPrefix), "nothing written")
}
