// The held view of the ready index: what the walks found (walk.go), and
// what of it may be claimed before the next walk; the rules are in
// poll.go's comment.

package worker

import (
	"slices"
	"strings"
	"time"

	"github.com/qo-queue/qo/queue"
)

// heldEntry is a ready entry of the held view.
type heldEntry struct {
	queue.ReadyEntry
	own  bool // it falls to this worker (see peers.go)
	done bool // tried (claimed, lost, or failed)
}

// partPage is what the held view knows of one partition of the ready
// index the worker polls (queue.ReadyPartition: one type in one shard):
// the entries its last listing found, those not tried yet, are in the
// view.
type partPage struct {
	listed time.Time // when the LIST that read it was sent (machine clock)
	// cut: the listing stopped inside the partition after entries of the
	// worker's (a partition deeper than a page), at a key of this rank:
	// the partition may hold entries ranked after it. Zero: listed to its
	// end (or see resume).
	cut time.Time
	// resume: the listing stopped inside a run of keys the worker cannot
	// claim yet (not available until later); the next listing of the
	// partition goes on after this key.
	resume string
	// next: the key the listing stopped at when it left a cut.
	next string
	// claimed: the worker started a claim from it (from the entries the
	// listing found: an onward page starts unclaimed).
	claimed bool
	// onward: it was listed on after the cut of the page before it, whose
	// entries it adds to (see due).
	onward bool
	// keyCuts: the listing stopped inside these task keys' sections (see
	// queue.ReadyKey) after entries of the worker's, at a key of this
	// rank, and went on past them: each section may hold entries ranked
	// after it. A cut of one key holds back only that key's entries (its
	// type's key horizon, see heldView.keyHorizon); cut is that of the
	// entries without a key.
	keyCuts map[string]time.Time
}

// hasCut reports whether the listing stopped inside the partition, in
// any of its sections.
func (p *partPage) hasCut() bool { return !p.cut.IsZero() || len(p.keyCuts) > 0 }

// heldView is what the walks of the ready index found, claimed from as
// slots free up (dispatch loop only): a page of every partition the
// worker polls, each kept until a walk lists that partition again (see
// due).
type heldView struct {
	entries []heldEntry // in claim order (see compareReady), every partition's
	pages   map[string]*partPage
	// horizon: the earliest cut of a page; entries ranked after it wait
	// until that partition is listed on (zero: no horizon).
	horizon time.Time
	// keyHorizon: per type and task key, the earliest cut of that key's
	// sections (partPage.keyCuts): the horizon of the key's entries, which
	// the horizon of the entries without a key does not hold back (keys
	// take turns, see keys.go).
	keyHorizon map[typeKey]time.Time
	// blind: a partition the worker claims from was never listed (its first entries
	// are unknown), so nothing is claimed before a walk lists it.
	blind bool
	// help: the view holds nothing of the worker's own, so it helps with
	// the others' entries (see claimHeld).
	help bool
	// peersAt: the list of live workers the entries were split by (its
	// readAt, see peerSet).
	peersAt time.Time
	// limits: the fleet-wide limits the entries were split by (a worker
	// with no share of one owns none of its type's entries, see
	// splitWeights).
	limits map[string]int
	// passed: what this worker passed a page hold ago or more, per group
	// (passKey; anyGroup for a group without a record, see passedRanks);
	// another worker's entry is late if it was ready when its rank was
	// passed in its group. Set at each poll.
	passed map[typeKey][]passedBucket
}

// within reports whether the entry may be claimed before the next walk.
func (v *heldView) within(h *heldEntry) bool {
	if v.blind {
		return false
	}
	if h.TaskKey != "" {
		kh, ok := v.keyHorizon[typeKey{h.Type, h.TaskKey}]
		return !ok || !h.Rank.After(kh)
	}
	return v.horizon.IsZero() || !h.Rank.After(v.horizon)
}

// late reports whether another worker's entry has waited a page hold
// behind tasks this worker started (see passedRanks).
func (v *heldView) late(h *heldEntry) bool {
	steps, ok := v.passed[passKey(h.ReadyEntry)]
	if !ok {
		steps = v.passed[anyGroup]
	}
	r := lateUpTo(steps, h.AvailableAt)
	return !r.IsZero() && !h.Rank.After(r)
}

// claimable reports whether the entry is one the view is claimed for.
func (v *heldView) claimable(h *heldEntry) bool {
	return !h.done && v.within(h) && (v.help || h.own || v.late(h))
}

// spent reports whether nothing in the view is left to claim before the
// next walk, of types (those the worker claims now). Entries of a type at
// its limit or cap share do not count: a worker with free slots that holds
// only those looks for its other types' work (paging on past another
// type's backlog) instead of waiting for a walk made for another reason.
func (v *heldView) spent(types []string) bool {
	for i := range v.entries {
		if h := &v.entries[i]; v.claimable(h) && slices.Contains(types, h.Type) {
			return false
		}
	}
	return true
}

// empty reports whether the view knows every partition to its end and holds
// nothing.
func (v *heldView) empty() bool {
	if v.blind || len(v.entries) > 0 {
		return false
	}
	for _, p := range v.pages {
		if p.hasCut() || p.resume != "" {
			return false
		}
	}
	return true
}

// keep drops the pages, and the entries, of partitions no longer in
// served (sorted: the partitions of every type the worker serves, at its
// limit or paused or not, in the shards it polls): a shard lease given
// up. Then it bounds the view by claim (see bound).
func (v *heldView) keep(served, claim []string) {
	dropped := false
	for s := range v.pages {
		if _, ok := slices.BinarySearch(served, s); !ok {
			delete(v.pages, s)
			dropped = true
		}
	}
	if dropped {
		v.entries = slices.DeleteFunc(v.entries, func(h heldEntry) bool { return v.pages[h.Partition()] == nil })
		v.bound(claim)
	}
}

// bound sets the horizon and blind from the pages of the partitions the
// worker claims from now (claim, sorted): those of a type at its limit
// or paused do not hold its other types back.
func (v *heldView) bound(wanted []string) {
	v.horizon, v.blind, v.keyHorizon = time.Time{}, false, nil
	for _, s := range wanted {
		p := v.pages[s]
		switch {
		case p == nil:
			v.blind = true
			continue
		case !p.cut.IsZero() && (v.horizon.IsZero() || p.cut.Before(v.horizon)):
			v.horizon = p.cut
		}
		typ, _, _ := strings.Cut(s, "/")
		for k, c := range p.keyCuts {
			if v.keyHorizon == nil {
				v.keyHorizon = map[typeKey]time.Time{}
			}
			if kh, ok := v.keyHorizon[typeKey{typ, k}]; !ok || c.Before(kh) {
				v.keyHorizon[typeKey{typ, k}] = c
			}
		}
	}
}

// due returns the partitions of wanted (sorted: those the worker claims
// from now) a walk lists, in the order it lists them. First those never
// listed; then, by when they came due, a page with a cut that holds
// nothing more for it (none of its own entries, none late) and that it
// claimed from or that still holds entries it does not claim (others' not
// late yet: the partition's next entries, its own among them, wait behind
// them), due since it was listed (listed on after its cut, in onward,
// when it still holds such entries); a page older than hold, due since it
// turned that old; and a page that stopped in a run of keys the worker
// cannot claim yet, due since it was listed. The one of the second kind
// whose cut is the horizon goes before all of them: it holds back every
// claim ranked after it, in every partition. With spent (nothing in the
// view left to claim) and none of these due, every partition is: those
// with a cut first, earliest cut first (the horizon), then the others,
// oldest listing first; the worker looks for new work, and another
// worker may have claimed what held the horizon. Ties go in key order, so
// a LIST that runs on from one partition into the next covers the next
// one due too. urgent reports whether one is due for another reason than
// a run of keys the worker cannot claim yet (which waits for a walk made
// for another reason).
func (v *heldView) due(wanted []string, now time.Time, hold time.Duration, spent bool) (parts []string, onward map[string]bool, urgent bool) {
	held, used := v.usedPages()
	type dueAt struct {
		part string
		at   time.Time
	}
	var ds []dueAt
	blocking := map[string]bool{} // due for what its cut holds back
	for _, s := range wanted {
		switch p := v.pages[s]; {
		case p == nil:
			ds, urgent = append(ds, dueAt{s, time.Time{}}), true
		case used(s, p) && (p.claimed || held[s]):
			ds, urgent = append(ds, dueAt{s, p.listed}), true
			blocking[s] = true
			if p.next != "" && held[s] {
				// What it holds waits for a slot of its type: list on
				// past the cut for the types the worker claims now.
				if onward == nil {
					onward = map[string]bool{}
				}
				onward[s] = true
			}
		case now.Sub(p.listed) >= hold:
			ds, urgent = append(ds, dueAt{s, p.listed.Add(hold)}), true
		case p.resume != "":
			ds = append(ds, dueAt{s, p.listed})
		}
	}
	if len(ds) == 0 && spent {
		for _, s := range wanted {
			ds = append(ds, dueAt{s, v.pages[s].listed})
			if p := v.pages[s]; p.next != "" && held[s] && used(s, p) {
				if onward == nil {
					onward = map[string]bool{}
				}
				onward[s] = true
			}
		}
		cut := func(s string) time.Time { return v.pages[s].cut }
		slices.SortStableFunc(ds, func(a, b dueAt) int {
			switch ca, cb := cut(a.part), cut(b.part); {
			case ca.IsZero() != cb.IsZero():
				if ca.IsZero() {
					return 1
				}
				return -1
			case !ca.Equal(cb):
				return ca.Compare(cb)
			}
			return a.at.Compare(b.at)
		})
	} else {
		slices.SortStableFunc(ds, func(a, b dueAt) int { return a.at.Compare(b.at) })
		// The page that holds the horizon, when it is due for what it
		// holds back, is listed first: until it is, nothing ranked after
		// its cut is claimed in any partition, while pages only older than
		// a hold (every partition of a deep backlog, at 4 LISTs a walk)
		// would keep it waiting behind them, the worker's slots idle.
		if i := slices.IndexFunc(ds, func(d dueAt) bool { return blocking[d.part] && v.pages[d.part].cut.Equal(v.horizon) }); i > 0 {
			d := ds[i]
			copy(ds[1:i+1], ds[:i])
			ds[0] = d
		}
	}
	parts = make([]string, len(ds))
	for i, d := range ds {
		parts[i] = d.part
	}
	return parts, onward, urgent
}

// usedPages returns which partitions' pages hold entries not tried yet
// (held), and whether a page's cut holds nothing more for the worker
// (used): nothing of its own or late is left in it at all, or nothing of
// a task key whose section it cut (that key's next entries wait for it,
// while the others' are still being claimed).
func (v *heldView) usedPages() (held map[string]bool, used func(s string, p *partPage) bool) {
	held = map[string]bool{}
	left := map[string]map[string]bool{} // partition -> task keys with entries for the worker ("" too)
	for i := range v.entries {
		if h := &v.entries[i]; !h.done {
			held[h.Partition()] = true
			if h.own || v.late(h) {
				if left[h.Partition()] == nil {
					left[h.Partition()] = map[string]bool{}
				}
				left[h.Partition()][h.TaskKey] = true
			}
		}
	}
	return held, func(s string, p *partPage) bool {
		if len(left[s]) == 0 {
			return p.hasCut()
		}
		if !p.cut.IsZero() && !left[s][""] {
			return true // the entries without a key, which it cut
		}
		for k := range p.keyCuts {
			if !left[s][k] {
				return true
			}
		}
		return false
	}
}
