// Package tui is qo's operations console: a bubbletea program over the
// queue and monitor APIs. The root Model only routes: each screen
// (overview, tasks, task detail, workflow, workers, schedules) is its own component with
// Update, View and SetSize. Every read and action runs in a tea.Cmd and
// comes back as a typed message; responses older than the newest request
// of their kind are dropped. Time comes from an injected clock, so the
// countdowns are testable.
package tui

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/google/uuid"

	"github.com/qo-queue/qo/inspect"
	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store"
)

// Options configures the console.
type Options struct {
	// Clock is the time shown and counted down against. Default: the
	// queue's clock (the S3 server's time).
	Clock store.Clock
	// Refresh is the initial auto-refresh interval; 0 means off. It must
	// be one of RefreshIntervals.
	Refresh time.Duration
	// Prices price the fleet's S3 requests. Default: AWS S3 Standard.
	Prices *store.Prices
	// Title names the queue in the header (e.g. the bucket).
	Title string
	// Status, Shard and Type start the task list filtered.
	Status queue.Status
	Shard  string
	Type   string
	// Screen is the screen to start on: "overview" (default), "tasks",
	// "workers" or "schedules".
	Screen string
	// QuitPrompt, when set, is asked (y/n) before q quits from a top
	// screen: qo dev's console stops the S3 server and everything with
	// it. Ctrl+C still quits at once.
	QuitPrompt string
	// ReadOnly offers no action that changes the queue: the action keys
	// are refused, left out of the key line, and the header says so.
	ReadOnly bool
}

// RefreshIntervals are the auto-refresh choices, in the order i cycles.
var RefreshIntervals = []time.Duration{0, 2 * time.Second, 5 * time.Second, 10 * time.Second}

type screen int

const (
	scrOverview screen = iota
	scrTasks
	scrWorkers
	scrSchedules
	scrDetail
	scrWorkflow
)

var screenNames = []string{"1 Overview", "2 Tasks", "3 Workers", "4 Schedules"}

// Model is the root model.
type Model struct {
	ctx   context.Context
	q     *queue.Queue
	clock store.Clock
	keys  KeyMap
	st    Styles
	title string
	w, h  int
	// quitPrompt is Options.QuitPrompt.
	quitPrompt string
	readOnly   bool

	screen  screen
	help    bool
	helpOff int // first help line shown (the help scrolls)
	confirm *confirm
	form    *submitForm
	// resumeList: U opened the list of paused types; a digit picks one.
	resumeList bool
	interval   int // index into RefreshIntervals
	gen        int // auto-refresh timer generation

	model    *inspect.Model
	overview overview
	tasks    tasks
	workers  workers
	scheds   schedules
	detail   detail
	detailID uuid.UUID
	// detailOrWorkflow: the open id was typed, and may be a workflow's.
	detailOrWorkflow bool
	wf               workflowScreen
	// record is the workflow record read last: records never change, so
	// the details of tasks of one workflow share it.
	record *queue.Workflow
	// trail is where q/esc goes back to from a task or a workflow.
	trail []place
	// searchFromOverview: the search box open on the task list was opened
	// by / on the overview, so esc in it goes back there.
	searchFromOverview bool

	tick     ticker
	seq      map[string]int // newest request per kind
	inflight map[string]bool

	flash    string // the result of the last action
	flashErr bool
	loadErr  error // the last read failed: shown until a read succeeds
}

// New returns the console's model over q.
func New(ctx context.Context, q *queue.Queue, opts Options) (*Model, error) {
	if queue.ActorFrom(ctx) == "" {
		// The console's writes name who ran it (see queue.WithActor),
		// from qo tui and from qo dev alike.
		ctx = queue.WithActor(ctx, queue.CLIActor("qo tui"))
	}
	interval := -1
	for i, d := range RefreshIntervals {
		if d == opts.Refresh {
			interval = i
		}
	}
	if interval < 0 {
		return nil, fmt.Errorf("refresh interval %s: want one of off, 2s, 5s, 10s", opts.Refresh)
	}
	clock := opts.Clock
	if clock == nil {
		clock = store.ClockFunc(q.Now)
	}
	prices := store.AWSStandardPrices
	if opts.Prices != nil {
		prices = *opts.Prices
	}
	st, keys := DefaultStyles(), DefaultKeyMap()
	m := &Model{
		ctx: ctx, q: q, clock: clock, keys: keys, st: st, title: opts.Title, quitPrompt: opts.QuitPrompt, readOnly: opts.ReadOnly,
		interval: interval,
		model:    inspect.New(q, inspect.Options{Prices: &prices}),
		overview: newOverview(st, prices, q.Shards()),
		tasks:    newTasks(st, keys, q.Shards()),
		workers:  newWorkers(st, keys),
		scheds:   newSchedules(st, keys),
		detail:   newDetail(st, keys),
		wf:       newWorkflowScreen(st, keys, ""),
		tick:     tea.Tick,
		seq:      map[string]int{},
		inflight: map[string]bool{},
	}
	if opts.Status != "" {
		if _, err := queue.ParseStatus(string(opts.Status)); err != nil {
			return nil, err
		}
	}
	m.tasks.status, m.tasks.typ = opts.Status, opts.Type
	if opts.Shard != "" {
		if !q.ValidShard(opts.Shard) {
			return nil, fmt.Errorf("shard %q is not a shard of this queue (shards are %s…%s)", opts.Shard, q.Shards()[0], q.Shards()[len(q.Shards())-1])
		}
		for i, s := range q.Shards() {
			if s == opts.Shard {
				m.tasks.shard = i
			}
		}
	}
	switch opts.Screen {
	case "", "overview":
	case "tasks":
		m.screen = scrTasks
	case "workers":
		m.screen = scrWorkers
	case "schedules":
		m.screen = scrSchedules
	default:
		return nil, fmt.Errorf("screen %q: want overview, tasks, workers or schedules", opts.Screen)
	}
	m.SetSize(100, 30)
	return m, nil
}

// SetSize lays the screens out for a terminal of w×h cells.
func (m *Model) SetSize(w, h int) {
	m.w, m.h = w, h
	body := max(h-4, 4) // header, tab line, status line, key hints
	m.overview.SetSize(w, body)
	m.tasks.SetSize(w, body)
	m.workers.SetSize(w, body)
	m.scheds.SetSize(w, body)
	m.detail.SetSize(w, body)
	m.wf.SetSize(w, body)
}

// Init loads the first screen and starts the timers.
func (m *Model) Init() tea.Cmd {
	return tea.Batch(m.reload(), m.schedule(), m.clockTick())
}

// schedule starts a new auto-refresh timer (replacing the old one).
func (m *Model) schedule() tea.Cmd {
	m.gen++
	if d := RefreshIntervals[m.interval]; d > 0 {
		return m.refreshAfter(d, m.gen)
	}
	return nil
}

// next returns the sequence number of a new request of kind.
func (m *Model) next(kind string) int {
	m.seq[kind]++
	m.inflight[kind] = true
	return m.seq[kind]
}

// fresh reports whether a response is for the newest request of kind.
func (m *Model) fresh(kind string, seq int) bool {
	if seq != m.seq[kind] {
		return false
	}
	m.inflight[kind] = false
	return true
}

// reload loads what the current screen shows. The overview's counts feed
// the workers screen and the header too, so they are always loaded.
func (m *Model) reload() tea.Cmd { return m.load(false) }

// load is reload; on the auto-refresh tick (tick) a workflow shown reads
// again only its steps that have not ended, and not while the last read
// is still under way.
func (m *Model) load(tick bool) tea.Cmd {
	cmds := []tea.Cmd{m.loadOverview()}
	switch m.screen {
	case scrTasks:
		cmds = append(cmds, loadTasks(m.ctx, m.q, m.tasks.query(), m.next("tasks")))
	case scrDetail:
		cmds = append(cmds, loadDetail(m.ctx, m.q, m.model, m.detailID, m.next("detail"), m.record, m.detailOrWorkflow))
	case scrWorkflow:
		switch {
		case !tick || m.wf.view == nil:
			cmds = append(cmds, loadWorkflow(m.ctx, m.q, m.wf.pinned(), m.next("workflow")))
		case !m.inflight["workflow"]:
			cmds = append(cmds, refreshWorkflow(m.ctx, m.q, m.wf.view, m.next("workflow")))
		}
	case scrSchedules:
		cmds = append(cmds, loadSchedules(m.ctx, m.q, m.next("schedules")))
	}
	return tea.Batch(cmds...)
}

func (m *Model) loadOverview() tea.Cmd {
	if m.inflight["overview"] {
		return nil // a slow refresh is still counting: do not pile up
	}
	return loadOverview(m.ctx, m.model, m.next("overview"))
}

// Update routes a message.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.SetSize(msg.Width, msg.Height)
		return m, nil
	case clockMsg:
		return m, m.clockTick() // the countdowns move on the next View
	case refreshMsg:
		if msg.gen != m.gen {
			return m, nil
		}
		return m, tea.Batch(m.load(true), m.schedule())
	case overviewMsg:
		if m.fresh("overview", msg.seq) {
			m.noteLoad(msg.err)
			if msg.err == nil {
				m.overview.apply(msg)
				m.tasks.control, m.tasks.stats = m.overview.control, m.overview.stats
			}
		}
		return m, nil
	case tasksMsg:
		if m.fresh("tasks", msg.seq) {
			m.noteLoad(msg.err)
			if msg.err == nil {
				m.tasks.apply(msg)
			}
		}
		return m, nil
	case schedulesMsg:
		if m.fresh("schedules", msg.seq) {
			m.noteLoad(msg.err)
			if msg.err == nil {
				m.scheds.apply(msg)
			}
		}
		return m, nil
	case detailMsg:
		if m.fresh("detail", msg.seq) {
			if msg.workflow != nil && m.screen == scrDetail && msg.workflow.ID == m.detailID {
				// The id typed is a workflow's: show it instead.
				m.noteLoad(nil)
				m.record = msg.workflow
				m.setWorkflow(msg.workflow.ID.String())
				m.screen = scrWorkflow
				return m, m.reload()
			}
			m.noteLoad(msg.err)
			if msg.record != nil {
				m.record = msg.record
			}
			if msg.err == nil || m.detail.task == nil {
				m.detail.apply(msg)
			}
			if msg.task != nil {
				m.detailOrWorkflow = false
			}
		}
		return m, nil
	case workflowMsg:
		if m.fresh("workflow", msg.seq) {
			var bad *queue.MalformedError
			if msg.view == nil && (errors.Is(msg.err, queue.ErrNotFound) || errors.As(msg.err, &bad)) {
				m.noteLoad(nil) // not an outage: the screen says what is wrong
			} else {
				m.noteLoad(msg.err)
			}
			m.wf.apply(msg)
			if msg.view != nil && msg.view.Workflow != nil {
				m.record = msg.view.Workflow
			}
		}
		return m, nil
	case bulkPlanMsg:
		m.bulkPlanned(msg)
		return m, nil
	case bulkDoneMsg:
		return m, m.bulkDone(msg)
	case resolvedMsg:
		if !m.fresh("resolve", msg.seq) || m.screen != scrTasks || m.tasks.idPrefix != msg.ref {
			return m, nil // the operator moved on
		}
		var amb *queue.AmbiguousIDError
		switch {
		case msg.err == nil:
			m.open(msg.id)
			return m, loadDetail(m.ctx, m.q, m.model, msg.id, m.next("detail"), m.record, true)
		case errors.As(msg.err, &amb):
			m.flash, m.flashErr = fmt.Sprintf("%s names %d tasks (type more of the id): %s", safe(msg.ref), len(amb.Candidates), wholeIDs(amb.Candidates)), true
		default:
			m.flash, m.flashErr = "no task found: "+oneLine(msg.err.Error()), true
		}
		return m, nil
	case actionMsg:
		m.flash, m.flashErr = actionResult(msg), msg.err != nil
		if msg.err == nil && msg.action == actSubmit && msg.task != nil {
			m.open(msg.task.ID)
		}
		return m, m.reload()
	case tea.KeyMsg:
		// Keys typed faster than the terminal is read arrive as one
		// message ("ssss"); outside a text box each is its own command.
		if msg.Type == tea.KeyRunes && len(msg.Runes) > 1 && !msg.Paste && !m.typing() {
			var cmds []tea.Cmd
			for _, r := range msg.Runes {
				cmds = append(cmds, m.key(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{r}, Alt: msg.Alt}))
			}
			return m, tea.Batch(cmds...)
		}
		return m, m.key(msg)
	}
	return m, nil
}

// typing reports whether a text box has the keyboard.
func (m *Model) typing() bool {
	return m.form != nil || (m.screen == scrTasks && m.tasks.searching)
}

// noteLoad remembers whether the last read worked.
func (m *Model) noteLoad(err error) {
	if err == nil {
		m.loadErr = nil
		return
	}
	m.loadErr = err
}

func actionResult(msg actionMsg) string {
	if msg.err != nil {
		return msg.action + " failed: " + oneLine(msg.err.Error())
	}
	if msg.note != "" {
		return safe(msg.note)
	}
	switch msg.action {
	case actSubmit:
		return "submitted " + msg.task.ID.String()
	case actReplay:
		return "replayed " + msg.task.ID.String() + ": pending again"
	case actArchive:
		return "archived " + msg.task.ID.String()
	case actCancel:
		if msg.task.Status == queue.StatusRunning {
			return "cancel requested for " + msg.task.ID.String() + ": its worker stops it"
		}
		return "cancelled " + msg.task.ID.String()
	case actRequeue:
		return "requeued " + msg.task.ID.String() + ": available now"
	}
	return msg.action + " done"
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
		return place{screen: scrDetail, task: m.detailID}
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

func (m *Model) setDetail(id uuid.UUID) {
	if m.detailID != id || m.screen != scrDetail {
		m.detailOrWorkflow = false
	}
	if m.detailID != id {
		m.detail = newDetail(m.st, m.keys)
		m.detail.SetSize(m.w, max(m.h-4, 4))
	}
	m.detailID = id
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

// key handles a key press: dialogs first, then global keys, then the screen.
func (m *Model) key(msg tea.KeyMsg) tea.Cmd {
	k := m.keys
	if key.Matches(msg, k.Quit) {
		return tea.Quit
	}
	if m.form != nil {
		res, req, cmd := m.form.Update(msg, m.clock.Now())
		switch res {
		case formCancelled:
			m.form = nil
		case formSubmitted:
			m.form = nil
			m.flash, m.flashErr = "submitting…", false
			return submitTask(m.ctx, m.q, req)
		}
		return cmd
	}
	if m.confirm != nil {
		c := m.confirm
		switch {
		case key.Matches(msg, k.Confirm):
			m.confirm = nil
			m.flash, m.flashErr = c.action+"…", false
			if c.run != nil {
				return c.run
			}
			return runAction(m.ctx, m.q, c.action, c.id)
		case key.Matches(msg, k.Deny):
			m.confirm = nil
		}
		return nil
	}
	if m.resumeList {
		m.resumeList = false
		types := m.overview.control.PausedTypes()
		if k := msg.String(); len(k) == 1 && k[0] >= '1' && k[0] <= '9' {
			if n := int(k[0] - '1'); n < len(types) {
				m.confirm = m.pauseConfirm(types[n])
			}
		}
		return nil
	}
	if m.help {
		switch {
		case key.Matches(msg, k.Back) || key.Matches(msg, k.Help):
			m.help = false
		case key.Matches(msg, k.Down):
			m.helpOff++
		case key.Matches(msg, k.Up):
			m.helpOff = max(m.helpOff-1, 0)
		case key.Matches(msg, k.PageDown):
			m.helpOff += max(m.h-6, 1)
		case key.Matches(msg, k.PageUp):
			m.helpOff = max(m.helpOff-max(m.h-6, 1), 0)
		}
		return nil
	}
	if m.screen == scrTasks && (m.tasks.searching || m.tasks.choosing) {
		return m.tasksKey(msg)
	}
	if m.readOnly && m.writeKey(msg) {
		m.flash, m.flashErr = "read-only console (--readonly): it changes nothing in the queue", true
		return nil
	}
	if m.screen == scrDetail {
		if used, cmd := m.detail.Update(msg); used {
			return cmd
		}
	}
	if m.screen == scrWorkflow {
		switch {
		case key.Matches(msg, k.OpenStep):
			return m.openStep()
		case key.Matches(msg, k.CancelWorkflow):
			m.confirmCancelWorkflow()
			return nil
		}
	}
	switch {
	case key.Matches(msg, k.Help):
		m.help, m.helpOff = true, 0
		return nil
	case key.Matches(msg, k.Back):
		return m.back()
	case key.Matches(msg, k.Workflow) && (m.screen == scrDetail || m.screen == scrTasks) && m.target() != nil:
		t := m.target()
		if t.Workflow == nil {
			m.flash, m.flashErr = "task "+queue.ShortID(t.ID)+" is not a step of a workflow", true
			return nil
		}
		return m.openWorkflow(t.Workflow.ID.String())
	case key.Matches(msg, k.Search) && m.screen == scrOverview:
		// The task search, as / opens it on the task list; the list
		// goes back to the overview.
		m.push()
		m.screen = scrTasks
		m.searchFromOverview = true
		return tea.Batch(m.reload(), m.tasks.openSearch())
	case key.Matches(msg, k.Overview):
		return m.show(scrOverview)
	case key.Matches(msg, k.Tasks):
		return m.show(scrTasks)
	case key.Matches(msg, k.Workers):
		return m.show(scrWorkers)
	case key.Matches(msg, k.Schedules):
		return m.show(scrSchedules)
	case key.Matches(msg, k.NextTab) && m.screen != scrDetail && m.screen != scrWorkflow:
		return m.show((m.screen + 1) % screen(len(screenNames)))
	case key.Matches(msg, k.Refresh):
		m.inflight["overview"] = false
		return m.reload()
	case key.Matches(msg, k.Interval):
		m.interval = (m.interval + 1) % len(RefreshIntervals)
		return m.schedule()
	case key.Matches(msg, k.Submit):
		m.form = newSubmitForm()
		return m.form.inputs[fieldType].Focus()
	case key.Matches(msg, k.PauseAll):
		m.confirm = m.pauseConfirm("")
		return nil
	case key.Matches(msg, k.ResumeList):
		if len(m.overview.control.Types) == 0 {
			m.flash, m.flashErr = "no task type is paused", false
			return nil
		}
		m.resumeList = true
		return nil
	case key.Matches(msg, k.PauseType) && m.target() != nil:
		m.confirm = m.pauseConfirm(m.target().Type)
		return nil
	}
	if sc := m.scheds.selected(); m.screen == scrSchedules && sc != nil {
		action := ""
		switch {
		case key.Matches(msg, k.ToggleSchedule):
			action = actEnable
			if sc.Enabled {
				action = actDisable
			}
		case key.Matches(msg, k.Trigger):
			action = actTrigger
		case key.Matches(msg, k.DeleteSchedule):
			action = actDelSched
		}
		if action != "" {
			m.confirm = &confirm{action: action, text: schedulePrompt(action, sc), run: scheduleAction(m.ctx, m.q, action, sc.Name)}
			return nil
		}
	}
	if cmd, ok := m.bulkKey(msg); ok {
		return cmd
	}
	if t := m.target(); t != nil {
		for _, a := range []struct {
			b      key.Binding
			action string
		}{{k.Replay, actReplay}, {k.Archive, actArchive}, {k.Cancel, actCancel}, {k.Requeue, actRequeue}} {
			if key.Matches(msg, a.b) {
				m.confirm = &confirm{action: a.action, id: t.ID, text: actionPrompt(a.action, t)}
				return nil
			}
		}
	}
	switch m.screen {
	case scrTasks:
		return m.tasksKey(msg)
	case scrWorkers:
		m.workers.Update(msg, len(m.overview.workers))
	case scrSchedules:
		m.scheds.Update(msg)
	case scrWorkflow:
		m.wf.Update(msg)
	}
	return nil
}

// resumeView lists the paused types, numbered for U's pick.
func (m *Model) resumeView() string {
	var b strings.Builder
	b.WriteString("Paused task types: press its number to resume one")
	ctl := m.overview.control
	now := m.clock.Now()
	for i, typ := range ctl.PausedTypes() {
		if i == 9 {
			b.WriteString(fmt.Sprintf("\n   … and %d more (p on one of their tasks resumes it)", len(ctl.Types)-9))
			break
		}
		p := ctl.Types[typ]
		b.WriteString(fmt.Sprintf("\n%s %s  paused %s ago%s", m.st.Key.Render(fmt.Sprint(i+1)), safe(typ), short(now.Sub(p.At)), reasonText(p.Reason)))
	}
	return m.st.Box.Render(b.String())
}

// writeKey reports whether msg asks for an action that changes the queue
// on the current screen.
func (m *Model) writeKey(msg tea.KeyMsg) bool {
	k := m.keys
	for _, b := range []key.Binding{k.Replay, k.Archive, k.Cancel, k.Requeue, k.Submit, k.PauseType, k.PauseAll, k.ResumeList} {
		if key.Matches(msg, b) {
			return true
		}
	}
	switch m.screen {
	case scrSchedules:
		return key.Matches(msg, k.ToggleSchedule) || key.Matches(msg, k.Trigger) || key.Matches(msg, k.DeleteSchedule)
	case scrWorkflow:
		return key.Matches(msg, k.CancelWorkflow)
	}
	return false
}

// openStep opens the task of the selected workflow step.
func (m *Model) openStep() tea.Cmd {
	i, t := m.wf.selected()
	switch {
	case i < 0:
		return nil
	case t == nil:
		step := m.wf.view.Workflow.Steps[i]
		m.flash, m.flashErr = "step "+safe(step.Name)+" has no task to open: "+oneLine(orDash(m.wf.view.Problems[step.Name])), true
		return nil
	}
	m.open(t.ID)
	return loadDetail(m.ctx, m.q, m.model, t.ID, m.next("detail"), m.record, false)
}

// confirmCancelWorkflow asks before cancelling the shown workflow's steps
// that have not ended.
func (m *Model) confirmCancelWorkflow() {
	v := m.wf.view
	if v == nil {
		return
	}
	label := m.wf.label()
	n := m.wf.notEnded()
	if n == 0 {
		m.flash, m.flashErr = "workflow "+label+" has no step left to cancel: every step ended", false
		return
	}
	text := fmt.Sprintf("Cancel the %s of workflow %s that did not end? Running ones are asked to stop; ended ones stay.", plural(n, "step"), label)
	m.confirm = &confirm{action: actCancelWorkflow, text: text, run: cancelWorkflow(m.ctx, m.q, v.Workflow, label)}
}

// pauseConfirm asks before pausing or resuming typ ("" for the whole
// queue), whichever the switches say is the change.
func (m *Model) pauseConfirm(typ string) *confirm {
	ctl := m.overview.control
	paused := ctl.Paused
	what := "the whole queue"
	if typ != "" {
		_, paused = ctl.Types[typ]
		what = "task type " + safe(typ)
	}
	if paused {
		return &confirm{action: actResume, text: "Resume " + what + "? Workers start its tasks again.", run: pauseAction(m.ctx, m.q, false, typ)}
	}
	text := "Pause " + what + "? Workers start none of its tasks until resumed; running tasks finish, submits are still accepted."
	return &confirm{action: actPause, text: text, run: pauseAction(m.ctx, m.q, true, typ)}
}

// target is the task an action applies to: the open task or the selected row.
func (m *Model) target() *queue.Task {
	switch m.screen {
	case scrDetail:
		return m.detail.task
	case scrTasks:
		return m.tasks.selected()
	case scrWorkflow:
		_, t := m.wf.selected()
		return t
	}
	return nil
}

func (m *Model) tasksKey(msg tea.KeyMsg) tea.Cmd {
	searching := m.tasks.searching
	eff, id, cmd := m.tasks.Update(msg)
	if searching && !m.tasks.searching {
		from := m.searchFromOverview
		m.searchFromOverview = false
		if from && eff == tasksNone {
			return m.back() // esc: nothing was searched
		}
	}
	switch eff {
	case tasksReload:
		return tea.Batch(cmd, loadTasks(m.ctx, m.q, m.tasks.query(), m.next("tasks")))
	case tasksOpen, tasksOpenID:
		m.open(id)
		m.detailOrWorkflow = eff == tasksOpenID
		return tea.Batch(cmd, loadDetail(m.ctx, m.q, m.model, id, m.next("detail"), m.record, m.detailOrWorkflow))
	case tasksOpenWorkflow:
		return tea.Batch(cmd, m.openWorkflow(m.tasks.wfRef))
	case tasksResolve:
		return tea.Batch(cmd, loadTasks(m.ctx, m.q, m.tasks.query(), m.next("tasks")), resolveID(m.ctx, m.q, m.tasks.idPrefix, m.next("resolve")))
	}
	return cmd
}

func (m *Model) show(s screen) tea.Cmd {
	m.screen = s
	m.trail = nil
	return m.reload()
}

// View draws the header, the screen, and the status line.
func (m *Model) View() string {
	now := m.clock.Now()
	var b strings.Builder

	// Header: name, tabs, refresh, time.
	refresh := "auto-refresh off"
	if d := RefreshIntervals[m.interval]; d > 0 {
		refresh = "every " + d.String()
	}
	right := refresh + " · " + now.UTC().Format("15:04:05") + " UTC"
	left := m.st.Title.Render("qo") + " " + m.title
	if m.readOnly {
		left += " " + m.st.Error.Render("READ-ONLY")
	}
	b.WriteString(fit(left, max(m.w-len(right)-1, 0)) + " " + m.st.Dim.Render(right) + "\n")
	var tabs []string
	for i, name := range screenNames {
		if screen(i) == m.screen || ((m.screen == scrDetail || m.screen == scrWorkflow) && i == int(scrTasks)) {
			tabs = append(tabs, m.st.TabOn.Render(name))
		} else {
			tabs = append(tabs, m.st.Tab.Render(name))
		}
	}
	switch m.screen {
	case scrDetail:
		tabs = append(tabs, m.st.TabOn.Render("› task "+queue.ShortID(m.detailID)))
	case scrWorkflow:
		tabs = append(tabs, m.st.TabOn.Render("› workflow "+m.wf.label()))
	}
	b.WriteString(cut(strings.Join(tabs, "  "), m.w) + "\n")

	body := ""
	switch {
	case m.help:
		body = helpView(m.st, m.keys, m.w)
		lines := strings.Split(body, "\n")
		m.helpOff = min(m.helpOff, max(len(lines)-max(m.h-4, 1), 0))
		body = strings.Join(lines[m.helpOff:], "\n")
	case m.form != nil:
		body = m.form.View(m.st, m.w)
	default:
		switch m.screen {
		case scrOverview:
			body = m.overview.View()
		case scrTasks:
			body = m.tasks.View(now)
		case scrWorkers:
			body = m.workers.View(m.overview.workers, m.overview.loaded, now)
		case scrSchedules:
			body = m.scheds.View(now)
		case scrDetail:
			body = m.detail.View(now)
		case scrWorkflow:
			body = m.wf.View(now)
		}
		if m.confirm != nil {
			body = m.confirm.View(m.st, m.w) + "\n" + body
		}
		if m.resumeList {
			body = m.resumeView() + "\n" + body
		}
	}
	bodyH := max(m.h-4, 1)
	lines := strings.Split(body, "\n")
	if len(lines) > bodyH {
		lines = lines[:bodyH]
	}
	for len(lines) < bodyH {
		lines = append(lines, "")
	}
	for i := range lines {
		lines[i] = cut(lines[i], m.w)
	}
	b.WriteString(strings.Join(lines, "\n") + "\n")

	// Status line: the last read's failure wins, then the last action.
	status := ""
	switch {
	case m.loadErr != nil:
		status = m.st.Error.Render("! showing the last data (r retries): " + describe(m.loadErr))
	case m.flash != "":
		if m.flashErr {
			status = m.st.Error.Render("! " + m.flash)
		} else {
			status = m.st.OK.Render(m.flash)
		}
	}
	b.WriteString(cut(status, m.w) + "\n")
	b.WriteString(m.st.Dim.Render(cut(m.hints(), m.w)))
	return b.String()
}

// hints is the key line for the current screen.
func (m *Model) hints() string {
	h := m.allHints()
	if m.readOnly {
		for _, w := range []string{"R replay A archive C cancel N requeue p pause · ", "R replay · C cancel step · X cancel workflow · ",
			"e enable/disable · t trigger · X delete · ", "U resume types · ", "P pause queue · ", "n new task · "} {
			h = strings.ReplaceAll(h, w, "")
		}
	}
	return h
}

// allHints is the key line of the current screen, actions included.
func (m *Model) allHints() string {
	switch {
	case m.help:
		return "↑/↓ pgup/pgdn scroll · q/esc close help"
	case m.form != nil:
		return "tab next field · enter submit · esc cancel"
	case m.confirm != nil:
		return "y confirm · n/esc cancel"
	case m.resumeList:
		return "1-9 resume that type (asks first) · any other key closes"
	}
	common := "? keys · r refresh · i interval · n new task · q quit"
	switch m.screen {
	case scrTasks:
		if m.tasks.choosing {
			return "the status key filters at once · esc keeps the filter"
		}
		return "enter open · s/S status · / search · h/l shard · [/] page · R replay A archive C cancel N requeue p pause · " + common
	case scrDetail:
		if t := m.detail.task; t != nil && t.Workflow != nil {
			return "w workflow · tab pane · m mark · d diff · R replay A archive C cancel N requeue p pause · q back"
		}
		return "tab pane · m mark · d diff · R replay A archive C cancel N requeue p pause · q back · ? keys"
	case scrWorkflow:
		return "enter open step · R replay · C cancel step · X cancel workflow · r refresh · q back · ? keys"
	case scrSchedules:
		return "e enable/disable · t trigger · X delete · P pause queue · " + common
	}
	if m.screen == scrOverview {
		if len(m.overview.control.Types) > 0 {
			return "1-4 screens · / search · U resume types · P pause queue · " + common
		}
		return "1-4 screens · / search · P pause queue · " + common
	}
	return "1-4 screens · P pause queue · " + common
}

// describe turns an error into a line an operator can act on.
func describe(err error) string {
	switch {
	case errors.Is(err, queue.ErrNotFound):
		return "not found: " + oneLine(err.Error())
	case errors.Is(err, context.DeadlineExceeded):
		return "S3 did not answer in " + requestTimeout.String()
	case errors.Is(err, store.ErrUnreachable):
		return "S3 unreachable: " + oneLine(err.Error())
	}
	return oneLine(err.Error())
}

// Run runs the console full-screen until the user quits or ctx ends.
func Run(ctx context.Context, q *queue.Queue, opts Options, progOpts ...tea.ProgramOption) error {
	m, err := New(ctx, q, opts)
	if err != nil {
		return err
	}
	progOpts = append([]tea.ProgramOption{tea.WithAltScreen(), tea.WithContext(ctx)}, progOpts...)
	_, err = tea.NewProgram(m, progOpts...).Run()
	if errors.Is(err, tea.ErrProgramKilled) && ctx.Err() != nil {
		return nil // stopped from outside (qo dev shutting down)
	}
	return err
}
