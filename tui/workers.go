package tui

import (
	"fmt"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/qo-queue/qo/monitor"
	"github.com/qo-queue/qo/monitor/view"
)

// workers lists the worker registry with each worker's health.
type workers struct {
	st   Styles
	keys KeyMap
	w, h int
	sel  int
	off  int

	// health and loaded are the overview's last read of the registry.
	health []monitor.WorkerHealth
	loaded bool
}

func newWorkers(st Styles, keys KeyMap) workers { return workers{st: st, keys: keys} }

func (w *workers) SetSize(width, h int) { w.w, w.h = width, h }

// moveSel moves a list cursor by the up, down, first and last keys.
func moveSel(k KeyMap, msg tea.KeyMsg, sel, n int) int {
	switch {
	case key.Matches(msg, k.Up):
		return max(sel-1, 0)
	case key.Matches(msg, k.Down):
		return max(min(sel+1, n-1), 0)
	case key.Matches(msg, k.Top):
		return 0
	case key.Matches(msg, k.Bottom):
		return max(n-1, 0)
	}
	return sel
}

// The workers screen reads nothing of its own: the overview's read of the
// registry is passed on to it.
func (w *workers) load(*Model, bool) tea.Cmd { return nil }

func (w *workers) apply(*Model, tea.Msg) (tea.Cmd, bool) { return nil, false }

func (w *workers) capture(*Model, tea.KeyMsg) (tea.Cmd, bool) { return nil, false }

// key moves the cursor.
func (w *workers) key(_ *Model, msg tea.KeyMsg) tea.Cmd {
	w.sel = moveSel(w.keys, msg, w.sel, len(w.health))
	return nil
}

func (w *workers) writes(tea.KeyMsg) bool { return false }

func (w *workers) hints(*Model) string { return "1-4 screens · P pause queue · " + commonHints }

func (w *workers) View(now time.Time) string {
	hs := w.health
	if !w.loaded {
		return w.st.Dim.Render("Loading workers…")
	}
	if len(hs) == 0 {
		return w.st.Dim.Render("No workers registered. Start one with: qo worker --exec TYPE=COMMAND (see qo worker --help)")
	}
	var b strings.Builder
	idW := max(w.w-64, 12)
	b.WriteString(w.st.Header.Render(cut(fmt.Sprintf("  %s %-6s %5s %7s %7s %-11s %-11s %s", fit("WORKER", idW), "HEALTH", "TASKS", "DONE", "FAILED", "HEARTBEAT", "STARTED", "SHARDS"), w.w)) + "\n")
	rows := max(w.h-4, 1)
	w.sel = max(min(w.sel, len(hs)-1), 0)
	w.off = scroll(w.sel, w.off, rows)
	for i := w.off; i < len(hs) && i < w.off+rows; i++ {
		h := hs[i]
		state := string(h.State)
		if s, ok := w.st.Health[h.State]; ok {
			state = s.Render(state)
		}
		shards := "all"
		if len(h.Worker.Shards) > 0 {
			shards = safe(strings.Join(h.Worker.Shards, ","))
		}
		line := fmt.Sprintf("%s %s %5d %7d %7d %-11s %-11s %s", fit(safe(h.Worker.ID), idW), fit(state, 6), len(h.Worker.CurrentTasks),
			h.Worker.TasksCompleted, h.Worker.TasksFailed, short(h.Age)+" ago", ago(h.Worker.StartedAt, now), shards)
		if i == w.sel {
			b.WriteString(w.st.Selected.Render(fit("> "+line, w.w)) + "\n")
		} else {
			b.WriteString(cut("  "+line, w.w) + "\n")
		}
	}
	// The selected worker's running tasks and where it runs.
	h := hs[w.sel]
	info := fmt.Sprintf("%s on %s pid %d, %s, concurrency %d", safe(h.Worker.ID), safe(orDash(h.Worker.Host)), h.Worker.PID, safe(orDash(h.Worker.Version)), h.Worker.Concurrency)
	b.WriteString(w.st.Dim.Render(cut(info, w.w)) + "\n")
	if h.State != monitor.Dead && len(h.Worker.Holds) > 0 {
		b.WriteString(w.st.Dim.Render(cut("holds of the fleet-wide limits: "+safe(view.HoldsText(h.Worker.Holds)), w.w)) + "\n")
	}
	if len(h.Worker.CurrentTasks) > 0 {
		b.WriteString(cut("running: "+safe(strings.Join(h.Worker.CurrentTasks, " ")), w.w))
	} else {
		b.WriteString(w.st.Dim.Render("running: nothing"))
	}
	return b.String()
}
