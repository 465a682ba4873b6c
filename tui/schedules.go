package tui

import (
	"fmt"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/queue/schedule"
)

// schedules lists the cron schedules with their next due time; e toggles,
// t triggers and X deletes the selected one (each asked first).
type schedules struct {
	st   Styles
	keys KeyMap
	w, h int

	loaded    bool
	list      []*schedule.Schedule
	malformed []queue.MalformedError
	sel, off  int
}

func newSchedules(st Styles, keys KeyMap) schedules { return schedules{st: st, keys: keys} }

func (s *schedules) SetSize(w, h int) { s.w, s.h = w, h }

func (s *schedules) take(m schedulesMsg) {
	s.loaded, s.list, s.malformed = true, m.list, m.malformed
	s.sel = max(min(s.sel, len(s.list)-1), 0)
}

func (s *schedules) selected() *schedule.Schedule {
	if s.sel < 0 || s.sel >= len(s.list) {
		return nil
	}
	return s.list[s.sel]
}

func (s *schedules) load(r *Model, _ bool) tea.Cmd {
	return loadSchedules(r.ctx, r.q, r.next("schedules"))
}

func (s *schedules) apply(r *Model, msg tea.Msg) (tea.Cmd, bool) {
	m, ok := msg.(schedulesMsg)
	if !ok {
		return nil, false
	}
	if r.fresh("schedules", m.seq) {
		r.noteLoad(m.err)
		if m.err == nil {
			s.take(m)
		}
	}
	return nil, true
}

func (s *schedules) capture(*Model, tea.KeyMsg) (tea.Cmd, bool) { return nil, false }

// key asks before e, t or X on the selected schedule, or moves the cursor.
func (s *schedules) key(r *Model, msg tea.KeyMsg) tea.Cmd {
	k := s.keys
	if sc := s.selected(); sc != nil {
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
			r.ask(&confirm{action: action, text: schedulePrompt(action, sc), run: scheduleAction(r.ctx, r.q, action, sc.Name)})
			return nil
		}
	}
	s.sel = moveSel(k, msg, s.sel, len(s.list))
	return nil
}

func (s *schedules) writes(msg tea.KeyMsg) bool {
	k := s.keys
	return key.Matches(msg, k.ToggleSchedule) || key.Matches(msg, k.Trigger) || key.Matches(msg, k.DeleteSchedule)
}

func (s *schedules) hints(*Model) string {
	return "e enable/disable · t trigger · X delete · P pause queue · " + commonHints
}

func (s *schedules) View(now time.Time) string {
	if !s.loaded {
		return s.st.Dim.Render("Loading schedules…")
	}
	var b strings.Builder
	if len(s.list) == 0 {
		b.WriteString(s.st.Dim.Render("No schedules. Create one with: qo schedule create NAME --cron \"30 2 * * *\" --type TYPE"))
	} else {
		nameW := max(s.w-78, 10)
		b.WriteString(s.st.Header.Render(cut(fmt.Sprintf("  %s %-16s %-14s %-8s %-14s %-12s %s",
			fit("SCHEDULE", nameW), "CRON", "TIME ZONE", "STATE", "NEXT DUE", "LAST RUN", "TASK TYPE"), s.w)) + "\n")
		rows := max(s.h-5, 1)
		s.sel = max(min(s.sel, len(s.list)-1), 0)
		s.off = scroll(s.sel, s.off, rows)
		for i := s.off; i < len(s.list) && i < s.off+rows; i++ {
			sc := s.list[i]
			state, next := "enabled", "-"
			if !sc.Enabled {
				state = s.st.Dim.Render("disabled")
			} else if d := sc.NextDue(); !d.IsZero() {
				next = "in " + short(d.Sub(now))
				if !d.After(now) {
					next = "due now"
				}
			}
			last := "-"
			if sc.LastSubmittedAt != nil {
				last = ago(*sc.LastSubmittedAt, now)
			}
			line := fmt.Sprintf("%s %s %s %s %-14s %-12s %s", fit(safe(sc.Name), nameW), fit(safe(sc.Cron), 16), fit(safe(sc.Timezone), 14),
				fit(state, 8), next, last, safe(sc.Task.Type))
			if i == s.sel {
				b.WriteString(s.st.Selected.Render(fit("> "+line, s.w)) + "\n")
			} else {
				b.WriteString(cut("  "+line, s.w) + "\n")
			}
		}
		if sc := s.selected(); sc != nil {
			info := fmt.Sprintf("%s: missed runs %s, %d skipped so far, priority %s", sc.Name, sc.Missed, sc.Skipped, sc.Task.Priority)
			if sc.LastTaskID != "" {
				info += ", last task " + sc.LastTaskID
			}
			info = safe(info)
			b.WriteString(s.st.Dim.Render(cut(info, s.w)) + "\n")
			b.WriteString(cut("input: "+oneLine(string(orNull(sc.Task.Input))), s.w))
		}
	}
	if n := len(s.malformed); n > 0 {
		b.WriteString("\n" + s.st.Error.Render(cut(fmt.Sprintf("! %d malformed schedule object(s) skipped, e.g. %s: %s", n, safe(s.malformed[0].Key), oneLine(s.malformed[0].Err.Error())), s.w)))
	}
	return b.String()
}

func orNull(b []byte) []byte {
	if len(b) == 0 {
		return []byte("null")
	}
	return b
}

// schedulePrompt is the question asked before an action on a schedule.
func schedulePrompt(action string, sc *schedule.Schedule) string {
	what := safe(fmt.Sprintf("schedule %s (%s %s, task type %s)", sc.Name, sc.Cron, sc.Timezone, sc.Task.Type))
	switch action {
	case actEnable:
		return "Enable " + what + "? Due times start from now; missed ones do not run."
	case actDisable:
		return "Disable " + what + "? It submits nothing until enabled again."
	case actTrigger:
		return "Trigger " + what + " now? One task is submitted; its due times stay as they are."
	case actDelSched:
		return "Delete " + what + "? Tasks it submitted stay."
	}
	return action + " " + what + "?"
}
