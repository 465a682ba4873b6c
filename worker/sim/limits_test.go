package sim

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
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
