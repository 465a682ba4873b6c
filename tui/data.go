package tui

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/google/uuid"

	"github.com/qo-queue/qo/inspect"
	"github.com/qo-queue/qo/monitor"
	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/queue/control"
	"github.com/qo-queue/qo/queue/registry"
	"github.com/qo-queue/qo/queue/schedule"
	"github.com/qo-queue/qo/store"
)

// Every read runs in a tea.Cmd and comes back as one of these messages.
// Each carries the sequence number of its request: a response older than
// the newest request of its kind is dropped, so a slow answer never
// overwrites a newer one.

// overviewMsg carries the task counts, the worker registry and the pause
// switches.
type overviewMsg struct {
	seq        int
	stats      queue.Stats
	workers    []monitor.WorkerHealth
	malformed  []queue.MalformedError // malformed worker entries
	control    queue.Control
	controlErr error // the switches could not be read (shown, not fatal)
	snap       inspect.Snapshot
	err        error
}

// tasksMsg carries one page of the task list.
type tasksMsg struct {
	seq  int
	page queue.TaskPage
	err  error
}

// detailMsg carries one task and its version history. Offloaded input and
// output are loaded into data; payloadErr says why they could not be. A
// task of a workflow comes with the workflow's record (recordErr says why
// not). workflow is set instead of task when the id asked for is not a
// task's but a workflow's.
type detailMsg struct {
	seq        int
	task       *queue.Task
	data       *queue.Task
	payloadErr error
	events     []queue.Event
	record     *queue.Workflow
	recordErr  error
	workflow   *queue.Workflow
	err        error
}

// workflowMsg carries a workflow and its steps' tasks.
type workflowMsg struct {
	seq  int
	view *queue.WorkflowView
	err  error
}

// schedulesMsg carries the cron schedules.
type schedulesMsg struct {
	seq       int
	list      []*schedule.Schedule
	malformed []queue.MalformedError
	err       error
}

// actionMsg reports an operator action; note describes the result of one
// that is not about a task (pause, schedules).
type actionMsg struct {
	action string
	task   *queue.Task
	note   string
	err    error
}

// refreshMsg is the auto-refresh tick; gen drops ticks of a replaced timer.
type refreshMsg struct{ gen int }

// clockMsg is the one-second tick that moves countdowns.
type clockMsg struct{}

// requestTimeout bounds every read and action: a hung S3 endpoint shows up
// as an error in the status line, never as a frozen console.
const requestTimeout = 15 * time.Second

// workflowTimeout bounds the reads and the cancel of a whole workflow:
// one GET per step, so a large one takes longer than a single request.
const workflowTimeout = 2 * time.Minute

// loadOverview reads the read model's snapshot (see inspect.Snapshot).
func loadOverview(ctx context.Context, model *inspect.Model, seq int) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, requestTimeout)
		defer cancel()
		msg := overviewMsg{seq: seq}
		msg.snap, msg.err = model.Snapshot(ctx)
		if msg.err != nil {
			return msg
		}
		s := msg.snap
		msg.stats, msg.workers, msg.malformed = s.Stats, s.Workers, s.MalformedWorkers
		msg.control, msg.controlErr = s.Control, s.ControlErr
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

// loadDetail reads a task, its payloads and its history. known is the
// workflow record read last: a record never changes, so a task of the same
// workflow reuses it and only another workflow's costs a GET. With
// orWorkflow (an id typed in the search box), an id that is no task's may
// be a workflow's.
// Versions are read through model, so each is read once.
func loadDetail(ctx context.Context, q *queue.Queue, model *inspect.Model, id uuid.UUID, seq int, known *queue.Workflow, orWorkflow bool) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, requestTimeout)
		defer cancel()
		msg := detailMsg{seq: seq}
		msg.task, msg.err = q.Get(ctx, id)
		if errors.Is(msg.err, queue.ErrNotFound) && orWorkflow {
			if w, err := q.Workflows().Get(ctx, id.String()); err == nil {
				msg.workflow, msg.err = w, nil
				return msg
			}
		}
		if msg.err != nil {
			return msg
		}
		if ref := msg.task.Workflow; ref != nil {
			if known != nil && known.ID == ref.ID {
				msg.record = known
			} else {
				msg.record, msg.recordErr = q.Workflows().Get(ctx, ref.ID.String())
			}
		}
		// A running task's progress: one GET of its worker's entry (the
		// detail shows without it when that fails).
		if withProg, err := registry.WithProgress(ctx, q, msg.task); err == nil {
			msg.task = withProg
		}
		msg.data, msg.payloadErr = q.WithPayloads(ctx, msg.task)
		if msg.payloadErr != nil {
			msg.data = msg.task
		}
		msg.events, msg.err = model.History(ctx, id)
		if errors.Is(msg.err, store.ErrNotSupported) {
			msg.err = nil // no versioning: the detail still shows the task
		}
		return msg
	}
}

// loadWorkflow reads a workflow and every step's task (1 GET each).
func loadWorkflow(ctx context.Context, q *queue.Queue, ref string, seq int) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, workflowTimeout)
		defer cancel()
		v, err := q.Workflows().Read(ctx, ref)
		return workflowMsg{seq: seq, view: v, err: err}
	}
}

// refreshWorkflow reads again the steps of shown that have not ended (1
// GET each). It works on a copy: the screen keeps drawing shown meanwhile.
func refreshWorkflow(ctx context.Context, q *queue.Queue, shown *queue.WorkflowView, seq int) tea.Cmd {
	v := *shown
	v.Tasks = slices.Clone(shown.Tasks)
	v.Problems = maps.Clone(shown.Problems)
	v.Counts = maps.Clone(shown.Counts)
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, workflowTimeout)
		defer cancel()
		err := q.Workflows().Refresh(ctx, &v)
		var m *queue.MalformedError
		if errors.As(err, &m) && !errors.Is(err, store.ErrUnreachable) && !errors.Is(err, context.DeadlineExceeded) {
			err = nil // a malformed step is shown as the step's problem, not as an outage
		}
		return workflowMsg{seq: seq, view: &v, err: err}
	}
}

// cancelWorkflow cancels every step of workflow w that has not ended.
func cancelWorkflow(ctx context.Context, q *queue.Queue, w *queue.Workflow, label string) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, workflowTimeout)
		defer cancel()
		n, err := q.Workflows().Cancel(ctx, w.ID.String(), queue.ActorReason("", "cancelled", "qo tui"))
		note := fmt.Sprintf("cancelled %d step(s) of workflow %s: running ones are asked to stop", n, label)
		return actionMsg{action: actCancelWorkflow, note: note, err: err}
	}
}

func loadSchedules(ctx context.Context, q *queue.Queue, seq int) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, requestTimeout)
		defer cancel()
		list, bad, err := schedule.List(ctx, q)
		return schedulesMsg{seq: seq, list: list, malformed: bad, err: err}
	}
}

// action names.
const (
	actReplay   = "replay"
	actArchive  = "archive"
	actCancel   = "cancel"
	actRequeue  = "requeue"
	actSubmit   = "submit"
	actPause    = "pause"
	actResume   = "resume"
	actEnable   = "enable"
	actDisable  = "disable"
	actTrigger  = "trigger"
	actDelSched = "delete schedule"

	actCancelWorkflow = "cancel workflow"
	actQuit           = "stop" // Options.QuitPrompt's question
)

// pauseAction pauses or resumes typ ("" for the whole queue).
func pauseAction(ctx context.Context, q *queue.Queue, pause bool, typ string) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, requestTimeout)
		defer cancel()
		what := "the whole queue"
		if typ != "" {
			what = "task type " + typ
		}
		if pause {
			_, err := control.Pause(ctx, q, typ, queue.ActorReason("", "paused", "qo tui"))
			return actionMsg{action: actPause, note: "paused " + what + ": workers start none of it until resumed", err: err}
		}
		_, err := control.Resume(ctx, q, typ)
		return actionMsg{action: actResume, note: "resumed " + what, err: err}
	}
}

// scheduleAction enables, disables, triggers or deletes a schedule.
func scheduleAction(ctx context.Context, q *queue.Queue, action, name string) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, requestTimeout)
		defer cancel()
		msg := actionMsg{action: action}
		switch action {
		case actEnable, actDisable:
			_, msg.err = schedule.SetEnabled(ctx, q, name, action == actEnable)
			msg.note = action + "d schedule " + name
		case actTrigger:
			var t *queue.Task
			t, msg.err = schedule.Trigger(ctx, q, name)
			if msg.err == nil {
				msg.note = "schedule " + name + " submitted " + t.ID.String()
			}
		case actDelSched:
			msg.err = schedule.Delete(ctx, q, name)
			msg.note = "deleted schedule " + name
		}
		return msg
	}
}

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
			t, err = q.Cancel(ctx, id, queue.ActorReason("", "cancelled", "qo tui"))
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
