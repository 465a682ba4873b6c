package queue

import (
	"context"
	"slices"
	"strings"

	"github.com/qo-queue/qo/store"
)

// partitions selects partitions of an index below root. Without types
// (leases/) a partition is the first segment below root, a shard; with
// types (ready/) it is the first two, "{type}/{shard}" (ReadyPartition).
// Partitions are walked in key order: that of their key prefixes,
// root + partition + "/".
type partitions struct {
	root  string
	typed bool
	// types are the wanted types (typed only), in key order (see
	// typeOrder); nil: every type, whatever it is.
	types []string
	// shards are the wanted shards, sorted; never nil (an empty filter
	// wants nothing, and the walk returns at once).
	shards []string
}

// typeEnd is a shard segment that sorts after every shard:
// root + type + "/" + typeEnd + "/" begins past all of the type's
// partitions. It is never a shard (shards are hex), so never wanted.
const typeEnd = "~"

// shardPartitions selects the wanted shards (nil: every shard of the
// queue) of an index partitioned by shard.
func (q *Queue) shardPartitions(root string, shards []string) partitions {
	if shards == nil {
		shards = q.shards
	}
	return partitions{root: root, shards: sortedShards(shards)}
}

// readyPartitions selects the ready partitions types x shards (nil: every
// type, every shard of the queue).
func (q *Queue) readyPartitions(types, shards []string) partitions {
	p := q.shardPartitions(ReadyPrefix, shards)
	p.typed = true
	if types != nil {
		p.types = slices.Clone(types)
		slices.SortFunc(p.types, typeOrder)
		p.types = slices.Compact(p.types)
	}
	return p
}

// typeOrder is the key order of the partitions of two types: that of
// "{a}/" and "{b}/" (a type may sort before its own prefix: "t-x/" <
// "t/").
func typeOrder(a, b string) int { return strings.Compare(a+"/", b+"/") }

// empty reports whether nothing is wanted.
func (p partitions) empty() bool {
	return len(p.shards) == 0 || p.typed && p.types != nil && len(p.types) == 0
}

// split returns the type ("" untyped) and shard of the partition key lies
// in (ok false when key has too few segments below root to lie in one).
func (p partitions) split(key string) (typ, shard string, ok bool) {
	rest, ok := strings.CutPrefix(key, p.root)
	if !ok {
		return "", "", false
	}
	if p.typed {
		if typ, rest, ok = strings.Cut(rest, "/"); !ok || typ == "" {
			return "", "", false
		}
	}
	shard, _, _ = strings.Cut(rest, "/")
	return typ, shard, shard != ""
}

// wanted reports whether the partition (typ, shard) is selected.
func (p partitions) wanted(typ, shard string) bool {
	if _, ok := slices.BinarySearch(p.shards, shard); !ok {
		return false
	}
	if !p.typed || p.types == nil {
		return true
	}
	_, ok := slices.BinarySearchFunc(p.types, typ, typeOrder)
	return ok
}

// prefix is the partition prefix of (typ, shard) ("" untyped).
func (p partitions) prefix(typ, shard string) string {
	if p.typed {
		return p.root + typ + "/" + shard + "/"
	}
	return p.root + shard + "/"
}

// section is the prefix of the run of keys in time order that key (one
// lying in a partition) is part of: in the ready index, a task key's
// section ("ready/{type}/{shard}/-{key}/", see ReadyKey) or the
// partition's entries without a key (the partition's prefix); elsewhere
// the partition.
func (p partitions) section(key string) string {
	typ, shard, _ := p.split(key)
	part := p.prefix(typ, shard)
	if !p.typed {
		return part
	}
	if end, ok := ReadyKeySectionEnd(key); ok {
		return strings.TrimSuffix(end, sectionEnd)
	}
	return part
}

// listPrefix is the Prefix of the walk's LISTs: one partition when only one
// is wanted, one type's when every wanted partition is of one type, the
// root otherwise.
func (p partitions) listPrefix() string {
	switch {
	case !p.typed && len(p.shards) == 1:
		return p.prefix("", p.shards[0])
	case !p.typed || len(p.types) != 1:
		return p.root
	case len(p.shards) == 1:
		return p.prefix(p.types[0], p.shards[0])
	}
	return p.root + p.types[0] + "/"
}

// first is the StartAfter that begins the first wanted partition ("": at
// the start of the root, when the types are not known).
func (p partitions) first() string {
	switch {
	case !p.typed:
		return p.prefix("", p.shards[0])
	case p.types != nil:
		return p.prefix(p.types[0], p.shards[0])
	}
	return ""
}

// after is the StartAfter that begins the first wanted partition after
// (typ, shard) in key order, whether that one is wanted or not: the next
// wanted shard of a wanted type, else the first wanted shard of the next
// wanted type, or, when every type is wanted, past the end of this type's
// partitions (typeEnd). "" when no wanted partition follows.
func (p partitions) after(typ, shard string) string {
	typeWanted := !p.typed || p.types == nil || slices.ContainsFunc(p.types, func(t string) bool { return t == typ })
	if typeWanted {
		for _, s := range p.shards {
			if s+"/" > shard+"/" {
				return p.prefix(typ, s)
			}
		}
	}
	switch {
	case !p.typed:
		return ""
	case p.types == nil:
		return p.prefix(typ, typeEnd)
	}
	for _, t := range p.types {
		if typeOrder(t, typ) > 0 {
			return p.prefix(t, p.shards[0])
		}
	}
	return ""
}

// skip returns where a walk at key goes on: key itself when it lies in a
// wanted partition (or in none), else the prefix of the next wanted
// partition after it (never before key); end is true when no wanted
// partition follows.
func (p partitions) skip(key string) (next string, end bool) {
	typ, shard, ok := p.split(key)
	if !ok || p.wanted(typ, shard) {
		return key, false
	}
	next = p.after(typ, shard)
	if next == "" {
		return "", true
	}
	return max(next, key), false
}

// walkPartitions reads ONE LIST page of an index partitioned by shard, or
// by type and shard (see partitions), for the wanted partitions, starting
// after start ("" begins at the first wanted partition, and a start inside
// a partition not wanted at the next wanted one). visit sees each
// key of a wanted partition in key order; when it returns true the rest of
// that partition's section is skipped (see partitions.section: the index
// is time-ordered within a section, so a visitor stops at the first entry
// that is not due yet), and a page that ends in a skipped key section goes
// on at the partition's next section. next is the
// start of the following call, "" when the walk reached the end: the last
// key listed when the page ended inside a wanted partition it did not
// stop, else the prefix of the next wanted partition after the last key's
// (see partitions.after), so a page that ends in a partition not wanted,
// however deep, is followed by a LIST that begins past it (and, for a
// type not wanted, past all of that type).
//
// One page covers as many partitions as it holds keys for, so an index
// with few entries costs one LIST however many partitions it has.
func (q *Queue) walkPartitions(ctx context.Context, p partitions, start string, limit int, visit func(o store.ObjectInfo) (stop bool)) (string, error) {
	if p.empty() {
		return "", nil
	}
	if start == "" {
		start = p.first()
	}
	// A start inside a partition not wanted (a cursor of another walk)
	// begins at the next wanted one instead.
	start, end := p.skip(start)
	if end {
		return "", nil
	}
	page, err := q.s.List(ctx, store.ListParams{Prefix: p.listPrefix(), StartAfter: start, Limit: limit})
	if err != nil {
		return "", err
	}
	done := map[string]bool{} // partition or section prefix -> skip the rest
	var lastType, lastShard string
	lastIn := false // the last key lies in a partition
	for _, o := range page.Objects {
		typ, shard, ok := p.split(o.Key)
		lastType, lastShard, lastIn = typ, shard, ok
		if !ok {
			continue // too few segments to lie in a partition
		}
		part := p.prefix(typ, shard)
		if done[part] {
			continue
		}
		if !p.wanted(typ, shard) {
			done[part] = true
			continue
		}
		sec := p.section(o.Key)
		if done[sec] {
			continue
		}
		if visit(o) {
			done[sec] = true
		}
	}
	if page.NextToken == "" || len(page.Objects) == 0 {
		return "", nil
	}
	last := page.Objects[len(page.Objects)-1].Key
	if lastIn && done[p.section(last)] {
		if end, ok := ReadyKeySectionEnd(last); ok && p.typed {
			return end, nil // the partition's next section
		}
	}
	if lastIn && done[p.prefix(lastType, lastShard)] {
		// A hop that would not move forward (a key below the last
		// shard's successor, such as a junk segment sorting after every
		// shard) pages on after the last key instead.
		if next := p.after(lastType, lastShard); next == "" || next > last {
			return next, nil
		}
	}
	return last, nil
}

// sortedShards returns a sorted copy of a shard filter (nil stays nil).
func sortedShards(shards []string) []string {
	if shards == nil {
		return nil
	}
	out := slices.Clone(shards)
	slices.Sort(out)
	return slices.Compact(out)
}
