package tui

import (
	"context"
	"errors"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/google/uuid"

	"github.com/qo-queue/qo/monitor"
	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store"
)

// Every read runs in a tea.Cmd and comes back as one of these messages.
// Each carries the sequence number of its request: a response older than
// the newest request of its kind is dropped, so a slow answer never
// overwrites a newer one.

// overviewMsg carries the task counts and the worker registry.
type overviewMsg struct {
	seq       int
	stats     queue.Stats
	workers   []monitor.WorkerHealth
	malformed []queue.MalformedError // malformed worker entries
	err       error
}

// tasksMsg carries one page of the task list.
type tasksMsg struct {
	seq  int
	page queue.TaskPage
	err  error
}

// detailMsg carries one task and its version history.
type detailMsg struct {
	seq    int
	task   *queue.Task
	events []queue.Event
	err    error
}

// actionMsg reports an operator action.
type actionMsg struct {
	action string
	task   *queue.Task
	err    error
}

// refreshMsg is the auto-refresh tick; gen drops ticks of a replaced timer.
type refreshMsg struct{ gen int }

// clockMsg is the one-second tick that moves countdowns.
type clockMsg struct{}

// requestTimeout bounds every read and action: a hung S3 endpoint shows up
// as an error in the status line, never as a frozen console.
const requestTimeout = 15 * time.Second

func loadOverview(ctx context.Context, q *queue.Queue, counter *queue.StatsCounter, seq int) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, requestTimeout)
		defer cancel()
		msg := overviewMsg{seq: seq}
		msg.stats, msg.err = counter.Refresh(ctx)
		if msg.err != nil {
			return msg
		}
		ws, bad, err := q.ListWorkersReport(ctx)
		if err != nil {
			msg.err = err
			return msg
		}
		msg.workers = monitor.Health(ws, msg.stats.At, monitor.DefaultHealthThreshold)
		msg.malformed = bad
		return msg
	}
}

func loadTasks(ctx context.Context, q *queue.Queue, qry queue.ListQuery, seq int) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, requestTimeout)
		defer cancel()
		page, err := q.List(ctx, qry)
		return tasksMsg{seq: seq, page: page, err: err}
	}
}

func loadDetail(ctx context.Context, q *queue.Queue, id uuid.UUID, seq int) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, requestTimeout)
		defer cancel()
		msg := detailMsg{seq: seq}
		msg.task, msg.err = q.Get(ctx, id)
		if msg.err != nil {
			return msg
		}
		msg.events, msg.err = q.History(ctx, id)
		if errors.Is(msg.err, store.ErrNotSupported) {
			msg.err = nil // no versioning: the detail still shows the task
		}
		return msg
	}
}

// action names.
const (
	actReplay  = "replay"
	actArchive = "archive"
	actCancel  = "cancel"
	actRequeue = "requeue"
	actSubmit  = "submit"
)

func runAction(ctx context.Context, q *queue.Queue, action string, id uuid.UUID) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, requestTimeout)
		defer cancel()
		var t *queue.Task
		var err error
		switch action {
		case actReplay:
			t, err = q.Replay(ctx, id)
		case actArchive:
			t, err = q.Archive(ctx, id)
		case actCancel:
			t, err = q.Cancel(ctx, id, "cancelled from qo tui")
		case actRequeue:
			t, err = q.RequeueNow(ctx, id)
		}
		return actionMsg{action: action, task: t, err: err}
	}
}

func submitTask(ctx context.Context, q *queue.Queue, req queue.SubmitRequest) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, requestTimeout)
		defer cancel()
		t, _, err := q.Submit(ctx, req)
		return actionMsg{action: actSubmit, task: t, err: err}
	}
}

// ticker makes timer commands; tests replace it so nothing sleeps.
type ticker func(d time.Duration, fn func(time.Time) tea.Msg) tea.Cmd

func (m *Model) refreshAfter(d time.Duration, gen int) tea.Cmd {
	return m.tick(d, func(time.Time) tea.Msg { return refreshMsg{gen: gen} })
}

func (m *Model) clockTick() tea.Cmd {
	return m.tick(time.Second, func(time.Time) tea.Msg { return clockMsg{} })
}
