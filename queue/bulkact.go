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

// Bulk operator actions: cancel, replay or archive many tasks, named by id
// or found by a filter. Each task gets exactly the single-task action (the
// conditional write of Cancel, Replay, Archive), so a task that changed
// meanwhile is re-read and the rule applied again, never forced; a bulk
// run is safe to repeat (what is already done is skipped, with why).
//
// It runs in two steps so its cost can be shown before anything is
// written: PlanBulkAction reads the tasks (GET by id, or the listing of
// the filter, page by page) and applies the rule in memory; ActPlan.Run
// writes each planned task with the ETag it was read with (no second GET).

// Bounds of bulk actions.
const (
	// DefaultActConcurrency is the number of task writes in flight.
	DefaultActConcurrency = 16
	// MaxActPlan bounds the tasks one plan holds; a filter matching more
	// is planned up to it (ActPlan.Partial), and running again acts on
	// the rest.
	MaxActPlan = 100_000
)

// BulkActions are the operator actions a bulk run can take.
var BulkActions = []string{OpCancel, OpReplay, OpArchive}

// ActFilter selects tasks as List does.
type ActFilter struct {
	// Statuses to walk; empty: every status the action applies to
	// (OperatorFrom).
	Statuses []Status
	Type     string
	Shard    string
	// Since bounds the statuses listed by creation window (see List).
	Since time.Time
}

// BulkActionRequest says what to act on.
type BulkActionRequest struct {
	Op     string // OpCancel, OpReplay or OpArchive
	Reason string // kept in cancel_reason by OpCancel
	// IDs names the tasks; or Filter finds them. Exactly one is set.
	IDs    []uuid.UUID
	Filter *ActFilter
}

// ActSkip is a task a bulk action left alone, or failed on, and why.
type ActSkip struct {
	ID     uuid.UUID `json:"id"`
	Status Status    `json:"status,omitempty"` // as found ("" when not read)
	Reason string    `json:"reason"`
}

// ActPlan is what a bulk action will do: the tasks it will write, the ones
// it skips and why, what finding them cost and what the writes will cost.
type ActPlan struct {
	Op      string
	Reason  string
	Skipped []ActSkip
	// Found is the requests that finding the tasks made.
	Found store.Counts
	// Cost is the requests the run will make (the task PUT and the index
	// entries of each write; a task changed meanwhile costs a GET more).
	Cost store.Counts
	// Partial: the filter matched more than MaxActPlan tasks, or a listing
	// ended early; running again acts on the rest.
	Partial bool
	// ByStatus counts the planned tasks by their status when read.
	ByStatus map[Status]int
	items    []actItem
	q        *Queue // the queue the plan read, which Run writes
}

type actItem struct {
	task *Task
	etag string
}

// Len is the number of tasks the plan writes.
func (p *ActPlan) Len() int { return len(p.items) }

// IDs lists the tasks the plan writes, in the order found.
func (p *ActPlan) IDs() []uuid.UUID {
	ids := make([]uuid.UUID, len(p.items))
	for i, it := range p.items {
		ids[i] = it.task.ID
	}
	return ids
}

// Summary says in one line what the plan does and costs, e.g.
// "cancel 500 tasks: 500 PUT + 500 DELETE (finding them took 1 LIST + 500 GET)".
func (p *ActPlan) Summary() string {
	n := len(p.items)
	s := fmt.Sprintf("%s %d task%s: %s", p.Op, n, plural(n), FormatCounts(p.Cost))
	if p.Found.Total(store.OpList)+p.Found.Total(store.OpGet) > 0 {
		s += fmt.Sprintf(" (finding them took %s)", FormatCounts(p.Found))
	}
	if len(p.Skipped) > 0 {
		s += fmt.Sprintf("; %d skipped", len(p.Skipped))
	}
	if p.Partial {
		s += fmt.Sprintf("; more tasks match than one run plans (%d): run again for the rest", MaxActPlan)
	}
	return s
}

// Dollars is what the plan's requests (finding and writing) cost at prices.
func (p *ActPlan) Dollars(prices store.Prices) float64 {
	return p.Found.Add(p.Cost).Cost(prices)
}

// FormatCounts writes request counts by kind: "1 LIST + 500 GET + 500 PUT".
func FormatCounts(c store.Counts) string {
	var parts []string
	for _, op := range []store.Op{store.OpList, store.OpGet, store.OpHead, store.OpPut, store.OpDelete, store.OpListVersions, store.OpOther} {
		if n := c.Total(op); n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, op))
		}
	}
	if len(parts) == 0 {
		return "no request"
	}
	return strings.Join(parts, " + ")
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// PlanBulkAction reads the tasks req names or its filter finds and applies
// the action's rule to each in memory: nothing is written. A task is
// planned once however often it is named or listed. Tasks the rule refuses
// or that the action would not change are skipped with the reason; a task
// that does not exist or is malformed too. Cost: a GET per id; for a
// filter, List's cost for every status walked (1 LIST per 1,000 index
// entries or window keys, 1 GET per task listed), page by page, stopping
// at MaxActPlan tasks.
func (q *Queue) PlanBulkAction(ctx context.Context, req BulkActionRequest) (*ActPlan, error) {
	if !slices.Contains(BulkActions, req.Op) {
		return nil, invalidInput("bulk action %q: want one of %s", req.Op, strings.Join(BulkActions, ", "))
	}
	if (req.Filter == nil) == (len(req.IDs) == 0) {
		return nil, invalidInput("bulk %s: name the tasks by id or by a filter (status, type), not both and not neither", req.Op)
	}
	p := &ActPlan{Op: req.Op, Reason: req.Reason, ByStatus: map[Status]int{}, q: q}
	seen := map[uuid.UUID]bool{}
	consider := func(t *Task, etag string) {
		if seen[t.ID] {
			return
		}
		seen[t.ID] = true
		next, err := ApplyOperator(t, req.Op, req.Reason, "", q.Now(), "plan")
		switch {
		case err != nil:
			p.Skipped = append(p.Skipped, ActSkip{ID: t.ID, Status: t.Status, Reason: refusal(t, req.Op, err)})
		case next == nil:
			p.Skipped = append(p.Skipped, ActSkip{ID: t.ID, Status: t.Status, Reason: unchanged(t, req.Op)})
		default:
			put, del := IndexChanges(t, next)
			p.Cost.OK = addOp(p.Cost.OK, store.OpPut, 1+len(put))
			p.Cost.OK = addOp(p.Cost.OK, store.OpDelete, len(del))
			p.items = append(p.items, actItem{task: t, etag: etag})
			p.ByStatus[t.Status]++
		}
	}
	if len(req.IDs) > 0 {
		if len(req.IDs) > MaxActPlan {
			return nil, invalidInput("bulk %s: %d ids, at most %d in one run", req.Op, len(req.IDs), MaxActPlan)
		}
		ids := slices.Clone(req.IDs)
		tasks := make([]*Task, len(ids))
		etags := make([]string, len(ids))
		errs := make([]error, len(ids))
		forEach(len(ids), sweepParallelism, func(i int) {
			tasks[i], etags[i], errs[i] = q.getTask(ctx, ids[i])
		})
		p.Found.OK = addOp(p.Found.OK, store.OpGet, len(ids))
		for i, id := range ids {
			if errs[i] != nil {
				if seen[id] {
					continue
				}
				seen[id] = true
				if !errors.Is(errs[i], ErrNotFound) && !isMalformed(errs[i]) {
					return nil, fmt.Errorf("bulk %s: %w", req.Op, errs[i])
				}
				p.Skipped = append(p.Skipped, ActSkip{ID: id, Reason: readProblem(errs[i])})
				continue
			}
			consider(tasks[i], etags[i])
		}
		return p, nil
	}
	f := *req.Filter
	statuses := f.Statuses
	if len(statuses) == 0 {
		statuses = OperatorFrom(req.Op)
	}
	var counter *store.Counters
	var before store.Counts
	if c, ok := q.s.(store.Counted); ok {
		counter, before = c.Requests(), c.Requests().Snapshot()
	}
walk:
	for _, st := range statuses {
		cursor := ""
		for {
			page, err := q.List(ctx, ListQuery{Status: st, Type: f.Type, Shard: f.Shard, Since: f.Since, Limit: MaxListLimit, Cursor: cursor})
			if err != nil {
				return nil, fmt.Errorf("bulk %s: %w", req.Op, err)
			}
			for _, t := range page.Tasks {
				if len(p.items) >= MaxActPlan {
					p.Partial = true
					break walk
				}
				consider(t, page.etags[t.ID])
			}
			for _, m := range page.Malformed {
				p.Skipped = append(p.Skipped, ActSkip{Reason: "malformed: " + m.Error()})
			}
			if page.Cursor == "" {
				break
			}
			cursor = page.Cursor
		}
	}
	if counter != nil {
		p.Found = counter.Snapshot().Sub(before)
	}
	return p, nil
}

func addOp(m map[store.Op]int64, op store.Op, n int) map[store.Op]int64 {
	if n == 0 {
		return m
	}
	if m == nil {
		m = map[store.Op]int64{}
	}
	m[op] += int64(n)
	return m
}

func isMalformed(err error) bool {
	var m *MalformedError
	return errors.As(err, &m)
}

// readProblem words why a named task could not be planned.
func readProblem(err error) string {
	if errors.Is(err, ErrNotFound) {
		return "not found"
	}
	var m *MalformedError
	if errors.As(err, &m) {
		return "malformed: " + m.Error()
	}
	return err.Error()
}

// refusal words why the rule refuses op on t, e.g. "completed: only
// waiting, pending or running tasks can be cancelled".
func refusal(t *Task, op string, err error) string {
	var te *TransitionError
	if errors.As(err, &te) {
		return fmt.Sprintf("%s: %s", t.Status, te.Reason)
	}
	return err.Error()
}

// unchanged words why op would not change t.
func unchanged(t *Task, op string) string {
	if op == OpCancel && t.CancelRequested {
		return "running: cancellation already requested"
	}
	return fmt.Sprintf("%s: %s would change nothing", t.Status, op)
}

// ActOptions tune ActPlan.Run.
type ActOptions struct {
	// Concurrency is the number of writes in flight
	// (DefaultActConcurrency when 0, at most MaxBulkConcurrency).
	Concurrency int
	// Progress, when set, is called after each task with the number done
	// and the total; calls come one at a time.
	Progress func(done, total int)
}

// ActSummary is the outcome of a bulk action (the JSON of qo cancel,
// replay and archive on several tasks).
type ActSummary struct {
	Op     string      `json:"op"`
	DryRun bool        `json:"dry_run"`
	Done   []uuid.UUID `json:"done"` // written (with dry_run: would be)
	// Skipped: left alone, with why (already in the state, or a state the
	// action does not apply to, not found, changed meanwhile).
	Skipped []ActSkip `json:"skipped"`
	// Failed: the write failed (a storage error, or the run stopped).
	Failed   []ActSkip    `json:"failed"`
	Partial  bool         `json:"partial,omitempty"`
	Requests store.Counts `json:"requests"` // made (planned with dry_run), finding included
	Stopped  error        `json:"-"`
}

// DryRun is the summary of a plan that is not run.
func (p *ActPlan) DryRun() *ActSummary {
	return &ActSummary{Op: p.Op, DryRun: true, Done: p.IDs(), Skipped: append([]ActSkip{}, p.Skipped...),
		Failed: []ActSkip{}, Partial: p.Partial, Requests: p.Found.Add(p.Cost)}
}

// Run writes every task of the plan: the single-task action, applied
// to the version the plan read and written with If-Match on its ETag; a
// task changed meanwhile is read again and the rule applied again (so a
// task that ended meanwhile is skipped, "changed meanwhile", not forced).
// A storage error (the bucket unreachable, credentials refused) or the end
// of ctx stops the run: the tasks not written by then are failed with
// that reason, and running the same action again is safe.
func (p *ActPlan) Run(ctx context.Context, opt ActOptions) *ActSummary {
	q := p.q
	conc := opt.Concurrency
	if conc <= 0 {
		conc = DefaultActConcurrency
	}
	conc = min(conc, MaxBulkConcurrency)
	sum := &ActSummary{Op: p.Op, Done: []uuid.UUID{}, Skipped: append([]ActSkip{}, p.Skipped...), Failed: []ActSkip{}, Partial: p.Partial}
	var counter *store.Counters
	var before store.Counts
	if c, ok := q.s.(store.Counted); ok {
		counter, before = c.Requests(), c.Requests().Snapshot()
	}
	type outcome struct {
		done    bool
		skipped *ActSkip
		failed  *ActSkip
		started bool
	}
	out := make([]outcome, len(p.items))
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	var mu sync.Mutex
	var stopOnce sync.Once
	done := 0
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(conc, len(p.items)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				it := p.items[i]
				o := &out[i]
				o.started = true
				prev, err := q.actOn(ctx, it.task, it.etag, p.Op, p.Reason)
				switch {
				case err == nil && prev == nil:
					o.done = true
				case err == nil:
					o.skipped = &ActSkip{ID: it.task.ID, Status: prev.Status, Reason: "changed meanwhile: " + unchanged(prev, p.Op)}
				case errors.Is(err, ErrInvalidTransition):
					var te *TransitionError
					errors.As(err, &te)
					o.skipped = &ActSkip{ID: it.task.ID, Status: te.From, Reason: fmt.Sprintf("changed meanwhile: %s: %s", te.From, te.Reason)}
				case errors.Is(err, ErrNotFound):
					o.skipped = &ActSkip{ID: it.task.ID, Status: it.task.Status, Reason: "changed meanwhile: deleted"}
				default:
					o.failed = &ActSkip{ID: it.task.ID, Status: it.task.Status, Reason: err.Error()}
					if isStorageFailure(err) || ctx.Err() != nil {
						stopOnce.Do(func() {
							sum.Stopped = err
							stop()
						})
					}
				}
				if opt.Progress != nil {
					mu.Lock()
					done++
					opt.Progress(done, len(p.items))
					mu.Unlock()
				}
			}
		}()
	}
dispatch:
	for i := range p.items {
		if runCtx.Err() != nil {
			break // stopped: no task starts after that
		}
		select {
		case next <- i:
		case <-runCtx.Done():
			break dispatch
		}
	}
	close(next)
	wg.Wait()
	if sum.Stopped == nil && ctx.Err() != nil {
		sum.Stopped = ctx.Err()
	}
	for i, o := range out {
		switch {
		case o.done:
			sum.Done = append(sum.Done, p.items[i].task.ID)
		case o.skipped != nil:
			sum.Skipped = append(sum.Skipped, *o.skipped)
		case o.failed != nil:
			sum.Failed = append(sum.Failed, *o.failed)
		case !o.started:
			sum.Failed = append(sum.Failed, ActSkip{ID: p.items[i].task.ID, Status: p.items[i].task.Status,
				Reason: fmt.Sprintf("not attempted: the run stopped (%v); running it again is safe", sum.Stopped)})
		}
	}
	sum.Requests = p.Found
	if counter != nil {
		sum.Requests = sum.Requests.Add(counter.Snapshot().Sub(before))
	}
	return sum
}

// actOn applies op to base (read with etag) as the single-task action
// does. It returns nil when it wrote, or the current version when the
// action found nothing to change (another writer got there first).
func (q *Queue) actOn(ctx context.Context, base *Task, etag, op, reason string) (*Task, error) {
	res, err := q.apply(ctx, base, etag, mutation{op: op, rebase: true, change: operatorChange(op, reason, ActorFrom(ctx))})
	if err != nil {
		return nil, err
	}
	if res.next == res.prev {
		return res.next, nil
	}
	if op == OpReplay && res.next.Status == StatusWaiting {
		if _, _, err := q.register(ctx, res.next); err != nil {
			return nil, err
		}
	}
	return nil, nil
}
