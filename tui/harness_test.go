package tui

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"
	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/queue/control"
	"github.com/qo-queue/qo/queue/registry"
	"github.com/qo-queue/qo/queue/schedule"
	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/store/memstore"
	"github.com/qo-queue/qo/store/storetest"
)

func TestMain(m *testing.M) {
	// Golden files are plain text: no colour, whatever the terminal.
	lipgloss.SetColorProfile(termenv.Ascii)
	os.Exit(m.Run())
}

// epoch is the fixed time every console test starts at.
var epoch = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// harness runs the console model synchronously: every command runs at once
// and its message goes straight back into Update; timers never fire.
type harness struct {
	t     *testing.T
	ctx   context.Context
	q     *queue.Queue
	raw   store.Store
	clock *storetest.Clock
	m     *Model
	quit  bool
	ids   map[string]*queue.Task // seeded tasks by name
	// leases holds the leases of seeded tasks left running, by name.
	leases map[string]*queue.Lease
}

func newHarness(t *testing.T, s store.Store, opts Options) *harness {
	t.Helper()
	ctx := context.Background()
	clock := storetest.NewClock(epoch)
	if s == nil {
		s = memstore.New(memstore.WithClock(clock))
	}
	if _, err := queue.Init(ctx, s, 1); err != nil && !strings.Contains(err.Error(), "already") {
		require.NoError(t, err)
	}
	q, err := queue.Open(ctx, s, queue.Options{Clock: clock, NewID: queue.SequentialIDs("console")})
	require.NoError(t, err)
	h := &harness{t: t, ctx: ctx, q: q, raw: s, clock: clock, ids: map[string]*queue.Task{}, leases: map[string]*queue.Lease{}}
	h.newModel(opts)
	return h
}

// newModel (re)creates the model at 100x30 without running Init.
func (h *harness) newModel(opts Options) {
	h.t.Helper()
	if opts.Clock == nil {
		opts.Clock = h.clock
	}
	m, err := New(queue.WithActor(h.ctx, harnessActor), h.q, opts)
	require.NoError(h.t, err)
	m.tick = func(time.Duration, func(time.Time) tea.Msg) tea.Cmd { return nil }
	m.SetSize(100, 30)
	h.m = m
}

// run executes cmd and everything it leads to.
func (h *harness) run(cmd tea.Cmd) {
	if cmd == nil {
		return
	}
	msg := cmd()
	switch msg := msg.(type) {
	case nil:
	case tea.BatchMsg:
		for _, c := range msg {
			h.run(c)
		}
	case tea.QuitMsg:
		h.quit = true
	default:
		_, next := h.m.Update(msg)
		h.run(next)
	}
}

func (h *harness) init() *harness { h.run(h.m.Init()); return h }

// keyMsg turns a key name into a key message.
func keyMsg(k string) tea.KeyMsg {
	named := map[string]tea.KeyType{
		"enter": tea.KeyEnter, "esc": tea.KeyEsc, "tab": tea.KeyTab, "up": tea.KeyUp, "down": tea.KeyDown,
		"left": tea.KeyLeft, "right": tea.KeyRight, "ctrl+c": tea.KeyCtrlC, "home": tea.KeyHome, "end": tea.KeyEnd,
		"pgdown": tea.KeyPgDown, "pgup": tea.KeyPgUp, "backspace": tea.KeyBackspace, "space": tea.KeySpace,
	}
	if t, ok := named[k]; ok {
		if t == tea.KeySpace {
			return tea.KeyMsg{Type: tea.KeySpace, Runes: []rune{' '}}
		}
		return tea.KeyMsg{Type: t}
	}
	return tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(k)}
}

// press sends keys one after another.
func (h *harness) press(keys ...string) *harness {
	for _, k := range keys {
		_, cmd := h.m.Update(keyMsg(k))
		h.run(cmd)
	}
	return h
}

func (h *harness) view() string { return h.m.View() }

// seed fills the queue with a task in every state and three workers, all
// with fixed ids and times so views are reproducible.
func (h *harness) seed() *harness {
	t := h.t
	submit := func(name, typ, input string, at time.Time) *queue.Task {
		task, _, err := h.q.Submit(h.ctx, queue.SubmitRequest{Type: typ, Input: json.RawMessage(input), IdempotencyKey: name, AvailableAt: at, Timeout: time.Minute})
		require.NoError(t, err)
		h.ids[name] = task
		return task
	}
	claim := func(task *queue.Task, worker string) *queue.Lease {
		e, err := queue.ParseReadyKey(queue.ReadyKey(task))
		require.NoError(t, err)
		l, err := h.q.Claim(h.ctx, e, worker)
		require.NoError(t, err)
		return l
	}
	done := submit("done", "send_email", `{"to":"ada@example.com","subject":"Welcome","tags":["new","vip"]}`, time.Time{})
	failed := submit("failed", "send_email", `{"to":"bob@example.com"}`, time.Time{})
	running := submit("running", "resize_image", `{"src":"s3://in/cat.png","w":640}`, time.Time{})
	submit("waiting", "resize_image", `{"src":"s3://in/dog.png"}`, time.Time{})
	submit("later", "report", `{"month":"2029-12"}`, epoch.Add(10*time.Minute))
	cancelled := submit("cancelled", "report", `{}`, time.Time{})
	archived := submit("archived", "send_email", `{"to":"eve@example.com"}`, time.Time{})
	h.clock.Advance(30 * time.Second)
	_, err := h.q.Complete(h.ctx, claim(done, "worker-a"), json.RawMessage(`{"message_id":"m-1"}`))
	require.NoError(t, err)
	_, err = h.q.Fail(h.ctx, claim(failed, "worker-a"), "smtp: 550 mailbox unavailable")
	require.NoError(t, err)
	claim(running, "worker-a")
	_, err = h.q.Cancel(h.ctx, cancelled.ID, "not needed")
	require.NoError(t, err)
	_, err = h.q.Complete(h.ctx, claim(archived, "worker-b"), nil)
	require.NoError(t, err)
	_, err = h.q.Archive(h.ctx, archived.ID)
	require.NoError(t, err)
	for name, task := range h.ids {
		got, err := h.q.Get(h.ctx, task.ID)
		require.NoError(t, err)
		h.ids[name] = got
	}
	now := h.clock.Now()
	var recent queue.MinuteCounter
	for i, n := range []int{3, 5, 2, 8, 6} {
		recent.Add(now.Add(time.Duration(i-4)*time.Minute), n, i%2)
	}
	reqs := store.Counts{OK: map[store.Op]int64{store.OpPut: 100, store.OpGet: 50, store.OpList: 20}}
	for _, w := range []queue.WorkerInfo{
		{ID: "worker-a", StartedAt: now.Add(-time.Hour), LastHeartbeat: now.Add(-5 * time.Second), CurrentTasks: []string{running.ID.String()},
			Types: []string{"send_email", "resize_image"}, Concurrency: 4, TasksCompleted: 41, TasksFailed: 2, Host: "node-1", PID: 4242, Version: "v1.2.3", Requests: &reqs,
			Recent: recent.Snapshot(now), Holds: map[string]int{"send_email": 2, "rate:send_email": 30}},
		{ID: "worker-b", StartedAt: now.Add(-2 * time.Hour), LastHeartbeat: now.Add(-90 * time.Second), Shards: []string{"0", "1"}, Concurrency: 2, TasksCompleted: 7, Host: "node-2", PID: 17},
		{ID: "worker-gone", StartedAt: now.Add(-24 * time.Hour), LastHeartbeat: now.Add(-20 * time.Minute), Concurrency: 1, Host: "node-3", PID: 9},
	} {
		w := w
		require.NoError(t, registry.Put(h.ctx, h.q, &w))
	}
	return h
}

// heartbeat moves worker-a's request counters on, as its next heartbeat
// would.
func (h *harness) heartbeat(extra int64) {
	ws, err := registry.List(h.ctx, h.q)
	require.NoError(h.t, err)
	for _, w := range ws {
		if w.ID == "worker-a" {
			r := w.Requests.Add(store.Counts{OK: map[store.Op]int64{store.OpPut: extra}})
			w.Requests = &r
			w.LastHeartbeat = h.clock.Now()
			require.NoError(h.t, registry.Put(h.ctx, h.q, w))
		}
	}
}

// features adds what the beyond-the-core features show: a paused type, two
// schedules (one disabled), a high-priority task and a task whose input is
// offloaded to its own object.
func (h *harness) features() *harness {
	t := h.t
	_, err := control.Pause(h.ctx, h.q, "report", "month end")
	require.NoError(t, err)
	_, err = control.SetLimit(h.ctx, h.q, "send_email", 5)
	require.NoError(t, err)
	_, err = control.SetRate(h.ctx, h.q, "send_email", 20, time.Second, 0)
	require.NoError(t, err)
	_, err = control.SetKeyLimit(h.ctx, h.q, "report", 3)
	require.NoError(t, err)
	_, err = control.SetKeyRate(h.ctx, h.q, "report", 10, time.Second, 0)
	require.NoError(t, err)
	_, err = schedule.Create(h.ctx, h.q, schedule.Spec{Name: "nightly", Cron: "30 2 * * *", Timezone: "Europe/Berlin",
		Task: schedule.Task{Type: "report", Input: json.RawMessage(`{"kind":"daily"}`)}})
	require.NoError(t, err)
	_, err = schedule.Create(h.ctx, h.q, schedule.Spec{Name: "poll", Cron: "*/5 * * * *", Disabled: true, Missed: schedule.MissedSkip,
		Task: schedule.Task{Type: "poll"}})
	require.NoError(t, err)
	urgent, _, err := h.q.Submit(h.ctx, queue.SubmitRequest{Type: "send_email", IdempotencyKey: "urgent", Priority: queue.PriorityHigh,
		Input: json.RawMessage(`{"to":"ops@example.com"}`), ExpiresAt: h.clock.Now().Add(10 * time.Minute)})
	require.NoError(t, err)
	h.ids["urgent"] = urgent
	small, err := queue.Open(h.ctx, h.raw, queue.Options{Clock: h.clock, OffloadThreshold: 16, NewID: queue.SequentialIDs("console-offload")})
	require.NoError(t, err)
	big, _, err := small.Submit(h.ctx, queue.SubmitRequest{Type: "bulk_import", IdempotencyKey: "big",
		Input: json.RawMessage(`{"rows":["alpha","beta","gamma"]}`)})
	require.NoError(t, err)
	require.NotNil(t, big.InputRef)
	h.ids["big"] = big
	return h
}

// harnessActor is who the console's writes name in tests: fixed, so that
// screens do not depend on the machine's user and host.
const harnessActor = "op@console, qo tui"
