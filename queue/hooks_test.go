package queue_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/store/memstore"
	"github.com/qo-queue/qo/store/storetest"
)

func memBackend() storetest.Backend {
	return storetest.Backend{Name: "mem", New: func(testing.TB) store.Store { return memstore.New() }}
}

type ctxKey struct{}

// hookLog records hook calls; each hook passes its name on in the context.
type hookLog struct {
	mu    sync.Mutex
	calls []string
}

func (l *hookLog) add(format string, a ...any) {
	l.mu.Lock()
	l.calls = append(l.calls, fmt.Sprintf(format, a...))
	l.mu.Unlock()
}

func (l *hookLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.calls
	l.calls = nil
	return out
}

func (l *hookLog) hook(name string, refuse func(queue.SubmitRequest) bool) queue.SubmitHook {
	return queue.SubmitHook{
		Before: func(ctx context.Context, req *queue.SubmitRequest) (context.Context, error) {
			l.add("%s before %s", name, req.Type)
			if refuse != nil && refuse(*req) {
				return nil, errors.New(name + " says no")
			}
			return context.WithValue(ctx, ctxKey{}, name), nil
		},
		After: func(ctx context.Context, req queue.SubmitRequest, t *queue.Task, created bool, err error) {
			l.add("%s after %s ctx=%v task=%t created=%t err=%v", name, req.Type, ctx.Value(ctxKey{}), t != nil, created, err != nil)
		},
	}
}

func TestSubmitHooks(t *testing.T) {
	t.Parallel()
	b := setup(t, memBackend())
	l := &hookLog{}
	// The first hook changes the request; the second refuses type "no".
	b.q.OnSubmit(queue.SubmitHook{Before: func(ctx context.Context, req *queue.SubmitRequest) (context.Context, error) {
		req.Priority = queue.PriorityHigh
		return nil, nil // ctx unchanged
	}}, l.hook("outer", nil))
	b.q.OnSubmit(l.hook("inner", func(r queue.SubmitRequest) bool { return r.Type == "no" }))

	task, created, err := b.q.Submit(b.ctx, queue.SubmitRequest{Type: "yes", Input: json.RawMessage(`{}`)})
	require.NoError(t, err)
	require.True(t, created)
	require.Equal(t, queue.PriorityHigh, b.get(t, task).Priority, "a Before hook changed the request that was written")
	require.Equal(t, []string{
		"outer before yes", "inner before yes",
		"inner after yes ctx=inner task=true created=true err=false",
		"outer after yes ctx=outer task=true created=true err=false",
	}, l.take())

	before := b.counts()
	_, _, err = b.q.Submit(b.ctx, queue.SubmitRequest{Type: "no"})
	require.ErrorIs(t, err, queue.ErrSubmitRefused)
	require.ErrorContains(t, err, "inner says no")
	requireCounts(t, "a refused submit", before, b.counts(), map[store.Op]int64{})
	require.Equal(t, []string{
		"outer before no", "inner before no",
		"outer after no ctx=outer task=false created=false err=true",
	}, l.take(), "the refusing hook's After does not run; the earlier ones' do")

	// Bulk: every line goes through the hooks; the refused line fails alone.
	items, bad, err := queue.ParseBulk(strings.NewReader(`{"type":"yes"}`+"\n"+`{"type":"no"}`), queue.DefaultSubmitDefaults)
	require.NoError(t, err)
	require.Empty(t, bad)
	res := b.q.SubmitBulk(b.ctx, items, queue.BulkOptions{Concurrency: 1})
	require.NoError(t, res.Lines[0].Err)
	require.ErrorIs(t, res.Lines[1].Err, queue.ErrSubmitRefused)
	require.Equal(t, queue.PriorityHigh, b.get(t, &queue.Task{ID: res.Lines[0].ID}).Priority)
	require.Len(t, l.take(), 7)
}

func TestSubmitHooksWorkflow(t *testing.T) {
	t.Parallel()
	b := setup(t, memBackend())
	l := &hookLog{}
	b.q.OnSubmit(queue.SubmitHook{Before: func(_ context.Context, req *queue.SubmitRequest) (context.Context, error) {
		req.Priority = queue.PriorityLow
		return nil, nil
	}}, l.hook("h", func(r queue.SubmitRequest) bool { return r.Type == "forbidden" }))

	flow := decodeFlow(t, `{"steps": [
	  {"name": "a", "type": "extract"},
	  {"name": "b", "type": "load", "after": ["a"]}
	]}`)
	w, created, err := b.q.Workflows().Submit(b.ctx, flow)
	require.NoError(t, err)
	require.True(t, created)
	require.Equal(t, queue.PriorityLow, b.step(t, w, "a").Priority)
	require.Equal(t, queue.PriorityLow, b.step(t, w, "b").Priority)
	calls := l.take()
	require.Equal(t, []string{"h before extract", "h before load"}, calls[:2])
	require.ElementsMatch(t, []string{
		"h after extract ctx=h task=true created=true err=false",
		"h after load ctx=h task=true created=true err=false",
	}, calls[2:])

	// One refused step refuses the whole workflow before anything is
	// written.
	before := b.counts()
	_, _, err = b.q.Workflows().Submit(b.ctx, decodeFlow(t, `{"steps": [
	  {"name": "a", "type": "extract"},
	  {"name": "b", "type": "forbidden", "after": ["a"]}
	]}`))

	require.ErrorIs(t, err, queue.ErrSubmitRefused)
	require.ErrorContains(t, err, `step "b"`)
	requireCounts(t, "a refused workflow", before, b.counts(), map[store.Op]int64{})
	require.Equal(t, []string{"h before extract", "h before forbidden",
		"h after extract ctx=h task=false created=false err=true"}, l.take())
}
