package sim

import (
	"cmp"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
)

// Free capacity: the order promise holds "with a free slot in a worker
// that serves the task's type", so a wait behind a newer task counts only
// the time some worker could have started the task. A process had a free
// slot for a type while it lived (started, not crashed or shut down, not
// partitioned), served the type, the type was not paused, and it ran
// fewer handlers than its concurrency and fewer of the type than its limit
// and, for a type with a fleet-wide cap, than its share of the cap (the
// cap split over the live processes serving the type, as the workers
// split it: an upper bound of the share it may use), as the handlers' own
// journal shows; and, for a capped type, while fewer handlers of the type
// than the cap ran across the fleet. A free slot is not free for a task
// when the run that takes it next on that process is of a task ranked
// before it (see slotSpan): the hand-over of a slot to an older task.

const forever = time.Duration(math.MaxInt64)

// slotSpan is a span in which a process had a slot free for a type, and
// the runs that started on it at the span's end, taking the slot (none:
// the span ended otherwise, or not at all).
type slotSpan struct {
	span
	taken []run
}

// freeFor returns, for each type, the spans in which some process had a
// free slot for it, sorted and disjoint.
func (f *fleet) freeFor(runs []run) map[string][]span {
	out := map[string][]span{}
	for typ, ss := range f.procSlots(runs) {
		out[typ] = usable(ss, func(run) bool { return false }, f.blocked(runs, typ))
	}
	return out
}

// blocked is when no slot is free for typ whatever the processes: the
// type paused, or at its fleet-wide cap; sorted and disjoint.
func (f *fleet) blocked(runs []run, typ string) []span {
	f.mu.Lock()
	paused := slices.Clone(f.paused[typ])
	f.mu.Unlock()
	return normalize(append(paused, f.atCap(runs, typ)...))
}

// usable is the time of the spans ss (of every process, for one type)
// that some process had its slot free for a task, not handed over to a
// task ranked before it (before), outside the spans of blocked (sorted
// and disjoint); sorted and disjoint.
func usable(ss []slotSpan, before func(run) bool, blocked []span) []span {
	var all []span
	for _, s := range ss {
		if len(s.taken) > 0 && !slices.ContainsFunc(s.taken, func(r run) bool { return !before(r) }) {
			continue // handed over to a task ranked before it
		}
		all = append(all, s.span)
	}
	return subtract(normalize(all), blocked)
}

// procSlots returns, for each type, the spans in which each process had a
// free slot for it (unsorted across processes).
func (f *fleet) procSlots(runs []run) map[string][]slotSpan {
	f.mu.Lock()
	lives := slices.Clone(f.lives)
	types := map[uuid.UUID]string{}
	for id, s := range f.tasks {
		types[id] = s.typ
	}
	f.mu.Unlock()
	byProc := map[int][]run{}
	for _, r := range runs {
		byProc[r.proc] = append(byProc[r.proc], r)
	}
	caps := map[string]int{}
	for _, l := range f.sc.Limits {
		caps[l.Type] = l.Concurrency
	}
	out := map[string][]slotSpan{}
	for _, typ := range f.sc.Types {
		for _, l := range lives {
			if !slices.Contains(l.spec.Types, typ) {
				continue
			}
			up := subtract([]span{{l.from, l.end()}}, normalize(l.partitions))
			limit := l.spec.Concurrency
			if n, ok := l.spec.Limits[typ]; ok {
				limit = min(limit, n)
			}
			if caps[typ] == 0 {
				out[typ] = append(out[typ], clip(slotsFree(byProc[l.proc], types, typ, l.spec.Concurrency, limit), up)...)
				continue
			}
			for _, sh := range capShares(lives, typ, caps[typ], l) {
				free := slotsFree(byProc[l.proc], types, typ, l.spec.Concurrency, min(limit, sh.n))
				out[typ] = append(out[typ], clip(free, intersect(up, []span{sh.span}))...)
			}
		}
	}
	return out
}

// end is when the life ended (forever while it lives).
func (l life) end() time.Duration {
	if l.to < 0 {
		return forever
	}
	return l.to
}

// share is a process's share of a fleet-wide cap over a span.
type share struct {
	span
	n int
}

// capShares is l's share of a cap of n on typ over its life: n split
// evenly over the processes serving the type that lived at the time, the
// remainder to the first in the workers' order (worker/caps.go, capOrder
// and capShare). The workers count a dead one until it looks dead, so their
// shares are at most these.
func capShares(lives []life, typ string, n int, l life) []share {
	cuts := []time.Duration{l.from}
	for _, o := range lives {
		if slices.Contains(o.spec.Types, typ) {
			for _, at := range []time.Duration{o.from, o.end()} {
				if at > l.from && at < l.end() {
					cuts = append(cuts, at)
				}
			}
		}
	}
	slices.Sort(cuts)
	cuts = append(slices.Compact(cuts), l.end())
	var out []share
	for i := 0; i+1 < len(cuts); i++ {
		at := cuts[i]
		var on []life
		for _, o := range lives {
			if slices.Contains(o.spec.Types, typ) && o.from <= at && at < o.end() &&
				!slices.ContainsFunc(on, func(p life) bool { return p.id == o.id }) {
				on = append(on, o)
			}
		}
		// The workers' order (worker/caps.go, capOrder): fewest types
		// served, then most slots, then id.
		slices.SortFunc(on, func(a, b life) int {
			return cmp.Or(cmp.Compare(len(a.spec.Types), len(b.spec.Types)),
				cmp.Compare(b.spec.Concurrency, a.spec.Concurrency), strings.Compare(a.id, b.id))
		})
		ids := make([]string, len(on))
		for i, o := range on {
			ids[i] = o.id
		}
		k := slices.Index(ids, l.id)
		sh := n / len(ids)
		if k < n%len(ids) {
			sh++
		}
		out = append(out, share{span{at, cuts[i+1]}, sh})
	}
	return out
}

// clip is the time of ss within the spans in (sorted and disjoint); a
// piece that does not end where its span did was not ended by a start.
func clip(ss []slotSpan, in []span) []slotSpan {
	var out []slotSpan
	for _, s := range ss {
		for _, p := range intersect([]span{s.span}, in) {
			piece := slotSpan{span: p}
			if p.to == s.to {
				piece.taken = s.taken
			}
			out = append(out, piece)
		}
	}
	return out
}

// atCap is when the handlers of typ running across the fleet were at its
// fleet-wide cap (none without a cap), sorted and disjoint.
func (f *fleet) atCap(runs []run, typ string) []span {
	limit := 0
	for _, l := range f.sc.Limits {
		if l.Type == typ {
			limit = l.Concurrency
		}
	}
	if limit == 0 {
		return nil
	}
	var mine []run
	for _, r := range runs {
		if r.typ == typ {
			mine = append(mine, r)
		}
	}
	// A worker's slots with one "type" of limit: the spans it is not free
	// are those at the cap.
	var free []span
	for _, s := range slotsFree(mine, nil, "", limit, limit) {
		free = append(free, s.span)
	}
	return subtract([]span{{0, forever}}, free)
}

// slotsFree is when a process running runs, of the concurrency given and
// at most limit of typ, had a slot free for typ, with the runs that took
// the slot at the end of each span.
func slotsFree(runs []run, types map[uuid.UUID]string, typ string, concurrency, limit int) []slotSpan {
	type delta struct {
		at       time.Duration
		all, one int
		r        run
	}
	var ds []delta
	for _, r := range runs {
		one := 0
		if types[r.task] == typ {
			one = 1
		}
		ds = append(ds, delta{r.start, 1, one, r})
		if r.end >= 0 {
			ds = append(ds, delta{r.end, -1, -one, r})
		}
	}
	slices.SortFunc(ds, func(a, b delta) int { return int(a.at - b.at) })
	var free []slotSpan
	all, one := 0, 0
	from := time.Duration(0) // start of the current free span (-1: busy)
	for i := 0; i < len(ds); {
		at := ds[i].at
		var started []run
		for ; i < len(ds) && ds[i].at == at; i++ {
			all += ds[i].all
			one += ds[i].one
			if ds[i].all > 0 {
				started = append(started, ds[i].r)
			}
		}
		isFree := all < concurrency && one < limit
		switch {
		case isFree && from < 0:
			from = at
		case !isFree && from >= 0:
			if at > from {
				free = append(free, slotSpan{span{from, at}, started})
			}
			from = -1
		}
	}
	if from >= 0 {
		free = append(free, slotSpan{span: span{from, forever}})
	}
	return free
}

// normalize sorts spans and merges those that overlap.
func normalize(ss []span) []span {
	ss = slices.Clone(ss)
	slices.SortFunc(ss, func(a, b span) int { return int(a.from - b.from) })
	var out []span
	for _, s := range ss {
		if s.to <= s.from {
			continue
		}
		if n := len(out); n > 0 && s.from <= out[n-1].to {
			out[n-1].to = max(out[n-1].to, s.to)
			continue
		}
		out = append(out, s)
	}
	return out
}

// intersect is the time in both a and b (each sorted and disjoint).
func intersect(a, b []span) []span {
	var out []span
	for i, j := 0, 0; i < len(a) && j < len(b); {
		from, to := max(a[i].from, b[j].from), min(a[i].to, b[j].to)
		if from < to {
			out = append(out, span{from, to})
		}
		if a[i].to < b[j].to {
			i++
		} else {
			j++
		}
	}
	return out
}

// subtract is the time in a and not in b (each sorted and disjoint).
func subtract(a, b []span) []span {
	// The complement of b, then what a shares with it: linear in both.
	var gaps []span
	from := time.Duration(math.MinInt64)
	for _, s := range b {
		if s.from > from {
			gaps = append(gaps, span{from, s.from})
		}
		from = max(from, s.to)
	}
	if from < forever {
		gaps = append(gaps, span{from, forever})
	}
	return intersect(a, gaps)
}

// within is how much of [from, to] the spans cover.
func within(ss []span, from, to time.Duration) time.Duration {
	var d time.Duration
	for _, s := range ss {
		if a, b := max(s.from, from), min(s.to, to); a < b {
			d += b - a
		}
	}
	return d
}
