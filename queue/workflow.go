package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/qo-queue/qo/store"
)

// WorkflowRef names the workflow and the step a task is.
type WorkflowRef struct {
	ID   uuid.UUID `json:"id"`
	Step string    `json:"step"`
}

func sameWorkflow(a, b *WorkflowRef) bool {
	return (a == nil) == (b == nil) && (a == nil || *a == *b)
}

// InputSource is one input_from entry of a task: a value of a parent's
// output that the handler gets in its input (see doc.go, "Workflows").
type InputSource struct {
	Parent uuid.UUID `json:"parent"`
	// Path is dot-separated object keys and array indexes into the
	// parent's output; "" is the whole output.
	Path string `json:"path"`
}

// Workflow is the record of a submitted workflow, written once before its
// tasks (see doc.go, "Workflows"): its steps and the task each became.
type Workflow struct {
	Format         int            `json:"format"`
	ID             uuid.UUID      `json:"id"`
	Name           string         `json:"name,omitempty"`
	IdempotencyKey string         `json:"idempotency_key"`
	Digest         string         `json:"digest"`
	CreatedAt      time.Time      `json:"created_at"`
	Steps          []WorkflowStep `json:"steps"`
}

// WorkflowStep is one step of a workflow record.
type WorkflowStep struct {
	Name   string    `json:"name"`
	Type   string    `json:"task_type"`
	TaskID uuid.UUID `json:"task_id"`
	After  []string  `json:"after,omitempty"`
}

// Step returns the step named name.
func (w *Workflow) Step(name string) (WorkflowStep, bool) {
	i := slices.IndexFunc(w.Steps, func(s WorkflowStep) bool { return s.Name == name })
	if i < 0 {
		return WorkflowStep{}, false
	}
	return w.Steps[i], true
}

// workflowName is the body of a name's pointer to its latest workflow.
type workflowName struct {
	Format    int       `json:"format"`
	Name      string    `json:"name"`
	ID        uuid.UUID `json:"workflow_id"`
	CreatedAt time.Time `json:"created_at"`
}

// Workflows holds the operations on the bucket's workflows (see doc.go,
// "Workflows"): submitting one (Submit), reading it by id or name (Get,
// Read, Refresh, Names) and cancelling it (Cancel).
type Workflows struct{ q *Queue }

// Workflows returns the queue's workflow operations.
func (q *Queue) Workflows() *Workflows { return &Workflows{q: q} }

// Key is the key of a workflow record: workflows/{shard}/{id}.json.
func (ws *Workflows) Key(id uuid.UUID) string { return ws.q.workflowKey(id) }

func (q *Queue) workflowKey(id uuid.UUID) string {
	return WorkflowsPrefix + q.shardOf(id) + "/" + id.String() + ".json"
}

// WorkflowNameKey is the key of a name's pointer to its latest workflow.
func WorkflowNameKey(name string) string { return WorkflowNamesPrefix + name + ".json" }

// workflowMarkerKey binds a workflow idempotency key to its workflow; it
// shares idempotency/ with the tasks' markers (a NUL first byte keeps the
// two apart: a task type is never empty).
func workflowMarkerKey(key string) string { return IdempotencyKey("", "workflow\x00"+key) }

// Submit submits a workflow (see doc.go, "Workflows"): a marker
// binding its idempotency key (create-only), its record (create-only),
// then its tasks, every task created only after the tasks that wait for
// it, so that a submit that stops half-way leaves nothing that runs
// before its children exist; a submit with the same key and steps finishes
// it and returns it with created=false (the same key with other steps is
// ErrIdempotencyMismatch). Each step costs what its task's submit costs
// (2 PUTs, plus the input's when offloaded), with no extra write per edge;
// the workflow adds 2 PUTs, 3 with a name. The error of a submit that
// stopped half-way says how to finish it.
func (ws *Workflows) Submit(ctx context.Context, spec *WorkflowSpec) (*Workflow, bool, error) {
	q := ws.q
	if spec == nil || len(spec.Steps) == 0 || spec.digest == "" {
		return nil, false, fmt.Errorf("submit workflow: %w", invalidInput("a workflow comes from DecodeWorkflow"))
	}
	levels, err := spec.levels()
	if err != nil {
		return nil, false, fmt.Errorf("submit workflow: %w", invalidInput("%v", err))
	}
	now := q.Now()
	// The submit hooks run on every step before anything is written; one
	// refusal refuses the workflow. Each step's After runs at the end.
	reqs := make([]SubmitRequest, len(spec.Steps))
	hooks := make([]*hooked, len(spec.Steps))
	stepCtx := make([]context.Context, len(spec.Steps))
	results := make([]stepResult, len(spec.Steps))
	defer func() {
		for i, h := range hooks {
			if h == nil {
				continue
			}
			r := results[i]
			if r.t == nil && r.err == nil {
				r.err = err // the workflow stopped before this step
			}
			h.afterSubmit(reqs[i], r.t, r.created, r.err)
		}
	}()
	for i, s := range spec.Steps {
		reqs[i] = s.Request.Resolve(now)
		if stepCtx[i], hooks[i], err = q.beforeSubmit(ctx, &reqs[i]); err != nil {
			err = fmt.Errorf("submit workflow: step %q: %w", s.Name, err)
			return nil, false, err
		}
	}
	w := &Workflow{Format: FormatVersion, ID: q.newID(now), Name: spec.Name, IdempotencyKey: spec.IdempotencyKey, Digest: spec.digest, CreatedAt: now}
	if w.IdempotencyKey == "" {
		w.IdempotencyKey = w.ID.String()
	}
	for i, s := range spec.Steps {
		w.Steps = append(w.Steps, WorkflowStep{Name: s.Name, Type: reqs[i].Type, TaskID: q.newID(now), After: s.After})
	}
	w, created, err := q.claimWorkflow(ctx, w)
	if err != nil {
		err = fmt.Errorf("submit workflow: %w", err)
		return nil, false, err
	}
	tasks, err := q.workflowTasks(w, spec, reqs)
	if err != nil {
		err = fmt.Errorf("submit workflow: %w", err)
		return nil, false, err
	}
	var mu sync.Mutex
	made, fresh := 0, 0
	for _, level := range levels {
		errs := make([]error, len(level))
		forEach(len(level), edgeParallelism, func(i int) {
			k := level[i]
			t := tasks[k]
			existing, err := q.create(stepCtx[k], t)
			switch {
			case err != nil:
				errs[i] = fmt.Errorf("step %q: %w", t.Workflow.Step, err)
				results[k].err = errs[i]
			case existing != nil && !sameWorkflow(existing.Workflow, t.Workflow):
				errs[i] = fmt.Errorf("step %q: task %s exists and is not this step: %w", t.Workflow.Step, t.ID, ErrConflict)
				results[k].err = errs[i]
			default:
				mu.Lock()
				made++
				if existing == nil {
					fresh++
					results[k] = stepResult{t: t, created: true}
				} else {
					results[k] = stepResult{t: existing}
				}
				mu.Unlock()
			}
		})
		if err = errors.Join(errs...); err != nil {
			err = fmt.Errorf("submit workflow %s: %w (%d of %d steps exist and none of the rest runs before they do; submit the same file again with idempotency key %q to finish it)",
				w.ID, err, made, len(w.Steps), w.IdempotencyKey)
			return w, created, err
		}
	}
	// The name moves to this workflow once every step exists, by the
	// submit that created the last of them (a mere repeat leaves it).
	if w.Name != "" && (created || fresh > 0) {
		body, err := json.Marshal(workflowName{Format: FormatVersion, Name: w.Name, ID: w.ID, CreatedAt: w.CreatedAt})
		if err == nil {
			_, err = q.s.Put(ctx, WorkflowNameKey(w.Name), body, store.Condition{})
		}
		if err != nil {
			return w, created, fmt.Errorf("submit workflow %s: every step exists, but the name %q was not pointed at it (use the id): %w", w.ID, w.Name, err)
		}
	}
	return w, created, nil
}

// claimWorkflow binds w's idempotency key to w and writes its record, or
// finds the workflow the key made before (created=false).
func (q *Queue) claimWorkflow(ctx context.Context, w *Workflow) (*Workflow, bool, error) {
	key := workflowMarkerKey(w.IdempotencyKey)
	body, err := json.Marshal(idempotencyRecord{Format: FormatVersion, TaskID: w.ID, Key: w.IdempotencyKey, CreatedAt: w.CreatedAt})
	if err != nil {
		return nil, false, err
	}
	if _, perr := q.s.Put(ctx, key, body, store.CreateOnly); perr != nil {
		if IsDefinite(perr) {
			return nil, false, fmt.Errorf("write idempotency marker: %w", perr)
		}
		rec, err := q.readMarker(ctx, key)
		if err != nil {
			return nil, false, fmt.Errorf("write idempotency marker: %w (re-read: %w)", perr, err)
		}
		if rec.TaskID != w.ID {
			prev, err := q.readWorkflow(ctx, rec.TaskID)
			switch {
			case err == nil:
				if prev.Digest != w.Digest {
					return nil, false, fmt.Errorf("%w: key %q already made workflow %s with other steps", ErrIdempotencyMismatch, w.IdempotencyKey, prev.ID)
				}
				return prev, false, nil
			case !errors.Is(err, ErrNotFound):
				return nil, false, err
			}
			// The first submit died between its marker and its record:
			// finish it under the id the marker gave out (no task of it
			// exists: they are written after the record).
			w.ID = rec.TaskID
		}
	}
	body, err = json.Marshal(w)
	if err != nil {
		return nil, false, err
	}
	if _, perr := q.s.Put(ctx, q.workflowKey(w.ID), body, store.CreateOnly); perr != nil {
		if IsDefinite(perr) {
			return nil, false, fmt.Errorf("write workflow record: %w", perr)
		}
		prev, err := q.readWorkflow(ctx, w.ID)
		if err != nil {
			return nil, false, fmt.Errorf("write workflow record: %w (re-read: %w)", perr, err)
		}
		if prev.Digest != w.Digest {
			return nil, false, fmt.Errorf("%w: workflow %s has other steps", ErrIdempotencyMismatch, prev.ID)
		}
		return prev, prev.CreatedAt.Equal(w.CreatedAt), nil
	}
	return w, true, nil
}

// stepResult is what the submit of one workflow step gave, for its hooks.
type stepResult struct {
	t       *Task
	created bool
	err     error
}

// workflowTasks builds the task of each step of w from its request (spec
// and reqs in the same order).
func (q *Queue) workflowTasks(w *Workflow, spec *WorkflowSpec, reqs []SubmitRequest) ([]*Task, error) {
	if len(w.Steps) != len(spec.Steps) {
		return nil, fmt.Errorf("workflow %s has %d steps, the file %d: %w", w.ID, len(w.Steps), len(spec.Steps), ErrIdempotencyMismatch)
	}
	ids := map[string]uuid.UUID{}
	for _, s := range w.Steps {
		ids[s.Name] = s.TaskID
	}
	children := map[string][]uuid.UUID{}
	for i, s := range spec.Steps {
		for _, a := range s.After {
			children[a] = append(children[a], w.Steps[i].TaskID)
		}
	}
	tasks := make([]*Task, len(spec.Steps))
	for i, s := range spec.Steps {
		if len(children[s.Name]) > MaxChildren {
			return nil, invalidInput("step %q has %d children (at most %d)", s.Name, len(children[s.Name]), MaxChildren)
		}
		// The step's parents are names here, its policy for them is set
		// below once they are ids: the spec's rule that a policy needs
		// parents is the workflow file's to check (see decodeStep).
		r := reqs[i]
		r.OnParentFailure = ""
		t, err := q.newTask(r)
		if err != nil {
			return nil, fmt.Errorf("step %q: %w", s.Name, err)
		}
		t.ID = w.Steps[i].TaskID
		t.Shard = q.shardOf(t.ID)
		t.Workflow = &WorkflowRef{ID: w.ID, Step: s.Name}
		t.Children = children[s.Name]
		if len(s.After) > 0 {
			if t.OnParentFailure, err = ParseParentFailure(string(reqs[i].OnParentFailure)); err != nil {
				return nil, fmt.Errorf("step %q: %w", s.Name, err)
			}
			for _, a := range s.After {
				t.Parents = append(t.Parents, Parent{ID: ids[a]})
			}
			t.Status = StatusWaiting
		}
		for f, from := range s.InputFrom {
			step, path, _ := parseFrom(from)
			if t.InputFrom == nil {
				t.InputFrom = map[string]InputSource{}
			}
			t.InputFrom[f] = InputSource{Parent: ids[step], Path: path}
		}
		if err := ValidateTransition(nil, t); err != nil {
			return nil, fmt.Errorf("step %q: %w", s.Name, err)
		}
		tasks[i] = t
	}
	return tasks, nil
}

// readWorkflow reads a workflow record by id (1 GET).
func (q *Queue) readWorkflow(ctx context.Context, id uuid.UUID) (*Workflow, error) {
	key := q.workflowKey(id)
	obj, err := q.getLimited(ctx, key, maxWorkflowRecord)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("workflow %s: %w (%w)", id, ErrNotFound, err)
	}
	if err != nil {
		return nil, fmt.Errorf("read workflow %s: %w", id, err)
	}
	var w Workflow
	if err := json.Unmarshal(obj.Body, &w); err != nil || w.Format != FormatVersion || w.ID != id || len(w.Steps) == 0 {
		return nil, &MalformedError{Key: key, Err: fmt.Errorf("not a workflow record of %s (%v)", id, err)}
	}
	return &w, nil
}

// Get reads a workflow by id, or by name (the latest workflow
// submitted with it): 1 GET, 2 by name.
func (ws *Workflows) Get(ctx context.Context, ref string) (*Workflow, error) {
	q := ws.q
	if id, err := uuid.Parse(ref); err == nil {
		return q.readWorkflow(ctx, id)
	}
	if err := ValidateWorkflowName("workflow name", ref); err != nil {
		return nil, fmt.Errorf("workflow %q: %w (give a workflow id or name)", ref, err)
	}
	obj, err := q.getLimited(ctx, WorkflowNameKey(ref), maxSmallObject)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("no workflow named %q: %w (qo workflow list shows the names)", ref, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("read workflow name %q: %w", ref, err)
	}
	var n workflowName
	if err := json.Unmarshal(obj.Body, &n); err != nil || n.ID == uuid.Nil {
		return nil, &MalformedError{Key: WorkflowNameKey(ref), Err: fmt.Errorf("not a workflow name pointer (%v)", err)}
	}
	return q.readWorkflow(ctx, n.ID)
}

// WorkflowSummary is one name of Workflows.Names: the latest workflow
// submitted with it.
type WorkflowSummary struct {
	Name      string    `json:"name"`
	ID        uuid.UUID `json:"id"`
	CreatedAt time.Time `json:"created_at"`
}

// Names lists the workflow names and the latest workflow of each,
// up to limit (0: 1000): a LIST page and one GET per name, whatever the
// number of workflows ever submitted.
func (ws *Workflows) Names(ctx context.Context, limit int) ([]WorkflowSummary, error) {
	q := ws.q
	if limit <= 0 || limit > 1000 {
		limit = 1000
	}
	page, err := q.s.List(ctx, store.ListParams{Prefix: WorkflowNamesPrefix, Limit: limit})
	if err != nil {
		return nil, fmt.Errorf("list workflow names: %w", err)
	}
	out := make([]WorkflowSummary, len(page.Objects))
	keep := make([]bool, len(page.Objects))
	forEach(len(page.Objects), edgeParallelism, func(i int) {
		obj, err := q.getLimited(ctx, page.Objects[i].Key, maxSmallObject)
		if err != nil {
			q.log.Debug("workflow name unreadable", "key", page.Objects[i].Key, "err", err)
			return
		}
		var n workflowName
		if json.Unmarshal(obj.Body, &n) != nil || n.ID == uuid.Nil {
			q.log.Warn("malformed workflow name pointer skipped", "key", page.Objects[i].Key)
			return
		}
		out[i], keep[i] = WorkflowSummary{Name: n.Name, ID: n.ID, CreatedAt: n.CreatedAt}, true
	})
	var res []WorkflowSummary
	for i := range out {
		if keep[i] {
			res = append(res, out[i])
		}
	}
	return res, nil
}

// Read reads a workflow (see Get) and each step's task
// (1 GET per step, in parallel): the cost is the workflow's size, never
// the bucket's history.
func (ws *Workflows) Read(ctx context.Context, ref string) (*WorkflowView, error) {
	q := ws.q
	w, err := ws.Get(ctx, ref)
	if err != nil {
		return nil, err
	}
	v := &WorkflowView{Workflow: w, Tasks: make([]*Task, len(w.Steps)), Problems: map[string]string{}}
	problems := make([]string, len(w.Steps))
	var errs []error
	var mu sync.Mutex
	forEach(len(w.Steps), edgeParallelism, func(i int) {
		t, _, err := q.getTask(ctx, w.Steps[i].TaskID)
		var m *MalformedError
		switch {
		case errors.Is(err, ErrNotFound):
			problems[i] = "its task does not exist (the submit stopped half-way, or retention expired it); to finish a submit, submit the file again with idempotency key " + strconv.Quote(w.IdempotencyKey)
		case errors.As(err, &m):
			problems[i] = "its task object is malformed: " + m.Error()
		case err != nil:
			mu.Lock()
			errs = append(errs, fmt.Errorf("step %q: %w", w.Steps[i].Name, err))
			mu.Unlock()
		default:
			v.Tasks[i] = t
		}
	})
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("read workflow %s: %w", w.ID, err)
	}
	for i, p := range problems {
		if p != "" {
			v.Problems[w.Steps[i].Name] = p
		}
	}
	v.summarize()
	return v, nil
}

// Refresh reads again the tasks of the steps that have not ended (1 GET
// each): what a wait loop pays per round.
func (ws *Workflows) Refresh(ctx context.Context, v *WorkflowView) error {
	q := ws.q
	var errs []error
	var mu sync.Mutex
	forEach(len(v.Tasks), edgeParallelism, func(i int) {
		if t := v.Tasks[i]; t != nil {
			if _, done := ended(t); done {
				return
			}
		}
		t, _, err := q.getTask(ctx, v.Workflow.Steps[i].TaskID)
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			if !errors.Is(err, ErrNotFound) {
				errs = append(errs, fmt.Errorf("step %q: %w", v.Workflow.Steps[i].Name, err))
			}
			return
		}
		v.Tasks[i] = t
		delete(v.Problems, v.Workflow.Steps[i].Name)
	})
	v.summarize()
	return errors.Join(errs...)
}

// Cancel cancels every step of a workflow that has not ended
// (running ones are asked to stop, as Cancel does), children before their
// parents so that each carries the operator's reason, and returns how many
// it cancelled; steps that ended meanwhile are left as they are.
func (ws *Workflows) Cancel(ctx context.Context, ref, reason string) (int, error) {
	q := ws.q
	v, err := ws.Read(ctx, ref)
	if err != nil {
		return 0, err
	}
	// Deepest first: a child is always deeper than each of its parents.
	var levels [][]int
	for i, d := range v.Workflow.Depths() {
		for len(levels) <= d {
			levels = append(levels, nil)
		}
		levels[d] = append(levels[d], i)
	}
	slices.Reverse(levels)
	var mu sync.Mutex
	n := 0
	var errs []error
	for _, level := range levels {
		forEach(len(level), edgeParallelism, func(j int) {
			i := level[j]
			t := v.Tasks[i]
			if t == nil {
				return
			}
			if _, done := ended(t); done {
				return
			}
			_, err := q.Cancel(ctx, t.ID, reason)
			mu.Lock()
			defer mu.Unlock()
			var te *TransitionError
			switch {
			case err == nil:
				n++
			case errors.As(err, &te):
				// it ended meanwhile
			default:
				errs = append(errs, fmt.Errorf("step %q: %w", v.Workflow.Steps[i].Name, err))
			}
		})
	}
	if err := errors.Join(errs...); err != nil {
		return n, fmt.Errorf("cancel workflow %s: %w", v.Workflow.ID, err)
	}
	return n, nil
}
