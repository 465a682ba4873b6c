// The held view of the ready index (a page of every partition the worker
// polls: one of its types in one of its shards) and the walks that fill
// it; the rules are in poll.go's comment.

package worker

import (
	"bytes"
	"context"
	"maps"
	"slices"
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
}

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
	// passed: what this worker passed a page hold ago or more (see
	// passedRanks); another worker's entry is late if it was ready when
	// its rank was passed. Set at each poll.
	passed []passedBucket
}

// within reports whether the entry may be claimed before the next walk.
func (v *heldView) within(h *heldEntry) bool {
	return !v.blind && (v.horizon.IsZero() || !h.Rank.After(v.horizon))
}

// late reports whether another worker's entry has waited a page hold
// behind tasks this worker started (see passedRanks).
func (v *heldView) late(h *heldEntry) bool {
	r := lateUpTo(v.passed, h.AvailableAt)
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
		if !p.cut.IsZero() || p.resume != "" {
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
	v.horizon, v.blind = time.Time{}, false
	for _, s := range wanted {
		switch p := v.pages[s]; {
		case p == nil:
			v.blind = true
		case !p.cut.IsZero() && (v.horizon.IsZero() || p.cut.Before(v.horizon)):
			v.horizon = p.cut
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
	// left: the partition's page holds entries for the worker (its own
	// or late).
	left, held := map[string]bool{}, map[string]bool{}
	for i := range v.entries {
		if h := &v.entries[i]; !h.done {
			held[h.Partition()] = true
			if h.own || v.late(h) {
				left[h.Partition()] = true
			}
		}
	}
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
		case !p.cut.IsZero() && !left[s] && (p.claimed || held[s]):
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
			if p := v.pages[s]; !p.cut.IsZero() && p.next != "" && held[s] && !left[s] {
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

// partitions is the sorted list of the ready partitions of types in the
// shards the worker polls (shards, or every shard when nil).
func (w *Worker) partitions(shards, types []string) []string {
	if shards == nil {
		shards = w.q.Shards()
	}
	out := make([]string, 0, len(shards)*len(types))
	for _, t := range types {
		for _, sh := range shards {
			out = append(out, queue.ReadyPartition(t, sh))
		}
	}
	slices.Sort(out)
	return out
}

// compareReady is the order ready entries are claimed in, across partitions:
// by rank (the time the key sorts under: available_at moved by the
// priority), then priority, then task id (time-ordered). It is the key
// order within a partition, so sorting the pages of several partitions by it
// merges them.
func compareReady(a, b queue.ReadyEntry) int {
	if c := a.Rank.Compare(b.Rank); c != 0 {
		return c
	}
	if c := a.Priority.Level() - b.Priority.Level(); c != 0 {
		return c
	}
	return bytes.Compare(a.ID[:], b.ID[:])
}

// maxWalkLists bounds the LISTs of one walk of the ready index.
const maxWalkLists = 4

// walk lists the partitions due (see heldView.due; of wanted, the
// partitions of types in shards, see partitions), in that order, up to
// maxWalkLists LISTs of ReadyPageSize keys, and returns what it found and
// the new page of each partition it listed. A LIST begins at the first key
// of the next partition due it has not listed (or after the keys a page
// could not claim, see partPage.resume) and runs on in key order over the
// partitions it was asked for, hopping past the others (queue.ListReady):
// every partition it passes is listed to its end, and one it stops inside
// after entries of the worker's gets a page with a cut, the rank of the
// last key listed. A LIST that entered that partition after listing
// others goes on in it, budget permitting, so the page holds up to a LIST
// of it. One that stops inside a run of keys the worker cannot claim yet
// (not available until later) leaves no cut: the next LIST, or the
// partition's next listing, goes on after them. Were they a horizon, such
// a run would hold back every entry of the worker's ranked after it for
// as long as it lasts; passing them, an entry of the worker's behind them
// is overtaken by at most the entries claimed in the walks it takes to
// reach it. Keys of other types are never in the way: each type has
// partitions of its own, and a type at its limit or paused is not listed.
func (w *Worker) walk(ctx context.Context, shards, types, wanted, due []string, onward map[string]bool) ([]queue.ReadyEntry, map[string]*partPage, error) {
	var entries []queue.ReadyEntry
	pages := map[string]*partPage{}
	start := "" // the StartAfter of the next LIST ("": the next partition due)
	for range maxWalkLists {
		if start == "" {
			i := slices.IndexFunc(due, func(s string) bool { return pages[s] == nil })
			if i < 0 {
				break
			}
			start = queue.ReadyPartitionPrefix(due[i])
			switch p := w.view.pages[due[i]]; {
			case p == nil:
			case p.resume != "":
				start = p.resume
			case onward[due[i]]:
				start = p.next
			}
		}
		began := time.Now()
		es, next, err := w.q.ListReady(ctx, queue.ReadyQuery{
			Shards: shards, Types: types, Limit: w.opts.ReadyPageSize, StartAfter: start,
		})
		if err != nil {
			return nil, nil, err
		}
		entries = append(entries, es...)
		// The partitions from the one it began in up to the one it ended in
		// (that one too when it ended at a partition's first key) are listed
		// to their end.
		first, end, in := queue.ReadyKeyPartition(start), "", ""
		if next != "" {
			end = queue.ReadyKeyPartition(next)
			if next != queue.ReadyPartitionPrefix(end) {
				in = end
			}
		}
		for _, s := range wanted {
			if s >= first && (end == "" || s < end) {
				pages[s] = &partPage{listed: began}
			}
		}
		start = ""
		if in == "" {
			continue
		}
		p := &partPage{listed: began}
		pages[in] = p
		last, perr := queue.ParseReadyKey(next)
		if perr != nil || !slices.ContainsFunc(es, func(e queue.ReadyEntry) bool { return e.Partition() == in }) {
			p.resume = next
			if old := w.view.pages[in]; in != first && old != nil && old.resume > next {
				// Run on into this partition from the one before, it met the
				// keys the partition's page had already paged past: go on
				// from where that page stopped, not through them again.
				p.resume = old.resume
			}
			start = p.resume // page on past them
			continue
		}
		p.cut, p.next = last.Rank, next
		if in != first {
			start = next // list on in it
		}
	}
	for s, p := range pages {
		if old := w.view.pages[s]; onward[s] && old != nil && p.resume == "" {
			p.onward, p.listed = true, old.listed
		}
	}
	return entries, pages, nil
}

// hold puts what a walk found in the held view: the pages of the
// partitions it listed replace their earlier ones (and the view's entries
// of them), the others' stay (those of a type at its limit or paused
// among them: so a type at its limit is claimed oldest first across every
// shard as its slots free, not from the partitions listed in the moments
// one was free). served and claim are as for keep. The entries are in claim order, each marked as the
// worker's own or another's (see peers.go). A view without an own entry is
// one to help with; with more entries than free slots, its entries count
// as passed (see passedRanks): the worker had room for them and left them
// to their workers.
func (w *Worker) hold(ctx context.Context, entries []queue.ReadyEntry, pages map[string]*partPage, served, claim, types []string, free int) {
	v := &w.view
	if v.pages == nil {
		v.pages = map[string]*partPage{}
	}
	v.keep(served, claim)
	maps.Copy(v.pages, pages)
	// A listing replaces its partition's entries, but for those ranked
	// after the key it stopped at inside a run of keys the worker could
	// not claim yet (its resume): the listing did not reach them, and
	// dropped, one the worker knew would wait until a walk pages on past
	// that run, while newer ones elsewhere start.
	stops := map[string]queue.ReadyEntry{}
	for s, p := range pages {
		if p.resume != "" {
			if last, err := queue.ParseReadyKey(p.resume); err == nil {
				stops[s] = last
			}
		}
	}
	v.entries = slices.DeleteFunc(v.entries, func(h heldEntry) bool {
		p, relisted := pages[h.Partition()]
		if stop, ok := stops[h.Partition()]; ok && compareReady(h.ReadyEntry, stop) > 0 {
			relisted = false
		}
		return h.done || relisted && !p.onward || v.pages[h.Partition()] == nil
	})
	if w.leaser == nil && len(v.entries)+len(entries) > free && w.peers.due(time.Now()) {
		w.refreshPeers(ctx)
	}
	own := func(e queue.ReadyEntry) bool { return w.leaser != nil || w.owns(e) }
	w.mu.Lock()
	limits := w.caps.limits
	w.mu.Unlock()
	if !v.peersAt.Equal(w.peers.readAt) || !maps.Equal(v.limits, limits) {
		// Another list of workers, or other limits: the kept entries are
		// split again.
		v.peersAt, v.limits = w.peers.readAt, limits
		for i := range v.entries {
			v.entries[i].own = own(v.entries[i].ReadyEntry)
		}
	}
	// The kept entries are in claim order: sort the new ones and merge.
	slices.SortFunc(entries, compareReady)
	merged := make([]heldEntry, 0, len(v.entries)+len(entries))
	i := 0
	for _, e := range entries {
		for ; i < len(v.entries) && compareReady(v.entries[i].ReadyEntry, e) <= 0; i++ {
			merged = append(merged, v.entries[i])
		}
		merged = append(merged, heldEntry{ReadyEntry: e, own: own(e)})
	}
	v.entries = append(merged, v.entries[i:]...)
	v.bound(claim)
	w.helpOrPass(types, free)
}

// helpOrPass decides, after a walk, whether the view is one to help with,
// and counts the others' entries as passed when the worker had room for
// them and left them to their workers.
func (w *Worker) helpOrPass(types []string, free int) {
	v := &w.view
	// What counts is what may be claimed before the next walk (up to the
	// horizon): own entries ranked after it do not make the others' before
	// it less passed. A view with own entries of any type is not one to
	// help with (help takes the newest first, own entries among them, once
	// their type may be claimed again); but own entries of a type at its
	// limit do not make the others' entries of the types it claims now
	// less passed.
	mine, within := false, 0
	mineNow, withinNow := false, 0
	for i := range v.entries {
		h := &v.entries[i]
		if !v.within(h) {
			continue
		}
		within++
		mine = mine || h.own
		if slices.Contains(types, h.Type) {
			withinNow++
			mineNow = mineNow || h.own
		}
	}
	// Help only with a few entries (no more than the free slots): with
	// more, their workers are at them, and a helper would mostly meet
	// them.
	v.help = !mine && within <= free
	if !mineNow && withinNow > free {
		for i := len(v.entries) - 1; i >= 0; i-- {
			if h := &v.entries[i]; v.within(h) && slices.Contains(types, h.Type) {
				w.passed.note(w.clock.Now(), v.entries[i].Rank, w.opts.PageHold)
				break
			}
		}
	}
}
