package worker

import (
	"slices"
	"sync"
)

// Weighted types (Options.Weights): a worker serving several types claims
// them in proportion to their weights while tasks of several are ready and
// its slots are the bottleneck. The chooser is a smooth weighted round
// robin: at each claim every type with a claimable entry adds its weight to
// its credit, the type with the most credit is taken (ties by name) and
// pays back the sum of the weights of the types that took part. Over any
// run of claims in which the same types have entries, each type's share is
// within one claim of weight/sum; a type with nothing claimable takes no
// part, so its share goes to the others, and builds no credit meanwhile.
// The choice is between types only: within a type, entries are claimed in
// the held view's order (see compareReady), so every order and liveness
// rule of poll.go holds inside a type. Across types, a claimable entry of
// a type of weight w waits at most ceil(sum/w) - 1 claims of other types
// per entry of its type ahead of it, and only while every slot is taken:
// with free slots left, every claimable entry is claimed in the same pass
// (so the overtake bound of poll.go, stated for a worker with a free slot,
// is unchanged).

// typeWeights is the chooser's state, kept across polls so the proportion
// holds over passes that claim one task each.
type typeWeights struct {
	mu     sync.Mutex
	weight map[string]int
	credit map[string]int
}

func newTypeWeights(weights map[string]int) *typeWeights {
	if len(weights) == 0 {
		return nil
	}
	return &typeWeights{weight: weights, credit: map[string]int{}}
}

// weightOf is a type's weight: 1 when not named.
func (c *typeWeights) weightOf(typ string) int {
	if n, ok := c.weight[typ]; ok {
		return n
	}
	return 1
}

// pick returns the type of types (distinct, each with a claimable entry)
// whose turn it is, "" when types is empty.
func (c *typeWeights) pick(types []string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	best, total := "", 0
	for _, t := range types {
		w := c.weightOf(t)
		c.credit[t] += w
		total += w
		if best == "" || c.credit[t] > c.credit[best] || c.credit[t] == c.credit[best] && t < best {
			best = t
		}
	}
	if best != "" {
		c.credit[best] -= total
	}
	return best
}

// weightedOrder yields the indexes of order (the held view's claim order)
// one at a time: without weights in order; with them, the next entry of
// the type whose turn it is, among the types with an entry left that skip
// does not exclude (a type at its limit).
type weightedOrder struct {
	c      *typeWeights
	order  []int
	queues map[string][]int // per type, the indexes left, in order
	types  []string         // the types with entries, sorted
}

func (w *Worker) weightedOrder(entries []heldEntry, order []int) *weightedOrder {
	o := &weightedOrder{c: w.weights, order: order}
	if o.c == nil {
		return o
	}
	o.queues = map[string][]int{}
	for _, i := range order {
		t := entries[i].Type
		if _, ok := o.queues[t]; !ok {
			o.types = append(o.types, t)
		}
		o.queues[t] = append(o.queues[t], i)
	}
	slices.Sort(o.types)
	return o
}

// next returns the next index to try, false when none is left.
func (o *weightedOrder) next(skip func(typ string) bool) (int, bool) {
	if o.c == nil {
		if len(o.order) == 0 {
			return 0, false
		}
		i := o.order[0]
		o.order = o.order[1:]
		return i, true
	}
	var ready []string
	for _, t := range o.types {
		if len(o.queues[t]) > 0 && !skip(t) {
			ready = append(ready, t)
		}
	}
	t := o.c.pick(ready)
	if t == "" {
		return 0, false
	}
	i := o.queues[t][0]
	o.queues[t] = o.queues[t][1:]
	return i, true
}
