package sim

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
)

// limitsFleet is a fleet of one process serving type a under limits, with
// the handler runs given (end -1: running), for the checks alone.
func limitsFleet(limits []FleetLimit, runs ...run) *checker {
	f := &fleet{start: time.Now(), sc: Scenario{Types: []string{"a", "b"}, Limits: limits}}
	f.lives = []life{{proc: 1, spec: WorkerSpec{Concurrency: 8, Types: []string{"a", "b"}}, from: 0, to: -1}}
	for _, r := range runs {
		r.task, r.proc = uuid.New(), 1
		f.journal.runs = append(f.journal.runs, &r)
	}
	return &checker{f: f, seen: map[string]bool{}}
}

// The check counts the handlers of a capped type running at an instant
// from the handlers' journal, and reports more than the cap.
func TestCapsChecked(t *testing.T) {
	t.Parallel()
	capA := []FleetLimit{{Type: "a", Concurrency: 2}}
	for _, tc := range []struct {
		name   string
		limits []FleetLimit
		runs   []run
		over   bool
	}{
		{"at the cap", capA, []run{{typ: "a", end: -1}, {typ: "a", end: -1}, {typ: "a", end: time.Second}, {typ: "b", end: -1}}, false},
		{"over the cap", capA, []run{{typ: "a", end: -1}, {typ: "a", end: -1}, {typ: "a", end: -1}}, true},
		{"another type uncapped", capA, []run{{typ: "b", end: -1}, {typ: "b", end: -1}, {typ: "b", end: -1}}, false},
		{"a rate is no cap", []FleetLimit{{Type: "a", Rate: 1, Per: time.Second}}, []run{{typ: "a", end: -1}, {typ: "a", end: -1}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := limitsFleet(tc.limits, tc.runs...)
			c.caps()
			if !tc.over {
				require.Empty(t, c.violations)
				return
			}
			require.Len(t, c.violations, 1)
			require.Equal(t, "over cap", c.violations[0].Kind)
		})
	}
}

// The check counts the handlers' starts of a rate-limited type in every
// window and reports more than rate*T + burst + one per process.
func TestRatesChecked(t *testing.T) {
	t.Parallel()
	// 2/s, burst 1, one process: at most 20+1+1 = 22 starts in 10 s and
	// 120+1+1 = 122 in a minute.
	limit := []FleetLimit{{Type: "a", Rate: 2, Per: time.Second, Burst: 1}}
	starts := func(n int, from, every time.Duration) []run {
		var rs []run
		for i := range n {
			rs = append(rs, run{typ: "a", start: from + time.Duration(i)*every, end: from + time.Duration(i)*every + time.Millisecond})
		}
		return rs
	}
	for _, tc := range []struct {
		name string
		runs []run
		over string // the window reported, "" for none
	}{
		{"at the rate", starts(300, 0, 500*time.Millisecond), ""},
		{"the burst and one per process", starts(22, 0, 400*time.Millisecond), ""},
		{"over in 10 s", starts(23, 0, 400*time.Millisecond), "a/10s@0s"},
		{"over in a minute", starts(123, 0, 480*time.Millisecond), "a/1m0s@0s"},
		{"other types not counted", append(starts(22, 0, 400*time.Millisecond), run{typ: "b", start: time.Second}), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := limitsFleet(limit, tc.runs...)
			c.rates()
			if tc.over == "" {
				require.Empty(t, c.violations)
				return
			}
			require.Len(t, c.violations, 1)
			require.Equal(t, "over rate", c.violations[0].Kind)
			require.Equal(t, tc.over, c.violations[0].Task)
		})
	}
}

// A slot is not free for a capped type while the fleet runs its cap of
// it, whatever the workers' own slots: the order check does not count
// that time as a wait with a slot free.
func TestAtCap(t *testing.T) {
	t.Parallel()
	s := time.Second
	c := limitsFleet([]FleetLimit{{Type: "a", Concurrency: 2}},
		run{typ: "a", start: 1 * s, end: 5 * s},
		run{typ: "a", start: 2 * s, end: 4 * s},
		run{typ: "a", start: 3 * s, end: 6 * s},
		run{typ: "b", start: 0, end: 10 * s},
	)
	runs := c.f.journal.all()
	require.Equal(t, []span{{2 * s, 5 * s}}, c.f.atCap(runs, "a"))
	require.Nil(t, c.f.atCap(runs, "b"), "b has no cap")
	require.Equal(t, []span{{0, 2 * s}, {5 * s, forever}}, c.f.freeFor(runs)["a"])
}

// Some seeds of the test command's six draw fleet-wide caps and rates, so
// it checks them.
func TestSmallSeedsDrawLimits(t *testing.T) {
	t.Parallel()
	caps, rates := 0, 0
	for seed := uint64(1); seed <= 6; seed++ {
		for _, l := range NewScenario(seed, Small).Limits {
			require.Contains(t, NewScenario(seed, Small).Types, l.Type)
			if l.Concurrency > 0 {
				caps++
			}
			if l.Rate > 0 {
				rates++
			}
		}
	}
	require.NotZero(t, caps)
	require.NotZero(t, rates)
}

// orderTask is one task of orderFleet: of type typ (a when empty), pending
// at pending and run once on process proc over [start, end).
type orderTask struct {
	proc                int
	typ                 string
	pending, start, end time.Duration
}

// orderFleet is a fleet of the workers given (process i runs specs[i] for
// the whole run) under limits, each task run once as given, for the order
// check alone. Times are from Settle, when the order is checked from.
func orderFleet(limits []FleetLimit, specs []WorkerSpec, tasks ...orderTask) (*checker, []uuid.UUID) {
	f := &fleet{start: time.Now(), sc: Scenario{Types: []string{"a", "b"}, Limits: limits}, tasks: map[uuid.UUID]*submitted{}}
	for i, s := range specs {
		f.lives = append(f.lives, life{proc: i, id: s.Name, spec: s, from: 0, to: -1})
	}
	c := &checker{f: f, seen: map[string]bool{}, pending: map[uuid.UUID]time.Duration{}, started: map[uuid.UUID]time.Duration{}}
	var ids []uuid.UUID
	for i, tk := range tasks {
		id := uuid.New()
		typ := tk.typ
		if typ == "" {
			typ = "a"
		}
		f.tasks[id] = &submitted{id: id, n: i, typ: typ, priority: queue.PriorityNormal}
		c.pending[id], c.started[id] = Settle+tk.pending, Settle+tk.start
		f.journal.runs = append(f.journal.runs, &run{task: id, n: i, typ: typ, worker: specs[tk.proc].Name, proc: tk.proc, start: Settle + tk.start, end: Settle + tk.end, how: "done"})
		ids = append(ids, id)
	}
	return c, ids
}

// The order check counts only the time a worker could have started the
// overtaken task: not a slot's hand-over to a task ranked before it (a
// one-slot worker working through an older backlog is free between two
// of its tasks), nor a slot a worker's share of a fleet-wide cap does not
// let it use.
func TestOvertakeCountsOnlyUsableSlots(t *testing.T) {
	t.Parallel()
	s, ms := time.Second, time.Millisecond
	one := []WorkerSpec{{Name: "w0", Concurrency: 1, Types: []string{"a", "b"}}}
	// x pending at 1 s is overtaken at 10 s by a task pending at 2 s; the
	// worker then runs 100 others, each for half a second after a hand-over
	// of half a second, and x after them.
	backlog := func(pending func(i int) time.Duration) []orderTask {
		tasks := []orderTask{{pending: 1 * s, start: 111 * s, end: 112 * s}, {pending: 2 * s, start: 10 * s, end: 10*s + 500*ms}}
		for i := range 100 {
			at := 11*s + time.Duration(i)*s
			tasks = append(tasks, orderTask{pending: pending(i), start: at, end: at + 500*ms})
		}
		return tasks
	}
	older := func(i int) time.Duration { return time.Duration(i) * ms }
	newer := func(i int) time.Duration { return 3*s + time.Duration(i)*ms }
	capped := []WorkerSpec{{Name: "w0", Concurrency: 4, Types: []string{"a", "b"}}, {Name: "w1", Concurrency: 4, Types: []string{"a"}}}
	for _, tc := range []struct {
		name   string
		limits []FleetLimit
		specs  []WorkerSpec
		tasks  []orderTask
		over   bool
	}{
		{"hand-overs to older tasks", nil, one, backlog(older), false},
		{"hand-overs to newer tasks", nil, one, backlog(newer), true},
		// A cap of 3 over w0 and w1: shares 2 and 1. w0's slots run b;
		// w1 runs the newer task, at its share, for 90 s, then x.
		{"a worker at its share of a cap", []FleetLimit{{Type: "a", Concurrency: 3}}, capped, []orderTask{
			{proc: 1, pending: 1 * s, start: 100 * s, end: 101 * s},
			{proc: 1, pending: 2 * s, start: 10 * s, end: 100 * s},
			{proc: 0, typ: "b", start: 0, end: 200 * s}, {proc: 0, typ: "b", start: 0, end: 200 * s},
			{proc: 0, typ: "b", start: 0, end: 200 * s}, {proc: 0, typ: "b", start: 0, end: 200 * s},
		}, false},
		{"a worker below its share of a cap", []FleetLimit{{Type: "a", Concurrency: 4}}, capped, []orderTask{
			{proc: 1, pending: 1 * s, start: 100 * s, end: 101 * s},
			{proc: 1, pending: 2 * s, start: 10 * s, end: 100 * s},
			{proc: 0, typ: "b", start: 0, end: 200 * s}, {proc: 0, typ: "b", start: 0, end: 200 * s},
			{proc: 0, typ: "b", start: 0, end: 200 * s}, {proc: 0, typ: "b", start: 0, end: 200 * s},
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, ids := orderFleet(tc.limits, tc.specs, tc.tasks...)
			c.overtake(1000)
			if !tc.over {
				require.Empty(t, c.violations)
				return
			}
			require.Len(t, c.violations, 1)
			require.Equal(t, "overtaken", c.violations[0].Kind)
			require.Equal(t, c.name(ids[0]), c.violations[0].Task)
		})
	}
}
