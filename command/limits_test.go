package command

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store"
)

// qo init records the payload limit; qo submit refuses an input over it
// with the bad-input exit code and writes nothing; qo stats stays up with
// an oversized worker record and names it; qo status of an oversized task
// says what is wrong.
func TestSizeLimitsCLI(t *testing.T) {
	t.Parallel()
	q := newQueueCLI(t)
	out := q.ok("init", "--max-payload-bytes", "100")
	require.Contains(t, out, "up to 100 bytes each")
	require.Contains(t, q.ok("init", "--max-payload-bytes", "100", "--json"), `"max_payload_bytes": 100`)

	puts := q.puts()
	code, _, errs := q.run("submit", "--type", "t", "--input", `"`+strings.Repeat("a", 100)+`"`)
	require.Equal(t, exitUsage, code, errs)
	require.Contains(t, errs, "input is 102 bytes, over this queue's limit of 100 bytes")
	require.Contains(t, errs, "--max-payload-bytes")
	require.Equal(t, puts, q.puts(), "nothing written")
	q.task("submit", "--type", "t", "--input", `"`+strings.Repeat("a", 98)+`"`)

	ctx := context.Background()
	big := queue.WorkerKey("big")
	_, err := q.s.Put(ctx, big, bytes.Repeat([]byte(" "), 1<<20+1), store.Condition{})
	require.NoError(t, err)
	out = q.ok("stats")
	require.Contains(t, out, "1 malformed objects skipped")
	require.Contains(t, out, big+": too large: 1048577 bytes, over the limit of 1048576 bytes")

	qq, err := queue.Open(ctx, q.s, queue.Options{})
	require.NoError(t, err)
	id := queue.NewID()
	_, err = q.s.Put(ctx, qq.TaskKey(id), bytes.Repeat([]byte(" "), 6<<20+1), store.Condition{})
	require.NoError(t, err)
	code, _, errs = q.run("status", id.String())
	require.NotEqual(t, 0, code)
	require.Contains(t, errs, qq.TaskKey(id))
	require.Contains(t, errs, "over the limit of 6291456 bytes")
}
