package command

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/store/memstore"
)

// eventLine matches one human tail line.
func eventLine(event, typ string, id uuid.UUID, rest string) *regexp.Regexp {
	return regexp.MustCompile(`(?m)^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z ` + regexp.QuoteMeta(event) + ` +` +
		regexp.QuoteMeta(typ+" "+id.String()+" "+rest) + `$`)
}

// waitLine waits until stdout has a line matching re.
func (r *asyncRun) waitLine(re *regexp.Regexp) {
	r.t.Helper()
	eventually(r.t, "a line matching "+re.String(), func() bool { return re.MatchString(r.out.String()) })
}

// TestTailQueue follows the whole queue through its indexes while tasks are
// submitted, claimed, finished, retried and cancelled one step at a time.
func TestTailQueue(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *cliEnv) {
		ctx := t.Context()
		old := e.submit("old", "", 0) // there before tail: never printed

		run := e.start("tail", "--interval", "10ms", "--count", "7")
		eventually(t, "tail to record the queue", func() bool {
			return strings.Contains(run.errb.String(), "following every task from now on (1 pending, 0 running)")
		})
		if _, ok := e.s.(*memstore.Store); ok {
			// An idle queue costs 2 LISTs per poll and nothing else.
			before := e.counts()
			eventually(t, "idle polls", func() bool { return e.counts().Sub(before).Total(store.OpList) >= 10 })
			idle := e.counts().Sub(before)
			require.Equal(t, idle.Total(store.OpList), idle.OK[store.OpList], "only LISTs while idle: %s", idle)
			for _, op := range store.Ops {
				if op != store.OpList {
					require.Zero(t, idle.Total(op), "only LISTs while idle: %s", idle)
				}
			}
		}

		a := e.submit("resize", `{"w":1}`, 0)
		run.waitLine(eventLine("enqueued", "resize", a.ID, "attempt=0 worker=-"))
		la := e.claim(a.ID, "w7")
		run.waitLine(eventLine("claimed", "resize", a.ID, "attempt=1 worker=w7"))
		_, err := e.q.Complete(ctx, la, json.RawMessage(`{"ok":1}`))
		require.NoError(t, err)
		run.waitLine(eventLine("succeeded", "resize", a.ID, "attempt=1 worker=w7"))

		b := e.submit("mail", "", 1)
		run.waitLine(eventLine("enqueued", "mail", b.ID, "attempt=0 worker=-"))
		lb := e.claim(b.ID, "w8")
		run.waitLine(eventLine("claimed", "mail", b.ID, "attempt=1 worker=w8"))
		_, err = e.q.Retry(ctx, lb, "smtp down", time.Hour)
		require.NoError(t, err)
		run.waitLine(eventLine("retried", "mail", b.ID, `attempt=1 worker=w8 error="smtp down"`))
		_, err = e.q.Cancel(ctx, b.ID, "give up")
		require.NoError(t, err)

		require.Equal(t, 0, run.exit(), "stderr: %s", run.errb)
		out := run.out.String()
		require.Regexp(t, eventLine("cancelled", "mail", b.ID, "attempt=1 worker=-"), out)
		require.Len(t, strings.Split(strings.TrimSpace(out), "\n"), 7, out)
		require.NotContains(t, out, old.ID.String())
		require.NotContains(t, out, "missed=")
	})
}

type tailJSONEvent struct {
	At       time.Time    `json:"at"`
	Event    string       `json:"event"`
	Type     string       `json:"task_type"`
	ID       uuid.UUID    `json:"id"`
	Status   queue.Status `json:"status"`
	Attempt  int          `json:"attempt"`
	WorkerID string       `json:"worker_id"`
	Rev      int64        `json:"rev"`
	Error    string       `json:"error"`
	Missed   int64        `json:"missed"`
}

func parseTailJSON(t *testing.T, out string) []tailJSONEvent {
	t.Helper()
	var evs []tailJSONEvent
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var ev tailJSONEvent
		require.NoError(t, json.Unmarshal([]byte(line), &ev), line)
		evs = append(evs, ev)
	}
	return evs
}

// TestTailTasks follows two tasks by id: history first, then each new
// version, until both are done.
func TestTailTasks(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *cliEnv) {
		ctx := t.Context()
		a := e.submit("resize", `{"w":1}`, 2)
		b := e.submit("mail", "", 0)
		lb := e.claim(b.ID, "w2") // before tail: part of b's history

		run := e.start("tail", a.ID.String(), b.ID.String(), "--interval", "10ms", "--until-done", "--json")
		run.waitOutput(`"event":"claimed"`)
		la := e.claim(a.ID, "w1")
		eventually(t, "a claimed", func() bool { return strings.Count(run.out.String(), `"event":"claimed"`) == 2 })
		require.NoError(t, e.q.Extend(ctx, la))
		run.waitOutput(`"event":"lease_extended"`)
		_, err := e.q.Retry(ctx, la, "try again", time.Millisecond)
		require.NoError(t, err)
		run.waitOutput(`"event":"retried"`)
		_, err = e.q.Fail(ctx, lb, "broken")
		require.NoError(t, err)
		run.waitOutput(`"event":"failed"`)
		_, err = e.q.Cancel(ctx, a.ID, "")
		require.NoError(t, err)
		require.Equal(t, 0, run.exit(), "stderr: %s", run.errb)

		type step struct {
			event, worker string
			id            uuid.UUID
			attempt       int
		}
		var got []step
		for _, ev := range parseTailJSON(t, run.out.String()) {
			got = append(got, step{ev.Event, ev.WorkerID, ev.ID, ev.Attempt})
			require.Zero(t, ev.Missed)
		}
		// The history (sorted by time), then the new events in order.
		require.ElementsMatch(t, []step{
			{"enqueued", "", a.ID, 0}, {"enqueued", "", b.ID, 0}, {"claimed", "w2", b.ID, 1},
		}, got[:3])
		require.Equal(t, []step{
			{"claimed", "w1", a.ID, 1},
			{"lease_extended", "w1", a.ID, 1},
			{"retried", "w1", a.ID, 1},
			{"failed", "w2", b.ID, 1},
			{"cancelled", "", a.ID, 1},
		}, got[3:])
		evs := parseTailJSON(t, run.out.String())
		require.Equal(t, "try again", evs[5].Error)
		require.Equal(t, "broken", evs[6].Error)
		require.Equal(t, queue.StatusCancelled, evs[7].Status)
	})
}

// TestTailInterrupt: Ctrl+C ends qo tail with exit code 0.
func TestTailInterrupt(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no SIGINT to send on Windows")
	}
	q := newQueueCLI(t)
	q.ok("init")
	id := strings.TrimSpace(q.ok("submit", "--type", "t"))
	e := q.cli()
	run := e.start("tail", id, "--interval", "10ms")
	// The first line comes from the command, so runApp's signal handler
	// is installed by now.
	run.waitOutput("enqueued")
	p, err := os.FindProcess(os.Getpid())
	require.NoError(t, err)
	require.NoError(t, p.Signal(os.Interrupt))
	require.Equal(t, 0, run.exit(), "stderr: %s", run.errb)
	require.Empty(t, run.errb.String())
}

func TestHumanEvent(t *testing.T) {
	t.Parallel()
	id := uuid.MustParse("0b6f4c2e-8d1a-4f7e-9c3b-2a5d6e7f8a9b")
	at := time.Date(2025, 6, 1, 8, 0, 0, 123e6, time.UTC)
	require.Equal(t, "2025-06-01T08:00:00.123Z retried          mail "+id.String()+` attempt=2 worker=w1 error="smtp: 4.2.0 \"busy\"" missed=1`,
		humanEvent(tailEvent{At: at, Event: "retried", Type: "mail", ID: id, Attempt: 2, WorkerID: "w1",
			Error: "smtp: 4.2.0\n\"busy\"", Missed: 1}))
	require.Equal(t, fmt.Sprintf("2025-06-01T08:00:00.123Z enqueued         t %s attempt=0 worker=-", id),
		humanEvent(tailEvent{At: at, Event: "enqueued", Type: "t", ID: id}))
}
