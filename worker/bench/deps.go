package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store"
)

// Fan is one dependency shape measured in a fresh bucket: a fan-out (one
// parent, Edges children) or a fan-in (Edges parents, one child),
// submitted as a workflow (Workflows.Submit) or task by task with After.
type Fan struct {
	Shape string `json:"shape"` // fan-out | fan-in
	Via   string `json:"via"`   // workflow | after
	Edges int    `json:"edges"`
	// Submit is what submitting the edges cost: the whole workflow, or
	// the children (fan-out) or the child (fan-in) submitted with After.
	Submit FanPhase `json:"submit"`
	// End is the parents' end until every child is told (queue.Settle).
	// Fan-out: the parent's Complete, which returns after its own write,
	// its children told in the background (more than 16 of them).
	// Fan-in: every parent claimed and completed, 32 at a time, each end
	// an edge object or a write of the child (up to 16 parents).
	End FanPhase `json:"end"`
	// CompleteSeconds is the longest Complete call of a parent: until it
	// returned, not until its children were told.
	CompleteSeconds float64 `json:"complete_seconds"`
	// ReleaseMS is from the last parent's completed_at to the last
	// release the parents' ends made, both stamped by this process's
	// queue clock.
	ReleaseMS float64 `json:"release_ms"`
	// ReleasedByEnd counts the children the parents' ends released,
	// Released those pending at last (after the sweeper's pass, if one
	// was needed); Releases the released events of the fan-in child's
	// history (exactly 1 is right).
	ReleasedByEnd int `json:"released_by_end"`
	Released      int `json:"released"`
	Releases      int `json:"releases,omitempty"`
	// Unrecorded counts the parent ends no writer recorded on its child
	// (a write that gave up after its rebases, left to the sweeper);
	// Repair is the SweepWaiting pass that then recorded them.
	Unrecorded int       `json:"unrecorded"`
	Repair     *FanPhase `json:"repair,omitempty"`
	// SubmitErrors counts After submits whose child_added write gave up
	// (the child exists and waits; the sweeper registers it).
	SubmitErrors int `json:"submit_errors"`
	// BigBytes is the final size of the object every edge touches: the
	// fan-out's parent (its children list) or the fan-in's child (its
	// parents list). Every write of it carries all of it.
	BigBytes int `json:"big_object_bytes"`
}

// FanPhase is the cost of one phase of a Fan.
type FanPhase struct {
	Seconds float64 `json:"seconds"`
	// PerEdge is every request by kind (qo's counters: HTTP attempts,
	// refused ones included) over the edges.
	PerEdge map[store.Op]float64 `json:"requests_per_edge"`
	// RefusedPerEdge counts the writes that failed (a 412 from a lost
	// compare-and-swap, mostly), included in PerEdge.
	RefusedPerEdge float64 `json:"refused_per_edge"`
	// Bytes sent in PUT bodies and received in GET bodies, over the edges.
	PutBytesPerEdge float64 `json:"put_bytes_per_edge"`
	GetBytesPerEdge float64 `json:"get_bytes_per_edge"`
	// Reads and writes of the object every edge touches (see Fan.BigBytes),
	// refused writes included, and their bytes.
	BigWrites     int64 `json:"big_writes"`
	BigWriteBytes int64 `json:"big_write_bytes"`
	BigRefused    int64 `json:"big_refused"`
	BigReads      int64 `json:"big_reads"`
	BigReadBytes  int64 `json:"big_read_bytes"`
}

// meter counts the bytes of PUT and GET bodies, in total and on one
// watched key, on the way to the bucket.
type meter struct {
	Bucket
	watched                       atomic.Pointer[string]
	putBytes, getBytes            atomic.Int64
	bigPuts, bigPutBytes, bigRefs atomic.Int64
	bigGets, bigGetBytes          atomic.Int64
}

type meterCounts struct{ putBytes, getBytes, bigPuts, bigPutBytes, bigRefs, bigGets, bigGetBytes int64 }

func (m *meter) watch(key string) { m.watched.Store(&key) }

func (m *meter) isWatched(key string) bool {
	w := m.watched.Load()
	return w != nil && *w == key
}

func (m *meter) Put(ctx context.Context, key string, body []byte, cond store.Condition) (store.PutResult, error) {
	n := int64(len(body))
	m.putBytes.Add(n)
	res, err := m.Bucket.Put(ctx, key, body, cond)
	if m.isWatched(key) {
		m.bigPuts.Add(1)
		m.bigPutBytes.Add(n)
		if err != nil {
			m.bigRefs.Add(1)
		}
	}
	return res, err
}

func (m *meter) Get(ctx context.Context, key string) (*store.Object, error) {
	obj, err := m.Bucket.Get(ctx, key)
	if err == nil {
		n := int64(len(obj.Body))
		m.getBytes.Add(n)
		if m.isWatched(key) {
			m.bigGets.Add(1)
			m.bigGetBytes.Add(n)
		}
	}
	return obj, err
}

func (m *meter) counts() meterCounts {
	return meterCounts{m.putBytes.Load(), m.getBytes.Load(), m.bigPuts.Load(), m.bigPutBytes.Load(), m.bigRefs.Load(), m.bigGets.Load(), m.bigGetBytes.Load()}
}

// measure runs fn and returns what it cost, over edges.
func (m *meter) measure(edges int, fn func() error) (FanPhase, error) {
	before, mb := m.Requests().Snapshot(), m.counts()
	start := time.Now()
	err := fn()
	p := FanPhase{Seconds: time.Since(start).Seconds(), PerEdge: map[store.Op]float64{}}
	d, md := m.Requests().Snapshot().Sub(before), m.counts()
	e := float64(edges)
	for _, op := range store.Ops {
		if n := d.Total(op); n > 0 {
			p.PerEdge[op] = float64(n) / e
		}
		p.RefusedPerEdge += float64(d.Failed[op]) / e
	}
	p.PutBytesPerEdge = float64(md.putBytes-mb.putBytes) / e
	p.GetBytesPerEdge = float64(md.getBytes-mb.getBytes) / e
	p.BigWrites, p.BigWriteBytes, p.BigRefused = md.bigPuts-mb.bigPuts, md.bigPutBytes-mb.bigPutBytes, md.bigRefs-mb.bigRefs
	p.BigReads, p.BigReadBytes = md.bigGets-mb.bigGets, md.bigGetBytes-mb.bigGetBytes
	return p, err
}

// Task types of the dependency phases. Nothing runs them but the bench.
const (
	fanParentType = "bench-fan-parent"
	fanChildType  = "bench-fan-child"
)

// fanRequest is a task of the dependency phases: a short timeout, no
// input.
func fanRequest(typ string, after []uuid.UUID) queue.SubmitRequest {
	return queue.SubmitRequest{Type: typ, Timeout: time.Minute, After: after}
}

// runFan measures one shape (fan-out or fan-in) submitted one way
// (workflow or after) in the bucket b.
func runFan(ctx context.Context, b Bucket, shape, via string, edges int, log io.Writer) (Fan, error) {
	m := &meter{Bucket: b}
	q, err := queue.Open(ctx, m, queue.Options{Logger: quiet})
	if err != nil {
		return Fan{}, err
	}
	f := Fan{Shape: shape, Via: via, Edges: edges}
	var parents, children []uuid.UUID
	switch via {
	case "workflow":
		parents, children, err = submitFanWorkflow(ctx, m, q, &f)
	case "after":
		parents, children, err = submitFanAfter(ctx, m, q, &f)
	default:
		err = fmt.Errorf("unknown way %q", via)
	}
	if err != nil {
		return f, err
	}
	fmt.Fprintf(log, "bench: %s of %d via %s: submitted in %.1f s; ending the parents...\n", shape, edges, via, f.Submit.Seconds)
	var lastEnd time.Time
	var mu sync.Mutex
	f.End, err = m.measure(edges, func() error {
		err := drainParents(ctx, q, len(parents), func(t *queue.Task, took time.Duration) {
			mu.Lock()
			if t.CompletedAt != nil && t.CompletedAt.After(lastEnd) {
				lastEnd = *t.CompletedAt
			}
			f.CompleteSeconds = max(f.CompleteSeconds, took.Seconds())
			mu.Unlock()
		})
		if err != nil {
			return err
		}
		return q.Settle(ctx)
	})
	if err != nil {
		return f, err
	}
	// What the parents' ends released, and what their writers left to
	// the sweeper: parent ends not recorded on a child still waiting.
	lastRelease, err := released(ctx, q, children, &f)
	if err != nil {
		return f, err
	}
	f.ReleasedByEnd = f.Released
	if !lastRelease.IsZero() && !lastEnd.IsZero() {
		f.ReleaseMS = float64(lastRelease.Sub(lastEnd)) / float64(time.Millisecond)
	}
	if f.Unrecorded, err = unrecorded(ctx, q, children); err != nil {
		return f, err
	}
	if f.Unrecorded > 0 {
		fmt.Fprintf(log, "bench: %d parent ends were not recorded by their writers; a sweep of the waiting tasks records them...\n", f.Unrecorded)
		p, err := m.measure(edges, func() error { return sweepWaiting(ctx, q) })
		f.Repair = &p
		if err != nil {
			return f, err
		}
		f.Released, f.Releases = 0, 0
		if _, err := released(ctx, q, children, &f); err != nil {
			return f, err
		}
	}
	return f, nil
}

// fanShape returns how many parents and children a shape of edges has.
func fanShape(shape string, edges int) (parents, children int) {
	if shape == "fan-out" {
		return 1, edges
	}
	return edges, 1
}

// submitFanWorkflow submits the shape as one workflow and watches the
// object every edge touches.
func submitFanWorkflow(ctx context.Context, m *meter, q *queue.Queue, f *Fan) (parents, children []uuid.UUID, _ error) {
	np, nc := fanShape(f.Shape, f.Edges)
	var pnames []string
	steps := make([]map[string]any, 0, np+nc)
	for i := range np {
		name := fmt.Sprintf("p%d", i)
		pnames = append(pnames, name)
		steps = append(steps, map[string]any{"name": name, "type": fanParentType, "timeout_seconds": 60})
	}
	for i := range nc {
		steps = append(steps, map[string]any{"name": fmt.Sprintf("c%d", i), "type": fanChildType, "timeout_seconds": 60, "after": pnames})
	}
	doc, err := json.Marshal(map[string]any{"name": "bench-" + f.Shape, "steps": steps})
	if err != nil {
		return nil, nil, err
	}
	spec, err := queue.DecodeWorkflow(doc, queue.DefaultSubmitDefaults)
	if err != nil {
		return nil, nil, err
	}
	var w *queue.Workflow
	f.Submit, err = m.measure(f.Edges, func() error {
		var err error
		w, _, err = q.Workflows().Submit(ctx, spec)
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	for _, s := range w.Steps {
		if strings.HasPrefix(s.Name, "p") {
			parents = append(parents, s.TaskID)
		} else {
			children = append(children, s.TaskID)
		}
	}
	big := parents[0]
	if f.Shape == "fan-in" {
		big = children[0]
	}
	// The ids are Workflows.Submit's: the big object is watched from now on,
	// and its one create-only write counted here.
	m.watch(q.TaskKey(big))
	if err := countCreate(ctx, q, big, &f.Submit); err != nil {
		return nil, nil, err
	}
	return parents, children, nil
}

// countCreate counts the create-only write of task id, made before it
// could be watched, in p.
func countCreate(ctx context.Context, q *queue.Queue, id uuid.UUID, p *FanPhase) error {
	t, err := q.Get(ctx, id)
	if err != nil {
		return err
	}
	enc, err := queue.EncodeTask(t)
	if err != nil {
		return err
	}
	p.BigWrites++
	p.BigWriteBytes += int64(len(enc))
	return nil
}

// submitFanAfter submits the parents, then the children with After:
// only the children's submits are measured (the parents are plain tasks).
func submitFanAfter(ctx context.Context, m *meter, q *queue.Queue, f *Fan) (parents, children []uuid.UUID, _ error) {
	np, nc := fanShape(f.Shape, f.Edges)
	parents = make([]uuid.UUID, np)
	if err := parallel(np, 32, func(i int) error {
		t, _, err := q.Submit(ctx, fanRequest(fanParentType, nil))
		if err == nil {
			parents[i] = t.ID
		}
		return err
	}); err != nil {
		return nil, nil, err
	}
	children = make([]uuid.UUID, nc)
	if f.Shape == "fan-out" {
		m.watch(q.TaskKey(parents[0]))
	}
	var failed atomic.Int64
	var err error
	f.Submit, err = m.measure(f.Edges, func() error {
		return parallel(nc, 32, func(i int) error {
			t, _, err := q.Submit(ctx, fanRequest(fanChildType, parents))
			switch {
			case err == nil:
			case t != nil && errors.Is(err, queue.ErrConflict):
				// Created and waiting, but a child_added write gave up
				// after its rebases: the sweeper registers it.
				failed.Add(1)
			default:
				return err
			}
			children[i] = t.ID
			return nil
		})
	})
	f.SubmitErrors = int(failed.Load())
	if err != nil {
		return nil, nil, err
	}
	if f.Shape == "fan-in" {
		m.watch(q.TaskKey(children[0]))
		if err := countCreate(ctx, q, children[0], &f.Submit); err != nil {
			return nil, nil, err
		}
	}
	return parents, children, nil
}

// drainParents claims and completes the n pending parents, 32 at a time
// (as 4 workers x 8 would), calling done with each completed task and how
// long its Complete took.
func drainParents(ctx context.Context, q *queue.Queue, n int, done func(*queue.Task, time.Duration)) error {
	var completed atomic.Int64
	deadline := time.Now().Add(15 * time.Minute)
	for int(completed.Load()) < n {
		if time.Now().After(deadline) {
			return fmt.Errorf("only %d of %d parents completed in 15 minutes", completed.Load(), n)
		}
		entries, _, err := q.ListReady(ctx, queue.ReadyQuery{Types: []string{fanParentType}})
		if err != nil {
			return err
		}
		if len(entries) == 0 {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		if err := parallel(len(entries), 32, func(i int) error {
			l, err := q.Claim(ctx, entries[i], "bench-deps")
			if errors.Is(err, queue.ErrConflict) {
				return nil // a stale entry
			}
			if err != nil {
				return err
			}
			start := time.Now()
			t, err := q.Complete(ctx, l, json.RawMessage(`{"ok":true}`))
			if err != nil {
				return err
			}
			completed.Add(1)
			done(t, time.Since(start))
			return nil
		}); err != nil {
			return err
		}
	}
	return nil
}

// unrecorded counts the parent ends missing on children still waiting
// (every parent has completed by now).
func unrecorded(ctx context.Context, q *queue.Queue, children []uuid.UUID) (int, error) {
	var n atomic.Int64
	err := parallel(len(children), 32, func(i int) error {
		t, err := q.Get(ctx, children[i])
		if err != nil {
			return err
		}
		if t.Status == queue.StatusWaiting {
			n.Add(int64(t.ParentsLeft()))
		}
		return nil
	})
	return int(n.Load()), err
}

// sweepWaiting runs the sweeper's pass over every waiting task at once
// (no idle time), as the monitor's rounds would over time.
func sweepWaiting(ctx context.Context, q *queue.Queue) error {
	cursor := ""
	for {
		_, next, err := q.Recovery().SweepWaiting(ctx, cursor, 1000, 0)
		if err != nil {
			return err
		}
		if next == "" {
			return nil
		}
		cursor = next
	}
}

// released reads every child: f.Released counts the pending ones and
// f.BigBytes gets the size of the big object; for a fan-in, f.Releases
// counts the released events of the child's history. It returns the time
// of the last release.
func released(ctx context.Context, q *queue.Queue, children []uuid.UUID, f *Fan) (time.Time, error) {
	var mu sync.Mutex
	var last time.Time
	err := parallel(len(children), 32, func(i int) error {
		t, err := q.Get(ctx, children[i])
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		if t.Status == queue.StatusPending {
			f.Released++
		}
		if t.LastEvent == queue.EventReleased && t.UpdatedAt.After(last) {
			last = t.UpdatedAt
		}
		return nil
	})
	if err != nil {
		return last, err
	}
	big := children[0]
	if f.Shape == "fan-in" {
		hist, err := q.History(ctx, big)
		if err != nil {
			return last, err
		}
		for _, e := range hist {
			if e.Name == queue.EventReleased {
				f.Releases++
			}
		}
	} else {
		t, err := q.Get(ctx, big)
		if err != nil {
			return last, err
		}
		if len(t.Parents) != 1 {
			return last, fmt.Errorf("fan-out child %s has %d parents", big, len(t.Parents))
		}
		big = t.Parents[0].ID
	}
	t, err := q.Get(ctx, big)
	if err != nil {
		return last, err
	}
	enc, err := queue.EncodeTask(t)
	if err != nil {
		return last, err
	}
	f.BigBytes = len(enc)
	return last, nil
}
