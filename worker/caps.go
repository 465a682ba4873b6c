package worker

import (
	"cmp"
	"context"
	"errors"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"golang.org/x/time/rate"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/queue/registry"
)

// Fleet-wide concurrency caps
//
// A cap of N on a type (control.json's limits) holds across the fleet by
// shares: each worker publishes in its registry entry (Holds, written with
// the heartbeat it writes anyway) how many of the type it holds, and runs
// (claims in flight included) at most what it may use: its usable share.
// The rule and its proof are in queue/doc.go, "Fleet-wide concurrency
// caps"; in short:
//
//   - Every heartbeat of a worker serving a capped type lists the registry
//     (one LIST; one GET per worker id it has not seen, for the types it
//     serves) and computes its target: N split evenly over the live
//     workers serving the type, the remainder to the first (those serving
//     fewest types, then with most slots, then by id: see capOrder), none
//     above what it runs of the type (see capShare).
//   - It publishes max(target, running) and claims up to its target: a
//     smaller target lowers the usable share before the write, even below
//     what it runs (never more usable, nor running, than any value others
//     may read); a larger one is used only once the write landed and a
//     read of the registry after it (one LIST, one GET per live worker)
//     shows the holds of the live workers summing to at most N.
//   - A worker whose last landed heartbeat grew older than its stop bound
//     (three quarters of DeadAfter) starts again from nothing: others may
//     have taken its share once it looked dead to them.
//
// Nothing is written per task: the cost is the registry reads of the
// heartbeats of workers serving a capped type.

// capState is the worker's share of each cap (guarded by w.mu).
type capState struct {
	limits    map[string]int // the caps of the types it serves, from control.json (rate limits under rateKey, in starts per minute)
	bursts    map[string]int // the bursts of the rate limits, by type
	buckets   map[string]*rate.Limiter
	refunds   map[string]int // tokens of claims that started nothing, by type
	usable    map[string]int // how many of a type it may run
	wanted    map[string]int // its target share, as of the last heartbeat
	published map[string]int // what its last heartbeat sent (or is sending)
	pending   bool           // a raised hold is not confirmed yet
	// unheld: types with a fleet-wide limit the worker cannot hold (their
	// name begins with the prefix of another kind of limit, see
	// queue.HoldPrefixed): it claims none of them.
	unheld map[string]bool
}

// capPeer is what a worker's registry entry says about the types it
// serves (fixed for the life of a worker id).
type capPeer struct {
	types     []string // nil: unknown, taken as every type
	deadAfter time.Duration
	bound     runBound
}

func (p capPeer) serves(typ string) bool {
	return p.types == nil || slices.Contains(p.types, typ)
}

// runBound is the most a worker runs of each type: its concurrency, or its
// own limit of the type when lower (from its registry entry).
type runBound struct {
	concurrency int // 0: unknown
	limits      map[string]int
}

func boundOf(info *queue.WorkerInfo) runBound {
	return runBound{concurrency: info.Concurrency, limits: maps.Clone(info.Limits)}
}

// runBound is this worker's own bound, as its registry entry states it.
func (w *Worker) runBound() runBound {
	return runBound{concurrency: w.opts.Concurrency, limits: w.opts.Limits}
}

// most returns the most the worker runs of typ (false: no known bound).
func (b runBound) most(typ string) (int, bool) {
	n, limited := b.limits[typ]
	switch {
	case b.concurrency > 0 && (!limited || b.concurrency < n):
		return b.concurrency, true
	default:
		return n, limited
	}
}

// capCandidate is a live worker serving a capped type, as the split of the
// cap orders it (see capOrder).
type capCandidate struct {
	id    string
	types []string // the types it serves; nil: unknown, taken as every type
	slots int      // its concurrency; 0: unknown
}

// capOrder returns the ids of the workers a cap is split over, in the
// order capShare gives out units: workers serving fewer types first, then
// those with more slots, then by id. Where a cap has fewer units than
// workers, or a remainder, the units go first to the workers likeliest to
// use them: a worker dedicated to the type uses its unit whenever a task
// of it waits, where one serving several types may have every slot taken
// by older tasks of the others while its own share of the capped type
// waits (and a worker with no unit cannot take that share as late).
// Every worker orders the same registry the same way.
func capOrder(cs []capCandidate) []string {
	served := func(c capCandidate) int {
		if c.types == nil {
			return math.MaxInt
		}
		return len(c.types)
	}
	slices.SortFunc(cs, func(a, b capCandidate) int {
		return cmp.Or(cmp.Compare(served(a), served(b)), cmp.Compare(b.slots, a.slots), strings.Compare(a.id, b.id))
	})
	ids := make([]string, len(cs))
	for i, c := range cs {
		ids[i] = c.id
	}
	return ids
}

// capShare is a worker's target share of a cap of n over the live workers
// ids serving the type (in capOrder, me among them): n split evenly, the
// remainder to the first ids; a worker that runs at most most[id] of the
// type (see runBound; absent: no bound) gets no more than that, and what
// it leaves is split over the others the same way, so the fleet runs up to
// the cap when its workers can. A worker not among them gets nothing.
func capShare(n int, ids []string, me string, most map[string]int) int {
	if n <= 0 || !slices.Contains(ids, me) {
		return 0
	}
	open := ids
	for {
		even, rem := n/len(open), n%len(open)
		next := make([]string, 0, len(open))
		share := 0
		for i, id := range open {
			want := even
			if i < rem {
				want++
			}
			if m, ok := most[id]; ok && m < want {
				if id == me {
					return max(m, 0)
				}
				n -= max(m, 0)
				continue
			}
			if id == me {
				share = want
			}
			next = append(next, id)
		}
		if len(next) == len(open) {
			return share
		}
		open = next
	}
}

// setCaps takes the caps of control.json (dispatch loop); a change asks
// for a heartbeat, which works out the new shares.
func (w *Worker) setCaps(ctl queue.Control) {
	ctl, unheld := w.unheldLimits(ctl)
	limits := map[string]int{}
	for _, t := range w.types {
		if n, ok := ctl.ConcurrencyCap(t); ok {
			limits[t] = n
		}
	}
	bursts := w.rateLimits(ctl, limits)
	w.keyLimits(ctl, limits, bursts)
	w.mu.Lock()
	changed := !maps.Equal(limits, w.caps.limits) || !maps.Equal(bursts, w.caps.bursts) || !maps.Equal(unheld, w.caps.unheld)
	if changed {
		w.caps.limits, w.caps.bursts, w.caps.unheld = limits, bursts, unheld
		for t := range w.caps.usable {
			if _, ok := limits[t]; !ok {
				delete(w.caps.usable, t)
				delete(w.caps.published, t)
			}
		}
	}
	w.mu.Unlock()
	if changed {
		w.requestHeartbeat()
	}
}

// capLimit returns how many tasks of typ this worker may run now under
// the fleet-wide cap (false: the type has none). w.mu held.
func (w *Worker) capLimit(typ string) (int, bool) {
	if _, ok := w.caps.limits[typ]; !ok {
		return 0, false
	}
	return w.caps.usable[typ], true
}

// typeLimit is the lower of the worker's own limit of typ and its usable
// share of the fleet-wide cap (false: neither applies).
func (w *Worker) typeLimit(typ string) (int, bool) {
	w.mu.Lock()
	c, capped := w.capLimit(typ)
	if w.caps.unheld[typ] {
		c, capped = 0, true
	}
	w.mu.Unlock()
	n, own := w.opts.Limits[typ]
	switch {
	case capped && own:
		return min(c, n), true
	case capped:
		return c, true
	default:
		return n, own
	}
}

// unheldLimits returns control.json's limits without those of the types
// the worker serves whose name begins with the prefix of another kind of
// limit (queue.HoldPrefixed): their shares would be mistaken for another
// type's, so the worker holds no share of them and claims none of their
// tasks, which keeps every limit. They are reported once, when found.
func (w *Worker) unheldLimits(ctl queue.Control) (queue.Control, map[string]bool) {
	var unheld map[string]bool
	for _, t := range w.types {
		p := queue.HoldPrefixed(t)
		_, capped := ctl.Limits[t]
		_, keyed := ctl.KeyLimits[t]
		if p == "" || !capped && !keyed {
			continue
		}
		if unheld == nil {
			unheld = map[string]bool{}
			ctl.Limits, ctl.KeyLimits = maps.Clone(ctl.Limits), maps.Clone(ctl.KeyLimits)
		}
		unheld[t] = true
		delete(ctl.Limits, t)
		delete(ctl.KeyLimits, t)
		w.mu.Lock()
		was := w.caps.unheld[t]
		w.mu.Unlock()
		if !was {
			w.log.Error("not claiming tasks of this type: control.json holds a fleet-wide limit on it, which its name would mix up with another type's limit; clear it (qo limit TYPE --clear) and give the type a name that does not begin with the prefix", "task_type", t, "prefix", p)
		}
	}
	return ctl, unheld
}

// anyCaps reports whether a type it serves has a fleet-wide limit.
func (w *Worker) anyCaps() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.caps.limits) > 0
}

// anyLimits reports whether some type has a limit of either kind.
func (w *Worker) anyLimits() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.opts.Limits) > 0 || len(w.caps.limits) > 0
}

// capAdmits reports whether a claim of typ fits the usable share, claims
// in flight and running tasks counted (w.mu held). It is the last check
// before a claim: the share may have shrunk since the poll looked.
func (w *Worker) capAdmits(typ string) bool {
	n, ok := w.capLimit(typ)
	if !ok {
		return true
	}
	held := w.claiming[typ]
	for _, rt := range w.running {
		if rt.typ == typ {
			held++
		}
	}
	return held < n
}

// planHolds works out the holds the next heartbeat publishes, lowering
// the usable shares first, and reports whether one was raised. It reads
// the registry only when the worker serves a capped type; when that read
// fails the holds are kept (never raised).
func (w *Worker) planHolds(ctx context.Context) bool {
	w.mu.Lock()
	limits := maps.Clone(w.caps.limits)
	w.mu.Unlock()
	if len(limits) == 0 {
		return false
	}
	targets, err := w.capTargets(ctx, limits)
	if err != nil {
		w.log.Warn("reading the worker registry for the shares of the fleet-wide caps failed; keeping the shares held", "err", err)
	}
	draining := w.state.Load() >= stateDraining
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.caps.usable == nil {
		w.caps.usable, w.caps.published = map[string]int{}, map[string]int{}
	}
	if w.caps.wanted == nil {
		w.caps.wanted = map[string]int{}
	}
	running := map[string]int{}
	for _, rt := range w.running {
		running[rt.typ]++
	}
	for t, c := range w.claiming {
		running[t] += c
	}
	for k, n := range w.keyHolding(w.caps.limits) {
		running[k] = n // a per-key cap: the most of one key
	}
	raised := false
	for t := range w.caps.limits {
		want, ok := targets[t]
		if !ok {
			want = min(w.caps.published[t], w.caps.usable[t])
		}
		if draining {
			want = 0
		}
		// It claims no more than its target at once (so a worker kept
		// busy hands its excess over as its handlers end, not only when
		// the backlog runs out), and publishes what it runs beyond.
		if want < w.caps.usable[t] {
			w.caps.usable[t] = want
		}
		w.caps.wanted[t] = want
		w.caps.published[t] = max(want, running[t])
		raised = raised || want > w.caps.usable[t]
	}
	w.caps.pending = raised
	return raised
}

// capTargets computes the worker's target share of each cap from the
// live workers of the registry.
func (w *Worker) capTargets(ctx context.Context, limits map[string]int) (map[string]int, error) {
	beats, err := registry.Beats(ctx, w.q)
	if err != nil {
		return nil, err
	}
	now := w.clock.Now()
	serving := map[string][]capCandidate{}
	most := map[string]map[string]int{} // by cap, of the workers with a bound
	bound := func(t, id string, b runBound) {
		if t != limitType(t) {
			return // a rate or a per-key limit: no bound
		}
		if m, ok := b.most(t); ok {
			if most[t] == nil {
				most[t] = map[string]int{}
			}
			most[t][id] = m
		}
	}
	me := w.runBound()
	for t := range limits {
		bound(t, w.opts.ID, me)
	}
	for id, beat := range beats {
		if id == w.opts.ID {
			continue
		}
		p, err := w.capPeer(ctx, id)
		if errors.Is(err, queue.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if now.Sub(beat) > p.deadAfter+queue.MaxClockSkew {
			continue
		}
		for t := range limits {
			if p.serves(limitType(t)) {
				serving[t] = append(serving[t], capCandidate{id: id, types: p.types, slots: p.bound.concurrency})
				bound(t, id, p.bound)
			}
		}
	}
	out := make(map[string]int, len(limits))
	for t, n := range limits {
		ids := capOrder(append(serving[t], capCandidate{id: w.opts.ID, types: w.types, slots: w.opts.Concurrency}))
		out[t] = capShare(n, ids, w.opts.ID, most[t])
	}
	return out, nil
}

// capPeer returns what worker id serves, reading its entry once.
func (w *Worker) capPeer(ctx context.Context, id string) (capPeer, error) {
	if p, ok := w.capPeers[id]; ok {
		return p, nil
	}
	info, err := registry.Get(ctx, w.q, id)
	var m *queue.MalformedError
	switch {
	case errors.As(err, &m):
		// Serves everything, as far as we know; read again next time.
		return capPeer{deadAfter: queue.DefaultDeadAfter}, nil
	case err != nil:
		return capPeer{}, err
	}
	p := capPeer{types: slices.Clone(info.Types), deadAfter: info.DeadAfter(), bound: boundOf(info)}
	if p.types == nil {
		p.types = []string{}
	}
	if w.capPeers == nil {
		w.capPeers = map[string]capPeer{}
	}
	w.capPeers[id] = p
	return p, nil
}

// confirmHolds makes the raised holds of a heartbeat that landed usable
// where the registry, read after it, shows the live workers' holds of
// the type summing to at most the cap. Where it does not (or the read
// fails) the usable share stays, and the next heartbeat tries again.
func (w *Worker) confirmHolds(ctx context.Context, sent map[string]int) {
	w.mu.Lock()
	sum := map[string]int{}
	for t, h := range sent {
		if w.caps.wanted[t] > w.caps.usable[t] {
			sum[t] = h
		}
	}
	w.mu.Unlock()
	if len(sum) == 0 {
		return
	}
	beats, err := registry.Beats(ctx, w.q)
	if err != nil {
		w.log.Warn("reading the worker registry to confirm a share of a fleet-wide cap failed; will try again", "err", err)
		return
	}
	now := w.clock.Now()
	for id, beat := range beats {
		if id == w.opts.ID {
			continue
		}
		info, err := registry.Get(ctx, w.q, id)
		if errors.Is(err, queue.ErrNotFound) {
			continue // deregistered: its handlers have returned
		}
		if err != nil {
			w.log.Warn("reading a worker's entry to confirm a share of a fleet-wide cap failed; will try again", "other_worker", id, "err", err)
			return
		}
		if now.Sub(beat) > info.DeadAfter()+queue.MaxClockSkew {
			continue // dead by the monitor's rule: its handlers have stopped
		}
		for t := range sum {
			sum[t] += info.Holds[t]
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	confirmed := true
	for t, total := range sum {
		n, ok := w.caps.limits[t]
		if !ok || w.caps.published[t] != sent[t] || total > n {
			confirmed = false
			continue
		}
		w.caps.usable[t] = min(w.caps.wanted[t], sent[t])
	}
	w.caps.pending = !confirmed
}

// capsPending reports whether a raised hold waits for confirmation (the
// heartbeat loop then tries again sooner).
func (w *Worker) capsPending() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.caps.pending
}

// resetShares drops every usable share: called when a heartbeat lands
// after the last one grew older than the stop bound, since others may
// have counted this worker dead and used its shares meanwhile.
func (w *Worker) resetShares() {
	w.mu.Lock()
	defer w.mu.Unlock()
	clear(w.caps.usable)
}

// heldShares returns the holds to publish (nil when nothing is capped).
func (w *Worker) heldShares() map[string]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.caps.published) == 0 {
		return nil
	}
	return maps.Clone(w.caps.published)
}
