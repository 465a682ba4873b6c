package worker

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
)

func TestBuiltins(t *testing.T) {
	t.Parallel()
	cancelled, cancel := context.WithCancelCause(context.Background())
	cancel(ErrCancelRequested)
	tests := []struct {
		name      string
		typ       string
		ctx       context.Context
		input     string
		wantOut   string
		wantErr   error
		permanent bool
	}{
		{name: "echo", typ: BuiltinEcho, input: `{"a":[1,"b"]}`, wantOut: `{"a":[1,"b"]}`},
		{name: "echo empty", typ: BuiltinEcho, input: ``},
		{name: "sleep", typ: BuiltinSleep, input: `{"ms":1}`, wantOut: `{"slept_ms":1}`},
		{name: "sleep honours ctx", typ: BuiltinSleep, ctx: cancelled, input: `{"ms":600000}`, wantErr: ErrCancelRequested},
		{name: "sleep bad input", typ: BuiltinSleep, input: `{"seconds":1}`, permanent: true},
		{name: "fail default retryable", typ: BuiltinFail, input: `{}`},
		{name: "fail permanent", typ: BuiltinFail, input: `{"mode":"permanent"}`, permanent: true},
		{name: "fail unknown mode", typ: BuiltinFail, input: `{"mode":"sometimes"}`, permanent: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := tc.ctx
			if ctx == nil {
				ctx = context.Background()
			}
			out, err := Builtins()[tc.typ](ctx, &queue.Task{Type: tc.typ, Input: json.RawMessage(tc.input)})
			switch {
			case tc.typ == BuiltinFail || tc.permanent || tc.wantErr != nil:
				require.Error(t, err)
				require.Equal(t, tc.permanent, IsPermanent(err))
				if tc.wantErr != nil {
					require.True(t, errors.Is(err, tc.wantErr), "%v", err)
				}
			default:
				require.NoError(t, err)
				if tc.wantOut == "" {
					require.Nil(t, out)
				} else {
					require.JSONEq(t, tc.wantOut, string(out))
				}
			}
		})
	}
}
