//go:build unix

package worker

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/queue/registry"
	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/store/memstore"
	"github.com/qo-queue/qo/store/storetest"
)

// putLog is a store that counts its PUTs by key.
type putLog struct {
	store.Store
	mu   sync.Mutex
	puts map[string]int
}

func (s *putLog) Put(ctx context.Context, key string, body []byte, cond store.Condition) (store.PutResult, error) {
	s.mu.Lock()
	if s.puts == nil {
		s.puts = map[string]int{}
	}
	s.puts[key]++
	s.mu.Unlock()
	return s.Store.Put(ctx, key, body, cond)
}

func (s *putLog) total() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.puts {
		n += c
	}
	return n
}

// Reports cost no request: however many a handler makes, the store sees
// only the heartbeat's PUT, which carries the latest.
func TestReportProgressCostsNoWrite(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := &putLog{Store: memstore.New()}
	_, err := queue.Init(ctx, s, 1)
	require.NoError(t, err)
	q, err := queue.Open(ctx, s, queue.Options{Logger: testLogger(t)})
	require.NoError(t, err)
	bd := &bundle{s: s, q: q}
	o := bd.opts(t)
	// No heartbeat on its own while the test runs: only the one below.
	o.HeartbeatInterval, o.DeadAfter = time.Hour, 3*time.Hour
	w := New(q, o)
	reported := make(chan int) // PUTs while reporting
	release := make(chan struct{})
	w.Handle("long", func(ctx context.Context, _ *queue.Task) (json.RawMessage, error) {
		before := s.total()
		for i := 1; i <= 10000; i++ {
			if err := ReportProgress(ctx, float64(i)/10000, "step "+strings.Repeat("x", i%5)); err != nil {
				return nil, err
			}
		}
		reported <- s.total() - before
		<-release
		return nil, nil
	})
	task := bd.submit(t, "long", `{}`)
	r := start(t, w)
	require.Zero(t, <-reported, "PUTs while the handler reported 10,000 times")

	before := s.total()
	require.NoError(t, w.Heartbeat(ctx))
	require.Equal(t, 1, s.total()-before, "a heartbeat is one PUT, progress included")
	running := bd.get(t, task.ID)
	p, err := registry.TaskProgress(ctx, q, running)
	require.NoError(t, err)
	require.NotNil(t, p)
	require.Equal(t, 1.0, p.Fraction)
	require.Equal(t, "step ", p.Message)
	require.Equal(t, running.Attempt, p.Attempt)

	close(release)
	done := bd.waitStatus(t, task.ID, queue.StatusCompleted)
	p, err = registry.TaskProgress(ctx, q, done)
	require.NoError(t, err)
	require.Nil(t, p, "progress belongs to a running attempt")
	require.NoError(t, r.stop(t))
}

// waitProgress waits until a running task's progress, as readers see it,
// has msg.
func (bd *bundle) waitProgress(t *testing.T, id uuid.UUID, msg string) *queue.Task {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		task, err := bd.q.Get(context.Background(), id)
		require.NoError(t, err)
		task, err = registry.WithProgress(context.Background(), bd.q, task)
		require.NoError(t, err)
		if task.Progress != nil && task.Progress.Message == msg {
			return task
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s: progress %q never shown (last: %+v)", id, msg, task.Progress)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A running task shows its handler's latest report, by the next heartbeat.
func TestProgressShownWhileRunning(t *testing.T) {
	t.Parallel()
	bd := setup(t, storetest.Backends()[0], setupOpts{})
	w := New(bd.q, bd.opts(t))
	steps := make(chan string)
	w.Handle("long", func(ctx context.Context, _ *queue.Task) (json.RawMessage, error) {
		f := 0.0
		for msg := range steps {
			f += 0.25
			if err := ReportProgress(ctx, f, msg); err != nil {
				return nil, err
			}
		}
		return nil, nil
	})
	task := bd.submit(t, "long", `{}`)
	r := start(t, w)
	steps <- "downloading"
	got := bd.waitProgress(t, task.ID, "downloading")
	require.Equal(t, 0.25, got.Progress.Fraction)
	steps <- "resizing"
	got = bd.waitProgress(t, task.ID, "resizing")
	require.Equal(t, 0.5, got.Progress.Fraction)
	close(steps)
	bd.waitStatus(t, task.ID, queue.StatusCompleted)
	stored, err := bd.s.Get(context.Background(), task.Key())
	require.NoError(t, err)
	require.NotContains(t, string(stored.Body), `"progress"`, "progress is never written to the task object")
	require.NoError(t, r.stop(t))
}

// An exec handler reports by appending lines to QO_PROGRESS_FILE.
func TestExecProgress(t *testing.T) {
	t.Parallel()
	bd := setup(t, storetest.Backends()[0], setupOpts{})
	w := New(bd.q, bd.opts(t))
	gate := filepath.Join(t.TempDir(), "go-on")
	w.Handle("resize", Exec([]string{script(t, `
echo "0.1 starting" >> "$QO_PROGRESS_FILE"
echo "not a report" >> "$QO_PROGRESS_FILE"
echo "42% resized 42 of 100" >> "$QO_PROGRESS_FILE"
printf '0.9 half-written' >> "$QO_PROGRESS_FILE"
while [ ! -e "$1" ]; do sleep 0.02; done`), gate}, ExecOptions{}))
	task := bd.submit(t, "resize", `{}`)
	r := start(t, w)
	got := bd.waitProgress(t, task.ID, "resized 42 of 100")
	require.InDelta(t, 0.42, got.Progress.Fraction, 1e-9)
	require.NoError(t, os.WriteFile(gate, nil, 0o600))
	bd.waitStatus(t, task.ID, queue.StatusCompleted)

	// Overwriting works as well as appending.
	gate2 := filepath.Join(t.TempDir(), "go-on")
	w2 := New(bd.q, bd.opts(t))
	w2.Handle("resize2", Exec([]string{script(t, `
echo "0.5 first" > "$QO_PROGRESS_FILE"
echo "0.75 second" > "$QO_PROGRESS_FILE"
while [ ! -e "$1" ]; do sleep 0.02; done`), gate2}, ExecOptions{}))
	task2 := bd.submit(t, "resize2", `{}`)
	r2 := start(t, w2)
	got = bd.waitProgress(t, task2.ID, "second")
	require.Equal(t, 0.75, got.Progress.Fraction)
	require.NoError(t, os.WriteFile(gate2, nil, 0o600))
	bd.waitStatus(t, task2.ID, queue.StatusCompleted)
	require.NoError(t, r2.stop(t))
	require.NoError(t, r.stop(t))
}

func TestReportProgressRefusesBadReports(t *testing.T) {
	t.Parallel()
	rt := &runningTask{now: time.Now}
	ctx := context.WithValue(context.Background(), runningTaskKey{}, rt)
	for _, tc := range []struct {
		name     string
		fraction float64
		msg      string
	}{
		{"NaN", math.NaN(), ""},
		{"negative", -0.1, ""},
		{"over one", 1.01, ""},
		{"long message", 0.5, strings.Repeat("a", queue.MaxProgressMessage+1)},
		{"escape sequence", 0.5, "\x1b[2Jcleared"},
		{"newline", 0.5, "two\nlines"},
		{"not UTF-8", 0.5, "\xff"},
	} {
		err := ReportProgress(ctx, tc.fraction, tc.msg)
		require.ErrorIs(t, err, queue.ErrInvalidInput, tc.name)
	}
	require.Nil(t, rt.progressNow(), "a refused report is not kept")
	require.NoError(t, ReportProgress(ctx, 1, strings.Repeat("é", queue.MaxProgressMessage/2)))
	require.ErrorIs(t, ReportProgress(context.Background(), 0.5, "x"), ErrNoRunningTask)
}

func TestParseProgressLine(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		line     string
		fraction float64
		msg      string
		bad      bool
	}{
		{line: "0.42 resized 42 of 100", fraction: 0.42, msg: "resized 42 of 100"},
		{line: "42%", fraction: 0.42},
		{line: "100% done\r", fraction: 1, msg: "done"},
		{line: "1", fraction: 1},
		{line: "", bad: true},
		{line: "halfway", bad: true},
		{line: "150%", bad: true},
		{line: "-0.5 back", bad: true},
		{line: "0.5 \x07bell", bad: true},
	} {
		f, msg, err := ParseProgressLine(tc.line)
		if tc.bad {
			require.ErrorIs(t, err, queue.ErrInvalidInput, "%q", tc.line)
			continue
		}
		require.NoError(t, err, "%q", tc.line)
		require.InDelta(t, tc.fraction, f, 1e-9, "%q", tc.line)
		require.Equal(t, tc.msg, msg, "%q", tc.line)
	}
}
