package queue_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/store/storetest"
)

type emailArgs struct {
	To string `json:"to"`
}

func (emailArgs) Kind() string { return "send_email" }

// badArgs cannot be encoded as JSON.
type badArgs struct{ F func() }

func (badArgs) Kind() string { return "bad" }

// TestSubmitArgs: the args give the task's type and input; a request
// that contradicts them, or args that do not encode, is refused before
// anything is written.
func TestSubmitArgs(t *testing.T) {
	t.Parallel()
	b := setup(t, storetest.Backends()[0])
	tests := []struct {
		name string
		args queue.Args
		req  queue.SubmitRequest
		err  string
	}{
		{"type and input from the args", emailArgs{To: "ada@example.com"}, queue.SubmitRequest{Priority: queue.PriorityHigh}, ""},
		{"the same type given twice is fine", emailArgs{To: "bob@example.com"}, queue.SubmitRequest{Type: "send_email", Priority: queue.PriorityLow}, ""},
		{"another type", emailArgs{}, queue.SubmitRequest{Type: "send_mail"}, `request type "send_mail" differs from the args' kind "send_email"`},
		{"input given too", emailArgs{}, queue.SubmitRequest{Input: json.RawMessage(`{}`)}, "Input is set"},
		{"not encodable", badArgs{}, queue.SubmitRequest{}, "encode queue_test.badArgs as JSON"},
		{"nil args", nil, queue.SubmitRequest{}, "nil args"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := b.counts()
			task, created, err := b.q.SubmitArgs(b.ctx, tc.args, tc.req)
			if tc.err != "" {
				require.ErrorIs(t, err, queue.ErrInvalidInput)
				require.ErrorContains(t, err, tc.err)
				require.Zero(t, b.counts().OK[store.OpPut]-before.OK[store.OpPut], "nothing written")
				return
			}
			require.NoError(t, err)
			require.True(t, created)
			got := b.get(t, task)
			require.Equal(t, "send_email", got.Type)
			require.Equal(t, tc.req.Priority, got.Priority)
			var in emailArgs
			require.NoError(t, json.Unmarshal(got.Input, &in))
			require.Equal(t, tc.args, in)
		})
	}
}
