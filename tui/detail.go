package tui

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

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

func (d *detail) apply(m detailMsg) {
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

// Update handles a key. It returns true when the key was used.
func (d *detail) Update(msg tea.KeyMsg) (bool, tea.Cmd) {
	k := d.keys
	if d.diff != nil {
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
			return false, nil
		}
		return true, nil
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
		return false, nil
	}
	return true, nil
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

	used := strings.Count(b.String(), "\n")
	space := max(d.h-used-2, 4)
	evRows := min(max(len(d.events), 1), max(space/2, 2))
	treeRows := max(space-evRows, 2)

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

	// The data.
	title = "Input and output"
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

// depLines describe the task's place among others: its workflow and step,
// each parent with the end recorded for it, its children, what it waits
// for and where its input_from values come from. All of it is on the task,
// or in its workflow's record (step names and types), which is read once:
// the detail reads no parent or child.
func (d *detail) depLines() []string {
	t := d.task
	if t.Workflow == nil && len(t.Parents) == 0 && len(t.Children) == 0 && len(t.InputFrom) == 0 {
		return nil
	}
	field := func(name, value string) string { return d.st.Dim.Render(fmt.Sprintf("%-10s", name)) + " " + value }
	indent := strings.Repeat(" ", 11)
	// Rows per list (parents, input_from): on a small terminal each list
	// is one line, so the timeline and the data keep room.
	rows := 1
	if d.h >= 20 {
		rows = 3
	}
	var out []string
	if ref := t.Workflow; ref != nil {
		line := "step " + safe(ref.Step) + " of "
		if d.record != nil && d.record.Name != "" {
			line += safe(d.record.Name) + " "
		}
		line += ref.ID.String()
		switch {
		case d.recordErr != nil:
			line += d.st.Error.Render("  ! its record: " + describe(d.recordErr))
		default:
			line += d.st.Dim.Render("  (w opens it)")
		}
		out = append(out, field("workflow", line))
	}
	if n := len(t.Parents); n > 0 {
		left := t.ParentsLeft()
		head := fmt.Sprintf("%d, every end recorded", n)
		switch {
		case t.Status == queue.StatusWaiting:
			head = "waits for " + t.WaitingFor()
		case left > 0:
			head = fmt.Sprintf("%d, %d not ended", n, left)
		}
		if t.OnParentFailure != "" {
			head += " · on parent failure: " + safe(string(t.OnParentFailure))
		}
		out = append(out, field("parents", head))
		var parts []string
		for i, p := range t.Parents {
			if i == rows-1 && n > rows {
				parts = append(parts, d.st.Dim.Render(fmt.Sprintf("… and %d more", n-i)))
				break
			}
			done := d.st.Dim.Render("not ended")
			if p.Done != "" {
				done = d.st.status(p.Done)
			}
			if rows == 1 {
				parts = append(parts, d.taskName(p.ID)+" "+done)
				continue
			}
			parts = append(parts, fit(done, 10)+" "+d.taskName(p.ID))
		}
		if rows == 1 {
			parts = []string{strings.Join(parts, " · ")}
		}
		for _, p := range parts {
			out = append(out, indent+p)
		}
	}
	if n := len(t.Children); n > 0 {
		var names []string
		for _, c := range t.Children[:min(n, 4)] {
			names = append(names, d.taskName(c))
		}
		line := fmt.Sprintf("%d: %s", n, strings.Join(names, ", "))
		if n > 4 {
			line += fmt.Sprintf(", … %d more", n-4)
		}
		out = append(out, field("children", line))
	}
	if n := len(t.InputFrom); n > 0 {
		fields := make([]string, 0, n)
		for f := range t.InputFrom {
			fields = append(fields, f)
		}
		sort.Strings(fields)
		var parts []string
		for _, f := range fields {
			src := t.InputFrom[f]
			from := queue.ShortID(src.Parent)
			if i, ok := d.steps[src.Parent]; ok {
				from = safe(d.record.Steps[i].Name)
			}
			from += ".output"
			if src.Path != "" {
				from += "." + safe(src.Path)
			}
			part := safe(f) + " ← " + from
			if v, ok := t.FromParents[f]; ok {
				part += " = " + preview(v, 40)
			} else {
				part += d.st.Dim.Render(" (not yet)")
			}
			parts = append(parts, part)
		}
		if rows == 1 {
			parts = []string{strings.Join(parts, " · ")}
		}
		for i, p := range parts {
			if i == rows-1 && len(parts) > rows {
				out = append(out, indent+d.st.Dim.Render(fmt.Sprintf("… and %d more", len(parts)-i)))
				break
			}
			if i == 0 {
				out = append(out, field("input_from", p))
			} else {
				out = append(out, indent+p)
			}
		}
	}
	return out
}

// taskName is a parent's or a child's short id, with its step name and
// type when the workflow's record says them.
func (d *detail) taskName(id uuid.UUID) string {
	s := queue.ShortID(id)
	if i, ok := d.steps[id]; ok {
		step := d.record.Steps[i]
		s += " " + safe(step.Name) + d.st.Dim.Render(" ("+safe(step.Type)+")")
	}
	return s
}

// preview is the start of a JSON value on one line, at most w cells.
func preview(v []byte, w int) string {
	s := string(v)
	if len(s) > 4*w {
		s = s[:4*w]
		for !utf8.ValidString(s) {
			s = s[:len(s)-1] // a rune cut in two
		}
		s += "…"
	}
	return cut(oneLine(s), w)
}
