package tui

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/google/uuid"

	"github.com/qo-queue/qo/queue"
)

// workflowScreen shows one workflow: its name, id, status and counts, and
// every step as a graph drawn in text, roots first. Only the rows on the
// screen are drawn, so a workflow of 10,000 steps scrolls as fast as one
// of five; the graph is laid out once per record (a record never changes).
type workflowScreen struct {
	st   Styles
	keys KeyMap
	w, h int

	ref    string // what was asked for: a workflow id or name
	loaded bool   // a read came back (view or err)
	view   *queue.WorkflowView
	graph  wfGraph
	err    error // why nothing can be shown (unknown workflow, malformed record)

	sel, off int // the cursor and the first row shown, in graph.order
	drawn    int // step rows drawn by the last View
}

func newWorkflowScreen(st Styles, keys KeyMap, ref string) workflowScreen {
	return workflowScreen{st: st, keys: keys, ref: ref}
}

func (s *workflowScreen) SetSize(w, h int) { s.w, s.h = w, h }

// take takes a read of the workflow. A failed read keeps what is shown;
// with nothing shown yet, its error is.
func (s *workflowScreen) take(m workflowMsg) {
	s.loaded = true
	if m.view == nil || m.view.Workflow == nil {
		if s.view == nil {
			s.err = m.err
		}
		return
	}
	if s.view == nil || s.view.Workflow.ID != m.view.Workflow.ID {
		s.graph = layoutWorkflow(m.view.Workflow)
		s.sel, s.off = 0, 0
	}
	s.view, s.err = m.view, nil
	s.sel = max(min(s.sel, len(s.graph.order)-1), 0)
}

// matches reports whether ref names the workflow shown (by id or name).
func (s *workflowScreen) matches(ref string) bool {
	if ref == s.ref {
		return true
	}
	return s.view != nil && (ref == s.view.Workflow.ID.String() || (ref == s.view.Workflow.Name && ref != ""))
}

// label names the workflow for the tab line and messages.
func (s *workflowScreen) label() string {
	if s.view != nil {
		if s.view.Workflow.Name != "" {
			return safe(s.view.Workflow.Name)
		}
		return queue.ShortID(s.view.Workflow.ID)
	}
	if len(s.ref) == 36 {
		return s.ref[len(s.ref)-8:]
	}
	return safe(s.ref)
}

// selected returns the step under the cursor and its task (nil when it is
// missing); i < 0 when there is none.
func (s *workflowScreen) selected() (i int, t *queue.Task) {
	if s.view == nil || s.sel < 0 || s.sel >= len(s.graph.order) {
		return -1, nil
	}
	i = s.graph.order[s.sel]
	if i < len(s.view.Tasks) {
		t = s.view.Tasks[i]
	}
	return i, t
}

// rows is how many step rows fit: the body less the two header lines, the
// column header and the two lines about the selected step.
func (s *workflowScreen) rows() int { return max(s.h-5, 1) }

// load reads the workflow; on the auto-refresh tick, only its steps that
// have not ended, and not while the last read is still under way.
func (s *workflowScreen) load(r *Model, tick bool) tea.Cmd {
	switch {
	case !tick || s.view == nil:
		return loadWorkflow(r.ctx, r.q, s.pinned(), r.next("workflow"))
	case !r.inflight["workflow"]:
		return refreshWorkflow(r.ctx, r.q, s.view, r.next("workflow"))
	}
	return nil
}

func (s *workflowScreen) apply(r *Model, msg tea.Msg) (tea.Cmd, bool) {
	m, ok := msg.(workflowMsg)
	if !ok {
		return nil, false
	}
	if r.fresh("workflow", m.seq) {
		var bad *queue.MalformedError
		if m.view == nil && (errors.Is(m.err, queue.ErrNotFound) || errors.As(m.err, &bad)) {
			r.noteLoad(nil) // not an outage: the screen says what is wrong
		} else {
			r.noteLoad(m.err)
		}
		s.take(m)
		if m.view != nil && m.view.Workflow != nil {
			r.record = m.view.Workflow
		}
	}
	return nil, true
}

func (s *workflowScreen) capture(*Model, tea.KeyMsg) (tea.Cmd, bool) { return nil, false }

// key opens the selected step's task, asks before cancelling the
// workflow or acting on the step's task, or moves the cursor.
func (s *workflowScreen) key(r *Model, msg tea.KeyMsg) tea.Cmd {
	switch {
	case key.Matches(msg, s.keys.OpenStep):
		return s.openStep(r)
	case key.Matches(msg, s.keys.CancelWorkflow):
		s.confirmCancel(r)
		return nil
	}
	if cmd, ok := r.taskAction(msg, s.target()); ok {
		return cmd
	}
	s.move(msg)
	return nil
}

func (s *workflowScreen) target() *queue.Task {
	_, t := s.selected()
	return t
}

func (s *workflowScreen) writes(msg tea.KeyMsg) bool { return key.Matches(msg, s.keys.CancelWorkflow) }

func (s *workflowScreen) hints(*Model) string {
	return "enter open step · R replay · C cancel step · X cancel workflow · r refresh · q back · ? keys"
}

// openStep opens the task of the selected workflow step.
func (s *workflowScreen) openStep(r *Model) tea.Cmd {
	i, t := s.selected()
	switch {
	case i < 0:
		return nil
	case t == nil:
		step := s.view.Workflow.Steps[i]
		r.say("step "+safe(step.Name)+" has no task to open: "+oneLine(orDash(s.view.Problems[step.Name])), true)
		return nil
	}
	r.open(t.ID)
	return r.detail.read(r, false)
}

// confirmCancel asks before cancelling the workflow's steps that have not
// ended.
func (s *workflowScreen) confirmCancel(r *Model) {
	v := s.view
	if v == nil {
		return
	}
	label := s.label()
	n := s.notEnded()
	if n == 0 {
		r.say("workflow "+label+" has no step left to cancel: every step ended", false)
		return
	}
	text := fmt.Sprintf("Cancel the %s of workflow %s that did not end? Running ones are asked to stop; ended ones stay.", plural(n, "step"), label)
	r.ask(&confirm{action: actCancelWorkflow, text: text, run: cancelWorkflow(r.ctx, r.q, v.Workflow, label)})
}

// move moves the cursor.
func (s *workflowScreen) move(msg tea.KeyMsg) {
	n := len(s.graph.order)
	switch {
	case key.Matches(msg, s.keys.PageUp):
		s.sel = max(s.sel-s.rows(), 0)
	case key.Matches(msg, s.keys.PageDown):
		s.sel = max(min(s.sel+s.rows(), n-1), 0)
	default:
		s.sel = moveSel(s.keys, msg, s.sel, n)
	}
}

// notEnded counts the steps a cancel of the workflow would reach.
func (s *workflowScreen) notEnded() int {
	if s.view == nil {
		return 0
	}
	n := 0
	for _, t := range s.view.Tasks {
		if t != nil && !ended(t.Status) {
			n++
		}
	}
	return n
}

// ended reports whether a step in status st no longer runs by itself.
func ended(st queue.Status) bool {
	switch st {
	case queue.StatusCompleted, queue.StatusFailed, queue.StatusCancelled, queue.StatusExpired, queue.StatusArchived:
		return true
	}
	return false
}

// workflowStatus colours a workflow status like the task status it
// resembles.
func (s *workflowScreen) workflowStatus(ws queue.WorkflowStatus) string {
	switch ws {
	case queue.WorkflowRunning:
		return s.st.status(queue.StatusRunning)
	case queue.WorkflowCompleted:
		return s.st.status(queue.StatusCompleted)
	case queue.WorkflowFailed:
		return s.st.status(queue.StatusFailed)
	case queue.WorkflowCancelled:
		return s.st.status(queue.StatusCancelled)
	}
	return s.st.Error.Render(safe(string(ws)))
}

func (s *workflowScreen) View(now time.Time) string {
	s.drawn = 0
	if !s.loaded {
		return s.st.Dim.Render("Loading workflow " + safe(s.ref) + "…")
	}
	if s.view == nil {
		line := "! workflow " + safe(s.ref) + ": "
		switch {
		case errors.Is(s.err, queue.ErrNotFound):
			line = "! no workflow named " + safe(s.ref)
			if _, err := uuid.Parse(s.ref); err == nil {
				line = "! no workflow with id " + safe(s.ref)
			}
		case s.err != nil:
			line += describe(s.err)
		default:
			line += "it could not be read"
		}
		return s.st.Error.Render(cut(line, s.w)) + "\n" +
			s.st.Dim.Render(cut("Open one with w on a task of it, or type wf:NAME or wf:ID in the task list's search (/).", s.w))
	}
	v, w := s.view, s.view.Workflow
	var b strings.Builder

	// Name, id, status; then the counts and the age.
	title := "Workflow " + safe(w.Name)
	if w.Name == "" {
		title = "Workflow (unnamed)"
	}
	b.WriteString(cut(s.st.Header.Render(title)+"  "+w.ID.String()+"  "+s.workflowStatus(v.Status), s.w) + "\n")
	parts := []string{plural(len(w.Steps), "step")}
	for _, st := range []queue.Status{queue.StatusCompleted, queue.StatusRunning, queue.StatusPending, queue.StatusWaiting,
		queue.StatusFailed, queue.StatusCancelled, queue.StatusExpired, queue.StatusArchived} {
		if n := v.Counts[st]; n > 0 {
			parts = append(parts, s.st.status(st)+" "+count(n))
		}
	}
	if n := len(v.Problems); n > 0 {
		parts = append(parts, s.st.Error.Render("problems "+count(n)))
	}
	age := "created " + ago(w.CreatedAt, now)
	if v.EndedAt != nil {
		age += ", ended " + ago(*v.EndedAt, now) + " (took " + short(v.EndedAt.Sub(w.CreatedAt)) + ")"
	}
	parts = append(parts, age)
	b.WriteString(cut(strings.Join(parts, " · "), s.w) + "\n")

	b.WriteString(s.stepsView(now))
	b.WriteString(s.selectedView())
	return strings.TrimRight(b.String(), "\n")
}

// stepsView is the column header and the step rows on the screen.
func (s *workflowScreen) stepsView(now time.Time) string {
	v, w := s.view, s.view.Workflow
	var b strings.Builder
	// The steps.
	const statusW, attW, whenW = 10, 3, 22
	rest := max(s.w-2-statusW-attW-whenW-5, 24)
	nameW := rest / 2
	afterW := rest / 4
	typeW := rest - nameW - afterW
	b.WriteString(s.st.Header.Render(cut(fmt.Sprintf("  %s %s %s %s %3s %s", fit("STEP", nameW), fit("AFTER", afterW), fit("STATUS", statusW),
		fit("TYPE", typeW), "ATT", "WHEN"), s.w)) + "\n")
	rows := s.rows()
	s.sel = max(min(s.sel, len(s.graph.order)-1), 0)
	s.off = scroll(s.sel, s.off, rows)
	if s.off+rows > len(s.graph.order) {
		s.off = max(len(s.graph.order)-rows, 0)
	}
	for r := s.off; r < len(s.graph.order) && r < s.off+rows; r++ {
		s.drawn++
		i := s.graph.order[r]
		step := w.Steps[i]
		var t *queue.Task
		if i < len(v.Tasks) {
			t = v.Tasks[i]
		}
		name := s.graph.prefix[i] + safe(step.Name)
		after := s.st.Dim.Render(s.graph.after[i])
		status, typ, att, when := "", safe(step.Type), "  -", ""
		switch {
		case t != nil:
			status, typ, att, when = s.st.status(t.Status), safe(t.Type), fmt.Sprintf("%3d", t.Attempt), stepWhen(t, now)
		case v.Problems[step.Name] != "":
			status, when = s.st.Error.Render("missing"), s.st.Error.Render(oneLine(v.Problems[step.Name]))
		default:
			status = s.st.Dim.Render("unknown")
		}
		if s.graph.broken[i] != "" {
			when = s.st.Error.Render(s.graph.broken[i])
		}
		line := fit(name, nameW) + " " + fit(after, afterW) + " " + fit(status, statusW) + " " + fit(typ, typeW) + " " + att + " " + when
		if r == s.sel {
			b.WriteString(s.st.Selected.Render(fit("> "+line, s.w)) + "\n")
		} else {
			b.WriteString(cut("  "+line, s.w) + "\n")
		}
	}

	return b.String()
}

// selectedView is the selected step: its task, and what is wrong with it
// if anything.
func (s *workflowScreen) selectedView() string {
	v, w := s.view, s.view.Workflow
	var b strings.Builder
	if i, t := s.selected(); i >= 0 {
		step := w.Steps[i]
		info := "step " + safe(step.Name)
		if len(step.After) > 0 {
			info += " after " + strings.Join(safeAll(step.After), ", ")
		}
		info += " · task " + step.TaskID.String()
		note := ""
		switch {
		case s.graph.broken[i] != "":
			note = s.st.Error.Render(s.graph.broken[i] + " (in the workflow's record)")
		case t == nil && v.Problems[step.Name] != "":
			note = s.st.Error.Render("! " + oneLine(v.Problems[step.Name]))
		case t == nil:
			note = s.st.Dim.Render("its task was not read")
		case t.Status == queue.StatusWaiting:
			note = "waits for " + t.WaitingFor()
			if t.OnParentFailure != "" {
				note += " · on parent failure: " + safe(string(t.OnParentFailure))
			}
		case t.CancelRequested || t.Status == queue.StatusCancelled:
			note = "cancelled: " + oneLine(orDash(t.CancelReason))
		case t.LastError != "":
			note = s.st.Error.Render("last error ") + oneLine(t.LastError)
		}
		if t != nil && t.WorkerID != "" {
			info += " · worker " + safe(t.WorkerID)
		}
		if t != nil && len(t.Children) > 0 {
			info += " · " + children(len(t.Children))
		}
		b.WriteString(s.st.Dim.Render(cut(info, s.w)) + "\n" + cut(note, s.w))
	}
	return b.String()
}

// stepWhen is a step's timing: how long ago it ended, how long it has run
// or waited, or when it runs.
func stepWhen(t *queue.Task, now time.Time) string {
	switch t.Status {
	case queue.StatusWaiting:
		return fmt.Sprintf("waiting %s (%d of %d)", short(now.Sub(t.CreatedAt)), t.ParentsLeft(), len(t.Parents))
	case queue.StatusPending:
		if t.AvailableAt.After(now) {
			return "runs in " + short(t.AvailableAt.Sub(now))
		}
		return "ready " + short(now.Sub(t.AvailableAt))
	case queue.StatusRunning:
		if t.LastEvent == queue.EventClaimed {
			return "running " + short(now.Sub(t.UpdatedAt)) // the claim wrote this version
		}
		return when(t, now)
	}
	at := t.UpdatedAt
	if t.CompletedAt != nil {
		at = *t.CompletedAt
	}
	return "ended " + ago(at, now)
}

// wfGraph is a workflow record laid out for drawing: its steps ordered by
// level (a step's level is the longest chain of steps it runs after; roots
// are level 0), each with the mark drawn before its name and the names of
// the steps it runs after. A record written by hand may name unknown steps
// or form a cycle: those steps are drawn last, with what is wrong.
type wfGraph struct {
	order  []int    // step indexes, by level then record order
	level  []int    // by step index
	prefix []string // by step index: indentation and tree mark
	after  []string // by step index: "← a, b"
	broken []string // by step index: what is wrong with it in the record
}

// maxIndent bounds the indentation: deeper levels are drawn at this depth
// with their level number (roots are level 0), e.g. "L12 └─ ".
const maxIndent = 3

func layoutWorkflow(w *queue.Workflow) wfGraph {
	n := len(w.Steps)
	g := wfGraph{level: make([]int, n), prefix: make([]string, n), after: make([]string, n), broken: make([]string, n)}
	idx := make(map[string]int, n)
	for i, s := range w.Steps {
		if _, dup := idx[s.Name]; dup {
			g.broken[i] = "! the name of an earlier step"
			continue
		}
		idx[s.Name] = i
	}
	children := make([][]int, n)
	indeg := make([]int, n)
	for i, s := range w.Steps {
		var names []string
		seen := map[int]bool{}
		for _, a := range s.After {
			p, ok := idx[a]
			switch {
			case !ok:
				names = append(names, "?"+safe(a))
				g.broken[i] = "! after " + safe(a) + ": no such step"
				continue
			case p == i || seen[p]:
				continue
			}
			seen[p] = true
			names = append(names, safe(a))
			children[p] = append(children[p], i)
			indeg[i]++
		}
		if len(names) > 0 {
			g.after[i] = "← " + strings.Join(names, ", ")
		}
	}
	// Kahn's order: a step's level is settled once every step it runs
	// after has been placed.
	queueIdx := make([]int, 0, n)
	for i := range w.Steps {
		if indeg[i] == 0 {
			queueIdx = append(queueIdx, i)
		}
	}
	placed := make([]bool, n)
	top := 0
	for k := 0; k < len(queueIdx); k++ {
		p := queueIdx[k]
		placed[p] = true
		top = max(top, g.level[p])
		for _, c := range children[p] {
			g.level[c] = max(g.level[c], g.level[p]+1)
			if indeg[c]--; indeg[c] == 0 {
				queueIdx = append(queueIdx, c)
			}
		}
	}
	for i := range w.Steps {
		if !placed[i] {
			g.level[i] = top + 1
			g.broken[i] = "! in a cycle of after"
		}
	}
	// Order by level, keeping the record's order within a level.
	byLevel := make([][]int, top+2)
	for i, l := range g.level {
		byLevel[l] = append(byLevel[l], i)
	}
	g.order = make([]int, 0, n)
	for l, steps := range byLevel {
		for j, i := range steps {
			g.order = append(g.order, i)
			if l == 0 {
				continue
			}
			mark := "├─ "
			if j == len(steps)-1 {
				mark = "└─ "
			}
			if !placed[i] {
				mark = "↺  "
			}
			if l-1 <= maxIndent {
				g.prefix[i] = strings.Repeat("   ", l-1) + mark
			} else {
				g.prefix[i] = fmt.Sprintf("%*s ", maxIndent*3-1, fmt.Sprintf("L%d", l)) + mark
			}
		}
	}
	return g
}

// pinned is the reference reads use: the id once the workflow is known,
// so a name that moves to a newer workflow does not change what is shown.
func (s *workflowScreen) pinned() string {
	if s.view != nil {
		return s.view.Workflow.ID.String()
	}
	return s.ref
}

func safeAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = safe(s)
	}
	return out
}
