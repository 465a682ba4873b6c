package tui

import (
	"strings"

	"github.com/charmbracelet/bubbles/key"

	"github.com/qo-queue/qo/queue"
)

// KeyMap is every key binding of the console. Screens pick the ones they
// use; the help screen lists them all.
type KeyMap struct {
	Quit, Back, Help                             key.Binding
	Overview, Tasks, Workers, Schedules, NextTab key.Binding
	Up, Down, Top, Bottom, PageUp, PageDown      key.Binding
	Open, Toggle, Focus                          key.Binding
	Refresh, Interval                            key.Binding
	Status, StatusPick, Search                   key.Binding
	ShardPrev, ShardNext, Clear                  key.Binding
	NextPage, PrevPage                           key.Binding
	Mark, Diff                                   key.Binding
	Select, SelectAll                            key.Binding
	Replay, Archive, Cancel, Requeue, Submit     key.Binding
	PauseType, PauseAll, ResumeList              key.Binding
	ToggleSchedule, Trigger, DeleteSchedule      key.Binding
	Workflow, OpenStep, CancelWorkflow           key.Binding
	Confirm, Deny                                key.Binding
}

// DefaultKeyMap returns the console's keys: vim and arrow keys alike.
func DefaultKeyMap() KeyMap {
	k := func(help string, desc string, keys ...string) key.Binding {
		return key.NewBinding(key.WithKeys(keys...), key.WithHelp(help, desc))
	}
	return KeyMap{
		Quit:       k("ctrl+c", "quit", "ctrl+c"),
		Back:       k("q/esc", "back (quit from a top screen)", "q", "esc"),
		Help:       k("?", "all keys", "?"),
		Overview:   k("1", "overview", "1"),
		Tasks:      k("2", "tasks", "2"),
		Workers:    k("3", "workers", "3"),
		Schedules:  k("4", "schedules", "4"),
		NextTab:    k("tab", "next screen / pane", "tab"),
		Up:         k("↑/k", "up", "up", "k"),
		Down:       k("↓/j", "down", "down", "j"),
		Top:        k("g/home", "first", "g", "home"),
		Bottom:     k("G/end", "last", "G", "end"),
		PageUp:     k("pgup/ctrl+b", "page up", "pgup", "ctrl+b"),
		PageDown:   k("pgdn/ctrl+f", "page down", "pgdown", "ctrl+f"),
		Open:       k("enter", "open task", "enter"),
		Toggle:     k("space/enter", "fold/unfold JSON node", " ", "enter"),
		Focus:      k("tab", "switch pane", "tab"),
		Refresh:    k("r", "refresh now", "r"),
		Interval:   k("i", "auto-refresh: off/2s/5s/10s", "i"),
		Status:     k("s", "next status filter", "s"),
		StatusPick: k("S", "pick a status: a p r c f x e v w", "S"),
		Search:     k("/", "search short id, id, type, wf:NAME", "/"),
		ShardPrev:  k("h/←", "previous shard", "h", "left"),
		ShardNext:  k("l/→", "next shard", "l", "right"),
		Clear:      k("c", "clear filters", "c"),
		NextPage:   k("]", "next page", "]"),
		PrevPage:   k("[", "previous page", "["),
		Mark:       k("m", "mark version for diff", "m"),
		Diff:       k("d", "diff the two marked versions", "d"),
		Replay:     k("R", "replay ("+from(queue.OpReplay)+")", "R"),
		Archive:    k("A", "archive ("+from(queue.OpArchive)+")", "A"),
		Cancel:     k("C", "cancel ("+from(queue.OpCancel)+")", "C"),
		Requeue:    k("N", "requeue now (pending in backoff)", "N"),
		Submit:     k("n", "submit a new task", "n"),
		PauseType:  k("p", "pause/resume the selected task's type", "p"),
		Select:     k("space", "mark/unmark the task for R, A, C on many", " "),
		SelectAll:  k("a", "mark/unmark every task in this filter", "a"),
		PauseAll:   k("P", "pause/resume the whole queue", "P"),
		ResumeList: k("U", "list the paused types to resume one", "U"),

		ToggleSchedule: k("e", "enable/disable the schedule", "e"),
		Trigger:        k("t", "trigger the schedule now", "t"),
		DeleteSchedule: k("X", "delete the schedule", "X"),
		Workflow:       k("w", "open the task's workflow", "w"),
		OpenStep:       k("enter", "open the step's task", "enter"),
		CancelWorkflow: k("X", "cancel every step not ended (asks)", "X"),
		Confirm:        k("y", "confirm", "y", "Y"),
		Deny:           k("n/esc", "do not", "n", "N", "esc", "q"),
	}
}

// from lists the statuses operator action op applies to, as the
// transition table has them.
func from(op string) string {
	var names []string
	for _, s := range queue.OperatorFrom(op) {
		names = append(names, string(s))
	}
	return strings.Join(names, ", ")
}

// helpSections groups the bindings for the help screen.
func (k KeyMap) helpSections() []helpSection {
	return []helpSection{
		{"Everywhere", []key.Binding{k.Overview, k.Tasks, k.Workers, k.Schedules, k.NextTab, k.Refresh, k.Interval, k.Help, k.Back, k.Quit}},
		{"Lists", []key.Binding{k.Up, k.Down, k.Top, k.Bottom, k.PageUp, k.PageDown, k.Open}},
		{"Tasks", []key.Binding{k.Status, k.StatusPick, k.Search, k.ShardPrev, k.ShardNext, k.Clear, k.NextPage, k.PrevPage, k.Select, k.SelectAll}},
		{"Task detail", []key.Binding{k.Focus, k.Toggle, k.Mark, k.Diff}},
		{"Actions (ask first)", []key.Binding{k.Replay, k.Archive, k.Cancel, k.Requeue, k.Submit, k.PauseType, k.PauseAll, k.ResumeList}},
		{"Schedules (ask first)", []key.Binding{k.ToggleSchedule, k.Trigger, k.DeleteSchedule}},
		{"Workflow (R, C, A, N act on the selected step)", []key.Binding{k.Workflow, k.OpenStep, k.CancelWorkflow}},
	}
}

type helpSection struct {
	title string
	keys  []key.Binding
}
