package sim

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/qo-queue/qo/queue"
)

// Scenario is everything a seed decides before the run: the fleet, the
// workload and the fault timeline. The same seed gives the same scenario.
type Scenario struct {
	Seed       uint64
	ShardChars int
	// PageSize is the workers' ReadyPageSize: small pages make a backlog
	// of a few hundred tasks as deep, for the dispatcher, as one of a few
	// hundred thousand with the default page.
	PageSize int
	Types    []string
	Workers  []WorkerSpec

	// FaultsEnd ends the fault phase; LoadEnd ends the submits (after a
	// calm phase of load without faults); the run then drains.
	FaultsEnd, LoadEnd time.Duration
	// Rate is the steady arrivals per second per type during the load.
	Rate float64
	// Bursts submit many tasks at once (deep backlogs).
	Bursts []Burst
	// Events is the fault and operator timeline, in time order.
	Events []Event
	// Limits are fleet-wide limits an operator sets before the workers
	// start (see queue/doc.go, "Fleet-wide concurrency caps" and
	// "Fleet-wide rate limits"); the check holds the handlers to them.
	Limits []FleetLimit
	// Keys is the number of task keys the tasks are spread over (0: none;
	// see queue/doc.go, "Task keys"): half the keyed tasks go to the first
	// key, a deep backlog beside the others, and one task in five has no
	// key.
	Keys int
}

// FleetLimit is a fleet-wide limit of one type: at most Concurrency
// handlers at once (0: no cap), at most Rate starts per Per (0: no rate),
// Burst more in any window (0: queue.DefaultBurst).
type FleetLimit struct {
	Type        string
	Concurrency int
	Rate        int
	Per         time.Duration
	Burst       int
}

// WorkerSpec is one worker process of the fleet.
type WorkerSpec struct {
	Name        string
	Concurrency int
	Types       []string
	Limits      map[string]int
	// Speed multiplies every task's duration on this worker (1 is
	// fastest): fleets of unequal workers.
	Speed float64
	// Skew is the error of the process's view of the server's time,
	// within ±MaxClockSkew/2 so two processes differ by at most
	// MaxClockSkew.
	Skew time.Duration
}

// Burst submits N tasks of Type at At.
type Burst struct {
	At   time.Duration
	Type string
	N    int
}

// EventKind names a fault or operator action.
type EventKind string

// The events of a timeline.
const (
	Crash     EventKind = "crash"     // the process stops dead (SIGKILL): nothing more it sends lands
	Restart   EventKind = "restart"   // a crashed worker comes back (same or new id)
	Partition EventKind = "partition" // every request of the process fails for a while; it lives on
	Upgrade   EventKind = "upgrade"   // rolling restart: every worker in turn shuts down gracefully and starts again
	Lossy     EventKind = "lossy"     // for a while a share of requests fail, or land with their response lost
	Slow      EventKind = "slow"      // for a while requests take much longer
	PauseType EventKind = "pause"     // an operator pauses a type, and resumes it later
	CancelOne EventKind = "cancel"    // an operator cancels a task that has not ended
	ReplayOne EventKind = "replay"    // an operator replays a failed or cancelled task
)

// Event is one entry of the timeline.
type Event struct {
	At     time.Duration
	Kind   EventKind
	Worker int           // Crash, Restart, Partition: index into Workers
	For    time.Duration // Partition, Lossy, Slow, PauseType: how long
	Type   string        // PauseType
	Rate   float64       // Lossy: share of requests hit
	Delay  time.Duration // Slow: extra latency per request
	NewID  bool          // Restart: under a new worker id
}

func (e Event) String() string {
	return fmt.Sprintf("%s %s w%d for=%s type=%s", e.At, e.Kind, e.Worker, e.For, e.Type)
}

// Size scales a scenario: Small for the test command, Full for the
// separate simulation run.
type Size int

// Sizes.
const (
	Small Size = iota
	Full
)

// NewScenario draws the scenario of seed. The draws are made in a fixed
// order (workers, bursts, events, limits): a seed names the same scenario
// as long as that order holds.
func NewScenario(seed uint64, size Size) Scenario {
	d := draws{rand.New(rand.NewPCG(seed, 0x716f))}
	r := d.r

	sc := Scenario{Seed: seed, ShardChars: d.pick(1, 1, 2), PageSize: d.pick(10, 25, 100, 1000)}
	sc.Types = []string{"a", "b", "c"}[:1+r.IntN(3)]
	scale := 1.0
	if size == Small {
		scale = 0.4
	}
	sc.FaultsEnd = time.Duration(float64(d.dur(4*time.Minute, 10*time.Minute)) * scale)
	sc.LoadEnd = sc.FaultsEnd + time.Duration(float64(d.dur(3*time.Minute, 6*time.Minute))*scale)
	sc.Rate = []float64{0.5, 1, 2, 4}[r.IntN(4)] * scale

	sc.Workers = d.workers(sc.Types)
	sc.Bursts = d.bursts(sc, scale)
	sc.Events = d.events(sc, len(sc.Workers))
	sortEvents(sc.Events)
	// Fleet-wide limits, drawn last so that the draws above (and so the
	// scenarios of the seeds before limits existed) stay as they were.
	sc.Limits = d.limits(sc.Types)
	// Task keys, drawn after the limits for the same reason.
	sc.Keys = d.pick(0, 0, 2, 5)
	return sc
}

// draws is the random source of a scenario, with the shapes its draws
// take.
type draws struct{ r *rand.Rand }

// pick draws one of xs.
func (d draws) pick(xs ...int) int { return xs[d.r.IntN(len(xs))] }

// dur draws a duration within lo..hi.
func (d draws) dur(lo, hi time.Duration) time.Duration {
	return lo + time.Duration(d.r.Int64N(int64(hi-lo)+1))
}

// workers draws the fleet: 2 to 5 workers. Every type is served by the
// first worker; the others serve a subset (at least one type), and some
// have a per-worker limit on one of their types.
func (d draws) workers(types []string) []WorkerSpec {
	r := d.r
	n := 2 + r.IntN(4)
	var out []WorkerSpec
	for i := range n {
		ws := WorkerSpec{
			Name:        fmt.Sprintf("w%d", i),
			Concurrency: d.pick(1, 1, 2, 4, 8, 16),
			Speed:       []float64{1, 1, 1, 2, 4, 10}[r.IntN(6)],
			Skew:        d.dur(-queue.MaxClockSkew/2, queue.MaxClockSkew/2),
		}
		for _, t := range types {
			if i == 0 || r.IntN(3) > 0 {
				ws.Types = append(ws.Types, t)
			}
		}
		if len(ws.Types) == 0 {
			ws.Types = []string{types[r.IntN(len(types))]}
		}
		if r.IntN(4) == 0 {
			ws.Limits = map[string]int{ws.Types[r.IntN(len(ws.Types))]: 1 + r.IntN(2)}
		}
		out = append(out, ws)
	}
	return out
}

// bursts draws the deep backlogs: one at the start, one in the calm phase
// (where the order is checked), sometimes more.
func (d draws) bursts(sc Scenario, scale float64) []Burst {
	r := d.r
	var out []Burst
	burst := func(at time.Duration) {
		out = append(out, Burst{At: at, Type: sc.Types[r.IntN(len(sc.Types))], N: int(float64(d.pick(50, 200, 600, 1500)) * scale)})
	}
	burst(0)
	burst(sc.FaultsEnd + d.dur(0, (sc.LoadEnd-sc.FaultsEnd)/3))
	for range r.IntN(3) {
		burst(d.dur(0, sc.LoadEnd))
	}
	return out
}

// events draws the fault and operator timeline of n workers, within the
// fault phase, unsorted.
func (d draws) events(sc Scenario, n int) []Event {
	r := d.r
	var out []Event
	at := func() time.Duration { return d.dur(10*time.Second, sc.FaultsEnd-30*time.Second) }
	crashed := map[int]bool{}
	for range r.IntN(4) {
		w := r.IntN(n)
		if crashed[w] {
			continue
		}
		crashed[w] = true
		t := at()
		back := min(t+d.dur(5*time.Second, 90*time.Second), sc.FaultsEnd)
		out = append(out,
			Event{At: t, Kind: Crash, Worker: w},
			Event{At: back, Kind: Restart, Worker: w, NewID: r.IntN(2) == 0})
	}
	for range r.IntN(3) {
		w := r.IntN(n)
		if crashed[w] {
			continue
		}
		t := at()
		out = append(out, Event{At: t, Kind: Partition, Worker: w, For: min(d.dur(5*time.Second, 60*time.Second), sc.FaultsEnd-t)})
	}
	if r.IntN(3) == 0 {
		out = append(out, Event{At: at(), Kind: Upgrade})
	}
	for range r.IntN(4) {
		t := at()
		out = append(out, Event{At: t, Kind: Lossy, For: min(d.dur(10*time.Second, 60*time.Second), sc.FaultsEnd-t), Rate: []float64{0.02, 0.05, 0.1, 0.25}[r.IntN(4)]})
	}
	for range r.IntN(3) {
		t := at()
		out = append(out, Event{At: t, Kind: Slow, For: min(d.dur(10*time.Second, 60*time.Second), sc.FaultsEnd-t), Delay: d.dur(50*time.Millisecond, 3*time.Second)})
	}
	for range r.IntN(3) {
		t := at()
		out = append(out, Event{At: t, Kind: PauseType, Type: sc.Types[r.IntN(len(sc.Types))], For: min(d.dur(5*time.Second, 60*time.Second), sc.FaultsEnd-t)})
	}
	for range r.IntN(6) {
		out = append(out, Event{At: at(), Kind: CancelOne})
	}
	for range r.IntN(4) {
		out = append(out, Event{At: at(), Kind: ReplayOne})
	}
	return out
}

// limits draws the fleet-wide limits of the types: a concurrency cap, a
// rate, both or neither.
func (d draws) limits(types []string) []FleetLimit {
	r := d.r
	var out []FleetLimit
	for _, t := range types {
		var l FleetLimit
		if r.IntN(4) == 0 {
			l.Concurrency = d.pick(1, 2, 3, 5, 8)
		}
		if r.IntN(5) == 0 {
			l.Rate, l.Per, l.Burst = d.pick(2, 5, 10), time.Second, d.pick(0, 1, 10)
		}
		if l.Concurrency > 0 || l.Rate > 0 {
			l.Type = t
			out = append(out, l)
		}
	}
	return out
}

// TaskSpec is what a task's input tells the simulated handler.
type TaskSpec struct {
	// MS is the task's run time at speed 1, in milliseconds.
	MS int `json:"ms"`
	// Hang: the handler runs until its context ends (a task that always
	// times out).
	Hang bool `json:"hang,omitempty"`
	// N is the task's number in the run (for reports).
	N int `json:"n"`
}

// newTaskSpec draws task n's run time: mostly short, sometimes long (a
// worker with one slot busy for minutes is a saturated worker), rarely a
// hang.
func newTaskSpec(r *rand.Rand, n int) TaskSpec {
	s := TaskSpec{N: n}
	switch x := r.IntN(1000); {
	case x < 3:
		s.Hang = true
	case x < 10:
		s.MS = 20_000 + r.IntN(100_000)
	case x < 100:
		s.MS = 1000 + r.IntN(4000)
	default:
		s.MS = 20 + r.IntN(500)
	}
	return s
}

// timeoutFor is the task's timeout: room for its run time at the slowest
// speed, so only hangs (and stalls) time out.
func timeoutFor(s TaskSpec) time.Duration {
	if s.Hang {
		return 5 * time.Second
	}
	return max(10*time.Second, 12*time.Duration(s.MS)*time.Millisecond)
}

// outcome is what the handler of attempt of task n returns: mostly
// success, sometimes a retryable error, rarely a permanent one; fixed by
// the seed, the task and the attempt.
func outcome(seed uint64, n, attempt int) string {
	r := rand.New(rand.NewPCG(seed^uint64(n)*0x9e3779b97f4a7c15, uint64(attempt)))
	switch x := r.IntN(100); {
	case x < 4:
		return "retry"
	case x < 5:
		return "permanent"
	}
	return "ok"
}

func sortEvents(es []Event) {
	slices.SortStableFunc(es, func(a, b Event) int { return int(a.At - b.At) })
}
