// How far the worker has passed other workers' entries: what makes them
// late (see passedRanks).

package worker

import (
	"slices"
	"time"

	"github.com/qo-queue/qo/queue"
)

// passedRanks records how far this worker has passed other workers' ready
// tasks, by the queue's clock: the highest rank it started a claim for, and,
// after a walk that found only others' entries (more than it helps with)
// while it had free slots, the highest rank of those. An entry of another
// worker's share that was ready when this worker passed its rank, a page
// hold ago or more, has waited that long behind tasks this worker started
// (or for a free slot it had): it is late, and the worker claims it in
// rank order with its own. An entry that became ready after the pass was
// not passed: a low-priority task started while nothing else waited
// (ranked a quarter hour on) does not make every later entry of others
// ranked before it late, which would set every worker on the same oldest
// entries. The passes are kept in buckets an eighth of a page hold long,
// each opened at the first pass after the last one ended (what was ready
// then was passed by all of its passes) and counted as passed a hold after
// it ends; of those counted, only the ones no later bucket of a higher rank
// covers are kept (see lateUpTo): a few values, whatever the backlog, and
// no entry needs to be remembered from walk to walk (the page of a shard
// is listed again as it is used up or ages, and the entry may be claimed
// by its own worker meanwhile).
type passedRanks struct {
	settled []passedBucket // counted as passed: opened later, ranked lower
	recent  []passedBucket // not yet, oldest first
}

type passedBucket struct {
	start time.Time // when its first pass was (queue clock)
	end   time.Time // when it closed
	rank  time.Time // the highest rank passed in it
}

// maxPassedSteps bounds the buckets kept counted as passed: each one is a
// fall in the rank passed (another priority), so a few are enough; past
// this, the oldest is dropped (its entries wait for a later pass).
const maxPassedSteps = 64

// note records that rank was passed at now.
func (p *passedRanks) note(now, rank time.Time, hold time.Duration) {
	if n := len(p.recent); n > 0 && !now.After(p.recent[n-1].end) {
		if rank.After(p.recent[n-1].rank) {
			p.recent[n-1].rank = rank
		}
		return
	}
	p.recent = append(p.recent, passedBucket{start: now, end: now.Add(hold / 8), rank: rank})
}

// before counts the buckets closed at least hold before now as passed and
// returns them (see lateUpTo): opened later and later, ranked lower and
// lower. The caller may keep the slice until its next call.
func (p *passedRanks) before(now time.Time, hold time.Duration) []passedBucket {
	cut := now.Add(-hold)
	n := 0
	for ; n < len(p.recent) && !p.recent[n].end.After(cut); n++ {
		b := p.recent[n]
		// A bucket opened earlier and ranked no higher makes late only
		// entries this one makes late too.
		for k := len(p.settled); k > 0 && !p.settled[k-1].rank.After(b.rank); k-- {
			p.settled = p.settled[:k-1]
		}
		p.settled = append(p.settled, b)
	}
	p.recent = slices.Delete(p.recent, 0, n)
	if over := len(p.settled) - maxPassedSteps; over > 0 {
		p.settled = slices.Delete(p.settled, 0, over)
	}
	return p.settled
}

// lateUpTo returns the highest rank passed (steps as before returns them)
// while an entry ready at ready was ready; zero if none.
func lateUpTo(steps []passedBucket, ready time.Time) time.Time {
	i, _ := slices.BinarySearchFunc(steps, ready, func(b passedBucket, t time.Time) int { return b.start.Compare(t) })
	if i == len(steps) {
		return time.Time{}
	}
	return steps[i].rank
}

// passKey is the group of entries an entry's lateness is judged in: its
// type and task key ("" for the entries without one), the groups that
// take turns (see fairOrder). A worker that started one key's newer task
// has not left another key's older ones behind, beyond its own oldest
// entry of that key it could take: that key has turns of its own.
func passKey(e queue.ReadyEntry) typeKey { return typeKey{e.Type, e.TaskKey} }

// anyGroup is the record of passes of every group at once (each pass at
// the rank started): the lateness of the entries of a group with no record
// of its own, which the held view did not hold when the passes were made
// (so the worker held no own entry of it either).
var anyGroup = typeKey{}

// maxPassedKeys bounds the groups whose passes are kept: past it, those
// of groups the held view no longer holds are dropped (their entries,
// when listed again, are judged by anyGroup).
const maxPassedKeys = 4096

// keyedPasses is a passedRanks per group (passKey), and anyGroup's.
type keyedPasses map[typeKey]*passedRanks

// note records that rank of group k was passed at now.
func (p *keyedPasses) note(k typeKey, now, rank time.Time, hold time.Duration) {
	if *p == nil {
		*p = keyedPasses{}
	}
	r := (*p)[k]
	if r == nil {
		r = &passedRanks{}
		(*p)[k] = r
	}
	r.note(now, rank, hold)
}

// before returns, per group with a record, the passes counted as passed
// (see passedRanks.before; empty when none is yet), dropping groups past
// maxPassedKeys the held entries do not name.
func (p keyedPasses) before(now time.Time, hold time.Duration, held []heldEntry) map[typeKey][]passedBucket {
	if len(p) > maxPassedKeys {
		keep := map[typeKey]bool{anyGroup: true}
		for _, h := range held {
			keep[passKey(h.ReadyEntry)] = true
		}
		for k := range p {
			if !keep[k] {
				delete(p, k)
			}
		}
	}
	out := make(map[typeKey][]passedBucket, len(p))
	for k, r := range p {
		out[k] = r.before(now, hold)
	}
	return out
}
