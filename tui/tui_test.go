package tui

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/exp/golden"
	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/queue/control"
	"github.com/qo-queue/qo/queue/registry"
	"github.com/qo-queue/qo/queue/schedule"
	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/store/memstore"
)

// TestKeys drives the console with keys from a known state and checks the
// state it lands in.
func TestKeys(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		opts  Options
		keys  []string
		check func(t *testing.T, h *harness)
	}{
		{"starts on the overview", Options{}, nil, func(t *testing.T, h *harness) {
			require.Equal(t, scrOverview, h.m.screen)
			require.True(t, h.m.overview.loaded)
		}},
		{"2 opens the task list", Options{}, []string{"2"}, func(t *testing.T, h *harness) {
			require.Equal(t, scrTasks, h.m.screen)
			require.Len(t, h.m.tasks.page.Tasks, 6, "every task but the archived one")
		}},
		{"tab cycles the screens", Options{}, []string{"tab", "tab"}, func(t *testing.T, h *harness) {
			require.Equal(t, scrWorkers, h.m.screen)
		}},
		{"3 then j selects the second worker", Options{}, []string{"3", "j"}, func(t *testing.T, h *harness) {
			require.Equal(t, 1, h.m.workers.sel)
		}},
		{"s cycles the status filter", Options{}, []string{"2", "s", "s", "s", "s"}, func(t *testing.T, h *harness) {
			require.Equal(t, queue.StatusFailed, h.m.tasks.status)
			require.Len(t, h.m.tasks.page.Tasks, 1)
			require.Equal(t, h.ids["failed"].ID, h.m.tasks.page.Tasks[0].ID)
		}},
		{"j/k and arrows move, clamped", Options{}, []string{"2", "j", "down", "j", "k", "up", "up", "up"}, func(t *testing.T, h *harness) {
			require.Equal(t, 0, h.m.tasks.sel)
		}},
		{"G goes to the last row", Options{}, []string{"2", "G"}, func(t *testing.T, h *harness) {
			require.Equal(t, 5, h.m.tasks.sel)
		}},
		{"l and h move through the shards", Options{}, []string{"2", "l", "l", "h"}, func(t *testing.T, h *harness) {
			require.Equal(t, 0, h.m.tasks.shard)
			for _, task := range h.m.tasks.page.Tasks {
				require.Equal(t, "0", task.Shard)
			}
		}},
		{"h from all shards wraps to the last", Options{}, []string{"2", "h"}, func(t *testing.T, h *harness) {
			require.Equal(t, 15, h.m.tasks.shard)
		}},
		{"c clears the filters", Options{Status: queue.StatusFailed, Screen: "tasks"}, []string{"l", "c"}, func(t *testing.T, h *harness) {
			require.Equal(t, -1, h.m.tasks.shard)
			require.Equal(t, queue.Status(""), h.m.tasks.status)
			require.Len(t, h.m.tasks.page.Tasks, 6)
		}},
		{"/ searches a type", Options{Screen: "tasks"}, append([]string{"/"}, append(strings.Split("report", ""), "enter")...), func(t *testing.T, h *harness) {
			require.Equal(t, "report", h.m.tasks.typ)
			require.Len(t, h.m.tasks.page.Tasks, 2)
		}},
		{"esc leaves the search box unchanged", Options{Screen: "tasks"}, []string{"/", "x", "esc"}, func(t *testing.T, h *harness) {
			require.False(t, h.m.tasks.searching)
			require.Equal(t, "", h.m.tasks.typ)
			require.Equal(t, scrTasks, h.m.screen, "esc in the search box does not leave the screen")
		}},
		{"/ on the overview opens the task search", Options{}, []string{"/"}, func(t *testing.T, h *harness) {
			require.Equal(t, scrTasks, h.m.screen)
			require.True(t, h.m.tasks.searching)
			require.Len(t, h.m.tasks.page.Tasks, 6, "the list loads under the box")
		}},
		{"/ on the overview searches a type", Options{}, append([]string{"/"}, append(strings.Split("report", ""), "enter")...), func(t *testing.T, h *harness) {
			require.Equal(t, scrTasks, h.m.screen)
			require.False(t, h.m.tasks.searching)
			require.Equal(t, "report", h.m.tasks.typ)
			require.Len(t, h.m.tasks.page.Tasks, 2)
		}},
		{"q after a search from the overview goes back to it", Options{}, []string{"/", "r", "enter", "q"}, func(t *testing.T, h *harness) {
			require.Equal(t, scrOverview, h.m.screen)
			require.False(t, h.quit)
		}},
		{"esc in a search from the overview goes back to it", Options{}, []string{"/", "x", "esc"}, func(t *testing.T, h *harness) {
			require.Equal(t, scrOverview, h.m.screen)
			require.False(t, h.m.tasks.searching)
			require.Equal(t, "", h.m.tasks.typ)
			require.False(t, h.quit)
		}},
		{"a full id searched from the overview opens the task; q walks back", Options{}, nil, func(t *testing.T, h *harness) {
			h.press(append([]string{"/"}, append(strings.Split(h.ids["failed"].ID.String(), ""), "enter")...)...)
			require.Equal(t, scrDetail, h.m.screen)
			require.Equal(t, h.ids["failed"].ID, h.m.detail.task.ID)
			h.press("q")
			require.Equal(t, scrTasks, h.m.screen)
			h.press("q")
			require.Equal(t, scrOverview, h.m.screen)
			require.False(t, h.quit)
		}},
		{"enter opens the selected task", Options{Screen: "tasks"}, []string{"enter"}, func(t *testing.T, h *harness) {
			require.Equal(t, scrDetail, h.m.screen)
			require.Equal(t, h.m.tasks.page.Tasks[0].ID, h.m.detail.task.ID)
			require.NotEmpty(t, h.m.detail.events)
		}},
		{"q goes back from the detail", Options{Screen: "tasks"}, []string{"enter", "q"}, func(t *testing.T, h *harness) {
			require.Equal(t, scrTasks, h.m.screen)
			require.False(t, h.quit)
		}},
		{"q quits from a top screen", Options{}, []string{"q"}, func(t *testing.T, h *harness) {
			require.True(t, h.quit)
		}},
		{"ctrl+c quits from anywhere", Options{Screen: "tasks"}, []string{"enter", "tab", "ctrl+c"}, func(t *testing.T, h *harness) {
			require.True(t, h.quit)
		}},
		{"with a quit prompt q asks first", Options{QuitPrompt: "Stop qo dev?"}, []string{"q"}, func(t *testing.T, h *harness) {
			require.False(t, h.quit)
			require.Contains(t, h.view(), "Stop qo dev?")
			h.press("n")
			require.False(t, h.quit)
			require.Nil(t, h.m.confirm)
			h.press("q", "q") // q also answers no
			require.False(t, h.quit)
			require.Nil(t, h.m.confirm)
			h.press("q", "y")
			require.True(t, h.quit)
		}},
		{"with a quit prompt q from the detail goes back without asking", Options{Screen: "tasks", QuitPrompt: "Stop qo dev?"}, []string{"enter", "q"}, func(t *testing.T, h *harness) {
			require.Equal(t, scrTasks, h.m.screen)
			require.Nil(t, h.m.confirm)
		}},
		{"with a quit prompt ctrl+c quits at once", Options{QuitPrompt: "Stop qo dev?"}, []string{"ctrl+c"}, func(t *testing.T, h *harness) {
			require.True(t, h.quit)
		}},
		{"? opens and q closes the help", Options{}, []string{"?", "q"}, func(t *testing.T, h *harness) {
			require.False(t, h.m.help)
			require.False(t, h.quit)
		}},
		{"i cycles the refresh interval", Options{Refresh: 5 * time.Second}, []string{"i", "i"}, func(t *testing.T, h *harness) {
			require.Equal(t, 0, h.m.interval, "5s, 10s, off")
		}},
		{"R asks, n declines", Options{Status: queue.StatusFailed, Screen: "tasks"}, []string{"R", "n"}, func(t *testing.T, h *harness) {
			require.Nil(t, h.m.confirm)
			task, err := h.q.Get(h.ctx, h.ids["failed"].ID)
			require.NoError(t, err)
			require.Equal(t, queue.StatusFailed, task.Status)
		}},
		{"R then y replays", Options{Status: queue.StatusFailed, Screen: "tasks"}, []string{"R", "y"}, func(t *testing.T, h *harness) {
			task, err := h.q.Get(h.ctx, h.ids["failed"].ID)
			require.NoError(t, err)
			require.Equal(t, queue.StatusPending, task.Status)
			require.Contains(t, h.m.flash, "replayed")
		}},
		{"A on a pending task reports the refusal", Options{Status: queue.StatusPending, Screen: "tasks"}, []string{"A", "y"}, func(t *testing.T, h *harness) {
			require.True(t, h.m.flashErr)
			require.Contains(t, h.m.flash, "archive failed")
		}},
		{"C cancels from the detail", Options{Type: "report", Status: queue.StatusPending, Screen: "tasks"}, []string{"enter", "C", "y"}, func(t *testing.T, h *harness) {
			task, err := h.q.Get(h.ctx, h.ids["later"].ID)
			require.NoError(t, err)
			require.Equal(t, queue.StatusCancelled, task.Status)
			require.Equal(t, queue.StatusCancelled, h.m.detail.task.Status, "the detail shows the change")
		}},
		{"N requeues a delayed task", Options{Type: "report", Status: queue.StatusPending, Screen: "tasks"}, []string{"N", "y"}, func(t *testing.T, h *harness) {
			task, err := h.q.Get(h.ctx, h.ids["later"].ID)
			require.NoError(t, err)
			require.False(t, task.AvailableAt.After(h.clock.Now()))
		}},
		{"n submits a task from the form", Options{}, append(append([]string{"n"}, strings.Split("thumbnail", "")...), "tab", "backspace", "backspace", "{", "}", "enter", "enter", "enter"), func(t *testing.T, h *harness) {
			require.Nil(t, h.m.form)
			require.Equal(t, scrDetail, h.m.screen, "the new task opens")
			require.Equal(t, "thumbnail", h.m.detail.task.Type)
			require.Contains(t, h.m.flash, "submitted")
		}},
		{"the form refuses bad JSON", Options{}, append(append([]string{"n"}, strings.Split("thumbnail", "")...), "tab", "{", "enter", "enter", "enter"), func(t *testing.T, h *harness) {
			require.NotNil(t, h.m.form)
			require.Contains(t, h.m.form.err, "not valid JSON")
		}},
		{"esc closes the form", Options{}, []string{"n", "x", "esc"}, func(t *testing.T, h *harness) {
			require.Nil(t, h.m.form)
			require.False(t, h.quit)
		}},
		{"tab switches the detail panes and space folds", Options{Screen: "tasks", Status: queue.StatusCompleted}, []string{"enter", "tab", "space"}, func(t *testing.T, h *harness) {
			require.True(t, h.m.detail.focusTree)
			require.True(t, h.m.detail.tree.roots[0].collapsed)
		}},
		{"m marks two versions and d diffs them", Options{Screen: "tasks", Status: queue.StatusCompleted}, []string{"enter", "g", "m", "G", "m", "d"}, func(t *testing.T, h *harness) {
			require.Len(t, h.m.detail.marks, 2)
			require.NotEmpty(t, h.m.detail.diff)
			require.Contains(t, h.m.detail.diff, `+ status: "completed"`)
		}},
		{"esc closes the diff, then the detail", Options{Screen: "tasks", Status: queue.StatusCompleted}, []string{"enter", "d", "esc"}, func(t *testing.T, h *harness) {
			require.Nil(t, h.m.detail.diff)
			require.Equal(t, scrDetail, h.m.screen)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, nil, Options{})
			h.seed()
			h.newModel(tt.opts)
			h.init()
			h.press(tt.keys...)
			tt.check(t, h)
		})
	}
}

// TestStaleResponsesDropped checks that an answer to an older request does
// not overwrite a newer one.
func TestStaleResponsesDropped(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil, Options{Screen: "tasks"}).seed()
	h.newModel(Options{Screen: "tasks"})
	h.init()
	old := loadTasks(h.ctx, h.q, queue.ListQuery{Status: queue.StatusFailed}, h.m.next("tasks"))()
	h.run(loadTasks(h.ctx, h.q, h.m.tasks.query(), h.m.next("tasks")))
	h.m.Update(old)
	require.Len(t, h.m.tasks.page.Tasks, 6, "the older, filtered answer was dropped")
}

// TestRequestRate checks the fleet's S3 rate from two heartbeats: the
// requests between them over the time between the heartbeats themselves,
// not between the console's refreshes.
func TestRequestRate(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil, Options{}).seed()
	h.newModel(Options{})
	h.init()
	_, _, ok := h.m.overview.requestRate()
	require.False(t, ok, "one sample gives no rate")
	before, err := registry.Get(h.ctx, h.q, "worker-a")
	require.NoError(t, err)
	h.clock.Advance(10 * time.Second)
	h.heartbeat(2000)
	h.press("r")
	secs := h.clock.Now().Sub(before.LastHeartbeat).Seconds()
	perSec, perHour, ok := h.m.overview.requestRate()
	require.True(t, ok)
	require.InDelta(t, 2000/secs, perSec, 0.001)
	require.InDelta(t, 2000*0.005/1000*3600/secs, perHour, 1e-9)
	h.clock.Advance(3 * time.Second)
	h.press("r") // no heartbeat since: the rate holds, it does not drop to 0
	perSec, _, ok = h.m.overview.requestRate()
	require.True(t, ok)
	require.InDelta(t, 2000/secs, perSec, 0.001)
}

// TestViews renders every screen at 100x30 and 80x24 against golden files.
func TestViews(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		opts     Options
		keys     []string
		features bool
	}{
		{"overview", Options{}, nil, false},
		{"overview_paused", Options{}, nil, true},
		{"tasks_priorities", Options{Screen: "tasks", Status: queue.StatusPending}, nil, true},
		{"detail_offloaded", Options{Screen: "tasks", Type: "bulk_import"}, []string{"enter"}, true},
		{"schedules", Options{Screen: "schedules"}, nil, true},
		{"schedule_confirm", Options{Screen: "schedules"}, []string{"X"}, true},
		{"tasks", Options{Screen: "tasks"}, nil, false},
		{"tasks_failed", Options{Screen: "tasks", Status: queue.StatusFailed}, nil, false},
		{"detail", Options{Screen: "tasks", Status: queue.StatusCompleted, Type: "send_email"}, []string{"enter"}, false},
		{"detail_tree_folded", Options{Screen: "tasks", Status: queue.StatusCompleted, Type: "send_email"}, []string{"enter", "tab", "j", "j", "space"}, false},
		{"diff", Options{Screen: "tasks", Status: queue.StatusCompleted, Type: "send_email"}, []string{"enter", "d"}, false},
		{"workers", Options{Screen: "workers"}, nil, false},
		{"help", Options{}, []string{"?"}, false},
		{"confirm", Options{Screen: "tasks", Status: queue.StatusFailed}, []string{"R"}, false},
		{"submit_form", Options{}, []string{"n", "t", "y", "p", "o", "!", "tab", "enter", "enter", "enter"}, false},
		{"search", Options{Screen: "tasks"}, []string{"/", "r", "e"}, false},
		{"search_from_overview", Options{}, []string{"/", "r", "e"}, false},
	}
	for _, size := range [][2]int{{100, 30}, {80, 24}} {
		for _, tt := range tests {
			name := tt.name
			if size[0] == 80 {
				name += "_80x24"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				h := newHarness(t, nil, Options{}).seed()
				if tt.features {
					h.features()
				}
				h.newModel(tt.opts)
				h.m.SetSize(size[0], size[1])
				h.init()
				h.press(tt.keys...)
				v := h.view()
				requireFits(t, v, size[0], size[1])
				if strings.HasPrefix(tt.name, "diff") {
					// A diff shows the lease and request ids, random per write.
					v = randomUUID.ReplaceAllString(v, "<random uuid (v4) redacted>")
				}
				golden.RequireEqual(t, []byte(v))
			})
		}
	}
}

// randomUUID matches a random (v4) UUID.
var randomUUID = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}`)

// requireFits checks that a view never draws past the terminal.
func requireFits(t *testing.T, v string, w, h int) {
	t.Helper()
	lines := strings.Split(v, "\n")
	require.LessOrEqual(t, len(lines), h, "the view is taller than the terminal")
	for i, l := range lines {
		require.LessOrEqual(t, len([]rune(l)), w, "line %d is wider than the terminal: %q", i+1, l)
	}
}

// TestMalformedObjects puts broken objects in the bucket: the console shows
// them as skipped and keeps working.
func TestMalformedObjects(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil, Options{}).seed()
	for key, body := range map[string]string{
		h.q.TaskKey(queue.NewIDAt(epoch)):                  `{"format":1,"id":`,
		h.q.TaskKey(queue.NewIDAt(epoch.Add(time.Second))): `{"format":99}`,
		"workers/broken.json":                              `not json`,
	} {
		_, err := h.raw.Put(h.ctx, key, []byte(body), store.Condition{})
		require.NoError(t, err)
	}
	h.newModel(Options{})
	h.init()
	v := h.view()
	require.Contains(t, v, "1 malformed worker entr(ies) skipped")
	golden.RequireEqual(t, []byte(v))
	h.press("2")
	require.Len(t, h.m.tasks.page.Tasks, 6)
	require.Contains(t, h.view(), "2 malformed task object(s) skipped on this page")
	h.press("3")
	require.Len(t, h.m.overview.workers, 3)
}

// downStore fails every request while down is set, as an S3 outage would.
type downStore struct {
	*memstore.Store
	down bool
}

var errDown = errors.New("dial tcp 127.0.0.1:9000: connect: connection refused")

func (d *downStore) List(ctx context.Context, p store.ListParams) (store.ListPage, error) {
	if d.down {
		return store.ListPage{}, fmt.Errorf("list: %w: %w", store.ErrUnreachable, errDown)
	}
	return d.Store.List(ctx, p)
}

func (d *downStore) Get(ctx context.Context, key string) (*store.Object, error) {
	if d.down {
		return nil, fmt.Errorf("get: %w: %w", store.ErrUnreachable, errDown)
	}
	return d.Store.Get(ctx, key)
}

// TestOutage takes the store away while the console runs: it keeps the
// last data, says what is wrong, and recovers by itself.
func TestOutage(t *testing.T) {
	t.Parallel()
	ds := &downStore{Store: memstore.New()}
	h := newHarness(t, ds, Options{}).seed()
	h.newModel(Options{Screen: "tasks"})
	h.init()
	ds.down = true
	h.press("r")
	v := h.view()
	require.Contains(t, v, "S3 unreachable")
	require.Contains(t, v, "showing the last data")
	require.Len(t, h.m.tasks.page.Tasks, 6, "the last page stays")
	golden.RequireEqual(t, []byte(v))
	h.press("enter") // opening a task fails too, without a crash
	require.NotNil(t, h.m.loadErr)
	h.press("q")
	ds.down = false
	h.press("r")
	require.Nil(t, h.m.loadErr)
	require.NotContains(t, h.view(), "unreachable")
}

// TestBatchedKeys checks that keys read together ("ssss", as a fast typist
// or tmux send-keys produce) act one by one, but stay text in a text box.
func TestBatchedKeys(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil, Options{}).seed()
	h.newModel(Options{Screen: "tasks"})
	h.init()
	h.m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("ss")})
	require.Equal(t, queue.StatusRunning, h.m.tasks.status)
	h.press("/")
	h.m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("ss")})
	require.Equal(t, "ss", h.m.tasks.search.Value())
}

// TestFilterChangeClearsRows: after a filter change, until the new page
// arrives, no row of the old page can be opened or acted on.
func TestFilterChangeClearsRows(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil, Options{}).seed()
	h.newModel(Options{Screen: "tasks"})
	h.init()
	require.NotNil(t, h.m.tasks.selected())
	h.m.Update(keyMsg("s")) // the reload command is not run: the answer is "in flight"
	require.Nil(t, h.m.tasks.selected())
	require.Contains(t, h.view(), "loading")
	h.m.Update(keyMsg("enter"))
	require.Equal(t, scrTasks, h.m.screen, "enter on a list still loading opens nothing")
}

// TestFeatureKeys drives pause, resume and the schedule actions and checks
// the bucket through the queue API.
func TestFeatureKeys(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		opts  Options
		keys  []string
		check func(t *testing.T, h *harness)
	}{
		{"the overview shows what is paused", Options{}, nil, func(t *testing.T, h *harness) {
			require.Contains(t, h.view(), "PAUSED types: report (month end)")
		}},
		{"P then y pauses the whole queue", Options{}, []string{"P", "y"}, func(t *testing.T, h *harness) {
			c, err := control.Read(h.ctx, h.q)
			require.NoError(t, err)
			require.True(t, c.Paused)
			require.Contains(t, h.view(), "PAUSED: the whole queue")
		}},
		{"P twice resumes it", Options{}, []string{"P", "y", "P", "y"}, func(t *testing.T, h *harness) {
			c, err := control.Read(h.ctx, h.q)
			require.NoError(t, err)
			require.False(t, c.Paused)
			require.Contains(t, h.m.flash, "resumed the whole queue")
		}},
		{"p on a task of a paused type resumes the type", Options{Screen: "tasks", Type: "report"}, []string{"p", "y"}, func(t *testing.T, h *harness) {
			c, err := control.Read(h.ctx, h.q)
			require.NoError(t, err)
			require.False(t, c.IsPaused("report"))
		}},
		{"p on another type pauses it, n declines", Options{Screen: "tasks", Type: "resize_image"}, []string{"p", "n", "p", "y"}, func(t *testing.T, h *harness) {
			c, err := control.Read(h.ctx, h.q)
			require.NoError(t, err)
			require.Equal(t, []string{"report", "resize_image"}, c.PausedTypes())
		}},
		{"4 lists the schedules", Options{}, []string{"4"}, func(t *testing.T, h *harness) {
			require.Equal(t, scrSchedules, h.m.screen)
			require.Len(t, h.m.scheds.list, 2)
		}},
		{"e then y disables the selected schedule", Options{Screen: "schedules"}, []string{"e", "y"}, func(t *testing.T, h *harness) {
			s, err := schedule.Get(h.ctx, h.q, "nightly")
			require.NoError(t, err)
			require.False(t, s.Enabled)
		}},
		{"j e y enables the disabled one", Options{Screen: "schedules"}, []string{"j", "e", "y"}, func(t *testing.T, h *harness) {
			s, err := schedule.Get(h.ctx, h.q, "poll")
			require.NoError(t, err)
			require.True(t, s.Enabled)
		}},
		{"t then y triggers a run", Options{Screen: "schedules"}, []string{"t", "y"}, func(t *testing.T, h *harness) {
			s, err := schedule.Get(h.ctx, h.q, "nightly")
			require.NoError(t, err)
			require.NotEmpty(t, s.LastTaskID)
			id, err := queue.ParseID(s.LastTaskID)
			require.NoError(t, err)
			task, err := h.q.Get(h.ctx, id)
			require.NoError(t, err)
			require.Equal(t, "report", task.Type)
			require.Contains(t, h.m.flash, "submitted")
		}},
		{"X then y deletes it", Options{Screen: "schedules"}, []string{"X", "y"}, func(t *testing.T, h *harness) {
			_, err := schedule.Get(h.ctx, h.q, "nightly")
			require.ErrorIs(t, err, queue.ErrNotFound)
			require.Len(t, h.m.scheds.list, 1, "the list is reloaded")
		}},
		{"the help scrolls to every key", Options{}, []string{"?", "pgdown", "pgdown"}, func(t *testing.T, h *harness) {
			v := h.view()
			require.Contains(t, v, "Schedules (ask first)")
			require.Contains(t, v, "delete the schedule")
			require.Contains(t, v, "open the task's workflow")
			require.Contains(t, v, "cancel every step not ended")
		}},
		{"the detail loads an offloaded input", Options{Screen: "tasks", Type: "bulk_import"}, []string{"enter"}, func(t *testing.T, h *harness) {
			require.Nil(t, h.m.detail.payloadErr)
			v := h.view()
			require.Contains(t, v, "input offloaded")
			require.Contains(t, v, "alpha")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, nil, Options{}).seed().features()
			h.newModel(tt.opts)
			h.init()
			h.press(tt.keys...)
			tt.check(t, h)
		})
	}
}

// TestBrokenPayloadAndSchedule: an offloaded input that is gone and a
// schedule object that does not decode are reported, never fatal.
func TestBrokenPayloadAndSchedule(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil, Options{}).seed().features()
	big := h.ids["big"]
	broken := big.Clone()
	broken.InputRef.SHA256 = strings.Repeat("0", 64)
	body, err := queue.EncodeTask(broken)
	require.NoError(t, err)
	_, err = h.raw.Put(h.ctx, big.Key(), body, store.Condition{})
	require.NoError(t, err)
	_, err = h.raw.Put(h.ctx, queue.ScheduleKey("bad"), []byte(`{"format":1,"name":"bad","cron":"never"}`), store.Condition{})
	require.NoError(t, err)

	h.newModel(Options{Screen: "tasks", Type: "bulk_import"})
	h.init()
	h.press("enter")
	require.Contains(t, h.view(), "offloaded data not loaded")
	h.press("q", "4")
	v := h.view()
	require.Contains(t, v, "1 malformed schedule object(s) skipped")
	require.Contains(t, v, "nightly")
}

// The detail shows a task's metadata.
func TestDetailShowsMetadata(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil, Options{})
	_, _, err := h.q.Submit(h.ctx, queue.SubmitRequest{Type: "traced", Metadata: map[string]string{"tenant": "acme", "batch": "7"}})
	require.NoError(t, err)
	h.newModel(Options{Screen: "tasks", Type: "traced"})
	h.init()
	h.press("enter")
	require.Contains(t, h.view(), "metadata batch=7 tenant=acme")
}

// The overview shows the fleet-wide caps.
func TestOverviewShowsCaps(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil, Options{}).seed()
	_, err := control.SetLimit(h.ctx, h.q, "report", 3)
	require.NoError(t, err)
	h.newModel(Options{})
	h.init()
	require.Contains(t, h.view(), "fleet-wide caps (running at once): report 3")
}

// The overview shows the fleet-wide rates beside the caps; a type with a
// rate and no cap is not listed among the caps.
func TestOverviewShowsRates(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil, Options{}).seed()
	_, err := control.SetRate(h.ctx, h.q, "report", 20, time.Second, 0)
	require.NoError(t, err)
	h.newModel(Options{})
	h.init()
	require.Contains(t, h.view(), "fleet-wide rates (starts): report 20/s")
	require.NotContains(t, h.view(), "fleet-wide caps")
}

// The overview shows per-key caps and rates beside the fleet-wide ones.
func TestOverviewShowsKeyLimits(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil, Options{}).seed()
	_, err := control.SetKeyLimit(h.ctx, h.q, "report", 3)
	require.NoError(t, err)
	_, err = control.SetKeyRate(h.ctx, h.q, "report", 10, time.Second, 0)
	require.NoError(t, err)
	_, err = control.SetKeyRate(h.ctx, h.q, "email", 600, time.Minute, 0)
	require.NoError(t, err)
	h.newModel(Options{})
	h.init()
	require.Contains(t, h.view(), "per key: email 600/m; report 3 running, 10/s")
	require.NotContains(t, h.view(), "fleet-wide caps", "a per-key cap is no fleet-wide cap")
}
