package command

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"github.com/urfave/cli/v2"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store"
)

// bulkFile builds a JSON Lines file: 300 lines of every shape, including
// in-file duplicates and keys submitted before the run.
type bulkFile struct {
	lines []string
	// want, by line number (1-based): "new", "dup" or "fail"
	want map[int]string
}

func (f *bulkFile) add(kind, line string) {
	f.lines = append(f.lines, line)
	f.want[len(f.lines)] = kind
}

func (f *bulkFile) text() string { return strings.Join(f.lines, "\n") + "\n" }

func (f *bulkFile) count(kind string) int {
	n := 0
	for _, k := range f.want {
		if k == kind {
			n++
		}
	}
	return n
}

type bulkSummaryJSON struct {
	Submitted  int               `json:"submitted"`
	Duplicates int               `json:"duplicates"`
	Failed     int               `json:"failed"`
	Skipped    int               `json:"skipped"`
	IDs        []string          `json:"ids"`
	Errors     []queue.LineError `json:"errors"`
}

func TestBulkSubmit(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *cliEnv) {
		ctx := t.Context()
		// Keys already used before the run: one with the same input (a
		// duplicate), one with another input (that line fails, exit 4).
		retries := 1
		_, _, err := e.q.Submit(ctx, queue.SubmitRequest{Type: "charge", Input: json.RawMessage(`{"n":1}`), IdempotencyKey: "pre-same", MaxRetries: &retries})
		require.NoError(t, err)
		_, _, err = e.q.Submit(ctx, queue.SubmitRequest{Type: "charge", Input: json.RawMessage(`{"n":1}`), IdempotencyKey: "pre-other", MaxRetries: &retries})
		require.NoError(t, err)

		f := &bulkFile{want: map[int]string{}}
		for i := 0; i < 280; i++ {
			switch i % 7 {
			case 0:
				f.add("new", fmt.Sprintf(`{"type":"resize","input":{"w":%d}}`, i))
			case 1:
				f.add("new", fmt.Sprintf(`{"input":{"i":%d}}`, i)) // type from --type
			case 2:
				f.add("new", fmt.Sprintf(`{"task_type":"mail","input":"to-%d","timeout_seconds":30,"max_retries":0}`, i))
			case 3:
				f.add("new", fmt.Sprintf(`{"type":"later","delay":"1h","input":%d}`, i))
			case 4:
				f.add("new", fmt.Sprintf(`{"type":"later","available_at":"2031-01-02T03:04:05Z","input":[%d]}`, i))
			case 5:
				f.add("new", fmt.Sprintf(`{"type":"keyed","idempotency_key":"k-%d","input":{"i":%d},"retry_policy":{"multiplier":3}}`, i, i))
			case 6:
				f.add("new", fmt.Sprintf(`  {"type":"resize","delay":2.5}  `+"\r"))
			}
		}
		f.lines = append(f.lines, "", "   ") // blank lines are skipped
		for i := 0; i < 10; i++ {
			// The same key and input again, in the same file.
			f.add("dup", fmt.Sprintf(`{"type":"keyed","idempotency_key":"k-%d","input":{"i":%d}}`, i*7+5, i*7+5))
		}
		f.add("dup", `{"type":"charge","idempotency_key":"pre-same","input":{"n":1}}`)
		f.add("fail", `{"type":"charge","idempotency_key":"pre-other","input":{"n":2}}`)
		path := filepath.Join(t.TempDir(), "tasks.jsonl")
		require.NoError(t, os.WriteFile(path, []byte(f.text()), 0o644))

		res := e.run("submit", "--file", path, "--type", "default_type", "--concurrency", "8", "--retries", "2")
		require.Equal(t, exitConflict, res.code, res)
		var sum bulkSummaryJSON
		require.NoError(t, json.Unmarshal([]byte(res.stdout), &sum), res)
		require.Equal(t, f.count("new"), sum.Submitted)
		require.Equal(t, f.count("dup"), sum.Duplicates)
		require.Equal(t, 1, sum.Failed)
		require.Zero(t, sum.Skipped)
		require.Len(t, sum.IDs, sum.Submitted+sum.Duplicates)
		failLine := len(f.lines)
		require.Equal(t, []queue.LineError{{Line: failLine, Error: sum.Errors[0].Error}}, sum.Errors)
		require.Contains(t, sum.Errors[0].Error, "different input")
		require.Contains(t, res.stderr, fmt.Sprintf("tasks.jsonl:%d:", failLine))
		lastLine := lastNonEmptyLine(res.stderr)
		require.Contains(t, lastLine, fmt.Sprintf("1 of %d lines failed; first, line %d", len(f.want), failLine))

		// The ids are in file order: check a few lines' tasks.
		unique := map[string]bool{}
		for _, id := range sum.IDs {
			unique[id] = true
		}
		require.Len(t, unique, sum.Submitted+1) // duplicates repeat ids (+1: pre-same)
		check := func(idx int, fn func(*queue.Task)) {
			id, err := uuid.Parse(sum.IDs[idx])
			require.NoError(t, err)
			task, err := e.q.Get(ctx, id)
			require.NoError(t, err)
			fn(task)
		}
		check(0, func(task *queue.Task) {
			require.Equal(t, "resize", task.Type)
			require.JSONEq(t, `{"w":0}`, string(task.Input))
			require.Equal(t, 2, task.MaxRetries) // --retries default
			require.Equal(t, int(queue.DefaultTimeout/time.Second), task.TimeoutSeconds)
		})
		check(1, func(task *queue.Task) { require.Equal(t, "default_type", task.Type) })
		check(2, func(task *queue.Task) {
			require.Equal(t, "mail", task.Type)
			require.Equal(t, 30, task.TimeoutSeconds)
			require.Equal(t, 0, task.MaxRetries)
		})
		check(3, func(task *queue.Task) {
			require.WithinDuration(t, e.q.Now().Add(time.Hour), task.AvailableAt, 10*time.Minute)
		})
		check(4, func(task *queue.Task) {
			require.Equal(t, time.Date(2031, 1, 2, 3, 4, 5, 0, time.UTC), task.AvailableAt.UTC())
		})
		check(5, func(task *queue.Task) {
			require.Equal(t, "k-5", task.IdempotencyKey)
			require.Equal(t, 3.0, task.RetryPolicy.Multiplier)
			require.Equal(t, queue.DefaultRetryPolicy.InitialIntervalMS, task.RetryPolicy.InitialIntervalMS)
		})

		// The same file again: every line is now a duplicate or fails the
		// same way, and nothing new is created.
		res = e.run("submit", "--file", path, "--type", "default_type", "--json")
		require.Equal(t, exitConflict, res.code, res)
		require.NoError(t, json.Unmarshal([]byte(res.stdout), &sum))
		// Lines without a key are new tasks again (240); keyed ones (40
		// in the first part, the 10 repeats and pre-same) are duplicates.
		require.Equal(t, 240, sum.Submitted)
		require.Equal(t, 51, sum.Duplicates)
		require.Equal(t, 1, sum.Failed)
	})
}

func lastNonEmptyLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// TestBulkSubmitRefusesBadFiles: one bad line refuses the whole file, with
// every bad line named, exit 2, and nothing sent to the bucket.
func TestBulkSubmitRefusesBadFiles(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *cliEnv) {
		var lines []string
		for i := 0; i < 300; i++ {
			lines = append(lines, fmt.Sprintf(`{"type":"resize","input":{"w":%d},"idempotency_key":"w%d"}`, i, i))
		}
		lines[9] = `{"type":"resize","input":{"w":1}`                           // line 10: truncated
		lines[99] = `{"type":"resize","timeout":"5m"}`                          // line 100: unknown field
		lines[199] = `{"type":"re size"}`                                       // line 200: bad type
		lines[249] = `{"type":"resize","input":{"w":0},"idempotency_key":"w1"}` // line 250: key reused, other input
		path := filepath.Join(t.TempDir(), "bad.jsonl")
		require.NoError(t, os.WriteFile(path, []byte(strings.Join(lines, "\n")), 0o644))

		before := e.counts()
		res := e.run("submit", "--file", path)
		require.Equal(t, exitUsage, res.code, res)
		require.Empty(t, res.stdout)
		for _, want := range []string{
			"bad.jsonl:10: not valid JSON",
			`bad.jsonl:100: unknown field "timeout"`,
			`bad.jsonl:200: "type": task type`,
			`bad.jsonl:250: idempotency key "w1" of type "resize" is used on line 2 with a different input`,
		} {
			require.Contains(t, res.stderr, want)
		}
		require.Contains(t, lastNonEmptyLine(res.stderr), "4 bad lines (first: line 10:")
		require.Contains(t, lastNonEmptyLine(res.stderr), "nothing submitted")
		diff := e.counts().Sub(before)
		require.Zero(t, diff.Total(store.OpPut), "nothing written: %s", diff)
		require.Zero(t, diff.Total(store.OpGet)+diff.Total(store.OpList), "nothing even read: %s", diff)
	})
}

func TestBulkSubmitStdinAndTerminal(t *testing.T) {
	t.Parallel()
	q := newQueueCLI(t)
	q.ok("init")
	env := q.cli()
	in := "{\"type\":\"a\"}\n{\"type\":\"b\",\"idempotency_key\":\"x\"}\n{\"type\":\"b\",\"idempotency_key\":\"x\"}\n"

	// Not a terminal: the JSON summary.
	res := env.runWithStdin(in, "submit", "--file", "-")
	require.Equal(t, 0, res.code, res)
	var sum bulkSummaryJSON
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &sum))
	require.Equal(t, 2, sum.Submitted)
	require.Equal(t, 1, sum.Duplicates)
	require.Equal(t, sum.IDs[1], sum.IDs[2])
	require.Empty(t, res.stderr)

	// On a terminal: a progress bar on stderr and a human summary.
	res = env.onTerminal().runWithStdin(in, "submit", "--file", "-")
	require.Equal(t, 0, res.code, res)
	require.Equal(t, "submitted 1 task, 2 duplicates (idempotency key already used; not resubmitted) (--json lists the task ids)\n", res.stdout)
	require.Contains(t, res.stderr, "3/3")
	require.Contains(t, res.stderr, "100%")
	require.True(t, strings.HasSuffix(res.stderr, "\n"))
	// --json and --no-progress still win.
	res = env.runWithStdin(in, "submit", "--file", "-", "--json", "--no-progress")
	require.Equal(t, 0, res.code, res)
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &sum))
	require.Equal(t, 1, sum.Submitted) // no key: a new task every time
	require.Equal(t, 2, sum.Duplicates)
	require.Empty(t, res.stderr)
}

// TestBulkSubmitStopsOnStorageErrors: a bucket that fails every write stops
// the run; the lines not attempted are counted as skipped, exit 5.
func TestBulkSubmitStopsOnStorageErrors(t *testing.T) {
	t.Parallel()
	q := newQueueCLI(t)
	q.ok("init")
	broken := &failingPuts{Store: q.s}
	q.env.OpenStore = func(*cli.Context) (store.Store, error) { return broken, nil }
	env := q.cli()
	var b strings.Builder
	for i := 0; i < 200; i++ {
		fmt.Fprintf(&b, "{\"type\":\"t\",\"input\":%d}\n", i)
	}
	res := env.runWithStdin(b.String(), "submit", "--file", "-", "--concurrency", "2")
	require.Equal(t, exitStorage, res.code, res)
	var sum bulkSummaryJSON
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &sum))
	require.Zero(t, sum.Submitted)
	require.GreaterOrEqual(t, sum.Failed, 1)
	require.Positive(t, sum.Skipped)
	require.Equal(t, 200, sum.Failed+sum.Skipped)
	require.Contains(t, lastNonEmptyLine(res.stderr), "not attempted")
	require.Less(t, broken.puts.Load(), int64(10), "the run stopped instead of failing every line")
}

// failingPuts is a store whose bucket became unreachable for writes.
type failingPuts struct {
	store.Store
	puts atomic.Int64
}

func (f *failingPuts) Put(ctx context.Context, key string, body []byte, cond store.Condition) (store.PutResult, error) {
	f.puts.Add(1)
	return store.PutResult{}, fmt.Errorf("put %s: %w", key, store.ErrUnreachable)
}

func TestBulkSubmitBadInput(t *testing.T) {
	t.Parallel()
	q := newQueueCLI(t)
	q.ok("init")
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
		return p
	}
	good := write("good.jsonl", `{"type":"a"}`+"\n")
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"submit", "--file", filepath.Join(dir, "missing.jsonl")}, "no such file"},
		{[]string{"submit", "--file", write("empty.jsonl", "\n\n")}, "holds no tasks"},
		{[]string{"submit", "--file", write("one.jsonl", `{"type":"a"}`+"\n"+`{"type":"a","input":{nope}}`)}, "one.jsonl:2: not valid JSON"},
		{[]string{"submit", "--file", good, "--input", "{}"}, "--input cannot be combined with --file"},
		{[]string{"submit", "--file", good, "--idempotency-key", "k"}, "--idempotency-key cannot be combined"},
		{[]string{"submit", "--file", good, "--concurrency", "0"}, "--concurrency 0"},
		{[]string{"submit", "--file", good, "--type", "a/b"}, "--type:"},
		{[]string{"submit", "--file", good, "--delay", "1h", "--at", "2030-01-01T00:00:00Z"}, "not both"},
		{[]string{"submit", "--file", write("notype.jsonl", `{"input":1}`)}, `missing "type"`},
	}
	for _, tc := range tests {
		t.Run(strings.ReplaceAll(strings.Join(tc.args, " "), dir+string(filepath.Separator), ""), func(t *testing.T) {
			before := q.puts()
			code, out, errs := q.run(tc.args...)
			require.Equal(t, exitUsage, code, "stdout %q stderr %q", out, errs)
			require.Contains(t, errs, tc.want)
			require.Equal(t, 1, strings.Count(strings.TrimSpace(errs), "\n")+1, "one line: %q", errs)
			require.Equal(t, before, q.puts(), "nothing written")
		})
	}
}
