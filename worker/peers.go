package worker

import (
	"context"
	"errors"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/queue/registry"
)

// Sharing the ready work
//
// Workers that read the same ready entries split them by task id instead
// of racing for the oldest: an entry falls to the worker with the highest
// hash of (worker id, task id) among the live workers that serve its type
// and poll its shard (rendezvous hashing), so every worker gets an even,
// time-spread share of every shard and claims its share oldest first, and
// a worker joining or leaving moves only its own share. Under a fleet-wide
// limit with fewer units than workers serving its type, only the workers
// holding a share of it (see caps.go) take part in the split of its
// entries. The live workers
// come from the registry: one LIST of workers/ (its LastModified times are
// the heartbeats) and, once per worker id, one GET of its entry for the
// types it serves and the shards it polls (both fixed for the life of an
// id). The list is read only when a walk of the ready index found more
// claimable entries than the worker has free slots (so an idle worker and
// a lightly loaded one never read it), again after peersRefresh, and
// sooner (at most every peersRetry) after a claim of the worker's own
// share was lost, which means some worker sees another list.
//
// The split is a preference, never a lock: a worker claims others'
// entries too, newest first, once it has none of its own left and they
// are few (so workers finish a burst together), and in rank order with
// its own once it passed them a page hold ago (their worker is dead,
// stalled, saturated or otherwise behind; see passedRanks in walk.go). A
// lost race costs the GET it always cost.

const (
	// peersRefresh is how old the list of live workers may grow while
	// walks find more work than free slots.
	peersRefresh = time.Minute
	// peersRetry is how soon the list is read again after a claim of the
	// worker's own share was lost.
	peersRetry = 5 * time.Second
)

// peer is another live worker, as its registry entry describes it.
type peer struct {
	id        string
	types     []string // nil: unknown, taken as every type
	shards    []string // nil: every shard
	deadAfter time.Duration
	bound     runBound
}

func (p peer) serves(e queue.ReadyEntry) bool {
	return (p.types == nil || slices.Contains(p.types, e.Type)) &&
		(p.shards == nil || slices.Contains(p.shards, e.Shard))
}

// peerSet is the worker's view of the other live workers (dispatch loop
// only).
type peerSet struct {
	live    []peer
	known   map[string]peer // registry entries read, by id
	readAt  time.Time       // machine clock; zero: never read
	lostAt  time.Time       // when a claim of the own share was last lost
	suspect bool            // two were lost within peersRetry
	// shares: by type (keyCapKey for keyed entries), the workers' weights
	// in the split of its entries (see splitWeights), as of the list read
	// at sharesAt and the limits sharesFor.
	shares    map[string]map[string]int
	sharesAt  time.Time
	sharesFor map[string]int
}

// lostOwn notes a lost claim of the worker's own share. One alone is a
// helper or a worker taking late entries; a second within peersRetry
// means some worker splits the entries another way (see above).
func (p *peerSet) lostOwn(now time.Time) {
	if !p.lostAt.IsZero() && now.Sub(p.lostAt) < peersRetry {
		p.suspect = true
	}
	p.lostAt = now
}

// due reports whether the list should be read before entries are split.
func (p *peerSet) due(now time.Time) bool {
	age := now.Sub(p.readAt)
	return p.readAt.IsZero() || age >= peersRefresh || (p.suspect && age >= peersRetry)
}

// refreshPeers reads the live workers from the registry (see above). On
// an error the last list is kept.
func (w *Worker) refreshPeers(ctx context.Context) {
	p := &w.peers
	beats, err := registry.Beats(ctx, w.q)
	p.readAt, p.suspect = time.Now(), false
	if err != nil {
		w.log.Warn("reading the worker registry failed; keeping the last list of workers", "err", err)
		return
	}
	if p.known == nil {
		p.known = map[string]peer{}
	}
	now := w.clock.Now()
	live := p.live[:0]
	for id, beat := range beats {
		if id == w.opts.ID {
			continue
		}
		pr, ok := p.known[id]
		if !ok {
			info, err := registry.Get(ctx, w.q, id)
			switch {
			case errors.Is(err, queue.ErrNotFound):
				continue // deregistered since the listing
			case err != nil:
				// Serves everything, as far as we know; read again next time.
				pr = peer{id: id, deadAfter: queue.DefaultDeadAfter}
			default:
				pr = peer{id: id, types: slices.Clone(info.Types), deadAfter: info.DeadAfter(), bound: boundOf(info)}
				if pr.types == nil {
					pr.types = []string{}
				}
				if len(info.Shards) > 0 && w.leaser == nil {
					pr.shards = slices.Clone(info.Shards)
				}
				p.known[id] = pr
			}
		}
		// A worker past its liveness bound is left out: its share would
		// wait for it.
		if now.Sub(beat) > pr.deadAfter+queue.MaxClockSkew {
			continue
		}
		live = append(live, pr)
	}
	slices.SortFunc(live, func(a, b peer) int { return strings.Compare(a.id, b.id) })
	p.live = live
}

// owns reports whether the entry falls to this worker: no live worker
// that could claim it has a higher rendezvous weight for its task.
func (w *Worker) owns(e queue.ReadyEntry) bool {
	weights := w.splitWeights(e)
	wt := func(id string) int {
		if n, ok := weights[id]; ok {
			return n
		}
		return 1
	}
	if wt(w.opts.ID) == 0 {
		return false
	}
	mine := score(weight(w.opts.ID, e.ID), wt(w.opts.ID))
	for _, p := range w.peers.live {
		if !p.serves(e) || wt(p.id) == 0 {
			continue
		}
		if h := score(weight(p.id, e.ID), wt(p.id)); h.beats(mine) || (h == mine && p.id < w.opts.ID) {
			return false
		}
	}
	return true
}

// splitWeights returns the weights of the workers (this one too) in the
// split of the entry's type, those other than 1: under a fleet-wide cap
// of the type, a worker's share of it (see capShare), so each takes a
// part of the entries in proportion to what it may run; and 0 for a
// worker with no share of a limit on the entry (a cap or a rate of its
// type, and for an entry with a key a per-key one too), whose entries
// would wait until another worker took them as late. The shares are
// worked out from this worker's list of live workers, and kept until that
// list or the limits change.
func (w *Worker) splitWeights(e queue.ReadyEntry) map[string]int {
	p := &w.peers
	w.mu.Lock()
	limits := w.caps.limits
	w.mu.Unlock()
	if p.shares == nil || !p.sharesAt.Equal(p.readAt) || !maps.Equal(limits, p.sharesFor) {
		p.shares, p.sharesAt, p.sharesFor = map[string]map[string]int{}, p.readAt, limits
	}
	keys := []string{e.Type, rateKey(e.Type)}
	memo := e.Type
	if e.Key != "" {
		keys = append(keys, keyCapKey(e.Type), keyRateKey(e.Type))
		memo = keyCapKey(e.Type)
	}
	if out, ok := p.shares[memo]; ok {
		return out
	}
	var out map[string]int
	var ids []string
	var most map[string]int
	for _, k := range keys {
		n, ok := limits[k]
		if !ok || n <= 0 {
			continue
		}
		if ids == nil {
			cs := []capCandidate{{id: w.opts.ID, types: w.types, slots: w.opts.Concurrency}}
			most = map[string]int{}
			bound := func(id string, b runBound) {
				if m, ok := b.most(e.Type); ok {
					most[id] = m
				}
			}
			bound(w.opts.ID, w.runBound())
			for _, q := range p.live {
				if q.types == nil || slices.Contains(q.types, e.Type) {
					cs = append(cs, capCandidate{id: q.id, types: q.types, slots: q.bound.concurrency})
					bound(q.id, q.bound)
				}
			}
			ids = capOrder(cs)
		}
		if out == nil {
			out = map[string]int{}
		}
		for _, id := range ids {
			bounded := most
			if k != e.Type {
				bounded = nil // a rate or a per-key limit: no bound
			}
			switch share := capShare(n, ids, id, bounded); {
			case share == 0:
				out[id] = 0
			case k == e.Type: // the first of keys
				out[id] = share
			}
		}
	}
	p.shares[memo] = out
	return out
}

// rendezvousScore orders the workers a task may fall to: weighted
// rendezvous hashing, the score -n/ln(u) of a hash u in (0, 1) and a
// weight n, so a worker of weight n takes n parts of the tasks; the hash
// itself breaks ties (and with equal weights orders alone).
type rendezvousScore struct {
	s float64
	h uint64
}

func score(h uint64, n int) rendezvousScore {
	u := (float64(h>>11) + 0.5) / (1 << 53)
	return rendezvousScore{s: -float64(n) / math.Log(u), h: h}
}

func (a rendezvousScore) beats(b rendezvousScore) bool {
	return a.s > b.s || a.s == b.s && a.h > b.h
}

// weight is the rendezvous weight of a task for a worker: FNV-1a of the
// worker id and the task id, finished with a 64-bit mixer so that ids
// differing in a few bytes give unrelated weights.
func weight(worker string, task uuid.UUID) uint64 {
	const offset, prime = 14695981039346656037, 1099511628211
	h := uint64(offset)
	for i := 0; i < len(worker); i++ {
		h = (h ^ uint64(worker[i])) * prime
	}
	for _, b := range task {
		h = (h ^ uint64(b)) * prime
	}
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
}
