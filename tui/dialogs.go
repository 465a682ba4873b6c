package tui

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/cursor"
	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
	"github.com/google/uuid"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store"
)

// confirm asks before an action changes a task.
type confirm struct {
	action string
	id     uuid.UUID
	text   string
	run    tea.Cmd // the action, when it is not one on task id
}

// View draws the question in a box as wide as the screen, wrapped at word
// boundaries (an id too long for a line is broken), so the consequence is
// read to its end at any width.
func (c confirm) View(st Styles, w int) string {
	text := strings.TrimRight(ansi.Wrap(c.text, max(w-6, 20), "-"), " ")
	return st.Box.Render(text + "\n\n" + st.Key.Render("y") + " yes   " + st.Key.Render("n/esc") + " no")
}

// actionPrompt is the question asked before an action on t.
func actionPrompt(action string, t *queue.Task) string {
	what := safe(fmt.Sprintf("task %s (%s, %s)", t.ID, t.Type, t.Status))
	switch action {
	case actReplay:
		return "Replay " + what + "? It runs again from attempt 1 with its retries reset."
	case actArchive:
		return "Archive " + what + "? It is hidden from default listings; 'qo list --status archived' still finds it."
	case actCancel:
		if t.Status == queue.StatusRunning {
			return "Cancel " + what + "? Its worker is asked to stop it at the next lease renewal."
		}
		return "Cancel " + what + "? It will not run."
	case actRequeue:
		return "Requeue " + what + " now? It skips the rest of its wait."
	}
	return action + " " + what + "?"
}

// submitForm is the new-task form.
type submitForm struct {
	inputs []textinput.Model
	focus  int
	err    string
}

const (
	fieldType = iota
	fieldInput
	fieldDelay
	fieldRetries
)

var formLabels = []string{"type", "input (JSON)", "delay (e.g. 30s, empty = now)", "max retries (empty = 3)"}

func newSubmitForm() *submitForm {
	f := &submitForm{}
	for range formLabels {
		ti := textinput.New()
		ti.Cursor.SetMode(cursor.CursorStatic) // no blinking: calmer over SSH
		ti.Prompt = "> "
		ti.CharLimit = 64 * 1024
		f.inputs = append(f.inputs, ti)
	}
	f.inputs[fieldInput].SetValue("{}")
	f.inputs[fieldType].Focus()
	return f
}

// formResult is what a key on the form did.
type formResult int

const (
	formEditing formResult = iota
	formCancelled
	formSubmitted
)

func (f *submitForm) Update(msg tea.KeyMsg) (formResult, queue.SubmitRequest, tea.Cmd) {
	switch msg.Type {
	case tea.KeyEsc:
		return formCancelled, queue.SubmitRequest{}, nil
	case tea.KeyTab, tea.KeyDown, tea.KeyShiftTab, tea.KeyUp:
		step := 1
		if msg.Type == tea.KeyShiftTab || msg.Type == tea.KeyUp {
			step = len(f.inputs) - 1
		}
		f.inputs[f.focus].Blur()
		f.focus = (f.focus + step) % len(f.inputs)
		return formEditing, queue.SubmitRequest{}, f.inputs[f.focus].Focus()
	case tea.KeyEnter:
		if f.focus < len(f.inputs)-1 {
			f.inputs[f.focus].Blur()
			f.focus++
			return formEditing, queue.SubmitRequest{}, f.inputs[f.focus].Focus()
		}
		req, err := f.request()
		if err != nil {
			f.err = err.Error()
			return formEditing, queue.SubmitRequest{}, nil
		}
		return formSubmitted, req, nil
	}
	var cmd tea.Cmd
	f.inputs[f.focus], cmd = f.inputs[f.focus].Update(msg)
	return formEditing, queue.SubmitRequest{}, cmd
}

// request reads the form into a task spec, checked as every submit is
// (queue.SubmitRequest.Validate); the submit resolves the delay.
func (f *submitForm) request() (queue.SubmitRequest, error) {
	var req queue.SubmitRequest
	req.Type = strings.TrimSpace(f.inputs[fieldType].Value())
	if in := strings.TrimSpace(f.inputs[fieldInput].Value()); in != "" {
		req.Input = json.RawMessage(in)
	}
	if s := strings.TrimSpace(f.inputs[fieldDelay].Value()); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			return req, fmt.Errorf("delay %q is not a duration (e.g. 30s, 5m, 1h)", s)
		}
		req.Delay = d
	}
	if s := strings.TrimSpace(f.inputs[fieldRetries].Value()); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			return req, fmt.Errorf("max retries %q must be a whole number >= 0", s)
		}
		req.MaxRetries = &n
	}
	if err := req.Validate(); err != nil {
		var se *queue.SpecError
		if errors.As(err, &se) {
			return req, errors.New(strings.TrimPrefix(se.In(formLabel), queue.ErrInvalidInput.Error()+": "))
		}
		return req, err
	}
	return req, nil
}

// formLabel names a task spec field as the form does.
func formLabel(field string) string {
	switch field {
	case "max_retries":
		return "max retries"
	}
	return field
}

func (f *submitForm) View(st Styles, w int) string {
	var b strings.Builder
	b.WriteString(st.Header.Render("Submit a task") + st.Dim.Render("  tab/↓ next field, enter on the last submits, esc cancels") + "\n\n")
	for i, ti := range f.inputs {
		ti.Width = max(w-8, 20)
		b.WriteString(st.Dim.Render(formLabels[i]) + "\n" + ti.View() + "\n")
	}
	if f.err != "" {
		b.WriteString("\n" + st.Error.Render(cut(f.err, w-4)))
	}
	return b.String()
}

// helpView lists every key.
func helpView(st Styles, keys KeyMap, w int) string {
	var b strings.Builder
	b.WriteString(st.Header.Render("Keys") + st.Dim.Render("  q/esc closes") + "\n")
	for _, sec := range keys.helpSections() {
		b.WriteString("\n" + st.Title.Render(sec.title) + "\n")
		var items []string
		for _, k := range sec.keys {
			items = append(items, st.Key.Render(k.Help().Key)+" "+k.Help().Desc)
		}
		// Two columns when they fit.
		colW := max(w/2-2, 30)
		for i := 0; i < len(items); i += 2 {
			line := "  " + fit(items[i], colW)
			if i+1 < len(items) {
				line += items[i+1]
			}
			b.WriteString(cut(line, w) + "\n")
		}
	}
	return b.String()
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

// dialogKey gives the key to the dialog open, if any: the new-task form,
// a confirmation, the list of paused types or the help.
func (m *Model) dialogKey(msg tea.KeyMsg) (tea.Cmd, bool) {
	k := m.keys
	switch {
	case m.form != nil:
		res, req, cmd := m.form.Update(msg)
		switch res {
		case formCancelled:
			m.form = nil
		case formSubmitted:
			m.form = nil
			m.say("submitting…", false)
			return submitTask(m.ctx, m.q, req), true
		}
		return cmd, true
	case m.confirm != nil:
		c := m.confirm
		switch {
		case key.Matches(msg, k.Confirm):
			m.confirm = nil
			m.say(c.action+"…", false)
			if c.run != nil {
				return c.run, true
			}
			return runAction(m.ctx, m.q, c.action, c.id), true
		case key.Matches(msg, k.Deny):
			m.confirm = nil
		}
		return nil, true
	case m.resumeList:
		m.resumeList = false
		types := m.overview.control.PausedTypes()
		if k := msg.String(); len(k) == 1 && k[0] >= '1' && k[0] <= '9' {
			if n := int(k[0] - '1'); n < len(types) {
				m.ask(m.pauseConfirm(types[n]))
			}
		}
		return nil, true
	case m.help:
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
		return nil, true
	}
	return nil, false
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
