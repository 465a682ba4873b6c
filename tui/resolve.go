package tui

import (
	"context"
	"strings"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/google/uuid"

	"github.com/qo-queue/qo/queue"
)

// resolvedMsg is the task a short id typed in the search box names.
type resolvedMsg struct {
	seq int
	ref string
	id  uuid.UUID
	err error
}

// resolveID finds the task the short id ref names (queue.ResolveID: a
// bounded number of LISTs, whatever the history).
func resolveID(ctx context.Context, q *queue.Queue, ref string, seq int) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, requestTimeout)
		defer cancel()
		id, err := q.ResolveID(ctx, ref)
		return resolvedMsg{seq: seq, ref: ref, id: id, err: err}
	}
}

// wholeIDs joins ids written out whole, for a line that tells them apart.
func wholeIDs(ids []uuid.UUID) string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = id.String()
	}
	return strings.Join(out, ", ")
}
