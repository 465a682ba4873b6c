package devenv

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/worker"
)

func TestDemoCycle(t *testing.T) {
	t.Parallel()
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	builtins := worker.Builtins()
	kinds := map[string]bool{}
	for n := 0; n < len(demoCycle); n++ {
		req := demoRequest(n, now)
		require.Contains(t, builtins, req.Type, "demo tasks run on the built-in handlers")
		require.True(t, json.Valid(req.Input), "input %s", req.Input)
		require.NotNil(t, req.MaxRetries)
		var in struct {
			Mode string `json:"mode"`
		}
		_ = json.Unmarshal(req.Input, &in)
		switch {
		case !req.AvailableAt.IsZero():
			require.True(t, req.AvailableAt.After(now))
			kinds["delayed"] = true
		case req.Type == worker.BuiltinFail && in.Mode == "permanent":
			kinds["permanent"] = true
		case req.Type == worker.BuiltinFail:
			require.Positive(t, *req.MaxRetries, "a retryable demo failure is retried")
			kinds["retryable"] = true
		case req.Type == worker.BuiltinSleep:
			kinds["sleep"] = true
		case req.Type == worker.BuiltinEcho:
			kinds["echo"] = true
		}
	}
	require.Len(t, kinds, 5, "every kind of demo task is in the cycle: %v", kinds)
	require.Equal(t, demoRequest(0, now).Input, demoRequest(len(demoCycle), now).Input, "the cycle repeats")
}
