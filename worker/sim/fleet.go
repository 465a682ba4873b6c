package sim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	mrand "math/rand"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store/memstore"
	"github.com/qo-queue/qo/worker"
)

// run is one handler execution, as the handler itself saw it.
type run struct {
	task   uuid.UUID
	n      int    // the task's number
	typ    string // the task's type
	lease  string
	worker string
	proc   int // the process's serial (see proc)
	start  time.Duration
	// claimed: when the claim that started it sent its first request,
	// right after it took its token of a rate limit (the process's last
	// GET of the task object before the start); start if unknown.
	claimed time.Duration
	end     time.Duration // -1 while it runs
	how     string        // done, cancelled, killed
}

// journal is what the handlers saw: every execution with its start and
// end (the truth the checks hold qo's records against).
type journal struct {
	mu   sync.Mutex
	runs []*run
}

func (j *journal) begin(r *run) *run {
	j.mu.Lock()
	defer j.mu.Unlock()
	r.end = -1
	j.runs = append(j.runs, r)
	return r
}

func (j *journal) finish(r *run, at time.Duration, how string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	r.end, r.how = at, how
}

// running counts the handlers of each type running now.
func (j *journal) running() map[string]int {
	j.mu.Lock()
	defer j.mu.Unlock()
	n := map[string]int{}
	for _, r := range j.runs {
		if r.end < 0 {
			n[r.typ]++
		}
	}
	return n
}

func (j *journal) all() []run {
	j.mu.Lock()
	defer j.mu.Unlock()
	out := make([]run, len(j.runs))
	for i, r := range j.runs {
		out[i] = *r
	}
	return out
}

// submitted is a task the simulation submitted (or may have: a submit
// whose outcome was unknown is looked up by its idempotency key).
type submitted struct {
	id       uuid.UUID
	n        int
	typ      string
	priority queue.Priority
	key      string        // the task's key ("" when none)
	at       time.Duration // when the submit returned
	parents  bool
}

// fleet is one simulated run.
type fleet struct {
	sc       Scenario
	mem      *memstore.Store
	start    time.Time
	net      netState
	faults   faultCounts
	journal  journal
	teardown chan struct{}
	rnd      *rand.Rand
	log      *slog.Logger

	mu        sync.Mutex
	tasks     map[uuid.UUID]*submitted
	byN       map[int]uuid.UUID // task number -> id, once its submit returned
	paused    map[string][]span // per type, when it was paused
	lives     []life            // every worker process's life
	procs     []*proc           // one per WorkerSpec: the current process
	wg        sync.WaitGroup    // every process's Run
	nextN     int
	operator  *queue.Queue
	inspect   *queue.Queue // reads the bucket as it is, for the checks
	submitter *queue.Queue
	restarts  int
	queues    int // queue handles opened
}

type span struct{ from, to time.Duration }

// proc is one worker process.
type proc struct {
	serial int // the fleet's count of processes when it started
	spec   WorkerSpec
	id     string
	st     *procStore
	cancel context.CancelFunc
	done   chan struct{}
	killed chan struct{} // closed on a crash: its handlers die with it
}

func (f *fleet) now() time.Duration { return time.Since(f.start) }

// openQueue opens the queue as a new process would, over its own view of
// the bucket.
// Its task ids come from the seed and the order of the creates (see
// Seeds in doc.go), its backoff jitter from the seed.
func (f *fleet) openQueue(ctx context.Context, st *procStore) (*queue.Queue, error) {
	f.mu.Lock()
	f.queues++
	n := f.queues
	f.mu.Unlock()
	return queue.Open(ctx, st, queue.Options{
		Logger: f.log,
		Rand:   mrand.New(mrand.NewSource(int64(f.sc.Seed)<<16 + int64(n))),
		NewID:  queue.SequentialIDs(fmt.Sprintf("sim-%d-%d", f.sc.Seed, n)),
	})
}

// startWorker starts the process of spec i (a fresh process: new store
// view, new queue handle) and retries until its worker has started.
func (f *fleet) startWorker(ctx context.Context, i int, id string) {
	spec := f.sc.Workers[i]
	f.mu.Lock()
	serial := f.restarts
	seed := f.sc.Seed*31 + uint64(serial)
	f.restarts++
	f.mu.Unlock()
	st := newProcStore(f.mem, &f.net, spec.Skew, seed, f.teardown, &f.faults)
	st.now = f.now
	pctx, cancel := context.WithCancel(ctx)
	p := &proc{serial: serial, spec: spec, id: id, st: st, cancel: cancel, done: make(chan struct{}), killed: make(chan struct{})}
	f.mu.Lock()
	f.procs[i] = p
	f.lives = append(f.lives, life{proc: serial, id: id, spec: spec, from: f.now(), to: -1})
	f.mu.Unlock()
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		defer close(p.done)
		defer f.ended(serial)
		for pctx.Err() == nil {
			q, err := f.openQueue(pctx, st)
			if err == nil {
				w := worker.New(q, worker.Options{
					ID:            id,
					Concurrency:   spec.Concurrency,
					Types:         spec.Types,
					Limits:        spec.Limits,
					ReadyPageSize: f.sc.PageSize,
					Logger:        f.log,
					Version:       "sim",
				})
				for _, t := range spec.Types {
					w.Handle(t, f.handler(p))
				}
				err = w.Run(pctx)
				if err == nil {
					return
				}
			}
			if errors.Is(err, errDead) {
				return
			}
			// Could not start (a lossy network at registration): as a
			// supervisor would, start again a little later.
			select {
			case <-time.After(time.Second):
			case <-pctx.Done():
			}
		}
	}()
}

// handler is the simulated handler of the tasks a process runs: it takes
// the task's time (times the process's speed), or until its context ends,
// or dies with its process.
func (f *fleet) handler(p *proc) worker.HandlerFunc {
	return func(ctx context.Context, t *queue.Task) (json.RawMessage, error) {
		var spec TaskSpec
		if err := json.Unmarshal(t.Input, &spec); err != nil {
			return nil, worker.Permanent(fmt.Errorf("sim: bad input: %w", err))
		}
		select {
		case <-p.killed:
			// A claim of a killed process, whose last request returned
			// only at teardown: a dead process starts nothing.
			<-f.teardown
			return nil, errDead
		default:
		}
		now := f.now()
		claimed, ok := p.st.lastGet(t.ID)
		if !ok {
			claimed = now
		}
		r := f.journal.begin(&run{task: t.ID, n: spec.N, typ: t.Type, lease: t.LeaseID, worker: p.id, proc: p.serial, start: now, claimed: claimed})
		var wait <-chan time.Time
		if !spec.Hang {
			tm := time.NewTimer(time.Duration(float64(spec.MS)*p.spec.Speed) * time.Millisecond)
			defer tm.Stop()
			wait = tm.C
		}
		select {
		case <-wait:
		case <-ctx.Done():
			f.journal.finish(r, f.now(), "cancelled")
			return nil, context.Cause(ctx)
		case <-p.killed:
			f.journal.finish(r, f.now(), "killed")
			<-f.teardown
			return nil, errDead
		}
		f.journal.finish(r, f.now(), "done")
		switch outcome(f.sc.Seed, spec.N, t.Attempt) {
		case "retry":
			return nil, errors.New("sim: retryable failure")
		case "permanent":
			return nil, worker.Permanent(errors.New("sim: permanent failure"))
		}
		return json.RawMessage(fmt.Sprintf(`{"n":%d,"lease":%q}`, spec.N, t.LeaseID)), nil
	}
}

// taskKey draws a task's key over keys keys (see Scenario.Keys).
func taskKey(r *rand.Rand, keys int) string {
	switch {
	case keys == 0 || r.IntN(5) == 0:
		return ""
	case r.IntN(2) == 0:
		return "k0"
	}
	return fmt.Sprintf("k%d", r.IntN(keys))
}

// submit submits task n of typ as a client would: with an idempotency key,
// retried until it is known to exist. What the task is (its time,
// priority, and, when it may have any, one in ten times parents) is drawn
// from the seed and n alone, whatever order the submits run in; a parent
// is one of the 50 tasks before it whose submit returned.
func (f *fleet) submit(ctx context.Context, typ string, n int, mayHaveParents bool) {
	r := rand.New(rand.NewPCG(f.sc.Seed, uint64(n)<<8|0x5b))
	spec := newTaskSpec(r, n)
	prio := []queue.Priority{queue.PriorityNormal, queue.PriorityNormal, queue.PriorityNormal, queue.PriorityHigh, queue.PriorityLow}[r.IntN(5)]
	var after []uuid.UUID
	var onFail queue.ParentFailure
	withParents := mayHaveParents && r.IntN(10) == 0
	f.mu.Lock()
	if withParents && n > 0 {
		for range 1 + r.IntN(2) {
			if id, ok := f.byN[n-1-r.IntN(min(n, 50))]; ok {
				after = append(after, id)
			}
		}
		slices.SortFunc(after, func(a, b uuid.UUID) int { return slices.Compare(a[:], b[:]) })
		after = slices.Compact(after)
		onFail = []queue.ParentFailure{queue.ParentFailureCancel, queue.ParentFailureFail, queue.ParentFailureRun}[r.IntN(3)]
	}
	f.mu.Unlock()
	input, _ := json.Marshal(spec)
	retries := 3
	req := queue.SubmitRequest{
		Type: typ, Input: input, Timeout: timeoutFor(spec), MaxRetries: &retries,
		Priority: prio, IdempotencyKey: fmt.Sprintf("sim-%d", n), After: after, OnParentFailure: onFail,
		Key: taskKey(r, f.sc.Keys),
	}
	for ctx.Err() == nil {
		t, _, err := f.submitter.Submit(ctx, req)
		if err == nil {
			f.mu.Lock()
			f.tasks[t.ID] = &submitted{id: t.ID, n: n, typ: typ, priority: t.Priority, key: t.TaskKey, at: f.now(), parents: len(after) > 0}
			f.byN[n] = t.ID
			f.mu.Unlock()
			return
		}
		if errors.Is(err, queue.ErrInvalidInput) {
			return // a parent the run never created (its submit failed for good): not a task
		}
		select {
		case <-time.After(200 * time.Millisecond):
		case <-ctx.Done():
		}
	}
}

// crash stops worker i dead.
func (f *fleet) crash(i int) {
	f.mu.Lock()
	p := f.procs[i]
	f.mu.Unlock()
	if p == nil {
		return
	}
	f.faults.add("crash")
	close(p.killed)
	p.st.crash()
	f.ended(p.serial)
}

// life is when a worker process could claim: from its start to its crash
// or the end of its shutdown (to -1: to the end of the run), less its
// partitions.
type life struct {
	proc       int
	id         string // its worker id
	spec       WorkerSpec
	from, to   time.Duration
	partitions []span
}

// ended closes the life of process serial (the first call counts).
func (f *fleet) ended(serial int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range f.lives {
		if l := &f.lives[i]; l.proc == serial && l.to < 0 {
			l.to = f.now()
		}
	}
}

// partitioned records a partition of process serial.
func (f *fleet) partitioned(serial int, s span) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range f.lives {
		if l := &f.lives[i]; l.proc == serial {
			l.partitions = append(l.partitions, s)
		}
	}
}

// newLogger is the log of every process of the run: discarded, or with
// trace the debug log of all of them, each line stamped with the simulated
// time since start.
func newLogger(trace io.Writer, start time.Time) *slog.Logger {
	if trace == nil {
		return slog.New(slog.DiscardHandler)
	}
	return slog.New(slog.NewTextHandler(trace, &slog.HandlerOptions{
		Level: slog.LevelDebug,
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) == 0 && a.Key == slog.TimeKey {
				return slog.Duration("t", a.Value.Time().Sub(start))
			}
			return a
		},
	}))
}

// procsServing counts the worker processes serving typ whose life met
// [from, to).
func (f *fleet) procsServing(typ string, from, to time.Duration) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, l := range f.lives {
		if slices.Contains(l.spec.Types, typ) && l.from < to && (l.to < 0 || l.to >= from) {
			n++
		}
	}
	return n
}
