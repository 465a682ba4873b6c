package worker

import (
	"context"
	"errors"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/queue/namedlease"
	"github.com/qo-queue/qo/queue/registry"
)

// Shard leasing
//
// With shard leasing on, a worker polls only the shards it holds a lease on
// ("shard-leases/{shard}.json", a named lease: acquired create-only, taken
// over with If-Match once expired, renewed with If-Match, released on
// shutdown; all times from the queue clock, i.e. the store's authoritative
// time). Tasks never belong to a shard lease: claiming is still a CAS on the
// task, so a shard briefly polled by two workers (a lease that lapsed
// during a partition) costs a lost claim race, never a wrong result.
//
// Every RenewInterval (jittered) a worker runs one round:
//
//  1. renew every held lease; a lease found lost is dropped at once;
//  2. list the worker registry (one LIST of workers/, no GET): live
//     workers are those whose entry was written (its LastModified, the
//     store's time of the last heartbeat) less than LiveAfter ago; this
//     worker always counts;
//  3. target = ceil(eligible shards / live workers), capped by
//     ShardsPerWorker when set;
//  4. holding more than target: release the excess (random picks), so a
//     newcomer finds free shards once the releases are stale (below);
//  5. holding fewer, and the acquisition backoff (below) elapsed: list
//     shard-leases/ (one LIST, no GET) and try to acquire, in random
//     order until target is reached, the shards whose lease object is
//     missing or was last written more than staleAfter ago (2 x
//     RenewInterval, at most TTL). A holder rewrites its lease every
//     RenewInterval, so a lease that old is released, expired or about
//     to expire; namedlease.Acquire reads it and takes it only when it is free.
//
// A round thus reads no registry entry: a worker pays one LIST per round
// (two while it is below its target), whatever the number of workers, and
// the fleet's registry reads grow linearly with it (up to 1,000 workers a
// LIST is one page). A worker's registry entry still lists the shards it
// holds, for operators (qo workers, the console).
//
// Balance: N identical workers end up with ceil(S/N) or fewer shards each
// (e.g. 16 shards, 3 workers: 6, 6, 4). A newcomer gets the shards the
// others released for it within staleAfter of the release and one round.
// A dead worker's shards come back once its heartbeat is older than
// LiveAfter and its leases expired (about TTL): the survivors' target
// rises and they take the expired leases over.
//
// No free shard: a worker below its target that found nothing to acquire
// keeps running: it heartbeats (so others see it and shed their excess),
// renews what it holds, polls only its own shards (none: it sends no LIST
// of the ready index at all), and retries acquisition (the shard-lease
// LIST and its attempts) with exponential backoff from RenewInterval up
// to 4 x RenewInterval, jittered ±20% so that several idle workers do not
// retry in lockstep.
//
// Shard leasing assumes one homogeneous pool: every worker sharing the
// bucket serves the same task types (a shard's tasks are only seen by its
// lease holder). Workers without leasing count as live workers but hold
// no shard lease, so leasing workers poll every shard between them
// whatever those others poll.

type shardLeaser struct {
	w   *Worker
	cfg ShardLeasing
	log *slog.Logger

	eligible []string

	mu          sync.Mutex
	held        map[string]*queue.NamedLease
	backoff     time.Duration
	nextAcquire time.Time // real time
	warnedCap   bool
}

func newShardLeaser(w *Worker) *shardLeaser {
	eligible := w.opts.Shards
	if len(eligible) == 0 {
		eligible = w.q.Shards()
	}
	return &shardLeaser{
		w:        w,
		cfg:      w.opts.ShardLeasing,
		log:      w.log.With("component", "shard-leasing"),
		eligible: append([]string(nil), eligible...),
		held:     map[string]*queue.NamedLease{},
	}
}

// owned returns the shards held with an unexpired lease, sorted.
func (s *shardLeaser) owned() []string {
	now := s.w.clock.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.held))
	for shard, l := range s.held {
		if now.Before(l.ExpiresAt) {
			out = append(out, shard)
		}
	}
	sort.Strings(out)
	return out
}

func (s *shardLeaser) run(ctx context.Context) {
	for {
		s.round(ctx, false)
		t := time.NewTimer(s.w.jitter(s.cfg.RenewInterval))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// round renews, rebalances and acquires (see above). force ignores the
// acquisition backoff.
func (s *shardLeaser) round(ctx context.Context, force bool) {
	changed := s.renew(ctx)
	target, ok := s.target(ctx)
	if ok {
		if s.shed(ctx, target) {
			changed = true
		}
		if s.acquire(ctx, target, force) {
			changed = true
		}
	}
	if changed {
		s.log.Info("shard ownership changed", "shards", s.owned(), "target", target)
		s.w.requestHeartbeat()
	}
}

func (s *shardLeaser) snapshot() map[string]*queue.NamedLease {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]*queue.NamedLease, len(s.held))
	for k, v := range s.held {
		c := *v // callers may pass copies to calls that update them
		out[k] = &c
	}
	return out
}

func (s *shardLeaser) drop(shard string) {
	s.mu.Lock()
	delete(s.held, shard)
	s.mu.Unlock()
}

func (s *shardLeaser) renew(ctx context.Context) (changed bool) {
	for shard, l := range s.snapshot() {
		if ctx.Err() != nil {
			return changed
		}
		err := namedlease.Renew(ctx, s.w.q, l, s.cfg.TTL)
		expired := !s.w.clock.Now().Before(l.ExpiresAt)
		if err == nil {
			s.mu.Lock()
			if s.held[shard] != nil {
				s.held[shard] = l
			}
			s.mu.Unlock()
		}
		switch {
		case err == nil:
		case errors.Is(err, queue.ErrLeaseLost), errors.Is(err, queue.ErrNotFound):
			s.log.Warn("lost shard lease", "shard", shard, "err", err)
			s.drop(shard)
			changed = true
		default:
			if ctx.Err() != nil {
				return changed
			}
			s.log.Warn("renewing shard lease failed", "shard", shard, "err", err)
			if expired {
				s.drop(shard)
				changed = true
			}
		}
	}
	return changed
}

// target computes this worker's share from the registry listing alone:
// the LastModified of each entry is its last heartbeat. ok is false when
// the registry could not be listed (no rebalancing this round).
func (s *shardLeaser) target(ctx context.Context) (target int, ok bool) {
	beats, err := registry.Beats(ctx, s.w.q)
	if err != nil {
		if ctx.Err() == nil {
			s.log.Warn("listing the worker registry failed; keeping current shards", "err", err)
		}
		return 0, false
	}
	now := s.w.clock.Now()
	live := 1
	for id, beat := range beats {
		if id != s.w.opts.ID && now.Sub(beat) <= s.cfg.LiveAfter {
			live++
		}
	}
	n := len(s.eligible)
	target = (n + live - 1) / live
	if cap := s.cfg.ShardsPerWorker; cap > 0 && target > cap {
		target = cap
		if cap*live < n && !s.warnedCap {
			s.log.Warn("shards per worker cap leaves shards unowned until more workers start",
				"shards", n, "live_workers", live, "shards_per_worker", cap)
			s.warnedCap = true
		}
	}
	return target, true
}

// staleAfter is how long ago a shard lease must have been written for a
// worker to try it (see above).
func (s *shardLeaser) staleAfter() time.Duration {
	return min(2*s.cfg.RenewInterval, s.cfg.TTL)
}

// shed releases leases above target.
func (s *shardLeaser) shed(ctx context.Context, target int) (changed bool) {
	held := s.snapshot()
	excess := len(held) - target
	if excess <= 0 {
		return false
	}
	shards := make([]string, 0, len(held))
	for sh := range held {
		shards = append(shards, sh)
	}
	sort.Strings(shards)
	s.w.shuffle(len(shards), func(i, j int) { shards[i], shards[j] = shards[j], shards[i] })
	for _, sh := range shards[:excess] {
		s.drop(sh)
		if err := namedlease.Release(ctx, s.w.q, held[sh]); err != nil && !errors.Is(err, queue.ErrLeaseLost) {
			s.log.Warn("releasing shard lease failed (it expires on its own)", "shard", sh, "err", err)
		}
		changed = true
	}
	s.log.Info("released shards above the balanced share", "released", excess, "target", target)
	return changed
}

// acquire tries free shards until target is reached.
func (s *shardLeaser) acquire(ctx context.Context, target int, force bool) (changed bool) {
	held := s.snapshot()
	if len(held) >= target {
		s.mu.Lock()
		s.backoff, s.nextAcquire = 0, time.Time{}
		s.mu.Unlock()
		return false
	}
	s.mu.Lock()
	wait := !force && time.Now().Before(s.nextAcquire)
	s.mu.Unlock()
	if wait {
		return false
	}
	written, err := namedlease.ShardWrites(ctx, s.w.q)
	if err != nil {
		if ctx.Err() == nil {
			s.log.Warn("listing shard leases failed; acquiring later", "err", err)
		}
		written = nil // try nothing; back off below
	}
	now := s.w.clock.Now()
	free := make([]string, 0, len(s.eligible))
	for _, sh := range s.eligible {
		at, listed := written[sh]
		if err == nil && held[sh] == nil && (!listed || now.Sub(at) > s.staleAfter()) {
			free = append(free, sh)
		}
	}
	s.w.shuffle(len(free), func(i, j int) { free[i], free[j] = free[j], free[i] })
	have := len(held)
	for _, sh := range free {
		if have >= target || ctx.Err() != nil {
			break
		}
		l, err := namedlease.Acquire(ctx, s.w.q, queue.ShardLeaseKey(sh), s.w.opts.ID, s.cfg.TTL)
		switch {
		case err == nil:
			s.mu.Lock()
			s.held[sh] = l
			s.mu.Unlock()
			have++
			changed = true
		case errors.Is(err, queue.ErrConflict):
			// Still held (a late renewal) or a racer won.
		default:
			if ctx.Err() == nil {
				s.log.Warn("acquiring shard lease failed", "shard", sh, "err", err)
			}
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if have < target && !changed {
		if s.backoff == 0 {
			s.backoff = s.cfg.RenewInterval
		} else {
			s.backoff = min(2*s.backoff, 4*s.cfg.RenewInterval)
		}
		s.nextAcquire = time.Now().Add(s.w.jitter(s.backoff))
		s.log.Debug("no free shard; retrying later", "held", have, "target", target, "retry_in", s.backoff.String())
	} else {
		s.backoff, s.nextAcquire = 0, time.Time{}
	}
	return changed
}

// releaseAll gives every lease back (shutdown).
func (s *shardLeaser) releaseAll(bg context.Context) {
	ctx, cancel := context.WithTimeout(bg, 30*time.Second)
	defer cancel()
	for sh, l := range s.snapshot() {
		if err := namedlease.Release(ctx, s.w.q, l); err != nil && !errors.Is(err, queue.ErrLeaseLost) {
			s.log.Warn("releasing shard lease failed (it expires on its own)", "shard", sh, "err", err)
		}
		s.drop(sh)
	}
}
