// The walks of the ready index that fill the held view (view.go), and
// how what they found is put in it; the rules are in poll.go's comment.

package worker

import (
	"bytes"
	"context"
	"maps"
	"slices"
	"time"

	"github.com/qo-queue/qo/queue"
)

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

// maxWalkLists bounds the LISTs of one walk of the ready index, not
// counting those that go on past a task key's section (see walk).
const maxWalkLists = 4

// maxKeyHops bounds the LISTs of one walk that go on past a task key's
// section cut short after filling half the LIST or more (one key's deep
// backlog; a LIST cut in a shorter section counts as any other): past it,
// the partition holding the last section cut keeps a cut there for its
// entries without a key too, and is listed on from the first such section
// once it is used up.
const maxKeyHops = 16

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
	var ks keySections
	// hop: the next LIST goes on past a key's section (its start);
	// hopping: past the budget, one key's backlog having filled the LIST.
	hop, hopping, hops := "", false, 0
	for lists := 0; lists < maxWalkLists || hopping && hops < maxKeyHops; lists++ {
		if hopping {
			hops++
		}
		hop, hopping = "", false
		if start == "" {
			if start = w.nextStart(due, pages, onward); start == "" {
				break
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
		if end, ok := queue.ReadyKeySectionEnd(next); ok {
			// Cut inside a task key's section: the rest of that key's
			// backlog waits behind the cut (its key horizon), and the LIST
			// goes on past the section, so the partition's other keys are
			// listed however deep one key's backlog is (see poll.go,
			// "Keys").
			ks.note(in, last, next)
			// A LIST mostly of that key's backlog may go past the budget to
			// reach the other keys; one cut in a short section is a LIST
			// like any other.
			start, hop, hopping = end, end, 2*countKey(es, last) >= w.opts.ReadyPageSize
			continue
		}
		p.cut, p.next = last.Rank, next
		if in != first {
			start = next // list on in it
		}
	}
	ks.apply(pages, hop)
	for s, p := range pages {
		if old := w.view.pages[s]; onward[s] && old != nil && p.resume == "" {
			p.onward, p.listed = true, old.listed
		}
	}
	return entries, pages, nil
}

// countKey counts the entries of es in e's partition with e's task key.
func countKey(es []queue.ReadyEntry, e queue.ReadyEntry) int {
	n := 0
	for _, x := range es {
		if x.TaskKey == e.TaskKey && x.Partition() == e.Partition() {
			n++
		}
	}
	return n
}

// nextStart is the StartAfter of a walk's LIST that begins at the next
// partition due it has not listed ("" when none is left): at its start, or
// where its page stopped in a run of keys the worker cannot claim yet, or
// after its cut when it is listed on.
func (w *Worker) nextStart(due []string, pages map[string]*partPage, onward map[string]bool) string {
	i := slices.IndexFunc(due, func(s string) bool { return pages[s] == nil })
	if i < 0 {
		return ""
	}
	switch p := w.view.pages[due[i]]; {
	case p == nil:
	case p.resume != "":
		return p.resume
	case onward[due[i]]:
		return p.next
	}
	return queue.ReadyPartitionPrefix(due[i])
}

// keySections is what a walk learned of the task keys' sections it cut
// short and listed on past.
type keySections struct {
	cuts map[string]map[string]time.Time // partition -> task key -> rank of its cut
	next map[string]string               // partition -> where the first of them stopped
}

// note records a cut of partition in's section of last.TaskKey at last
// (next: the key the LIST stopped at).
func (k *keySections) note(in string, last queue.ReadyEntry, next string) {
	if k.cuts == nil {
		k.cuts, k.next = map[string]map[string]time.Time{}, map[string]string{}
	}
	if k.cuts[in] == nil {
		k.cuts[in] = map[string]time.Time{}
	}
	k.cuts[in][last.TaskKey] = last.Rank
	if k.next[in] == "" {
		k.next[in] = next
	}
}

// apply puts the cuts on the pages of their partitions; listed on later, a
// page goes on from the first of them. hop is where the walk would have
// gone on past a key's section when it ran out of LISTs ("" when it did
// not): the rest of that partition is not known, so its entries without a
// key wait behind the cut, as at a cut of a page.
func (k *keySections) apply(pages map[string]*partPage, hop string) {
	for s, cuts := range k.cuts {
		if p := pages[s]; p != nil {
			p.keyCuts, p.next = cuts, k.next[s]
		}
	}
	in := queue.ReadyKeyPartition(hop)
	if p := pages[in]; hop != "" && p != nil {
		if last, err := queue.ParseReadyKey(k.next[in]); err == nil && (p.cut.IsZero() || last.Rank.Before(p.cut)) {
			p.cut = last.Rank
		}
	}
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
	// A page listed on from a key's cut lists the sections after it
	// again: what the view holds already is kept as it is.
	kept := make(map[string]bool, len(v.entries))
	for _, h := range v.entries {
		kept[h.Key] = true
	}
	entries = slices.DeleteFunc(entries, func(e queue.ReadyEntry) bool { return kept[e.Key] })
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
		// The highest of each group's (see passKey), and of all.
		noted := map[typeKey]bool{}
		for i := len(v.entries) - 1; i >= 0; i-- {
			if h := &v.entries[i]; v.within(h) && slices.Contains(types, h.Type) && !noted[passKey(h.ReadyEntry)] {
				if len(noted) == 0 {
					w.passed.note(anyGroup, w.clock.Now(), h.Rank, w.opts.PageHold)
				}
				noted[passKey(h.ReadyEntry)] = true
				w.passed.note(passKey(h.ReadyEntry), w.clock.Now(), h.Rank, w.opts.PageHold)
			}
		}
	}
}
