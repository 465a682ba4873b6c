package tui

// Bulk actions on the task list: space marks tasks, a marks every task of
// the filter, and R, A or C then act on the marked set. The action is
// planned first (queue.PlanBulkAction: the tasks read, the rule applied,
// nothing written), the confirm dialog states the count, what is skipped
// and the request cost, and y runs it (queue.ActPlan.Run: each task's
// own conditional write).

import (
	"context"
	"fmt"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/google/uuid"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store"
)

// bulkTimeout bounds planning or running a bulk action.
const bulkTimeout = 10 * time.Minute

// marks is the set the bulk actions apply to: tasks marked one by one, or
// every task of the filter (all).
type marks struct {
	ids   map[uuid.UUID]bool
	order []uuid.UUID // marking order, for the plan
	all   bool
}

func (m *marks) has(id uuid.UUID) bool { return m.all || m.ids[id] }

func (m *marks) any() bool { return m.all || len(m.ids) > 0 }

func (m *marks) toggle(id uuid.UUID) {
	if m.all {
		return // "all in this filter" is undone with a, not task by task
	}
	if m.ids == nil {
		m.ids = map[uuid.UUID]bool{}
	}
	if m.ids[id] {
		delete(m.ids, id)
		for i, o := range m.order {
			if o == id {
				m.order = append(m.order[:i:i], m.order[i+1:]...)
				break
			}
		}
		return
	}
	m.ids[id] = true
	m.order = append(m.order, id)
}

// describe is the marks' part of the filter line.
func (m *marks) describe() string {
	switch {
	case m.all:
		return "ALL in this filter marked (R A C act on them · a unmarks)"
	case len(m.ids) > 0:
		return fmt.Sprintf("%d marked (R A C act on them)", len(m.ids))
	}
	return ""
}

// markAll marks (or, when every task is marked, unmarks) every task of
// the filter. With an id prefix, which only narrows the page shown, it
// marks the tasks shown.
func (t *tasks) markAll() {
	if t.marks.any() {
		t.marks = marks{}
		return
	}
	if t.idPrefix != "" {
		for _, task := range t.visible() {
			t.marks.toggle(task.ID)
		}
		return
	}
	t.marks.all = true
}

// bulkRequest is what the marked set means for action op.
func (t *tasks) bulkRequest(op string) (queue.BulkActionRequest, string) {
	req := queue.BulkActionRequest{Op: op, Reason: "cancelled from qo tui"}
	if op != queue.OpCancel {
		req.Reason = ""
	}
	if !t.marks.all {
		req.IDs = append([]uuid.UUID(nil), t.marks.order...)
		return req, plural(len(req.IDs), "marked task")
	}
	q := t.query()
	f := &queue.ActFilter{Type: q.Type, Shard: q.Shard}
	what := "every task " + op + " applies to"
	if q.Status != "" {
		f.Statuses = []queue.Status{q.Status}
		what = "every " + string(q.Status) + " task"
	}
	if q.Type != "" {
		what += " of type " + safe(q.Type)
	}
	if q.Shard != "" {
		what += " in shard " + q.Shard
	}
	req.Filter = f
	return req, what
}

// bulkPlanMsg carries a planned bulk action to confirm.
type bulkPlanMsg struct {
	plan *queue.ActPlan
	what string
	err  error
}

// bulkDoneMsg reports a bulk run.
type bulkDoneMsg struct {
	sum *queue.ActSummary
}

// bulkKey starts planning R, A or C on the marked tasks; ok is false when
// the key is not one of them or nothing is marked.
func (t *tasks) bulkKey(r *Model, msg tea.KeyMsg) (tea.Cmd, bool) {
	if !t.marks.any() {
		return nil, false
	}
	for _, a := range []struct {
		b  key.Binding
		op string
	}{{t.keys.Replay, queue.OpReplay}, {t.keys.Archive, queue.OpArchive}, {t.keys.Cancel, queue.OpCancel}} {
		if key.Matches(msg, a.b) {
			req, what := t.bulkRequest(a.op)
			r.say("planning "+a.op+" of "+what+"…", false)
			ctx, q := r.ctx, r.q
			return func() tea.Msg {
				ctx, cancel := context.WithTimeout(ctx, bulkTimeout)
				defer cancel()
				plan, err := q.PlanBulkAction(ctx, req)
				return bulkPlanMsg{plan: plan, what: what, err: err}
			}, true
		}
	}
	return nil, false
}

// bulkPlanned asks to confirm a plan.
func (t *tasks) bulkPlanned(r *Model, msg bulkPlanMsg) {
	if msg.err != nil {
		r.say("planning failed: "+oneLine(msg.err.Error()), true)
		return
	}
	p := msg.plan
	if p.Len() == 0 {
		r.say(fmt.Sprintf("%s: nothing to do among %s (%s skipped%s)", p.Op, msg.what, count(len(p.Skipped)), firstSkip(p)), false)
		return
	}
	r.flash = ""
	text := fmt.Sprintf("%s %s (%s)? Requests: %s; about %s.", verb(p.Op), plural(p.Len(), "task"), msg.what,
		planCost(p), dollars(p.Dollars(store.AWSStandardPrices)))
	if len(p.Skipped) > 0 {
		text += fmt.Sprintf(" %s skipped%s.", count(len(p.Skipped)), firstSkip(p))
	}
	ctx := r.ctx
	r.ask(&confirm{action: p.Op, text: text, run: func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, bulkTimeout)
		defer cancel()
		return bulkDoneMsg{sum: p.Run(ctx, queue.ActOptions{})}
	}})
}

// bulkDone reports a bulk run and clears the marks.
func (t *tasks) bulkDone(r *Model, msg bulkDoneMsg) tea.Cmd {
	s := msg.sum
	t.marks = marks{}
	text := fmt.Sprintf("%s: %d done, %d skipped, %d failed", s.Op, len(s.Done), len(s.Skipped), len(s.Failed))
	if len(s.Failed) > 0 {
		text += " (first: " + oneLine(s.Failed[0].Reason) + ")"
	}
	r.say(text, len(s.Failed) > 0)
	return r.reload()
}

func planCost(p *queue.ActPlan) string {
	s := queue.FormatCounts(p.Cost)
	if p.Found.Total(store.OpList)+p.Found.Total(store.OpGet) > 0 {
		s += " (finding them took " + queue.FormatCounts(p.Found) + ")"
	}
	return s
}

func firstSkip(p *queue.ActPlan) string {
	if len(p.Skipped) == 0 {
		return ""
	}
	return ", e.g. " + oneLine(p.Skipped[0].Reason)
}

func verb(op string) string {
	switch op {
	case queue.OpCancel:
		return "Cancel"
	case queue.OpReplay:
		return "Replay"
	case queue.OpArchive:
		return "Archive"
	}
	return op
}
