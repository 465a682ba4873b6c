package worker

import (
	"context"
	"errors"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/qo-queue/qo/queue"
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
//  2. read the worker registry: live workers are those whose heartbeat is
//     younger than LiveAfter (this worker always counts); shards listed by
//     other live workers are taken;
//  3. target = ceil(eligible shards / live workers), capped by
//     ShardsPerWorker when set;
//  4. holding more than target: release the excess (random picks), so a
//     newcomer finds free shards on its next round;
//  5. holding fewer: try to acquire shards that no live worker lists, in
//     random order, until target is reached.
//
// Balance: N identical workers end up with ceil(S/N) or fewer shards each
// (e.g. 16 shards, 3 workers: 6, 6, 4). A dead worker's shards come back
// once its heartbeat is older than LiveAfter and its leases expired (about
// TTL): the survivors' target rises and they take the expired leases over.
//
// No free shard: a worker below its target that found nothing to acquire
// keeps running: it heartbeats (so others see it and shed their excess),
// renews what it holds, polls only its own shards (none: it sends no LIST
// at all), and retries acquisition with exponential backoff from
// RenewInterval up to 4 x RenewInterval, jittered ±20% so that several
// idle workers do not retry in lockstep.
//
// Shard leasing assumes one homogeneous pool: every worker sharing the
// bucket serves the same task types (a shard's tasks are only seen by its
// lease holder). Workers without leasing report the shards they poll
// (empty: all) and are not counted as holding any shard.

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
	target, taken, ok := s.target(ctx)
	if ok {
		if s.shed(ctx, target) {
			changed = true
		}
		if s.acquire(ctx, target, taken, force) {
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
		err := s.w.q.RenewLease(ctx, l, s.cfg.TTL)
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

// target computes this worker's share and the shards other live workers
// hold. ok is false when the registry could not be read (no rebalancing
// this round).
func (s *shardLeaser) target(ctx context.Context) (target int, taken map[string]bool, ok bool) {
	workers, err := s.w.q.ListWorkers(ctx)
	if err != nil {
		if ctx.Err() == nil {
			s.log.Warn("reading the worker registry failed; keeping current shards", "err", err)
		}
		return 0, nil, false
	}
	now := s.w.clock.Now()
	live := 1
	taken = map[string]bool{}
	for _, wi := range workers {
		if wi == nil || wi.ID == s.w.opts.ID || now.Sub(wi.LastHeartbeat) > s.cfg.LiveAfter {
			continue
		}
		live++
		for _, sh := range wi.Shards {
			taken[sh] = true
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
	return target, taken, true
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
		if err := s.w.q.ReleaseLease(ctx, held[sh]); err != nil && !errors.Is(err, queue.ErrLeaseLost) {
			s.log.Warn("releasing shard lease failed (it expires on its own)", "shard", sh, "err", err)
		}
		changed = true
	}
	s.log.Info("released shards above the balanced share", "released", excess, "target", target)
	return changed
}

// acquire tries free shards until target is reached.
func (s *shardLeaser) acquire(ctx context.Context, target int, taken map[string]bool, force bool) (changed bool) {
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
	free := make([]string, 0, len(s.eligible))
	for _, sh := range s.eligible {
		if held[sh] == nil && !taken[sh] {
			free = append(free, sh)
		}
	}
	s.w.shuffle(len(free), func(i, j int) { free[i], free[j] = free[j], free[i] })
	have := len(held)
	for _, sh := range free {
		if have >= target || ctx.Err() != nil {
			break
		}
		l, err := s.w.q.AcquireLease(ctx, queue.ShardLeaseKey(sh), s.w.opts.ID, s.cfg.TTL)
		switch {
		case err == nil:
			s.mu.Lock()
			s.held[sh] = l
			s.mu.Unlock()
			have++
			changed = true
		case errors.Is(err, queue.ErrConflict):
			// Held by someone the registry does not show yet.
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
		if err := s.w.q.ReleaseLease(ctx, l); err != nil && !errors.Is(err, queue.ErrLeaseLost) {
			s.log.Warn("releasing shard lease failed (it expires on its own)", "shard", sh, "err", err)
		}
		s.drop(sh)
	}
}
