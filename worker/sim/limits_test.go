package sim

import (
	"fmt"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/worker"
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

// The check counts the handlers of a rate-limited type in every window,
// each when its claim took its token, and reports more than rate*T +
// burst + one per process; handlers that start in a bunch after claims
// at the rate (their requests slowed) are within it.
func TestRatesChecked(t *testing.T) {
	t.Parallel()
	// 2/s, burst 1, one process: at most 20+1+1 = 22 starts in 10 s and
	// 120+1+1 = 122 in a minute.
	limit := []FleetLimit{{Type: "a", Rate: 2, Per: time.Second, Burst: 1}}
	starts := func(n int, from, every time.Duration) []run {
		var rs []run
		for i := range n {
			at := from + time.Duration(i)*every
			rs = append(rs, run{typ: "a", claimed: at, start: at, end: at + time.Millisecond})
		}
		return rs
	}
	// bunched: claims at 2/s for 10 s whose handlers all start at 10 s.
	bunched := func(claimed []run) []run {
		for i := range claimed {
			claimed[i].start, claimed[i].end = 10*time.Second, 10*time.Second+time.Millisecond
		}
		return claimed
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
		{"other types not counted", append(starts(22, 0, 400*time.Millisecond), run{typ: "b", claimed: time.Second, start: time.Second}), ""},
		{"handlers bunched after claims at the rate", append(starts(300, 10*time.Second, 500*time.Millisecond), bunched(starts(20, 0, 500*time.Millisecond))...), ""},
		{"claims over the rate", bunched(starts(23, 0, 400*time.Millisecond)), "a/10s@0s"},
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

// rateScenario is a fleet of n workers (64 slots in all, no faults)
// serving type a under a fleet-wide rate of 20/s with a burst of 10, with
// a backlog deep enough to start at the rate for minutes.
func rateScenario(n int) Scenario {
	sc := Scenario{
		Seed: 38, ShardChars: 1, PageSize: 100, Types: []string{"a"},
		LoadEnd: time.Second,
		Bursts:  []Burst{{At: 0, Type: "a", N: 4500}},
		Limits:  []FleetLimit{{Type: "a", Rate: 20, Per: time.Second, Burst: 10}},
	}
	for i := range n {
		skew := queue.MaxClockSkew/2 - time.Duration(i)*queue.MaxClockSkew/time.Duration(max(1, n-1))
		sc.Workers = append(sc.Workers, WorkerSpec{Name: fmt.Sprintf("w%d", i), Concurrency: 64 / n, Types: []string{"a"}, Speed: 1, Skew: skew})
	}
	return sc
}

// The precision of a fleet-wide rate over minutes, measured from the
// handlers' own start times with 1 and with 8 workers (simulated minutes
// cost seconds): over each whole minute of a backlog the starts are
// within 10% of the rate (from the first start: a fleet started at once
// hands out its shares in seconds), and no 10 s
// window holds more than the rate's
// worth and the burst (and one start of claim latency at its edges).
// With 8 workers each bucket holds one token (a share of the burst of
// 10): before the dispatcher woke for a token due before its next poll,
// the buckets sat full until the poll and the fleet started 1,037 to
// 1,052 a minute (87%).
func TestRatePrecision(t *testing.T) {
	t.Parallel()
	for _, n := range []int{1, 8} {
		t.Run(fmt.Sprintf("workers=%d", n), func(t *testing.T) {
			t.Parallel()
			sc := rateScenario(n)
			l := sc.Limits[0]
			var starts []time.Duration
			first := map[uuid.UUID]time.Duration{} // each task's first start
			joined := map[string]time.Duration{}   // each worker's first start
			synctest.Test(t, func(t *testing.T) {
				rep, f := simulate(sc, nil)
				require.Empty(t, rep.Violations)
				for _, r := range f.journal.all() {
					if s, ok := joined[r.worker]; !ok || r.start < s {
						joined[r.worker] = r.start
					}
					starts = append(starts, r.start)
					if s, ok := first[r.task]; !ok || r.start < s {
						first[r.task] = r.start
					}
				}
			})
			slices.Sort(starts)
			// A fleet started at once hands out its shares of the rate in
			// seconds: the first worker to compute its target may see
			// fewer peers and publish more, and the others use theirs once
			// it shrank it, each beating every second in its first
			// heartbeat interval (worker.joining). The minutes are counted
			// from the first start.
			var up time.Duration
			for _, s := range joined {
				up = max(up, s)
			}
			require.Less(t, up-starts[0], worker.DefaultHeartbeatInterval/2, "every worker started within half a heartbeat interval of the first: %v", joined)
			// The backlog lasted until the last task's first start.
			var drained time.Duration
			for _, s := range first {
				drained = max(drained, s)
			}
			perMinute := l.Rate * int(time.Minute/l.Per)
			// Each whole minute from the first start while the backlog
			// lasted.
			var minutes []int
			for from := starts[0]; from+time.Minute <= drained; from += time.Minute {
				minutes = append(minutes, countIn(starts, from, from+time.Minute))
			}
			worst := 0
			for i := range starts {
				worst = max(worst, countIn(starts, starts[i], starts[i]+10*time.Second))
			}
			t.Logf("%d workers, %d/s burst %d: all running %v after the first start; starts in each minute from the first %v (limit %d), most in a 10 s window %d (bound %d)",
				n, l.Rate, l.Burst, up-starts[0], minutes, perMinute, worst, l.Rate*10+l.Burst)
			require.GreaterOrEqual(t, len(minutes), 3, "the backlog lasts three minutes at the rate")
			for i, m := range minutes {
				require.InDelta(t, perMinute, m, float64(perMinute)/10, "minute %d: %d starts, not within 10%% of %d", i+1, m, perMinute)
			}
			// The tokens hold the rate and the burst exactly; a handler
			// starts one claim's requests after its token, so a window of
			// handler starts may hold one more at its edges.
			require.LessOrEqual(t, worst, l.Rate*10+l.Burst+1, "a 10 s window over the rate by more than the burst")
		})
	}
}

// countIn counts the sorted times in [from, to).
func countIn(ts []time.Duration, from, to time.Duration) int {
	i, _ := slices.BinarySearch(ts, from)
	j, _ := slices.BinarySearch(ts, to)
	return j - i
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
	capped := []WorkerSpec{{Name: "w0", Concurrency: 4, Types: []string{"a", "b"}}, {Name: "w1", Concurrency: 4, Types: []string{"a", "b"}}}
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
