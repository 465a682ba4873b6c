package tui

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/exp/golden"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/queue/control"
	"github.com/qo-queue/qo/store"
)

// TestSelectionKeepsItsTask: in the newest-first list, tasks arriving
// above the selected row do not move the selection to another task, and a
// confirm dialog open across refreshes acts on the task it was opened
// for.
func TestSelectionKeepsItsTask(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil, Options{}).seed()
	h.newModel(Options{Screen: "tasks"})
	h.init()
	chosen := h.ids["waiting"].ID // pending, runnable now
	for i := 0; h.m.tasks.selected().ID != chosen; i++ {
		require.Less(t, i, 10, "the chosen task is on the first page")
		h.press("j")
	}
	row := h.m.tasks.sel
	arrive := func(n int) {
		for i := range n {
			h.clock.Advance(time.Second)
			_, _, err := h.q.Submit(h.ctx, queue.SubmitRequest{Type: "report", Input: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))})
			require.NoError(t, err)
		}
	}
	arrive(2)
	h.press("r")
	require.Equal(t, chosen, h.m.tasks.selected().ID, "a refresh keeps the task selected")
	require.Equal(t, row+2, h.m.tasks.sel, "it moved down by the two new rows")
	require.Contains(t, h.view(), "> "+queue.ShortID(chosen))

	h.press("C")
	require.NotNil(t, h.m.confirm)
	require.Contains(t, h.view(), chosen.String())
	arrive(3)
	h.run(func() tea.Msg { return refreshMsg{gen: h.m.gen} }) // the auto-refresh, with the dialog open
	require.Equal(t, chosen, h.m.tasks.selected().ID)
	h.press("y")
	got, err := h.q.Get(h.ctx, chosen)
	require.NoError(t, err)
	require.Equal(t, queue.StatusCancelled, got.Status, "y cancels the task the dialog was opened for")
	require.Equal(t, "cancelled ("+queue.Actor()+", qo tui)", got.CancelReason, "the history says who cancelled it, and where")
	require.Equal(t, harnessActor, got.Actor, "the version names who wrote it")
	page, err := h.q.List(h.ctx, queue.ListQuery{Status: queue.StatusCancelled})
	require.NoError(t, err)
	var cancelled []uuid.UUID
	for _, task := range page.Tasks {
		cancelled = append(cancelled, task.ID)
	}
	require.ElementsMatch(t, []uuid.UUID{chosen, h.ids["cancelled"].ID}, cancelled, "and no other")
}

// TestSelectionOfAGoneTaskKeepsItsRow: when the selected task leaves the
// list (here: filtered by status, it changed status), the row number stays.
func TestSelectionOfAGoneTaskKeepsItsRow(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil, Options{}).seed()
	for range 2 {
		_, _, err := h.q.Submit(h.ctx, queue.SubmitRequest{Type: "report", Input: json.RawMessage(`{}`)})
		require.NoError(t, err)
	}
	h.newModel(Options{Screen: "tasks", Status: queue.StatusPending})
	h.init()
	require.GreaterOrEqual(t, len(h.m.tasks.visible()), 3)
	h.press("j")
	gone := h.m.tasks.selected().ID
	_, err := h.q.Cancel(h.ctx, gone, "")
	require.NoError(t, err)
	h.press("r")
	require.Equal(t, 1, h.m.tasks.sel)
	require.NotEqual(t, gone, h.m.tasks.selected().ID)
}

// TestSearchTheShortID: the 8 characters the list shows, typed in the
// search box, open that task (they are the END of the id, not a shard).
func TestSearchTheShortID(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil, Options{}).seed()
	h.newModel(Options{Screen: "tasks"})
	h.init()
	want := h.ids["failed"].ID
	short := queue.ShortID(want)
	require.Contains(t, h.view(), short)
	h.press(append(append([]string{"/"}, strings.Split(short, "")...), "enter")...)
	require.Equal(t, scrDetail, h.m.screen, h.m.flash)
	require.Equal(t, want, h.m.detail.task.ID)
	h.press("q")
	require.Equal(t, scrTasks, h.m.screen)
	require.Equal(t, -1, h.m.tasks.shard, "the short id is not read as a shard")

	h.press(append(append([]string{"/"}, strings.Split("0000beef", "")...), "enter")...)
	require.Equal(t, scrTasks, h.m.screen)
	require.True(t, h.m.flashErr)
	require.Contains(t, h.m.flash, "no task found")
}

// TestConfirmWraps: a confirmation dialog shows its whole question, the
// consequence included, at 80 and 120 columns.
func TestConfirmWraps(t *testing.T) {
	t.Parallel()
	for _, w := range []int{80, 120} {
		t.Run(fmt.Sprint(w), func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, nil, Options{}).seed()
			h.newModel(Options{Screen: "tasks", Status: queue.StatusRunning})
			h.m.SetSize(w, 24)
			h.init()
			h.press("C")
			v := h.view()
			requireFits(t, v, w, 24)
			golden.RequireEqual(t, []byte(v))
			var words []string
			for _, line := range strings.Split(v, "\n") {
				if strings.HasPrefix(line, "│") {
					words = append(words, strings.Fields(strings.Trim(line, "│ "))...)
				}
			}
			require.Contains(t, strings.Join(words, " "), "Its worker is asked to stop it at the next lease renewal.")
			require.Contains(t, strings.Join(words, " "), h.ids["running"].ID.String())
		})
	}
}

// TestDiffComparesFields: an output of several lines appearing above
// unchanged fields shows as added, and the fields below it never show as
// removed and added again.
func TestDiffComparesFields(t *testing.T) {
	t.Parallel()
	a := `{"status":"running","output":null,"timeout_seconds":60,"tags":["x","y"],"gone":1}`
	b := `{"status":"completed","output":{"rows":["a","b"],"n":2},"timeout_seconds":60,"tags":["x","y"],"new":{}}`
	lines, same := fieldDiff([]byte(a), []byte(b))
	require.Equal(t, []string{
		`- status: "running"`, `+ status: "completed"`,
		`- output: null`, `+ output.rows[0]: "a"`, `+ output.rows[1]: "b"`, `+ output.n: 2`,
		`- gone: 1`, `+ new: {}`,
	}, lines)
	require.Equal(t, 3, same, "timeout_seconds, tags[0], tags[1]")

	h := newHarness(t, nil, Options{}).seed()
	h.newModel(Options{Screen: "tasks", Status: queue.StatusCompleted, Type: "send_email"})
	h.init()
	h.press("enter", "d") // the completing version against the claim: an output appeared
	require.NotEmpty(t, h.m.detail.diff)
	for _, l := range h.m.detail.diff {
		for _, unchanged := range []string{"timeout_seconds", "max_retries", "retry_policy", "input", "created_at"} {
			require.False(t, (strings.HasPrefix(l, "-") || strings.HasPrefix(l, "+")) && strings.Contains(l, unchanged), "unchanged %s shown as changed: %q", unchanged, l)
		}
	}
	require.Contains(t, h.m.detail.diff, `+ output.message_id: "m-1"`)
}

// TestReadOnly: a read-only console offers and accepts no action that
// changes the queue, and says so.
func TestReadOnly(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil, Options{}).seed().features()
	h.newModel(Options{Screen: "tasks", Status: queue.StatusFailed, ReadOnly: true})
	h.init()
	v := h.view()
	require.Contains(t, v, "READ-ONLY")
	hints := h.m.hints()
	for _, action := range []string{"replay", "archive", "cancel", "pause", "new task"} {
		require.NotContains(t, hints, action)
	}
	for _, k := range []string{"R", "A", "C", "N", "n", "p", "P"} {
		h.press(k)
		require.Nil(t, h.m.confirm, "key %s", k)
		require.Nil(t, h.m.form, "key %s", k)
		require.Contains(t, h.m.flash, "read-only")
	}
	h.press("4")
	h.press("e", "t", "X")
	require.Nil(t, h.m.confirm)
	got, err := h.q.Get(h.ctx, h.ids["failed"].ID)
	require.NoError(t, err)
	require.Equal(t, queue.StatusFailed, got.Status)
	h.press("2", "enter")
	require.Equal(t, scrDetail, h.m.screen, "reading still works")
}

// TestShardMapShowsBacklogBesideDeadLetters: with a dead letter in every
// shard, each cell still shows its backlog.
func TestShardMapShowsBacklogBesideDeadLetters(t *testing.T) {
	t.Parallel()
	shards := []string{"0", "1", "2", "3"}
	o := newOverview(DefaultStyles(), store.AWSStandardPrices, shards)
	o.stats.ByShard = map[string]map[queue.Status]int{}
	for i, sh := range shards {
		o.stats.ByShard[sh] = map[queue.Status]int{queue.StatusPending: i, queue.StatusRunning: i * 4, queue.StatusFailed: 1}
	}
	grid := strings.Split(o.shardGrid(), "\n")[1]
	require.Equal(t, "  0   ·! 5! +! +!", strings.TrimRight(grid, " "))
}

// TestListPositionAndPausedMark: a long list says where the selection is
// and how long the list is, across pages; pending tasks of a paused type
// are marked.
func TestListPositionAndPausedMark(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil, Options{}).seed()
	for i := range 40 {
		_, _, err := h.q.Submit(h.ctx, queue.SubmitRequest{Type: "bulk", Input: json.RawMessage(fmt.Sprint(i))})
		require.NoError(t, err)
	}
	_, err := control.Pause(h.ctx, h.q, "bulk", "")
	require.NoError(t, err)
	h.newModel(Options{Screen: "tasks", Status: queue.StatusPending})
	h.init()
	require.Contains(t, h.view(), "1 of 42 · page 1")
	h.press("j", "j")
	require.Contains(t, h.view(), "3 of 42 · page 1")
	h.press("]", "j")
	require.Contains(t, h.view(), fmt.Sprintf("%d of 42 · page 2", h.m.tasks.pageSize()+2))
	require.Contains(t, h.view(), "‖ bulk", "a pending task of a paused type is marked")
	require.Contains(t, h.view(), "‖ paused")
}

// TestStatusPicker: S then a status key filters on that status at once,
// whatever the current one; the chooser names its keys.
func TestStatusPicker(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil, Options{}).seed()
	h.newModel(Options{Screen: "tasks"})
	h.init()
	require.Contains(t, h.m.hints(), "s/S status")
	h.press("S")
	require.Contains(t, h.view(), "f)failed")
	h.press("f")
	require.Equal(t, queue.StatusFailed, h.m.tasks.status)
	require.Equal(t, []*queue.Task{h.ids["failed"]}[0].ID, h.m.tasks.page.Tasks[0].ID)
	h.press("S", "x")
	require.Equal(t, queue.StatusCancelled, h.m.tasks.status)
	h.press("S", "esc")
	require.Equal(t, queue.StatusCancelled, h.m.tasks.status, "esc keeps the filter")
	require.False(t, h.m.tasks.choosing)
	h.press("S", "a")
	require.Equal(t, queue.Status(""), h.m.tasks.status)
	h.m.SetSize(80, 24)
	h.press("S")
	require.Contains(t, h.view(), "f:fail")
	requireFits(t, h.view(), 80, 24)
}

// TestResumeList: U lists the paused types; a digit asks to resume that
// one.
func TestResumeList(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil, Options{}).seed().features()
	_, err := control.Pause(h.ctx, h.q, "send_email", "smtp down")
	require.NoError(t, err)
	h.newModel(Options{})
	h.init()
	require.Contains(t, h.m.hints(), "U resume types")
	h.press("U")
	v := h.view()
	require.Contains(t, v, "1 report")
	require.Contains(t, v, "2 send_email")
	require.Contains(t, v, "smtp down")
	h.press("2")
	require.NotNil(t, h.m.confirm)
	require.Contains(t, h.view(), "Resume task type send_email?")
	h.press("y")
	c, err := control.Read(h.ctx, h.q)
	require.NoError(t, err)
	require.False(t, c.IsPaused("send_email"))
	require.True(t, c.IsPaused("report"), "only the one picked")
	h.press("U", "x")
	require.False(t, h.m.resumeList)
	require.Nil(t, h.m.confirm, "another key closes the list")
}
