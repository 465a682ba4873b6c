package tui

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/aymanbagabas/go-udiff"
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/google/uuid"

	"github.com/qo-queue/qo/queue"
)

// detail shows one task: every field, its dependencies, the version
// timeline (one row per version) and its input and output as a foldable
// JSON tree. Two versions marked with m can be compared with d.
type detail struct {
	st   Styles
	keys KeyMap
	w, h int

	id uuid.UUID // the task shown
	// orWorkflow: the open id was typed, and may be a workflow's.
	orWorkflow bool

	loaded     bool
	task       *queue.Task
	payloadErr error // offloaded input/output could not be loaded
	events     []queue.Event
	tree       jsonTree

	record    *queue.Workflow   // the task's workflow, when it has one and it was read
	recordErr error             // why it could not be
	steps     map[uuid.UUID]int // record's step index by task id

	focusTree bool // false: the timeline has the cursor
	evSel     int
	evOff     int
	treeSel   int
	treeOff   int
	marks     []int // up to two marked versions (indexes into events)

	diff    []string // the diff being shown, nil when none
	diffOff int
}

func newDetail(st Styles, keys KeyMap) detail { return detail{st: st, keys: keys} }

func (d *detail) SetSize(w, h int) { d.w, d.h = w, h }

func (d *detail) take(m detailMsg) {
	keepSel := d.loaded && d.task != nil && m.task != nil && d.task.ID == m.task.ID
	onLast := d.evSel == len(d.events)-1
	d.loaded, d.task, d.events, d.payloadErr = true, m.task, m.events, m.payloadErr
	if m.record != d.record {
		d.steps = nil
		if m.record != nil {
			d.steps = make(map[uuid.UUID]int, len(m.record.Steps))
			for i, s := range m.record.Steps {
				d.steps[s.TaskID] = i
			}
		}
	}
	d.record, d.recordErr = m.record, m.recordErr
	if keepSel && onLast {
		d.evSel = len(d.events) - 1 // follow new versions
	}
	if !keepSel {
		d.evSel, d.evOff, d.treeSel, d.treeOff, d.marks, d.diff, d.focusTree = len(m.events)-1, 0, 0, 0, nil, nil, false
	}
	d.evSel = max(min(d.evSel, len(d.events)-1), 0)
	// Rebuild the tree, keeping what was folded.
	folded := map[string]bool{}
	for _, l := range d.tree.lines() {
		if l.node.collapsed {
			folded[l.node.label+fmt.Sprint(l.depth)] = true
		}
	}
	d.tree = jsonTree{}
	if data := m.data; data != nil || m.task != nil {
		if data == nil {
			data = m.task
		}
		d.tree.addRoot("input", data.Input)
		d.tree.addRoot("output", data.Output)
	}
	for _, l := range d.tree.lines() {
		if keepSel && folded[l.node.label+fmt.Sprint(l.depth)] {
			l.node.collapsed = true
		}
	}
}

func (d *detail) load(r *Model, _ bool) tea.Cmd { return d.read(r, d.orWorkflow) }

// read loads the task; orWorkflow: the id may be a workflow's.
func (d *detail) read(r *Model, orWorkflow bool) tea.Cmd {
	return loadDetail(r.ctx, r.q, r.model, d.id, r.next("detail"), r.record, orWorkflow)
}

// apply takes a read of the task. When the id typed is a workflow's, the
// workflow opens in its place.
func (d *detail) apply(r *Model, msg tea.Msg) (tea.Cmd, bool) {
	m, ok := msg.(detailMsg)
	if !ok {
		return nil, false
	}
	if !r.fresh("detail", m.seq) {
		return nil, true
	}
	if m.workflow != nil && r.screen == scrDetail && m.workflow.ID == d.id {
		r.noteLoad(nil)
		r.record = m.workflow
		r.setWorkflow(m.workflow.ID.String())
		r.screen = scrWorkflow
		return r.reload(), true
	}
	r.noteLoad(m.err)
	if m.record != nil {
		r.record = m.record
	}
	if m.err == nil || d.task == nil {
		d.take(m)
	}
	if m.task != nil {
		d.orWorkflow = false
	}
	return nil, true
}

// capture takes the keys of the diff while one is shown.
func (d *detail) capture(_ *Model, msg tea.KeyMsg) (tea.Cmd, bool) {
	if d.diff == nil {
		return nil, false
	}
	return nil, d.diffKey(msg)
}

// key moves through the timeline or the data, or asks before an action on
// the task.
func (d *detail) key(r *Model, msg tea.KeyMsg) tea.Cmd {
	if d.Update(msg) {
		return nil
	}
	cmd, _ := r.taskAction(msg, d.task)
	return cmd
}

func (d *detail) target() *queue.Task { return d.task }

func (d *detail) writes(tea.KeyMsg) bool { return false }

func (d *detail) hints(*Model) string {
	if t := d.task; t != nil && t.Workflow != nil {
		return "w workflow · tab pane · m mark · d diff · R replay A archive C cancel N requeue p pause · q back"
	}
	return "tab pane · m mark · d diff · R replay A archive C cancel N requeue p pause · q back · ? keys"
}

// diffKey scrolls or closes the diff; false when the key is not one of it.
func (d *detail) diffKey(msg tea.KeyMsg) bool {
	k := d.keys
	switch {
	case key.Matches(msg, k.Back):
		d.diff = nil
	case key.Matches(msg, k.Up):
		d.diffOff = max(d.diffOff-1, 0)
	case key.Matches(msg, k.Down):
		d.diffOff = min(d.diffOff+1, max(len(d.diff)-d.h+2, 0))
	case key.Matches(msg, k.PageUp):
		d.diffOff = max(d.diffOff-d.h, 0)
	case key.Matches(msg, k.PageDown):
		d.diffOff = min(d.diffOff+d.h, max(len(d.diff)-d.h+2, 0))
	default:
		return false
	}
	return true
}

// Update handles a key of the timeline or the data. It returns true when
// the key was used.
func (d *detail) Update(msg tea.KeyMsg) bool {
	k := d.keys
	if d.diff != nil {
		return false // the diff took its keys (capture)
	}
	sel, n := &d.evSel, len(d.events)
	if d.focusTree {
		sel, n = &d.treeSel, len(d.tree.lines())
	}
	switch {
	case key.Matches(msg, k.Focus):
		d.focusTree = !d.focusTree
	case key.Matches(msg, k.Up):
		*sel = max(*sel-1, 0)
	case key.Matches(msg, k.Down):
		*sel = max(min(*sel+1, n-1), 0)
	case key.Matches(msg, k.Top):
		*sel = 0
	case key.Matches(msg, k.Bottom):
		*sel = max(n-1, 0)
	case d.focusTree && key.Matches(msg, k.Toggle):
		d.tree.toggle(d.treeSel)
		d.treeSel = min(d.treeSel, len(d.tree.lines())-1)
	case !d.focusTree && key.Matches(msg, k.Mark):
		d.mark(d.evSel)
	case key.Matches(msg, k.Diff):
		d.showDiff()
	default:
		return false
	}
	return true
}

// mark toggles version i as one of the two to compare.
func (d *detail) mark(i int) {
	for j, m := range d.marks {
		if m == i {
			d.marks = append(d.marks[:j], d.marks[j+1:]...)
			return
		}
	}
	d.marks = append(d.marks, i)
	if len(d.marks) > 2 {
		d.marks = d.marks[1:]
	}
}

// showDiff compares the two marked versions, or, with fewer marks, the
// version under the cursor with the one before it, field by field.
func (d *detail) showDiff() {
	a, b := d.evSel-1, d.evSel
	if len(d.marks) == 2 {
		a, b = min(d.marks[0], d.marks[1]), max(d.marks[0], d.marks[1])
	}
	if a < 0 || b >= len(d.events) || a == b {
		d.diff = []string{"Mark two versions with m (or put the cursor on any version but the first) to compare them."}
		return
	}
	ea, eb := d.events[a], d.events[b]
	d.diffOff = 0
	d.diff = []string{"--- " + versionLabel(a, ea), "+++ " + versionLabel(b, eb)}
	if ea.Task == nil || eb.Task == nil {
		// A delete marker or an unreadable version: no fields to compare.
		text := udiff.Unified(versionLabel(a, ea), versionLabel(b, eb), pretty(ea), pretty(eb))
		d.diff = strings.Split(strings.TrimRight(text, "\n"), "\n")
		return
	}
	ja, errA := json.Marshal(ea.Task)
	jb, errB := json.Marshal(eb.Task)
	if err := cmp.Or(errA, errB); err != nil {
		d.diff = append(d.diff, err.Error())
		return
	}
	lines, same := fieldDiff(ja, jb)
	if len(lines) == 0 {
		d.diff = append(d.diff, "The two versions are identical.")
		return
	}
	d.diff = append(d.diff, lines...)
	d.diff = append(d.diff, fmt.Sprintf("(%s unchanged)", plural(same, "field")))
}

func versionLabel(i int, e queue.Event) string {
	return fmt.Sprintf("v%d %s rev %d", i+1, e.Name, e.Rev)
}

// pretty renders a version for diffing.
func pretty(e queue.Event) string {
	if e.Task == nil {
		if e.Err != nil {
			return "(unreadable version: " + e.Err.Error() + ")\n"
		}
		return "(" + e.Name + ")\n"
	}
	b, err := json.MarshalIndent(e.Task, "", "  ")
	if err != nil {
		return err.Error()
	}
	return string(b) + "\n"
}

// progressText renders a running task's progress: "42% resized 42 of 100
// (reported 3s ago)", the message escaped.
func progressText(p *queue.Progress, now time.Time) string {
	s := fmt.Sprintf("%d%%", int(math.Floor(p.Fraction*100)))
	if p.Message != "" {
		s += " " + oneLine(p.Message)
	}
	if !p.At.IsZero() && now.After(p.At) {
		s += " (reported " + ago(p.At, now) + ")"
	}
	return s
}

func (d *detail) View(now time.Time) string {
	if !d.loaded || d.task == nil {
		return d.st.Dim.Render("Loading task…")
	}
	if d.diff != nil {
		return d.diffView()
	}
	var b strings.Builder
	b.WriteString(d.fieldsView(now))

	used := strings.Count(b.String(), "\n")
	space := max(d.h-used-2, 4)
	evRows := min(max(len(d.events), 1), max(space/2, 2))
	treeRows := max(space-evRows, 2)

	b.WriteString(d.timelineView(evRows))
	b.WriteString(d.dataView(treeRows))
	return b.String()
}

// fieldsView is the task's fields, its errors and its dependencies.
func (d *detail) fieldsView(now time.Time) string {
	t := d.task
	var b strings.Builder
	field := func(name, value string) string { return d.st.Dim.Render(fmt.Sprintf("%-10s", name)) + value }
	lease := "-"
	if t.LeaseExpiresAt != nil {
		lease = t.LeaseExpiresAt.UTC().Format(time.DateTime) + " (" + ago(*t.LeaseExpiresAt, now) + ")"
	}
	colW := max(d.w/2, 36)
	two := func(a, c string) { b.WriteString(fit(a, colW) + cut(c, max(d.w-colW, 10)) + "\n") }
	head := d.st.Header.Render(t.ID.String()) + "  " + d.st.status(t.Status) + "  " + safe(t.Type) + "  priority " + safe(string(t.Priority))
	if t.TaskKey != "" {
		head += "  key " + safe(t.TaskKey)
	}
	b.WriteString(head + "\n")
	two(field("shard", safe(t.Shard)), field("rev", fmt.Sprint(t.Rev)))
	two(field("attempt", fmt.Sprintf("%d (retries %d of %d)", t.Attempt, t.RetryCount, t.MaxRetries)), field("timeout", fmt.Sprintf("%ds", t.TimeoutSeconds)))
	two(field("created", t.CreatedAt.UTC().Format(time.DateTime)), field("updated", t.UpdatedAt.UTC().Format(time.DateTime)+" ("+ago(t.UpdatedAt, now)+")"))
	two(field("available", t.AvailableAt.UTC().Format(time.DateTime)+" ("+ago(t.AvailableAt, now)+")"), field("lease", lease))
	two(field("worker", safe(orDash(t.WorkerID))), field("event", safe(orDash(t.LastEvent))))
	extra := []string{}
	if p := t.Progress; p != nil {
		extra = append(extra, "progress "+progressText(p, now))
	}
	if t.ExpiresAt != nil {
		extra = append(extra, "expires "+t.ExpiresAt.UTC().Format(time.DateTime)+" ("+ago(*t.ExpiresAt, now)+")")
	}
	for _, r := range []struct {
		name string
		ref  *queue.DataRef
	}{{"input", t.InputRef}, {"output", t.OutputRef}} {
		if r.ref != nil {
			extra = append(extra, fmt.Sprintf("%s offloaded: %d bytes in %s", r.name, r.ref.Bytes, safe(r.ref.Key)))
		}
	}
	if t.IdempotencyKey != "" {
		extra = append(extra, "idempotency key "+safe(t.IdempotencyKey))
	}
	if len(t.Metadata) > 0 {
		extra = append(extra, "metadata "+safe(strings.Join(queue.MetadataLines(t.Metadata), " ")))
	}
	if t.CancelRequested {
		extra = append(extra, "cancel requested: "+oneLine(orDash(t.CancelReason)))
	}
	if len(extra) > 0 {
		b.WriteString(cut(strings.Join(extra, " · "), d.w) + "\n")
	}
	if t.LastError != "" {
		b.WriteString(d.st.Error.Render("last error ") + cut(oneLine(t.LastError), max(d.w-11, 10)) + "\n")
	}
	if d.payloadErr != nil {
		b.WriteString(d.st.Error.Render("! ") + cut("offloaded data not loaded: "+oneLine(d.payloadErr.Error()), max(d.w-2, 10)) + "\n")
	}
	for _, l := range d.depLines() {
		b.WriteString(cut(l, d.w) + "\n")
	}
	return b.String()
}

// timelineView is the version timeline in rows lines.
func (d *detail) timelineView(evRows int) string {
	var b strings.Builder
	// The timeline.
	title := fmt.Sprintf("Timeline: %d versions", len(d.events))
	if !d.focusTree {
		title = "▶ " + title + d.st.Dim.Render("  m marks, d diffs, tab to data")
	}
	b.WriteString(d.st.Header.Render(title) + "\n")
	if len(d.events) == 0 {
		b.WriteString(d.st.Dim.Render("  no versions (bucket versioning off?)") + "\n")
	}
	d.evOff = scroll(d.evSel, d.evOff, evRows)
	for i := d.evOff; i < len(d.events) && i < d.evOff+evRows; i++ {
		e := d.events[i]
		mark := " "
		for _, m := range d.marks {
			if m == i {
				mark = "*"
			}
		}
		st := safe(string(e.Status))
		if e.Status.Valid() {
			st = d.st.status(e.Status)
		}
		cursor := " "
		if !d.focusTree && i == d.evSel {
			cursor = ">"
		}
		who := orDash(e.WorkerID)
		if e.Task != nil && e.Task.Actor != "" {
			who = "by " + oneLine(e.Task.Actor) // an operator made it, not the worker
		}
		line := fmt.Sprintf("%s v%-3d %-19s %-14s %s a%-2d %s", mark, i+1, e.At.UTC().Format(time.DateTime), cut(safe(e.Name), 14), fit(st, 10), e.Attempt, cut(safe(who), 24))
		line = cursor + line
		if e.Err != nil {
			line += d.st.Error.Render(" unreadable")
		}
		if !d.focusTree && i == d.evSel {
			b.WriteString(d.st.Selected.Render(fit(line, d.w)) + "\n")
		} else {
			b.WriteString(cut(line, d.w) + "\n")
		}
	}

	return b.String()
}

// dataView is the input and output tree in rows lines.
func (d *detail) dataView(treeRows int) string {
	var b strings.Builder
	// The data.
	title := "Input and output"
	if d.focusTree {
		title = "▶ " + title + d.st.Dim.Render("  space folds, tab to timeline")
	}
	b.WriteString(d.st.Header.Render(title) + "\n")
	lines := d.tree.lines()
	d.treeOff = scroll(d.treeSel, d.treeOff, treeRows)
	for i := d.treeOff; i < len(lines) && i < d.treeOff+treeRows; i++ {
		text := "  " + lines[i].render()
		if d.focusTree && i == d.treeSel {
			text = "> " + lines[i].render()
			b.WriteString(d.st.Selected.Render(fit(text, d.w)))
		} else {
			b.WriteString(cut(text, d.w))
		}
		if i < len(lines)-1 && i < d.treeOff+treeRows-1 {
			b.WriteString("\n")
		}
	}
	return b.String()
}

func (d *detail) diffView() string {
	var b strings.Builder
	b.WriteString(d.st.Header.Render("Diff") + d.st.Dim.Render("  q/esc closes, ↑/↓ scrolls") + "\n")
	rows := max(d.h-1, 1)
	for i := d.diffOff; i < len(d.diff) && i < d.diffOff+rows; i++ {
		l := cut(safe(d.diff[i]), d.w)
		switch {
		case strings.HasPrefix(l, "+") && !strings.HasPrefix(l, "+++"):
			l = d.st.DiffAdd.Render(l)
		case strings.HasPrefix(l, "-") && !strings.HasPrefix(l, "---"):
			l = d.st.DiffDel.Render(l)
		}
		b.WriteString(l)
		if i < len(d.diff)-1 && i < d.diffOff+rows-1 {
			b.WriteString("\n")
		}
	}
	return b.String()
}

// scroll returns the offset that keeps sel inside a window of rows.
func scroll(sel, off, rows int) int {
	if sel < off {
		return sel
	}
	if sel >= off+rows {
		return sel - rows + 1
	}
	return off
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
