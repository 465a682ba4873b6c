package queue

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/qo-queue/qo/store"
)

// EdgeKey is the key of the edge object that records parent's end (in
// status) for waiting task child: "edges/{child}/{parent}/{status}", an
// empty object (see doc.go, "Dependencies").
func EdgeKey(child, parent uuid.UUID, status Status) string {
	return edgePrefix(child) + parent.String() + "/" + string(status)
}

func edgePrefix(child uuid.UUID) string { return EdgesPrefix + child.String() + "/" }

// ParseEdgeKey returns the child, parent and status an edge key names.
func ParseEdgeKey(key string) (child, parent uuid.UUID, status Status, err error) {
	rest, ok := strings.CutPrefix(key, EdgesPrefix)
	parts := strings.Split(rest, "/")
	if !ok || len(parts) != 3 {
		return uuid.Nil, uuid.Nil, "", fmt.Errorf("edge key %q: want %s{child}/{parent}/{status}", key, EdgesPrefix)
	}
	if child, err = uuid.Parse(parts[0]); err != nil {
		return uuid.Nil, uuid.Nil, "", fmt.Errorf("edge key %q: child: %w", key, err)
	}
	if parent, err = uuid.Parse(parts[1]); err != nil {
		return uuid.Nil, uuid.Nil, "", fmt.Errorf("edge key %q: parent: %w", key, err)
	}
	status = Status(parts[2])
	switch status {
	case StatusCompleted, StatusFailed, StatusCancelled, StatusExpired:
	default:
		return uuid.Nil, uuid.Nil, "", fmt.Errorf("edge key %q: %q is not the status of an end", key, parts[2])
	}
	return child, parent, status, nil
}

// edgeSet is what a LIST of a child's edge objects found: the status each
// parent ended in, and the keys.
type edgeSet struct {
	ends map[uuid.UUID]Status
	keys []string
}

// listEdges lists the edge objects of child (1 LIST per 1,000, so one
// for any fan-in within MaxParents). A malformed key is reported and
// skipped. A parent with two edges (it was replayed after ending) counts
// as completed if one says so, else as the first.
func (q *Queue) listEdges(ctx context.Context, child uuid.UUID) (edgeSet, error) {
	es := edgeSet{ends: map[uuid.UUID]Status{}}
	prefix, token := edgePrefix(child), ""
	for {
		page, err := q.s.List(ctx, store.ListParams{Prefix: prefix, Token: token})
		if err != nil {
			return es, fmt.Errorf("list the edges of task %s: %w", child, err)
		}
		for _, o := range page.Objects {
			c, p, st, err := ParseEdgeKey(o.Key)
			if err != nil || c != child {
				q.log.Warn("skipping a malformed edge object", "key", o.Key, "err", err)
				continue
			}
			es.keys = append(es.keys, o.Key)
			if prev, ok := es.ends[p]; !ok || (prev != StatusCompleted && st == StatusCompleted) {
				es.ends[p] = st
			}
		}
		if page.NextToken == "" {
			return es, nil
		}
		token = page.NextToken
	}
}

// unrecorded returns the ends of es that waiting task t does not record
// yet, among its own parents.
func (es edgeSet) unrecorded(t *Task) map[uuid.UUID]Status {
	out := map[uuid.UUID]Status{}
	for _, p := range t.Parents {
		if st, ok := es.ends[p.ID]; ok && p.Done == "" {
			out[p.ID] = st
		}
	}
	return out
}

// decides reports whether recording ends on waiting task t would release,
// cancel or fail it.
func decides(t *Task, ends map[uuid.UUID]Status) bool {
	c := t.Clone()
	for i := range c.Parents {
		if st, ok := ends[c.Parents[i].ID]; ok && c.Parents[i].Done == "" {
			c.Parents[i].Done = st
		}
	}
	return blocked(c) || allEnded(c)
}

// endTasks turns the ends of parents into what record takes: the
// parent's task where the child takes values from its output (input_from;
// read: 1 GET each, known ones from have), a stand-in with the id and the
// status elsewhere.
func (q *Queue) endTasks(ctx context.Context, child *Task, ends map[uuid.UUID]Status, have map[uuid.UUID]*Task) (map[uuid.UUID]*Task, error) {
	out := make(map[uuid.UUID]*Task, len(ends))
	for id, st := range ends {
		if t, ok := have[id]; ok {
			out[id] = t
			continue
		}
		named := false
		for _, src := range child.InputFrom {
			named = named || src.Parent == id
		}
		if !named || st != StatusCompleted {
			out[id] = &Task{ID: id, Status: st}
			continue
		}
		p, _, err := q.getTask(ctx, id)
		if err != nil {
			return nil, fmt.Errorf("read parent %s: %w", id, err)
		}
		out[id] = q.resolveArchived(ctx, p)
	}
	return out, nil
}

// recordEnds records ends on waiting child (see record), then, for a
// child with more than edgeFanIn parents: when it was decided, removes its
// edge objects; when it still waits, takes in the ends other parents left as edge objects
// (1 LIST): when those decide it, a second write records them, and the
// edge objects it recorded are removed. A writer that records an end on
// the child lists the edges after its write, and a parent that leaves an
// edge reads the child after writing it, so of any two the later sees
// both: the last end is never left unseen (see doc.go, "Dependencies").
func (q *Queue) recordEnds(ctx context.Context, child uuid.UUID, base *Task, etag string, ends map[uuid.UUID]*Task) (*Task, error) {
	next, err := q.record(ctx, child, base, etag, ends)
	if err != nil || next == nil || !hasEdges(next) {
		return next, err
	}
	es, err := q.listEdges(ctx, child)
	if err != nil {
		return next, err
	}
	if next.Status != StatusWaiting {
		// Decided (a parent that ended badly): the edge objects are
		// of no more use; a replay that brings the child back reads
		// the parents again.
		q.dropEdges(ctx, es.keys)
		return next, nil
	}
	return q.settleEdges(ctx, next, "", es, ends)
}

// settleEdges records the ends es holds on waiting task t (as read with
// etag, or "" to read it again) when they decide it, then removes the
// edge objects (the child records them now).
func (q *Queue) settleEdges(ctx context.Context, t *Task, etag string, es edgeSet, have map[uuid.UUID]*Task) (*Task, error) {
	more := es.unrecorded(t)
	if len(more) == 0 || !decides(t, more) {
		return t, nil
	}
	ends, err := q.endTasks(ctx, t, more, have)
	if err != nil {
		return t, err
	}
	var base *Task
	if etag != "" {
		base = t // as read, with etag; else read again
	}
	next, err := q.record(ctx, t.ID, base, etag, ends)
	if err != nil {
		return next, err
	}
	if next != nil && next.Status != StatusWaiting {
		q.dropEdges(ctx, es.keys)
	}
	return next, nil
}

// dropEdges removes edge objects a write recorded on their child (best
// effort: one left behind is ignored once the child records its parent's
// end, and removed with the child's next decision).
func (q *Queue) dropEdges(ctx context.Context, keys []string) {
	forEach(len(keys), edgeParallelism, func(i int) {
		if err := q.s.Delete(ctx, keys[i], store.Condition{}); err != nil && !errors.Is(err, store.ErrNotFound) {
			q.log.Debug("edge object not removed", "key", keys[i], "err", err)
		}
	})
}

// edgeFanIn is the fan-in past which parents' ends reach their child as
// edge objects: a child with at most this many parents is written by each
// end (its parent list is at most about 1 KB, and at most that many
// writers race on it).
const edgeFanIn = 16

// EdgeFanIn is edgeFanIn for the other writers of a parent's end (the web
// UI follows the same rule).
const EdgeFanIn = edgeFanIn

// hasEdges reports whether parents' ends may reach t as edge objects.
func hasEdges(t *Task) bool { return len(t.Parents) > edgeFanIn }

// endOnChild tells waiting task child that parent has ended. When the
// child has at most edgeFanIn parents, or its object shows this end
// decides it (the last parent left, or one that ended badly and decides
// by on_parent_failure), the end is written on the child (1 GET + 1 PUT).
// Otherwise the end
// is an edge object (1 PUT of an empty object, whatever the fan-in), then
// the child's edges are listed (1 LIST) and the child read again (1 GET):
// the writer that finds every end there records them all in one write,
// which releases the child. So a parent's end writes O(1) requests and
// bytes however many parents the child has.
func (q *Queue) endOnChild(ctx context.Context, parent *Task, child uuid.UUID) error {
	st, ok := ended(parent)
	if !ok {
		return nil
	}
	base, etag, err := q.getTask(ctx, child)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(base.Parents, func(p Parent) bool { return p.ID == parent.ID })
	if base.Status != StatusWaiting || i < 0 || base.Parents[i].Done != "" {
		return nil
	}
	have := map[uuid.UUID]*Task{parent.ID: parent}
	if !hasEdges(base) || decides(base, map[uuid.UUID]Status{parent.ID: st}) {
		_, err := q.recordEnds(ctx, child, base, etag, have)
		return err
	}
	key := EdgeKey(child, parent.ID, st)
	if _, err := q.s.Put(ctx, key, nil, store.Condition{}); err != nil {
		return fmt.Errorf("write edge %s: %w", key, err)
	}
	es, err := q.listEdges(ctx, child)
	if err != nil {
		return err
	}
	cur, etag, err := q.getTask(ctx, child)
	if err != nil {
		return err
	}
	if cur.Status != StatusWaiting {
		return nil
	}
	_, err = q.settleEdges(ctx, cur, etag, es, have)
	return err
}

// backgroundChildren is the fan-out past which a parent's end is told to
// its children in the background: up to it, in one round of parallel
// writes before the parent's write returns.
const backgroundChildren = edgeParallelism

// tellTimeout bounds how long the writer of a parent's end keeps telling
// its children (2 minutes, plus 20 ms per child past the first 1,000):
// what is left then is the sweeper's (see doc.go, "Dependencies").
func tellTimeout(children int) time.Duration {
	return 2*time.Minute + time.Duration(max(0, children-1000))*20*time.Millisecond
}

// background runs the work a landed write owes other tasks after the
// write returned; Settle waits for it.
type background struct {
	wg sync.WaitGroup
}

func (b *background) run(fn func()) {
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		fn()
	}()
}

// Settle waits until the children of the parents that ended through this
// handle have been told (see doc.go, "Dependencies": a parent with more
// than 16 children tells them in the background after its write
// returned), or until ctx ends. A process that stops without it leaves
// the rest to the sweeper.
func (q *Queue) Settle(ctx context.Context) error {
	done := make(chan struct{})
	go func() {
		q.bg.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
