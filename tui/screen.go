package tui

import (
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/google/uuid"

	"github.com/qo-queue/qo/queue"
)

// page is what every screen of the console is to the root model. The root
// owns what is shared (the navigation trail, the global keys, the dialogs,
// the status line, the sequence numbers that drop stale reads) and hands
// the rest to the screen shown; each method that needs the root gets it as
// r, so a screen asks for a dialog or opens another screen through it.
type page interface {
	// SetSize lays the screen out in w×h cells.
	SetSize(w, h int)
	// load returns the reads the screen shows, beside the overview's that
	// the root always makes; tick is true on the auto-refresh.
	load(r *Model, tick bool) tea.Cmd
	// apply takes a message a read or an action of the screen sent back;
	// ok is false when msg is not of a kind the screen reads.
	apply(r *Model, msg tea.Msg) (cmd tea.Cmd, ok bool)
	// capture takes the keys an open box of the screen (a search, a
	// chooser, a diff) uses before the global keys; ok is false when the
	// key is left to them.
	capture(r *Model, msg tea.KeyMsg) (cmd tea.Cmd, ok bool)
	// key handles a key that neither a dialog nor a global key took.
	key(r *Model, msg tea.KeyMsg) tea.Cmd
	// writes reports whether msg is one of the screen's own keys that
	// change the queue (refused by a read-only console).
	writes(msg tea.KeyMsg) bool
	// hints is the key line of the screen, its actions included.
	hints(r *Model) string
	// View draws the screen at now.
	View(now time.Time) string
}

// targeted is a screen with a task under the cursor: the one R, A, C, N
// and p act on.
type targeted interface {
	target() *queue.Task
}

// pages returns every screen, indexed by its screen constant.
func (m *Model) pages() []page {
	return []page{scrOverview: &m.overview, scrTasks: &m.tasks, scrWorkers: &m.workers,
		scrSchedules: &m.scheds, scrDetail: &m.detail, scrWorkflow: &m.wf}
}

// page returns the screen shown.
func (m *Model) page() page { return m.pages()[m.screen] }

// target is the task an action applies to: the open task or the selected
// row, nil on a screen without tasks.
func (m *Model) target() *queue.Task {
	if t, ok := m.page().(targeted); ok {
		return t.target()
	}
	return nil
}

// place is a screen q/esc goes back to; for a task's detail or a
// workflow, also which one.
type place struct {
	screen screen
	task   uuid.UUID
	ref    string
}

// maxTrail bounds how many screens q/esc walks back through.
const maxTrail = 32

func (m *Model) here() place {
	switch m.screen {
	case scrDetail:
		return place{screen: scrDetail, task: m.detail.id}
	case scrWorkflow:
		return place{screen: scrWorkflow, ref: m.wf.pinned()}
	}
	return place{screen: m.screen}
}

// push remembers the current screen before another opens over it.
func (m *Model) push() {
	p := m.here()
	if n := len(m.trail); n > 0 && m.trail[n-1] == p {
		return
	}
	m.trail = append(m.trail, p)
	if len(m.trail) > maxTrail {
		m.trail = m.trail[len(m.trail)-maxTrail:]
	}
}

// back goes to the screen the current one was opened from; from a top
// screen it quits.
func (m *Model) back() tea.Cmd {
	if n := len(m.trail); n > 0 {
		p := m.trail[n-1]
		m.trail = m.trail[:n-1]
		switch p.screen {
		case scrDetail:
			m.setDetail(p.task)
		case scrWorkflow:
			m.setWorkflow(p.ref)
		}
		m.screen = p.screen
		return m.reload()
	}
	if m.screen == scrDetail || m.screen == scrWorkflow {
		m.screen = scrTasks
		return m.reload()
	}
	if m.quitPrompt != "" {
		m.confirm = &confirm{action: actQuit, text: m.quitPrompt, run: tea.Quit}
		return nil
	}
	return tea.Quit
}

// open shows the detail of task id (the caller loads it).
func (m *Model) open(id uuid.UUID) {
	m.push()
	m.setDetail(id)
	m.screen = scrDetail
}

// openTask shows the detail of task id and loads it; orWorkflow: the id
// was typed, and may be a workflow's.
func (m *Model) openTask(id uuid.UUID, orWorkflow bool) tea.Cmd {
	m.open(id)
	m.detail.orWorkflow = orWorkflow
	return m.detail.load(m, false)
}

func (m *Model) setDetail(id uuid.UUID) {
	if m.detail.id != id || m.screen != scrDetail {
		m.detail.orWorkflow = false
	}
	if m.detail.id != id {
		m.detail = newDetail(m.st, m.keys)
		m.detail.SetSize(m.w, max(m.h-4, 4))
	}
	m.detail.id = id
}

// openWorkflow shows the workflow ref (an id or a name) and loads it.
func (m *Model) openWorkflow(ref string) tea.Cmd {
	m.push()
	m.setWorkflow(ref)
	m.screen = scrWorkflow
	return m.reload()
}

// setWorkflow makes ref the workflow shown, keeping what is shown when it
// is the same workflow. A name is always read again: it may have moved to
// a newer workflow.
func (m *Model) setWorkflow(ref string) {
	if _, err := uuid.Parse(ref); err == nil && m.wf.matches(ref) {
		return
	}
	m.wf = newWorkflowScreen(m.st, m.keys, ref)
	m.wf.SetSize(m.w, max(m.h-4, 4))
}

// show switches to a top screen, forgetting the trail.
func (m *Model) show(s screen) tea.Cmd {
	m.screen = s
	m.trail = nil
	return m.reload()
}

// say puts the result of an action on the status line.
func (m *Model) say(text string, isErr bool) { m.flash, m.flashErr = text, isErr }

// ask opens a confirmation dialog.
func (m *Model) ask(c *confirm) { m.confirm = c }

// taskAction asks before R, A, C or N on task t; ok is false when msg is
// none of them.
func (m *Model) taskAction(msg tea.KeyMsg, t *queue.Task) (tea.Cmd, bool) {
	if t == nil {
		return nil, false
	}
	k := m.keys
	for _, a := range []struct {
		b      key.Binding
		action string
	}{{k.Replay, actReplay}, {k.Archive, actArchive}, {k.Cancel, actCancel}, {k.Requeue, actRequeue}} {
		if key.Matches(msg, a.b) {
			m.ask(&confirm{action: a.action, id: t.ID, text: actionPrompt(a.action, t)})
			return nil, true
		}
	}
	return nil, false
}
