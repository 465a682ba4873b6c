package tui

import (
	"github.com/charmbracelet/lipgloss"

	"github.com/qo-queue/qo/monitor"
	"github.com/qo-queue/qo/queue"
)

// Styles is every style the console uses, in one place. Colours degrade on
// their own: lipgloss renders plain text when the terminal has no colour or
// NO_COLOR is set, so nothing may rely on colour alone (statuses are words,
// health is a word, the selected row has a marker).
type Styles struct {
	Title    lipgloss.Style
	Tab      lipgloss.Style
	TabOn    lipgloss.Style
	Header   lipgloss.Style
	Selected lipgloss.Style
	Dim      lipgloss.Style
	Key      lipgloss.Style
	Error    lipgloss.Style
	OK       lipgloss.Style
	Box      lipgloss.Style
	Status   map[queue.Status]lipgloss.Style
	Health   map[monitor.State]lipgloss.Style
	DiffAdd  lipgloss.Style
	DiffDel  lipgloss.Style
}

// DefaultStyles returns the console's styles.
func DefaultStyles() Styles {
	c := func(s string) lipgloss.Style { return lipgloss.NewStyle().Foreground(lipgloss.Color(s)) }
	return Styles{
		Title:    lipgloss.NewStyle().Bold(true),
		Tab:      c("245"),
		TabOn:    lipgloss.NewStyle().Bold(true).Underline(true),
		Header:   lipgloss.NewStyle().Bold(true),
		Selected: lipgloss.NewStyle().Reverse(true),
		Dim:      c("245"),
		Key:      c("39").Bold(true),
		Error:    c("196").Bold(true),
		OK:       c("42"),
		Box:      lipgloss.NewStyle().Border(lipgloss.NormalBorder()).Padding(0, 1),
		Status: map[queue.Status]lipgloss.Style{
			queue.StatusWaiting:   c("99"),
			queue.StatusPending:   c("39"),
			queue.StatusRunning:   c("214"),
			queue.StatusCompleted: c("42"),
			queue.StatusFailed:    c("196"),
			queue.StatusCancelled: c("245"),
			queue.StatusExpired:   c("130"),
			queue.StatusArchived:  c("240"),
		},
		Health: map[monitor.State]lipgloss.Style{
			monitor.Active: c("42"),
			monitor.Stale:  c("214"),
			monitor.Dead:   c("196"),
		},
		DiffAdd: c("42"),
		DiffDel: c("196"),
	}
}

func (s Styles) status(st queue.Status) string {
	if style, ok := s.Status[st]; ok {
		return style.Render(string(st))
	}
	return string(st)
}
