package worker

import (
	"context"
	"errors"
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
// a worker joining or leaving moves only its own share. The live workers
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
				pr = peer{id: id, types: slices.Clone(info.Types), deadAfter: info.DeadAfter()}
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
	mine := weight(w.opts.ID, e.ID)
	for _, p := range w.peers.live {
		if !p.serves(e) {
			continue
		}
		if h := weight(p.id, e.ID); h > mine || (h == mine && p.id < w.opts.ID) {
			return false
		}
	}
	return true
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
