// Package tui is qo's operations console: a bubbletea program over the
// queue and monitor APIs. The root Model only routes: it keeps the
// navigation trail, the global keys, the dialogs and the status line, and
// each screen (overview, tasks, task detail, workflow, workers, schedules)
// is a page (screen.go): it loads what it shows, applies the messages its
// reads send back, handles its keys and actions, and draws itself. Every
// read and action runs in a tea.Cmd and comes back as a typed message;
// responses older than the newest request of their kind are dropped. Time
// comes from an injected clock, so the countdowns are testable.
package tui

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

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
	wf       workflowScreen
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
	return tea.Batch(m.loadOverview(), m.page().load(m, tick))
}

func (m *Model) loadOverview() tea.Cmd {
	if m.inflight["overview"] {
		return nil // a slow refresh is still counting: do not pile up
	}
	return loadOverview(m.ctx, m.model, m.next("overview"))
}

// Update routes a message: the root's own (size, timers, action results,
// keys) here, every read's to the screen that made it.
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
	case actionMsg:
		m.say(actionResult(msg), msg.err != nil)
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
	for _, p := range m.pages() {
		if cmd, ok := p.apply(m, msg); ok {
			return m, cmd
		}
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

// key handles a key press: dialogs first, then a box open on the screen,
// then the global keys, then the screen.
func (m *Model) key(msg tea.KeyMsg) tea.Cmd {
	if key.Matches(msg, m.keys.Quit) {
		return tea.Quit
	}
	if cmd, ok := m.dialogKey(msg); ok {
		return cmd
	}
	p := m.page()
	if cmd, ok := p.capture(m, msg); ok {
		return cmd
	}
	if m.readOnly && m.writeKey(msg) {
		m.say("read-only console (--readonly): it changes nothing in the queue", true)
		return nil
	}
	if cmd, ok := m.globalKey(msg); ok {
		return cmd
	}
	return p.key(m, msg)
}

// globalKey handles the keys every screen shares: help, back, the tabs,
// refresh, and the actions on the whole queue or the selected task's type.
func (m *Model) globalKey(msg tea.KeyMsg) (tea.Cmd, bool) {
	k := m.keys
	switch {
	case key.Matches(msg, k.Help):
		m.help, m.helpOff = true, 0
		return nil, true
	case key.Matches(msg, k.Back):
		return m.back(), true
	case key.Matches(msg, k.Workflow) && (m.screen == scrDetail || m.screen == scrTasks) && m.target() != nil:
		t := m.target()
		if t.Workflow == nil {
			m.say("task "+queue.ShortID(t.ID)+" is not a step of a workflow", true)
			return nil, true
		}
		return m.openWorkflow(t.Workflow.ID.String()), true
	case key.Matches(msg, k.Search) && m.screen == scrOverview:
		// The task search, as / opens it on the task list; the list
		// goes back to the overview.
		m.push()
		m.screen = scrTasks
		m.searchFromOverview = true
		return tea.Batch(m.reload(), m.tasks.openSearch()), true
	case key.Matches(msg, k.Overview):
		return m.show(scrOverview), true
	case key.Matches(msg, k.Tasks):
		return m.show(scrTasks), true
	case key.Matches(msg, k.Workers):
		return m.show(scrWorkers), true
	case key.Matches(msg, k.Schedules):
		return m.show(scrSchedules), true
	case key.Matches(msg, k.NextTab) && m.screen != scrDetail && m.screen != scrWorkflow:
		return m.show((m.screen + 1) % screen(len(screenNames))), true
	case key.Matches(msg, k.Refresh):
		m.inflight["overview"] = false
		return m.reload(), true
	case key.Matches(msg, k.Interval):
		m.interval = (m.interval + 1) % len(RefreshIntervals)
		return m.schedule(), true
	}
	return m.queueKey(msg)
}

// queueKey handles the global actions: a new task, and pausing or
// resuming the queue or a type.
func (m *Model) queueKey(msg tea.KeyMsg) (tea.Cmd, bool) {
	k := m.keys
	switch {
	case key.Matches(msg, k.Submit):
		m.form = newSubmitForm()
		return m.form.inputs[fieldType].Focus(), true
	case key.Matches(msg, k.PauseAll):
		m.ask(m.pauseConfirm(""))
		return nil, true
	case key.Matches(msg, k.ResumeList):
		if len(m.overview.control.Types) == 0 {
			m.say("no task type is paused", false)
			return nil, true
		}
		m.resumeList = true
		return nil, true
	case key.Matches(msg, k.PauseType) && m.target() != nil:
		m.ask(m.pauseConfirm(m.target().Type))
		return nil, true
	}
	return nil, false
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
	return m.page().writes(msg)
}

// View draws the header, the screen, and the status line.
func (m *Model) View() string {
	now := m.clock.Now()
	return m.header(now) + m.body(now) + m.statusLine()
}

// header is the console's name, the refresh interval and the time, then
// the tab line.
func (m *Model) header(now time.Time) string {
	var b strings.Builder
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
		tabs = append(tabs, m.st.TabOn.Render("› task "+queue.ShortID(m.detail.id)))
	case scrWorkflow:
		tabs = append(tabs, m.st.TabOn.Render("› workflow "+m.wf.label()))
	}
	b.WriteString(cut(strings.Join(tabs, "  "), m.w) + "\n")
	return b.String()
}

// body is the help, the form, or the screen under its dialogs, cut to the
// lines between the header and the status line.
func (m *Model) body(now time.Time) string {
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
		body = m.page().View(now)
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
	return strings.Join(lines, "\n") + "\n"
}

// statusLine is the last read's failure, else the last action's result,
// then the key line.
func (m *Model) statusLine() string {
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
	return cut(status, m.w) + "\n" + m.st.Dim.Render(cut(m.hints(), m.w))
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

// commonHints ends the key line of the top screens.
const commonHints = "? keys · r refresh · i interval · n new task · q quit"

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
	return m.page().hints(m)
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
