package sim

import (
	"math"
	"slices"
	"time"
)

// Free capacity: the order promise holds "with a free slot in a worker
// that serves the task's type", so a wait behind a newer task counts only
// the time some such slot was free. A process had a free slot for a type
// while it lived (started, not crashed or shut down, not partitioned),
// served the type, the type was not paused, and it ran fewer handlers
// than its concurrency and fewer of the type than its limit, as the
// handlers' own journal shows; and, for a type with a fleet-wide cap,
// while fewer handlers of the type than the cap ran across the fleet.

const forever = time.Duration(math.MaxInt64)

// freeFor returns, for each type, the spans in which some process had a
// free slot for it, sorted and disjoint.
func (f *fleet) freeFor(runs []run) map[string][]span {
	f.mu.Lock()
	lives := slices.Clone(f.lives)
	paused := map[string][]span{}
	for t, s := range f.paused {
		paused[t] = slices.Clone(s)
	}
	types := map[string]string{}
	for id, s := range f.tasks {
		types[id.String()] = s.typ
	}
	f.mu.Unlock()
	byProc := map[int][]run{}
	for _, r := range runs {
		byProc[r.proc] = append(byProc[r.proc], r)
	}
	out := map[string][]span{}
	for _, typ := range f.sc.Types {
		var all []span
		for _, l := range lives {
			if !slices.Contains(l.spec.Types, typ) {
				continue
			}
			to := l.to
			if to < 0 {
				to = forever
			}
			up := subtract([]span{{l.from, to}}, normalize(l.partitions))
			all = append(all, intersect(up, slotsFree(byProc[l.proc], types, typ, l.spec))...)
		}
		out[typ] = subtract(subtract(normalize(all), normalize(paused[typ])), f.atCap(runs, typ))
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
	free := slotsFree(mine, nil, "", WorkerSpec{Concurrency: limit})
	return subtract([]span{{0, forever}}, free)
}

// slotsFree is when a process of spec, running runs, had a slot free for
// typ.
func slotsFree(runs []run, types map[string]string, typ string, spec WorkerSpec) []span {
	limit := spec.Concurrency
	if l, ok := spec.Limits[typ]; ok {
		limit = min(limit, l)
	}
	type delta struct {
		at       time.Duration
		all, one int
	}
	var ds []delta
	for _, r := range runs {
		one := 0
		if types[r.task.String()] == typ {
			one = 1
		}
		ds = append(ds, delta{r.start, 1, one})
		if r.end >= 0 {
			ds = append(ds, delta{r.end, -1, -one})
		}
	}
	slices.SortFunc(ds, func(a, b delta) int { return int(a.at - b.at) })
	var free []span
	all, one := 0, 0
	from := time.Duration(0) // start of the current free span (-1: busy)
	for i := 0; i < len(ds); {
		at := ds[i].at
		for ; i < len(ds) && ds[i].at == at; i++ {
			all += ds[i].all
			one += ds[i].one
		}
		isFree := all < spec.Concurrency && one < limit
		switch {
		case isFree && from < 0:
			from = at
		case !isFree && from >= 0:
			if at > from {
				free = append(free, span{from, at})
			}
			from = -1
		}
	}
	if from >= 0 {
		free = append(free, span{from, forever})
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
