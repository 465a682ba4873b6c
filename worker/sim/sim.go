package sim

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"sort"
	"sync"
	"testing/synctest"
	"time"

	"github.com/google/uuid"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/queue/control"
	"github.com/qo-queue/qo/store/memstore"
)

// The bounds the simulation holds the fleet to (see doc.go).
const (
	// Tick is how often the bucket is checked (every goroutine of the run
	// blocked, so the check sees one instant).
	Tick = time.Second
	// Settle is how long after the faults stop the order is checked from
	// (a killed worker's tasks are back within 27 s).
	Settle = time.Minute
	// OvertakeBound: once the faults stopped, no task waits longer than
	// this, with a slot free for its type, to start behind a newer task
	// of its type and priority that started before it, at any depth of
	// the ready index. It is the bound of worker/poll.go ("Order") with
	// the default PageHold (10 s) and PollMax (5 s, 6 s jittered): behind
	// another worker's share, 5/4 PageHold until the entry is late (what
	// was ready when it was passed), as long again for the late entries
	// ranked before it (taken first), and a poll wait: 31 s; plus
	// MaxClockSkew (2 s) on the clock that
	// times lateness, and room for the claims and writes in between (a
	// rounding up to 30 s plus one page hold). An entry the held view does
	// not know yet (ready after its shard's page was listed) is seen
	// within PageHold and a poll wait (16 s), which the first term covers.
	OvertakeBound = 40 * time.Second
	// harnessSlack is how long after the load ended its submits and the
	// fault timeline may still run (a submit retried through a partition,
	// a rolling restart waiting for its handlers).
	harnessSlack = 30 * time.Minute
	// lingerAfterStop is how long the run waits, once every process
	// stopped, for what a Run left behind (see stop).
	lingerAfterStop = 5 * time.Minute
	// maxWalkLists is the LISTs one walk of a worker reads
	// (worker/poll.go): the report gives the longest wait while the ready
	// index held more than this many pages apart.
	maxWalkLists = 4
)

// Violation is one broken invariant.
type Violation struct {
	At     time.Duration // simulated time since the start
	Kind   string
	Task   string // task number and id, when about one task
	Detail string
}

func (v Violation) String() string {
	return fmt.Sprintf("%8s %-14s %s %s", v.At.Truncate(time.Millisecond), v.Kind, v.Task, v.Detail)
}

// Report is the outcome of one seed.
type Report struct {
	Seed       uint64
	Scenario   Scenario
	Simulated  time.Duration
	Tasks      int
	Runs       int            // handler executions
	Faults     map[string]int // injected, by kind
	Violations []Violation
	// MaxOvertake is the longest a task waited to start behind a newer one
	// of its type and priority, after the faults stopped, while the ready
	// index was no deeper than one walk reads; MaxOvertakeDeep the same
	// while it was deeper. Both are held to OvertakeBound.
	MaxOvertake, MaxOvertakeDeep time.Duration
	// Longest names the task that waited longest, and when.
	Longest string
	// DrainBound is the bound every task had to end within once the load
	// stopped, and Drained how long the last one took.
	DrainBound, Drained time.Duration
	// Submitted and TimelineDone are when the last submit returned and
	// the last event of the timeline was carried out.
	Submitted, TimelineDone time.Duration
	// Limited is, for each type with a fleet-wide limit, the most
	// handlers seen running at a check against the cap, and the most
	// starts in a window of each length against the bound ("cap 2/2;
	// 10s 21/22"): how close the run came to the limits it was held to.
	Limited map[string]string
}

// Run simulates one scenario to its end and checks it. It must be called
// inside a synctest bubble (testing/synctest.Test): the real queue, worker
// and monitor code runs over an in-memory bucket, and every timer of it
// fires in simulated time. trace, when not nil, gets the debug log of
// every process of the run.
func Run(sc Scenario, trace io.Writer) Report {
	rep, _ := simulate(sc, trace)
	return rep
}

// simulate is Run, returning the fleet too: its journal is the handlers' own
// record, for tests that measure more than the checks hold.
func simulate(sc Scenario, trace io.Writer) (Report, *fleet) {
	start := time.Now()
	f := &fleet{
		sc: sc, mem: memstore.New(), start: start, teardown: make(chan struct{}),
		rnd: rand.New(rand.NewPCG(sc.Seed, 0x7a5)), log: newLogger(trace, start),
		tasks: map[uuid.UUID]*submitted{}, byN: map[int]uuid.UUID{}, paused: map[string][]span{}, procs: make([]*proc, len(sc.Workers)),
	}
	rep := Report{Seed: sc.Seed, Scenario: sc}
	c := &checker{f: f, seen: map[string]bool{}, ended: map[uuid.UUID]time.Duration{}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := queue.Init(ctx, f.mem, sc.ShardChars); err != nil {
		c.violate("setup", "", err.Error())
		rep.Violations = c.violations
		return rep, f
	}
	var err error
	if f.inspect, err = queue.Open(ctx, f.mem, queue.Options{Logger: f.log}); err == nil {
		f.submitter, err = f.openQueue(ctx, newProcStore(f.mem, &f.net, 0, sc.Seed+1, f.teardown, &f.faults))
	}
	if err == nil {
		f.operator, err = f.openQueue(ctx, newProcStore(f.mem, &f.net, 0, sc.Seed+2, f.teardown, &f.faults))
	}
	if err != nil {
		c.violate("setup", "", err.Error())
		rep.Violations = c.violations
		return rep, f
	}
	// The operator sets the fleet-wide limits before any worker starts,
	// so every handler run is held to them.
	for _, l := range sc.Limits {
		if l.Concurrency > 0 {
			retry(ctx, func() error { _, err := control.SetLimit(ctx, f.operator, l.Type, l.Concurrency); return err })
		}
		if l.Rate > 0 {
			retry(ctx, func() error { _, err := control.SetRate(ctx, f.operator, l.Type, l.Rate, l.Per, l.Burst); return err })
		}
	}
	for i, w := range sc.Workers {
		f.startWorker(ctx, i, w.Name)
	}
	var load sync.WaitGroup
	load.Add(2)
	go func() { defer load.Done(); f.load(ctx); rep.Submitted = f.now() }()
	go func() { defer load.Done(); f.timeline(ctx); rep.TimelineDone = f.now() }()
	loadDone := make(chan struct{})
	go func() { load.Wait(); close(loadDone) }()

	// Check every tick while the load runs, then until every task ended or
	// the drain bound passed.
	var deadline time.Duration
	for {
		time.Sleep(Tick)
		synctest.Wait()
		c.check(ctx)
		if deadline == 0 {
			select {
			case <-loadDone:
				rep.DrainBound = f.drainBound(c)
				deadline = f.now() + rep.DrainBound
			default:
				// The submits and the timeline end soon after LoadEnd;
				// one that never does is a defect of the run itself, to
				// name rather than to simulate for ever.
				if f.now() > max(sc.LoadEnd, sc.FaultsEnd)+harnessSlack {
					c.violate("harness", "", fmt.Sprintf("the submits or the fault timeline still running %s after the load ended", harnessSlack))
					rep.Simulated = f.now()
					f.stop(cancel, loadDone)
					rep.Violations = c.violations
					return rep, f
				}
			}
			continue
		}
		if c.allEnded() {
			rep.Drained = f.now() - (deadline - rep.DrainBound)
			break
		}
		if f.now() >= deadline {
			c.stuck()
			break
		}
	}
	rep.Simulated = f.now()

	f.stop(cancel, loadDone)

	c.final(context.Background())
	rep.Limited = c.rates()
	rep.MaxOvertake, rep.MaxOvertakeDeep, rep.Longest = c.overtake(maxWalkLists * sc.PageSize)
	rep.Tasks = len(f.tasks)
	rep.Runs = len(f.journal.all())
	rep.Faults = f.faults.snapshot()
	rep.Violations = c.violations
	return rep, f
}

// stop ends the run: the live processes shut down, the crashed ones are
// released from their freeze. A process whose Run gave up waiting for a
// handler (one killed while it shut down: its handler returns only at the
// teardown) leaves that task's last writes retrying for a second or so;
// they end before Run returns, as the bubble requires.
func (f *fleet) stop(cancel context.CancelFunc, loadDone <-chan struct{}) {
	cancel()
	close(f.teardown)
	f.wg.Wait()
	<-loadDone
	time.Sleep(lingerAfterStop)
}

// load submits the scenario's steady arrivals and bursts until LoadEnd.
func (f *fleet) load(ctx context.Context) {
	sem := make(chan struct{}, 16)
	var wg sync.WaitGroup
	// Task numbers are given here, in order, so a task's number (and so
	// what it is, see submit) does not depend on which submit runs first.
	send := func(typ string, parents bool) {
		sem <- struct{}{}
		f.mu.Lock()
		n := f.nextN
		f.nextN++
		f.mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			f.submit(ctx, typ, n, parents)
		}()
	}
	bursts := slices.Clone(f.sc.Bursts)
	sort.Slice(bursts, func(i, j int) bool { return bursts[i].At < bursts[j].At })
	step, next := time.Duration(float64(time.Second)/f.sc.Rate), time.Duration(0)
	if f.sc.Rate <= 0 {
		step, next = time.Second, forever // bursts alone
	}
	for f.now() < f.sc.LoadEnd && ctx.Err() == nil {
		for len(bursts) > 0 && bursts[0].At <= f.now() {
			for range bursts[0].N {
				send(bursts[0].Type, false)
			}
			bursts = bursts[1:]
		}
		if f.now() >= next {
			for _, typ := range f.sc.Types {
				send(typ, true)
			}
			next += step
		}
		time.Sleep(min(step, 100*time.Millisecond))
	}
	wg.Wait()
}

// timeline applies the scenario's events at their times.
func (f *fleet) timeline(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	// during turns a fault on now and off again after d.
	during := func(d time.Duration, turn func(on bool)) {
		turn(true)
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(d)
			turn(false)
		}()
	}
	for _, e := range f.sc.Events {
		if d := e.At - f.now(); d > 0 {
			select {
			case <-time.After(d):
			case <-ctx.Done():
				return
			}
		}
		switch e.Kind {
		case Crash:
			f.crash(e.Worker)
		case Restart:
			id := f.sc.Workers[e.Worker].Name
			if e.NewID {
				f.mu.Lock()
				id = fmt.Sprintf("%s-r%d", id, f.restarts)
				f.mu.Unlock()
			}
			f.faults.add("restart")
			f.startWorker(ctx, e.Worker, id)
		case Partition:
			f.faults.add("partition")
			f.mu.Lock()
			p := f.procs[e.Worker]
			f.mu.Unlock()
			f.partitioned(p.serial, span{f.now(), f.now() + e.For})
			during(e.For, func(on bool) { p.st.setPartitioned(on) })
		case Upgrade:
			f.faults.add("rolling upgrade")
			wg.Add(1)
			go func() { defer wg.Done(); f.upgrade(ctx) }()
		case Lossy:
			f.faults.add("lossy window")
			during(e.For, func(on bool) { f.net.set(on, e.Rate, 0) })
		case Slow:
			f.faults.add("slow window")
			during(e.For, func(on bool) { f.net.set(on, 0, e.Delay) })
		case PauseType:
			f.faults.add("pause")
			wg.Add(1)
			go func() { defer wg.Done(); f.pause(ctx, e) }()
		case CancelOne, ReplayOne:
			// The task: one drawn by number among those submitted so
			// far (the nearest earlier one whose submit returned).
			f.mu.Lock()
			var id uuid.UUID
			if f.nextN > 0 {
				for n := f.rnd.IntN(f.nextN); n >= 0 && id == uuid.Nil; n-- {
					id = f.byN[n]
				}
			}
			f.mu.Unlock()
			if id == uuid.Nil {
				continue
			}
			f.faults.add(string(e.Kind))
			var err error
			if e.Kind == CancelOne {
				_, err = f.operator.Cancel(ctx, id, "sim: operator")
			} else {
				_, err = f.operator.Replay(ctx, id)
			}
			f.log.Debug("operator "+string(e.Kind), "task_id", id, "err", err)
		}
	}
}

// upgrade restarts every live worker in turn, each after the last one's
// replacement started: a rolling deploy.
func (f *fleet) upgrade(ctx context.Context) {
	for i := range f.sc.Workers {
		f.mu.Lock()
		p := f.procs[i]
		f.mu.Unlock()
		select {
		case <-p.killed:
			continue // crashed: its restart is the timeline's
		default:
		}
		p.cancel()
		select {
		case <-p.done:
		case <-p.killed:
			// Crashed while it shut down: its requests never return, so
			// its Run never does; its restart is the timeline's.
			continue
		case <-ctx.Done():
			return
		}
		f.startWorker(ctx, i, p.id)
	}
}

// pause pauses a type for e.For, then resumes it, retrying each through
// lost requests as an operator would.
func (f *fleet) pause(ctx context.Context, e Event) {
	from := f.now()
	retry(ctx, func() error { _, err := control.Pause(ctx, f.operator, e.Type, "sim: operator"); return err })
	time.Sleep(e.For)
	retry(ctx, func() error { _, err := control.Resume(ctx, f.operator, e.Type); return err })
	f.mu.Lock()
	f.paused[e.Type] = append(f.paused[e.Type], span{from, f.now()})
	f.mu.Unlock()
}

func retry(ctx context.Context, fn func() error) {
	for ctx.Err() == nil && fn() != nil {
		select {
		case <-time.After(500 * time.Millisecond):
		case <-ctx.Done():
		}
	}
}

// drainBound is how long the tasks not ended when the load stops may take
// to end: twice the work left divided by the slots that serve it, the
// longest task left at the slowest speed with its retries, and five
// minutes for recovery and backoff.
func (f *fleet) drainBound(c *checker) time.Duration {
	work := map[string]time.Duration{}
	var longest time.Duration
	slowest := map[string]float64{}
	slots := map[string]int{}
	for _, w := range f.sc.Workers {
		for _, t := range w.Types {
			n := w.Concurrency
			if l, ok := w.Limits[t]; ok {
				n = min(n, l)
			}
			slots[t] += n
			slowest[t] = max(slowest[t], w.Speed)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for id, s := range f.tasks {
		if _, ok := c.ended[id]; ok {
			continue
		}
		d := time.Duration(c.specs[id].MS) * time.Millisecond
		if c.specs[id].Hang {
			d = 4 * timeoutFor(c.specs[id])
		}
		work[s.typ] += d
		longest = max(longest, time.Duration(float64(d)*slowest[s.typ]))
	}
	left := map[string]int{}
	for id, s := range f.tasks {
		if _, ok := c.ended[id]; !ok {
			left[s.typ]++
		}
	}
	var drain time.Duration
	for _, l := range f.sc.Limits {
		if l.Concurrency > 0 {
			slots[l.Type] = min(slots[l.Type], l.Concurrency)
		}
		if l.Rate > 0 {
			// Each start takes a token: the tasks left (a retry being a
			// start more) at the rate.
			drain = max(drain, time.Duration(2*float64(left[l.Type])*float64(l.Per)/float64(l.Rate)))
		}
	}
	for t, d := range work {
		drain = max(drain, time.Duration(2*float64(d)*slowest[t]/float64(max(1, slots[t]))))
	}
	return drain + 4*longest + 5*time.Minute
}
