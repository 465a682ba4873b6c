package tui

import (
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/qo-queue/qo/queue"
)

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
	out = append(out, d.parentLines(field, indent, rows)...)
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
	out = append(out, d.inputFromLines(field, indent, rows)...)
	return out
}

// parentLines are the task's parents, with the end recorded for each.
func (d *detail) parentLines(field func(name, value string) string, indent string, rows int) []string {
	t := d.task
	n := len(t.Parents)
	if n == 0 {
		return nil
	}
	var out []string
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
	return out
}

// inputFromLines are where the task's input_from values come from.
func (d *detail) inputFromLines(field func(name, value string) string, indent string, rows int) []string {
	t := d.task
	n := len(t.InputFrom)
	if n == 0 {
		return nil
	}
	var out []string
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
