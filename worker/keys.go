package worker

import (
	"cmp"
	"context"
	"slices"
	"time"

	"golang.org/x/time/rate"

	"github.com/qo-queue/qo/queue"
)

// Task keys
//
// A per-key cap of N on a type (control.json's key_limits) holds for each
// key by the shares of the caps (caps.go): the worker holds a share of N
// under "key:TYPE" in its registry entry, worked out, published, lowered
// and raised exactly as a cap's share, so the usable shares of the live
// workers never sum to more than N. The worker runs at most its usable
// share of tasks of each key of the type (claims in flight counted), so
// no key has more than N running across the fleet. What it publishes is
// at least the most tasks it runs of any one key. Tasks without a key
// are not limited by it. Nothing is written or read per task: the key is
// in the ready entry's name (see queue/doc.go, "Task keys").
//
// Fairness: from what its held view holds, the worker takes a type's
// ready tasks round-robin over their keys, within each priority (see
// fairOrder).

// keyCapKey is the key of typ's per-key cap in the holds and caps.limits.
func keyCapKey(typ string) string { return queue.HoldKey(queue.HoldKeyCap, typ) }

// typeKey is how claims in flight are counted by type and task key.
type typeKey struct{ typ, key string }

// keyHeld counts the tasks of typ and key the worker runs or claims (w.mu
// held).
func (w *Worker) keyHeld(typ, key string) int {
	n := w.claimingKeys[typeKey{typ, key}]
	for _, rt := range w.running {
		if rt.typ == typ && rt.key == key {
			n++
		}
	}
	return n
}

// keyAdmits reports whether a claim of typ with key fits the usable share
// of the type's per-key cap (w.mu held). Like capAdmits, it is checked
// last before a claim.
func (w *Worker) keyAdmits(typ, key string) bool {
	if key == "" {
		return true
	}
	k := keyCapKey(typ)
	if _, ok := w.caps.limits[k]; !ok {
		return true
	}
	return w.keyHeld(typ, key) < w.caps.usable[k]
}

// keyFitsNow reports whether a task of typ with key fits its per-key cap
// and gets a token of its per-key rate (taking it), taking w.mu.
func (w *Worker) keyFitsNow(typ, key string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.keyAdmits(typ, key) && w.keyRateAdmits(typ, key)
}

// claimKey counts a claim of typ with key in flight (w.mu held).
func (w *Worker) claimKey(typ, key string) {
	if key == "" {
		return
	}
	if w.claimingKeys == nil {
		w.claimingKeys = map[typeKey]int{}
	}
	w.claimingKeys[typeKey{typ, key}]++
}

// unclaimKey ends the count of a claim of typ with key (w.mu held).
func (w *Worker) unclaimKey(typ, key string) {
	if key == "" {
		return
	}
	k := typeKey{typ, key}
	if w.claimingKeys[k]--; w.claimingKeys[k] <= 0 {
		delete(w.claimingKeys, k)
	}
}

// keyHolding returns, for each per-key cap among limits, the most tasks
// of one key of its type the worker runs or claims: its hold may not go
// below that (w.mu held).
func (w *Worker) keyHolding(limits map[string]int) map[string]int {
	per := map[typeKey]int{}
	for _, rt := range w.running {
		if rt.key != "" {
			per[typeKey{rt.typ, rt.key}]++
		}
	}
	for k, n := range w.claimingKeys {
		per[k] += n
	}
	out := map[string]int{}
	for k, n := range per {
		c := keyCapKey(k.typ)
		if _, ok := limits[c]; ok {
			out[c] = max(out[c], n)
		}
	}
	return out
}

// keyTurns records when each key of a type last had its turn (a
// sequence number of the worker's claims), so that the turns go on from
// one poll to the next.
type keyTurns struct {
	seq  uint64
	last map[typeKey]uint64
}

// took records a claim of typ with key.
func (k *keyTurns) took(typ, key string) {
	if k.last == nil {
		k.last = map[typeKey]uint64{}
	}
	k.seq++
	k.last[typeKey{typ, key}] = k.seq
}

// keep forgets the keys the held view no longer holds (bounded memory).
func (k *keyTurns) keep(entries []heldEntry) {
	if len(k.last) == 0 {
		return
	}
	held := make(map[typeKey]bool, len(k.last))
	for _, h := range entries {
		held[typeKey{h.Type, h.TaskKey}] = true
	}
	for tk := range k.last {
		if !held[tk] {
			delete(k.last, tk)
		}
	}
}

// fairOrder reorders the indexes of entries (in claim order) so that,
// within each priority, the keys of a type take turns: the first entry of
// every key comes before the second of any, and so on; in each round the
// key whose turn was longest ago (turns; never: first) goes first, then
// the claim order. Entries without a key take their turns as one key. So
// a key with a deep backlog delays another key's first task by at most
// one task per other key the view holds, not by its backlog.
func fairOrder(entries []heldEntry, order []int, turns *keyTurns) []int {
	type slot struct {
		level, round, pos int
		last              uint64
	}
	seen := map[typeKey]int{}
	keyed := false
	slots := make([]slot, len(order))
	for pos, i := range order {
		e := entries[i].ReadyEntry
		k := typeKey{e.Type, e.TaskKey}
		keyed = keyed || e.TaskKey != ""
		slots[pos] = slot{level: e.Priority.Level(), round: seen[k], pos: pos, last: turns.last[k]}
		seen[k]++
	}
	if !keyed {
		return order
	}
	slices.SortFunc(slots, func(a, b slot) int {
		if a.level != b.level {
			return a.level - b.level
		}
		if a.round != b.round {
			return a.round - b.round
		}
		if a.last != b.last {
			return cmp.Compare(a.last, b.last)
		}
		return a.pos - b.pos
	})
	out := make([]int, len(order))
	for j, s := range slots {
		out[j] = order[s.pos]
	}
	return out
}

// keyTurns returns, for each task key of a type that has no entry in
// order (the claimable entries) but one ranked after the horizon that the
// worker would otherwise claim, the first such entry: a key whose tasks
// all came after another key's deep backlog takes its turns without
// waiting for the walks to list that backlog to its end. Its claim may
// pass an older entry of its own key in a shard not yet listed that far.
// The tasks of a type without a key count as one more key when the type
// has keyed tasks in the view.
func (v *heldView) keyTurns(order []int) []int {
	if v.blind || v.horizon.IsZero() && len(v.keyHorizon) == 0 {
		return nil
	}
	have, keyed := map[typeKey]bool{}, map[string]bool{}
	for _, i := range order {
		h := &v.entries[i]
		have[typeKey{h.Type, h.TaskKey}] = true
	}
	for i := range v.entries {
		if h := &v.entries[i]; h.TaskKey != "" {
			keyed[h.Type] = true
		}
	}
	var out []int
	for i := range v.entries {
		h := &v.entries[i]
		k := typeKey{h.Type, h.TaskKey}
		// Tasks without a key take their turns as one key, where their
		// type has keys.
		if h.TaskKey == "" && !keyed[h.Type] || h.done || have[k] || v.within(h) || !h.own && !v.late(h) {
			continue
		}
		have[k] = true
		out = append(out, i)
	}
	return out
}

// releaseMiskeyed gives back a task claimed from a ready entry that did
// not carry its key (written by a process that does not know keys) while
// its key is at its per-key cap: the release writes its entry with the
// key, so the next claim is checked against the cap before it is sent.
func (w *Worker) releaseMiskeyed(ctx context.Context, l *queue.Lease, e queue.ReadyEntry) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if _, err := w.q.Release(rctx, l, ""); err != nil {
		w.log.Warn("releasing a task whose key is at its per-key cap failed; its lease runs out", "task_id", e.ID, "key", l.Task.TaskKey, "err", err)
		return
	}
	w.log.Info("released a task claimed from an entry without its key: the key is at its per-key cap", "task_id", e.ID, "key", l.Task.TaskKey)
}

// keyLimits adds the per-key caps and rates (in starts per minute) of the
// types the worker serves to limits, and the rates' bursts to bursts.
func (w *Worker) keyLimits(ctl queue.Control, limits, bursts map[string]int) {
	for _, t := range w.types {
		if n, ok := ctl.KeyConcurrencyCap(t); ok {
			limits[keyCapKey(t)] = n
		}
		if r, ok := ctl.KeyRateLimit(t); ok {
			limits[keyRateKey(t)] = r.PerMinute()
			bursts[keyRateKey(t)] = r.Burst
		}
	}
}

// keyRateKey is the key of typ's per-key rate in the holds, caps.limits
// and caps.bursts.
func keyRateKey(typ string) string { return queue.HoldKey(queue.HoldKeyRate, typ) }

// maxKeyBuckets bounds the token buckets kept for keys: past it, full
// ones are dropped (a new bucket starts full, so nothing changes).
const maxKeyBuckets = 4096

// keyBucket returns the token bucket of typ's per-key rate for key, set to
// the usable share (nil: the share is nothing; false: no per-key rate
// applies). Each key of the type has its own bucket at the worker's share
// of the rate, so the workers' buckets of one key sum to at most the rate
// (see queue/doc.go, "Task keys"). w.mu held.
func (w *Worker) keyBucket(typ, key string) (*rate.Limiter, bool) {
	if key == "" {
		return nil, false
	}
	k := keyRateKey(typ)
	r, b, limited := w.shareRate(k, k)
	if !limited || r == 0 {
		return nil, limited
	}
	now := w.clock.Now()
	tk := typeKey{typ, key}
	lim := w.keyBuckets[tk]
	if lim == nil {
		if w.keyBuckets == nil {
			w.keyBuckets = map[typeKey]*rate.Limiter{}
		}
		if len(w.keyBuckets) >= maxKeyBuckets {
			for x, l := range w.keyBuckets {
				if l.TokensAt(now) >= float64(l.Burst()) {
					delete(w.keyBuckets, x)
				}
			}
		}
		lim = rate.NewLimiter(r, b)
		w.keyBuckets[tk] = lim
		return lim, true
	}
	retune(lim, now, r, b)
	return lim, true
}

// keyRateAdmits takes a token of the per-key rate of typ for key,
// reporting false when there is none now (w.mu held).
func (w *Worker) keyRateAdmits(typ, key string) bool {
	lim, ok := w.keyBucket(typ, key)
	if !ok {
		return true
	}
	return lim != nil && lim.AllowN(w.clock.Now(), 1)
}

// keyReadyNow reports whether a claim of typ with key fits its per-key
// cap and would get a token of its per-key rate now, taking neither.
func (w *Worker) keyReadyNow(typ, key string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.keyAdmits(typ, key) {
		return false
	}
	lim, ok := w.keyBucket(typ, key)
	return !ok || lim != nil && lim.TokensAt(w.clock.Now()) >= 1
}
