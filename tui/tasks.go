package tui

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/cursor"
	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/google/uuid"

	"github.com/qo-queue/qo/queue"
)

// tasks is the task browser: one page of queue.List at a time, filtered by
// shard, status, type and id prefix.
type tasks struct {
	st     Styles
	keys   KeyMap
	shards []string
	w, h   int

	shard    int // index into shards; -1 = all shards
	status   queue.Status
	typ      string
	idPrefix string

	cursors []string // cursors[i] starts page i; cursors[0] = ""
	pageIdx int
	page    queue.TaskPage
	loaded  bool
	sel     int
	offset  int
	// selID is the task selected: a refresh finds it again wherever it
	// moved in the list (new tasks arrive above it in a newest-first
	// list); only when it left the list does the row number stay.
	selID uuid.UUID

	// control and stats are the overview's last reads: which types are
	// paused (marked in the rows), and the counts that give the list a
	// total.
	control queue.Control
	stats   queue.Stats

	// choosing: S opened the status chooser; the next key picks.
	choosing bool

	searching bool
	search    textinput.Model
	wfRef     string // the workflow asked for by the last search (tasksOpenWorkflow)

	// marks is the set the bulk actions apply to (see bulk.go).
	marks marks
}

// statusCycle is the order s steps through; "" is every status but archived.
// Waiting comes last: the statuses an operator filters on most come first.
var statusCycle = []queue.Status{"", queue.StatusPending, queue.StatusRunning, queue.StatusCompleted,
	queue.StatusFailed, queue.StatusCancelled, queue.StatusExpired, queue.StatusArchived, queue.StatusWaiting}

func newTasks(st Styles, keys KeyMap, shards []string) tasks {
	ti := textinput.New()
	ti.Cursor.SetMode(cursor.CursorStatic) // no blinking: calmer over SSH
	ti.Prompt = "/"
	ti.Placeholder = "short id as listed (e.g. 264545bf), full id, task type (type:NAME forces a type), or wf:NAME / wf:ID"
	ti.CharLimit = 64
	return tasks{st: st, keys: keys, shards: shards, shard: -1, cursors: []string{""}, search: ti}
}

func (t *tasks) SetSize(w, h int) { t.w, t.h = w, h; t.search.Width = max(w-4, 10) }

// pageSize is how many tasks one List call asks for: a screenful, so paging
// never loads more than what is shown.
func (t *tasks) pageSize() int { return max(t.h-4, 5) }

// query is the List query for the current page.
func (t *tasks) query() queue.ListQuery {
	q := queue.ListQuery{Status: t.status, Type: t.typ, Limit: t.pageSize(), Cursor: t.cursors[t.pageIdx]}
	if t.shard >= 0 {
		q.Shard = t.shards[t.shard]
	}
	return q
}

// resetPaging goes back to the first page after a filter change.
func (t *tasks) resetPaging() {
	t.cursors, t.pageIdx = []string{""}, 0
	t.marks = marks{} // marks belong to the filter they were made in
	t.clearPage()
}

// clearPage forgets the rows shown until the next page arrives, so no key
// acts on a row of the previous filter or page.
func (t *tasks) clearPage() {
	t.page, t.loaded, t.sel, t.offset, t.selID = queue.TaskPage{}, false, 0, 0, uuid.Nil
}

// visible returns the page's tasks that pass the id-prefix filter.
func (t *tasks) visible() []*queue.Task {
	if t.idPrefix == "" {
		return t.page.Tasks
	}
	var out []*queue.Task
	for _, task := range t.page.Tasks {
		if id := task.ID.String(); strings.HasPrefix(id, t.idPrefix) || strings.HasSuffix(id, t.idPrefix) || strings.HasPrefix(queue.ShortID(task.ID), t.idPrefix) {
			out = append(out, task)
		}
	}
	return out
}

// selected returns the task under the cursor, if any.
func (t *tasks) selected() *queue.Task {
	v := t.visible()
	if t.sel < 0 || t.sel >= len(v) {
		return nil
	}
	return v[t.sel]
}

func (t *tasks) take(m tasksMsg) {
	t.loaded = true
	t.page = m.page
	v := t.visible()
	if i := slices.IndexFunc(v, func(task *queue.Task) bool { return task.ID == t.selID }); i >= 0 && t.selID != uuid.Nil {
		t.sel = i // the view scrolls only if the row would leave the screen
	}
	t.sel = max(min(t.sel, len(v)-1), 0)
	t.noteSel()
}

// noteSel remembers which task the selected row shows.
func (t *tasks) noteSel() {
	t.selID = uuid.Nil
	if task := t.selected(); task != nil {
		t.selID = task.ID
	}
}

// statusKeys are the keys of the status chooser (S), in statusCycle order.
var statusKeys = []string{"a", "p", "r", "c", "f", "x", "e", "v", "w"}

// chooserLine lists the status chooser's keys in w cells.
func chooserLine(w int) string {
	parts := make([]string, len(statusCycle))
	short := make([]string, len(statusCycle))
	for i, st := range statusCycle {
		name := string(st)
		if st == "" {
			name = "all"
		}
		parts[i] = statusKeys[i] + ")" + name
		short[i] = statusKeys[i] + ":" + name[:min(len(name), 4)]
	}
	if line := "status? " + strings.Join(parts, " "); len(line) <= w {
		return line
	}
	return cut("status? "+strings.Join(short, " "), w)
}

// choose handles the key after S: a status key filters on it at once.
func (t *tasks) choose(msg tea.KeyMsg) tasksEffect {
	t.choosing = false
	for i, k := range statusKeys {
		if msg.String() == k {
			t.status = statusCycle[i]
			t.resetPaging()
			return tasksReload
		}
	}
	return tasksNone
}

// tasksEffect is what a key on the task list asks the root model to do.
type tasksEffect int

const (
	tasksNone tasksEffect = iota
	tasksReload
	tasksOpen
	tasksOpenID       // open the task (or workflow) whose full id was typed
	tasksOpenWorkflow // open the workflow wfRef (typed as wf:NAME or wf:ID)
	tasksResolve      // reload, and open the task the short id idPrefix names
)

var idPrefixRE = regexp.MustCompile(`^[0-9a-f][0-9a-f-]{0,35}$`)

// Update handles a key; the effect tells the root what to load.
func (t *tasks) Update(msg tea.KeyMsg) (tasksEffect, uuid.UUID, tea.Cmd) {
	if t.searching {
		switch msg.Type {
		case tea.KeyEnter:
			t.searching = false
			t.search.Blur()
			return t.applySearch(strings.TrimSpace(t.search.Value()))
		case tea.KeyEsc:
			t.searching = false
			t.search.Blur()
			return tasksNone, uuid.Nil, nil
		}
		var cmd tea.Cmd
		t.search, cmd = t.search.Update(msg)
		return tasksNone, uuid.Nil, cmd
	}
	if t.choosing {
		return t.choose(msg), uuid.Nil, nil
	}
	n := len(t.visible())
	k := t.keys
	defer t.noteSel()
	switch {
	case key.Matches(msg, k.StatusPick):
		t.choosing = true
	case key.Matches(msg, k.Up):
		t.sel = max(t.sel-1, 0)
	case key.Matches(msg, k.Down):
		t.sel = max(min(t.sel+1, n-1), 0)
	case key.Matches(msg, k.Top):
		t.sel = 0
	case key.Matches(msg, k.Bottom):
		t.sel = max(n-1, 0)
	case key.Matches(msg, k.PageUp):
		t.sel = max(t.sel-t.rows(), 0)
	case key.Matches(msg, k.PageDown):
		t.sel = max(min(t.sel+t.rows(), n-1), 0)
	case key.Matches(msg, k.Open):
		if t.selected() != nil {
			return tasksOpen, t.selected().ID, nil
		}
	case key.Matches(msg, k.Status):
		for i, s := range statusCycle {
			if s == t.status {
				t.status = statusCycle[(i+1)%len(statusCycle)]
				break
			}
		}
		t.resetPaging()
		return tasksReload, uuid.Nil, nil
	case key.Matches(msg, k.ShardNext):
		t.shard = (t.shard+2)%(len(t.shards)+1) - 1
		t.idPrefix = ""
		t.resetPaging()
		return tasksReload, uuid.Nil, nil
	case key.Matches(msg, k.ShardPrev):
		t.shard = (t.shard+len(t.shards)+1)%(len(t.shards)+1) - 1
		t.idPrefix = ""
		t.resetPaging()
		return tasksReload, uuid.Nil, nil
	case key.Matches(msg, k.Clear):
		t.shard, t.status, t.typ, t.idPrefix = -1, "", "", ""
		t.resetPaging()
		return tasksReload, uuid.Nil, nil
	case key.Matches(msg, k.NextPage):
		if t.page.Cursor != "" {
			t.cursors = append(t.cursors[:t.pageIdx+1], t.page.Cursor)
			t.pageIdx++
			t.clearPage()
			return tasksReload, uuid.Nil, nil
		}
	case key.Matches(msg, k.PrevPage):
		if t.pageIdx > 0 {
			t.pageIdx--
			t.clearPage()
			return tasksReload, uuid.Nil, nil
		}
	case key.Matches(msg, k.Search):
		return tasksNone, uuid.Nil, t.openSearch()
	case key.Matches(msg, k.Select):
		if sel := t.selected(); sel != nil {
			t.marks.toggle(sel.ID)
		}
	case key.Matches(msg, k.SelectAll):
		t.markAll()
	}
	return tasksNone, uuid.Nil, nil
}

// openSearch opens an empty search box.
func (t *tasks) openSearch() tea.Cmd {
	t.searching = true
	t.search.SetValue("")
	return t.search.Focus()
}

// applySearch reads the search box: a whole id opens that task (or the
// workflow with that id); "wf:NAME" or "wf:ID" (or "workflow:…") opens a
// workflow; "type:X"
// or anything that is not hex is a task type; hex (with dashes) is a short
// id, the end of an id as lists show it (or its start): the list narrows
// to the ids that end or start with it, and the task it names opens
// (queue.ResolveID).
func (t *tasks) applySearch(s string) (tasksEffect, uuid.UUID, tea.Cmd) {
	s = strings.TrimSpace(s)
	for _, p := range []string{"wf:", "workflow:"} {
		if ref, ok := strings.CutPrefix(s, p); ok && strings.TrimSpace(ref) != "" {
			t.wfRef = strings.TrimSpace(ref)
			return tasksOpenWorkflow, uuid.Nil, nil
		}
	}
	t.idPrefix, t.typ = "", ""
	if typ, ok := strings.CutPrefix(s, "type:"); ok {
		t.typ = strings.TrimSpace(typ)
	} else if id, err := uuid.Parse(s); err == nil && len(s) == 36 {
		return tasksOpenID, id, nil
	} else if p := strings.ToLower(s); idPrefixRE.MatchString(p) {
		t.idPrefix = p
		t.resetPaging()
		return tasksResolve, uuid.Nil, nil
	} else {
		t.typ = s
	}
	t.resetPaging()
	return tasksReload, uuid.Nil, nil
}

func (t *tasks) rows() int { return max(t.h-3, 1) }

// filterLine describes the current filters.
func (t *tasks) filterLine() string {
	shard := "all shards"
	if t.shard >= 0 {
		shard = "shard " + t.shards[t.shard]
	}
	status := "status: all but archived"
	if t.status != "" {
		status = "status: " + string(t.status)
	}
	parts := []string{shard, status}
	if !t.page.Since.IsZero() {
		parts = append(parts, "created since "+t.page.Since.Format("Jan 2 15:04"))
	}
	if t.typ != "" {
		parts = append(parts, "type: "+safe(t.typ))
	}
	if t.idPrefix != "" {
		parts = append(parts, "id: "+safe(t.idPrefix)+"…")
	}
	if m := t.marks.describe(); m != "" {
		parts = append(parts, m)
	}
	if t.control.Paused || len(t.control.Types) > 0 {
		parts = append(parts, "‖ paused")
	}
	page := fmt.Sprintf("page %d", t.pageIdx+1)
	if t.page.Cursor != "" {
		page += " (] for more)"
	}
	if pos := t.position(); pos != "" {
		page = pos + " · " + page
	}
	return strings.Join(parts, " · ") + " · " + page
}

// position is where the selected row is in the whole list, and how long
// the list is when that is known: "42 of 1,310". The total comes from the
// counted indexes (pending, running, failed, waiting) when only the
// status (and a shard or a type) filters the list, else from the last page.
func (t *tasks) position() string {
	v := t.visible()
	if !t.loaded || len(v) == 0 {
		return ""
	}
	at := t.pageIdx*t.pageSize() + t.sel + 1
	total := -1
	counted := t.status != "" && slices.Contains(t.stats.Counted, t.status) && t.idPrefix == ""
	switch {
	case counted && t.shard < 0 && t.typ == "":
		total = t.stats.ByStatus[t.status]
	case counted && t.shard >= 0 && t.typ == "":
		total = t.stats.ByShard[t.shards[t.shard]][t.status]
	case counted && t.shard < 0 && t.typ != "" && t.status != queue.StatusWaiting:
		total = t.stats.ByType[t.typ][t.status]
	case t.page.Cursor == "":
		total = t.pageIdx*t.pageSize() + len(v)
	}
	if total < at { // counts lag the list by a refresh
		if t.page.Cursor != "" {
			return fmt.Sprintf("%s of more than %s", count(at), count(t.pageIdx*t.pageSize()+len(v)))
		}
		total = max(total, t.pageIdx*t.pageSize()+len(v))
	}
	return count(at) + " of " + count(total)
}

func (t *tasks) View(now time.Time) string {
	var b strings.Builder
	switch {
	case t.searching:
		b.WriteString(t.search.View() + "\n")
	case t.choosing:
		b.WriteString(chooserLine(t.w) + "\n")
	default:
		b.WriteString(t.st.Dim.Render(cut(t.filterLine(), t.w)) + "\n")
	}
	// Columns: id, type, priority, status, attempt, updated, when.
	v := t.visible()
	typeW := max(t.w-8-2-10-4-10-18-6-7, 8)
	last := "NEXT / LEASE"
	if longest, dead := deadLetterRows(v); dead {
		// Dead letters show their last error: the type column gives it
		// the room the types do not need.
		typeW, last = min(typeW, max(longest, 10)), "NEXT / LEASE / LAST ERROR"
	}
	header := fmt.Sprintf("  %-8s %s %-6s %-10s %4s %-10s %s", "ID", fit("TYPE", typeW), "PRIO", "STATUS", "ATT", "UPDATED", last)
	b.WriteString(t.st.Header.Render(cut(header, t.w)) + "\n")
	if !t.loaded {
		b.WriteString(t.st.Dim.Render("  loading…"))
		return b.String()
	}
	if len(v) == 0 {
		b.WriteString(t.st.Dim.Render("  no tasks match (c clears the filters)"))
	}
	rows := t.rows()
	if t.sel < t.offset {
		t.offset = t.sel
	}
	if t.sel >= t.offset+rows {
		t.offset = t.sel - rows + 1
	}
	for i := t.offset; i < len(v) && i < t.offset+rows; i++ {
		task := v[i]
		typ := safe(task.Type)
		if (task.Status == queue.StatusPending || task.Status == queue.StatusWaiting) && t.control.IsPaused(task.Type) {
			typ = "‖ " + typ // held: its type (or the queue) is paused
		}
		line := fmt.Sprintf("%-8s %s %-6s %s %4d %-10s %s", queue.ShortID(task.ID), fit(typ, typeW), safe(string(task.Priority)),
			fit(t.st.status(task.Status), 10), task.Attempt, ago(task.UpdatedAt, now), when(task, now))
		mark := " "
		if t.marks.has(task.ID) {
			mark = "*"
		}
		if i == t.sel {
			b.WriteString(t.st.Selected.Render(fit(">"+mark+line, t.w)))
		} else {
			b.WriteString(fit(" "+mark+line, t.w))
		}
		if i < len(v)-1 && i < t.offset+rows-1 {
			b.WriteString("\n")
		}
	}
	if n := len(t.page.Malformed); n > 0 {
		b.WriteString("\n" + t.st.Error.Render(cut(fmt.Sprintf("! %d malformed task object(s) skipped on this page, e.g. %s", n, safe(t.page.Malformed[0].Key)), t.w)))
	}
	return b.String()
}

// deadLetterRows reports whether v holds a failed task with an error, and
// the longest type of v.
func deadLetterRows(v []*queue.Task) (longest int, dead bool) {
	for _, task := range v {
		longest = max(longest, len(safe(task.Type)))
		dead = dead || (task.Status == queue.StatusFailed && task.LastError != "")
	}
	return longest, dead
}

// when is the live countdown column: time until a pending task becomes
// available, or until a running task's lease runs out; for a dead letter,
// the error it died of.
func when(t *queue.Task, now time.Time) string {
	switch t.Status {
	case queue.StatusWaiting:
		return "after " + t.WaitingFor()
	case queue.StatusPending:
		if t.AvailableAt.After(now) {
			return "runs in " + short(t.AvailableAt.Sub(now))
		}
		return "ready " + short(now.Sub(t.AvailableAt))
	case queue.StatusFailed:
		if t.LastError != "" {
			return oneLine(t.LastError)
		}
	case queue.StatusRunning:
		if t.LeaseExpiresAt == nil {
			return ""
		}
		left := t.LeaseExpiresAt.Sub(now)
		if left < 0 {
			return "lease expired " + short(-left) + " ago"
		}
		return "lease " + short(left) + " left"
	}
	return ""
}

func (t *tasks) load(r *Model, _ bool) tea.Cmd {
	return loadTasks(r.ctx, r.q, t.query(), r.next("tasks"))
}

// apply takes a page of the list, the task a short id names, and a bulk
// action's plan or result.
func (t *tasks) apply(r *Model, msg tea.Msg) (tea.Cmd, bool) {
	switch msg := msg.(type) {
	case tasksMsg:
		if r.fresh("tasks", msg.seq) {
			r.noteLoad(msg.err)
			if msg.err == nil {
				t.take(msg)
			}
		}
		return nil, true
	case resolvedMsg:
		return t.resolved(r, msg), true
	case bulkPlanMsg:
		t.bulkPlanned(r, msg)
		return nil, true
	case bulkDoneMsg:
		return t.bulkDone(r, msg), true
	}
	return nil, false
}

// resolved opens the task a short id named, or says why none opens.
func (t *tasks) resolved(r *Model, msg resolvedMsg) tea.Cmd {
	if !r.fresh("resolve", msg.seq) || r.screen != scrTasks || t.idPrefix != msg.ref {
		return nil // the operator moved on
	}
	var amb *queue.AmbiguousIDError
	switch {
	case msg.err == nil:
		r.open(msg.id)
		return r.detail.read(r, true)
	case errors.As(msg.err, &amb):
		r.say(fmt.Sprintf("%s names %d tasks (type more of the id): %s", safe(msg.ref), len(amb.Candidates), wholeIDs(amb.Candidates)), true)
	default:
		r.say("no task found: "+oneLine(msg.err.Error()), true)
	}
	return nil
}

// capture gives every key to the search box or the status chooser while
// one is open.
func (t *tasks) capture(r *Model, msg tea.KeyMsg) (tea.Cmd, bool) {
	if t.searching || t.choosing {
		return t.listKey(r, msg), true
	}
	return nil, false
}

// key starts a bulk action on the marked tasks, asks before an action on
// the selected one, or moves through the list.
func (t *tasks) key(r *Model, msg tea.KeyMsg) tea.Cmd {
	if cmd, ok := t.bulkKey(r, msg); ok {
		return cmd
	}
	if cmd, ok := r.taskAction(msg, t.selected()); ok {
		return cmd
	}
	return t.listKey(r, msg)
}

// listKey runs a key of the list and loads what it asks for.
func (t *tasks) listKey(r *Model, msg tea.KeyMsg) tea.Cmd {
	searching := t.searching
	eff, id, cmd := t.Update(msg)
	if searching && !t.searching {
		from := r.searchFromOverview
		r.searchFromOverview = false
		if from && eff == tasksNone {
			return r.back() // esc: nothing was searched
		}
	}
	switch eff {
	case tasksReload:
		return tea.Batch(cmd, t.load(r, false))
	case tasksOpen, tasksOpenID:
		return tea.Batch(cmd, r.openTask(id, eff == tasksOpenID))
	case tasksOpenWorkflow:
		return tea.Batch(cmd, r.openWorkflow(t.wfRef))
	case tasksResolve:
		return tea.Batch(cmd, t.load(r, false), resolveID(r.ctx, r.q, t.idPrefix, r.next("resolve")))
	}
	return cmd
}

func (t *tasks) target() *queue.Task { return t.selected() }

func (t *tasks) writes(tea.KeyMsg) bool { return false }

func (t *tasks) hints(*Model) string {
	if t.choosing {
		return "the status key filters at once · esc keeps the filter"
	}
	return "enter open · s/S status · / search · h/l shard · [/] page · R replay A archive C cancel N requeue p pause · " + commonHints
}
