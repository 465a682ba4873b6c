package queue_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"testing/iotest"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/store/storetest"
)

// TestParseBulkLine: every problem of a line is reported with its number,
// on one line.
func TestParseBulkLine(t *testing.T) {
	t.Parallel()
	tests := []struct {
		line string
		want string // error substring; "" = valid
	}{
		{`{"type":"a"}`, ""},
		{`{"type":"a","input":null,"delay":null}`, ""},
		{`{"type":"a","delay":"1h","available_at":"2030-01-01T00:00:00Z"}`, `give either "delay" or "available_at", not both`},
		{`{"type":"a","delay":"soon"}`, `delay "soon" is not a duration`},
		{`{"type":"a","delay":-5}`, "negative"},
		{`{"type":"a","delay":true}`, "want a duration string or a number of seconds, got a boolean"},
		{`{"type":"a","available_at":"tomorrow"}`, "RFC 3339"},
		{`{"type":"a","timeout_seconds":-1}`, `"timeout_seconds" -1s is below the 1s minimum`},
		{`{"type":"a","timeout_seconds":1.5}`, "want a whole number, got 1.5"},
		{`{"type":"a","timeout_seconds":"10"}`, "want a whole number, got a string"},
		{`{"type":"a","max_retries":-1}`, "negative"},
		{`{"type":"a","retry_policy":{"multiplier":0.5}}`, "multiplier"},
		{`{"type":"a","retry_policy":{"factor":2}}`, "retry_policy"},
		{`{"type":"a","idempotency_key":5}`, "idempotency_key: want a string, got a number"},
		{`{"type":"a","idempotency_key":"` + strings.Repeat("k", queue.MaxIdempotencyKeyLen+1) + `"}`, "bytes long"},
		{`{"type":"a","task_type":"b"}`, `either "type" or "task_type"`},
		{`{"input":{}}`, `missing "type" (the task type a worker handles; or pass --type)`},
		{`{"type":"a b"}`, `"type": task type "a b" contains " "`},
		{`{"type":1}`, "type: want a string, got a number"},
		{`{"type":"a"} {"type":"b"}`, "more than one JSON value"},
		{`[1,2]`, "want a JSON object, got a JSON array"},
		{`null`, "want a JSON object, got null"},
		{`"a"`, "want a JSON object, got a JSON string"},
		{`{"type":"a",}`, "not valid JSON"},
		{`{"type":"a"`, "not valid JSON"},
		{`{"type":"a","Type":"b"}`, `unknown field "Type"`},
	}
	def := queue.DefaultSubmitDefaults
	def.TypeHint = "or pass --type"
	for _, tc := range tests {
		t.Run(tc.line, func(t *testing.T) {
			t.Parallel()
			items, bad, err := queue.ParseBulk(strings.NewReader("\n"+tc.line+"\n"), def)
			require.NoError(t, err)
			if tc.want == "" {
				require.Empty(t, bad)
				require.Len(t, items, 1)
				require.Equal(t, 2, items[0].Line)
				return
			}
			require.Len(t, bad, 1)
			require.Equal(t, 2, bad[0].Line)
			require.Contains(t, bad[0].Error, tc.want)
			require.NotContains(t, bad[0].Error, "\n")
			require.False(t, strings.HasPrefix(bad[0].Error, "invalid input"), bad[0].Error)
		})
	}
}

func TestParseBulk(t *testing.T) {
	t.Parallel()
	def := queue.DefaultSubmitDefaults
	def.Type = "default_type"
	t.Run("lines", func(t *testing.T) {
		t.Parallel()
		text := strings.Join([]string{
			`{"input":1}`,
			``,
			`   `,
			`  {"type":"b","idempotency_key":"k","input":{"a":1,"b":2}}  ` + "\r",
			`{"type":"b","idempotency_key":"k","input":{"b":2,"a":1}}`, // same key, same input: fine
			`{"type":"c","idempotency_key":"k","input":1}`,             // another type: another key
			`{"type":"b","idempotency_key":"k","input":{"a":2}}`,       // same key, another input
			`{"type":"b","input":`,
		}, "\n") // no newline after the last line
		items, bad, err := queue.ParseBulk(strings.NewReader(text), def)
		require.NoError(t, err)
		var lines []int
		for _, it := range items {
			lines = append(lines, it.Line)
		}
		require.Equal(t, []int{1, 4, 5, 6, 7}, lines)
		require.Equal(t, "default_type", items[0].Request.Type)
		require.Equal(t, []queue.LineError{
			{Line: 7, Error: `idempotency key "k" of type "b" is used on line 4 with a different input`},
			{Line: 8, Error: "not valid JSON: unexpected end of input"},
		}, bad)
	})
	t.Run("line too long", func(t *testing.T) {
		t.Parallel()
		long := `{"type":"a","input":"` + strings.Repeat("x", queue.MaxBulkLine) + `"}`
		items, bad, err := queue.ParseBulk(strings.NewReader(`{"type":"a"}`+"\n"+long+"\n"+`{"type":"a"}`), def)
		require.NoError(t, err)
		require.Len(t, items, 1)
		require.Equal(t, []queue.LineError{{Line: 2, Error: "line longer than 16 MiB"}}, bad)
	})
	t.Run("read error", func(t *testing.T) {
		t.Parallel()
		_, _, err := queue.ParseBulk(iotest.ErrReader(errBoom), def)
		require.ErrorIs(t, err, errBoom)
	})
}

// TestSubmitBulk submits 300 lines of every shape, including duplicates in
// the stream and keys used before it, twice.
func TestSubmitBulk(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, be storetest.Backend) {
		b := setup(t, be)
		// Keys used before the run: one with the same input (a duplicate),
		// one with another input (that line fails).
		retries := 1
		for _, key := range []string{"pre-same", "pre-other"} {
			_, _, err := b.q.Submit(b.ctx, queue.SubmitRequest{Type: "charge", Input: json.RawMessage(`{"n":1}`), IdempotencyKey: key, MaxRetries: &retries})
			require.NoError(t, err)
		}
		var lines []string
		want := map[string]int{}
		add := func(kind, line string) {
			lines = append(lines, line)
			want[kind]++
		}
		for i := 0; i < 280; i++ {
			switch i % 7 {
			case 0:
				add("new", fmt.Sprintf(`{"type":"resize","input":{"w":%d}}`, i))
			case 1:
				add("new", fmt.Sprintf(`{"input":{"i":%d}}`, i)) // the default type
			case 2:
				add("new", fmt.Sprintf(`{"task_type":"mail","input":"to-%d","timeout_seconds":30,"max_retries":0}`, i))
			case 3:
				add("new", fmt.Sprintf(`{"type":"later","delay":"1h","input":%d}`, i))
			case 4:
				add("new", fmt.Sprintf(`{"type":"later","available_at":"2031-01-02T03:04:05Z","input":[%d]}`, i))
			case 5:
				add("new", fmt.Sprintf(`{"type":"keyed","idempotency_key":"k-%d","input":{"i":%d},"retry_policy":{"multiplier":3}}`, i, i))
			case 6:
				add("new", `{"type":"resize","delay":2.5}`)
			}
		}
		for i := 0; i < 10; i++ {
			add("dup", fmt.Sprintf(`{"type":"keyed","idempotency_key":"k-%d","input":{"i":%d}}`, i*7+5, i*7+5))
		}
		add("dup", `{"type":"charge","idempotency_key":"pre-same","input":{"n":1}}`)
		add("fail", `{"type":"charge","idempotency_key":"pre-other","input":{"n":2}}`)
		def := queue.DefaultSubmitDefaults
		def.Type, def.MaxRetries = "default_type", new(int)
		*def.MaxRetries = 2
		items, bad, err := queue.ParseBulk(strings.NewReader(strings.Join(lines, "\n")), def)
		require.NoError(t, err)
		require.Empty(t, bad)

		var progress []int
		res := b.q.SubmitBulk(b.ctx, items, queue.BulkOptions{Concurrency: 8, Progress: func(done, total int) {
			require.Equal(t, len(items), total)
			progress = append(progress, done)
		}})
		require.NoError(t, res.Stopped)
		require.Len(t, progress, len(items))
		require.Equal(t, len(items), progress[len(progress)-1])
		sum := res.Summary()
		require.Equal(t, want["new"], sum.Submitted)
		require.Equal(t, want["dup"], sum.Duplicates)
		require.Equal(t, 1, sum.Failed)
		require.Zero(t, sum.Skipped)
		require.Len(t, sum.IDs, sum.Submitted+sum.Duplicates)
		require.Len(t, sum.Errors, 1)
		require.Equal(t, len(lines), sum.Errors[0].Line)
		require.Contains(t, sum.Errors[0].Error, "different input")
		first, ok := res.FirstFailure()
		require.True(t, ok)
		require.ErrorIs(t, first.Err, queue.ErrIdempotencyMismatch)
		unique := map[uuid.UUID]bool{}
		for _, id := range sum.IDs {
			unique[id] = true
		}
		require.Len(t, unique, sum.Submitted+1, "duplicates repeat ids (+1: pre-same)")

		// The ids are in line order: check a few lines' tasks.
		check := func(idx int, fn func(*queue.Task)) {
			task, err := b.q.Get(b.ctx, sum.IDs[idx])
			require.NoError(t, err)
			fn(task)
		}
		check(0, func(task *queue.Task) {
			require.Equal(t, "resize", task.Type)
			require.JSONEq(t, `{"w":0}`, string(task.Input))
			require.Equal(t, 2, task.MaxRetries)
			require.Equal(t, int(queue.DefaultTimeout/time.Second), task.TimeoutSeconds)
		})
		check(1, func(task *queue.Task) { require.Equal(t, "default_type", task.Type) })
		check(2, func(task *queue.Task) {
			require.Equal(t, "mail", task.Type)
			require.Equal(t, 30, task.TimeoutSeconds)
			require.Equal(t, 0, task.MaxRetries)
		})
		check(3, func(task *queue.Task) { require.Equal(t, b.q.Now().Add(time.Hour), task.AvailableAt) })
		check(4, func(task *queue.Task) {
			require.Equal(t, time.Date(2031, 1, 2, 3, 4, 5, 0, time.UTC), task.AvailableAt.UTC())
		})
		check(5, func(task *queue.Task) {
			require.Equal(t, "k-5", task.IdempotencyKey)
			require.Equal(t, 3.0, task.RetryPolicy.Multiplier)
		})
		// A line repeating an earlier line's key shares its task.
		require.Equal(t, sum.IDs[5], sum.IDs[280])

		// The same lines again: keyed ones are duplicates now, the others
		// new tasks, and the conflicting one fails the same way.
		sum = b.q.SubmitBulk(b.ctx, items, queue.BulkOptions{}).Summary()
		require.Equal(t, 240, sum.Submitted)
		require.Equal(t, 51, sum.Duplicates)
		require.Equal(t, 1, sum.Failed)
	})
}

// TestSubmitBulkKeyReuse: items sharing a key with other inputs, given
// without ParseBulk, fail without being sent, and a line whose key's
// first line failed fails with it.
func TestSubmitBulkKeyReuse(t *testing.T) {
	t.Parallel()
	b := setup(t, storetest.Backends()[0])
	doc := func(line int, typ, key, input string) queue.BulkItem {
		return queue.BulkItem{Line: line, Request: queue.SubmitRequest{Type: typ, IdempotencyKey: key, Input: json.RawMessage(input)}}
	}
	before := b.counts()
	res := b.q.SubmitBulk(b.ctx, []queue.BulkItem{
		doc(1, "t", "k", `1`),
		doc(2, "t", "k", `2`),
		doc(3, "bad type", "x", `1`),
		doc(4, "bad type", "x", `1`),
	}, queue.BulkOptions{})
	require.NoError(t, res.Stopped)
	require.NoError(t, res.Lines[0].Err)
	require.True(t, res.Lines[0].Created)
	require.ErrorIs(t, res.Lines[1].Err, queue.ErrIdempotencyMismatch)
	require.Contains(t, res.Lines[1].Err.Error(), "used on line 1 with a different input")
	require.ErrorIs(t, res.Lines[2].Err, queue.ErrInvalidInput)
	require.EqualError(t, res.Lines[3].Err, "not submitted: line 3 with the same idempotency key failed")
	require.Equal(t, int64(3), b.counts().Sub(before).Total(store.OpPut), "only line 1 wrote: its marker, entry and task")
}

// brokenPuts is a bucket that became unreachable for writes.
type brokenPuts struct {
	store.Store
	puts atomic.Int64
}

func (f *brokenPuts) Put(ctx context.Context, key string, body []byte, cond store.Condition) (store.PutResult, error) {
	f.puts.Add(1)
	return store.PutResult{}, fmt.Errorf("put %s: %w", key, store.ErrUnreachable)
}

// TestSubmitBulkStops: a storage error or the end of ctx stops the run;
// the items not attempted are skipped.
func TestSubmitBulkStops(t *testing.T) {
	t.Parallel()
	var items []queue.BulkItem
	for i := 0; i < 200; i++ {
		items = append(items, queue.BulkItem{Line: i + 1, Request: queue.SubmitRequest{Type: "t", Input: json.RawMessage(fmt.Sprint(i))}})
	}
	t.Run("storage error", func(t *testing.T) {
		t.Parallel()
		b := setup(t, storetest.Backends()[0])
		broken := &brokenPuts{Store: b.raw}
		q, err := queue.Open(b.ctx, broken, queue.Options{})
		require.NoError(t, err)
		res := q.SubmitBulk(b.ctx, items, queue.BulkOptions{Concurrency: 2})
		require.ErrorIs(t, res.Stopped, store.ErrUnreachable)
		sum := res.Summary()
		require.Zero(t, sum.Submitted)
		require.GreaterOrEqual(t, sum.Failed, 1)
		require.Positive(t, sum.Skipped)
		require.Equal(t, 200, sum.Failed+sum.Skipped)
		require.Less(t, broken.puts.Load(), int64(10), "the run stopped instead of failing every line")
	})
	t.Run("context ends", func(t *testing.T) {
		t.Parallel()
		b := setup(t, storetest.Backends()[0])
		ctx, cancel := context.WithCancel(b.ctx)
		cancel()
		res := b.q.SubmitBulk(ctx, items, queue.BulkOptions{})
		require.True(t, errors.Is(res.Stopped, context.Canceled), "%v", res.Stopped)
		sum := res.Summary()
		require.Zero(t, sum.Submitted)
		require.Equal(t, 200, sum.Failed+sum.Skipped)
	})
}
