package queue

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
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

// Limits of workflows and of what passes from parents to children.
const (
	MaxWorkflowSteps = 20000
	// MaxFromParent bounds one value a child takes from a parent's
	// output, and MaxFromParents all of them: they live in the child's
	// task object. Larger data is passed by reference (the parent
	// outputs where it put it).
	MaxFromParent  = 64 << 10
	MaxFromParents = 256 << 10
)

// takeFrom records on child t the values of its input_from that come
// from parent p, which completed (reading its output from data/ once when
// it was offloaded; outputs caches those reads across rebases). problem
// is why the child cannot run (a value too large, an output gone); err is
// a read that may work later.
func (q *Queue) takeFrom(ctx context.Context, t *Task, p *Task, outputs map[uuid.UUID]json.RawMessage) (problem string, _ error) {
	fields := make([]string, 0, len(t.InputFrom))
	for f, src := range t.InputFrom {
		if src.Parent == p.ID {
			fields = append(fields, f)
		}
	}
	if len(fields) == 0 {
		return "", nil
	}
	sort.Strings(fields)
	out := p.Output
	if p.OutputRef != nil {
		var ok bool
		if out, ok = outputs[p.ID]; !ok {
			b, err := q.readData(ctx, p.OutputRef)
			var m *MalformedError
			switch {
			case errors.As(err, &m) || errors.Is(err, ErrNotFound):
				return fmt.Sprintf("input_from %q: the output of parent %s cannot be read: %v", fields[0], p.ID, err), nil
			case err != nil:
				return "", fmt.Errorf("read the output of parent %s: %w", p.ID, err)
			}
			outputs[p.ID], out = b, b
		}
	}
	if t.FromParents == nil {
		t.FromParents = map[string]json.RawMessage{}
	}
	total := 0
	for _, v := range t.FromParents {
		total += len(v)
	}
	for _, f := range fields {
		v, err := pickJSON(out, t.InputFrom[f].Path)
		if err != nil {
			return fmt.Sprintf("input_from %q: the output of parent %s: %v", f, p.ID, err), nil
		}
		if len(v) > MaxFromParent {
			return fmt.Sprintf("input_from %q: the value is %d bytes (at most %d pass from a parent to a child): output a reference to the data instead", f, len(v), MaxFromParent), nil
		}
		total += len(v)
		if total > MaxFromParents {
			return fmt.Sprintf("input_from: the values taken from parents exceed %d bytes: output references to the data instead", MaxFromParents), nil
		}
		t.FromParents[f] = v
	}
	return "", nil
}

// pickJSON returns the value at path in doc: dot-separated object keys
// and array indexes, "" for the whole document. A path that doesn't lead
// anywhere gives null.
func pickJSON(doc json.RawMessage, path string) (json.RawMessage, error) {
	if len(doc) == 0 {
		return json.RawMessage("null"), nil
	}
	if path == "" {
		return compactJSON(doc)
	}
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("not valid JSON: %w", err)
	}
	for _, seg := range strings.Split(path, ".") {
		switch cur := v.(type) {
		case map[string]any:
			v = cur[seg]
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(cur) {
				return json.RawMessage("null"), nil
			}
			v = cur[i]
		default:
			return json.RawMessage("null"), nil
		}
	}
	return json.Marshal(v)
}

func compactJSON(b json.RawMessage) (json.RawMessage, error) {
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		return nil, fmt.Errorf("not valid JSON: %w", err)
	}
	return buf.Bytes(), nil
}

// HandlerInput is the input a handler gets: the task's input (read from
// data/ when offloaded) with the values taken from its parents' outputs
// (input_from) set as fields; a field whose parent did not complete is
// null.
func (q *Queue) HandlerInput(ctx context.Context, t *Task) (json.RawMessage, error) {
	in, err := q.LoadInput(ctx, t)
	if err != nil || len(t.InputFrom) == 0 {
		return in, err
	}
	fields := map[string]json.RawMessage{}
	if !isJSONNull(in) {
		if err := json.Unmarshal(in, &fields); err != nil {
			return nil, &MalformedError{Key: t.Key(), Err: fmt.Errorf("input_from needs an object input: %w", err)}
		}
	}
	for f := range t.InputFrom {
		if v, ok := t.FromParents[f]; ok {
			fields[f] = v
		} else {
			fields[f] = json.RawMessage("null")
		}
	}
	return json.Marshal(fields)
}

// WorkflowSpec is a decoded workflow file (see DecodeWorkflow).
type WorkflowSpec struct {
	Name string
	// IdempotencyKey makes the submit repeatable: the same key and the
	// same steps return the workflow the first submit made, and finish it
	// when that submit stopped half-way. Empty: SubmitWorkflow picks one.
	IdempotencyKey string
	Steps          []WorkflowStepSpec
	digest         string
}

// WorkflowStepSpec is one step of a workflow file.
type WorkflowStepSpec struct {
	Name string
	// After names the steps that run before this one (those named in
	// InputFrom included).
	After []string
	// InputFrom maps input fields to "STEP.output" or "STEP.output.PATH".
	InputFrom map[string]string
	Doc       SubmitDoc
}

// Workflow file fields.
var (
	WorkflowFields     = []string{"name", "idempotency_key", "steps"}
	WorkflowStepFields = []string{"name", "after", "input_from"} // and SubmitFields but idempotency_key
)

// ValidateWorkflowName checks a workflow or step name: the characters of
// a task type, at most 64.
func ValidateWorkflowName(what, s string) error { return validateName(what, s, 64) }

// DecodeWorkflow decodes and checks a workflow file: a JSON object with a
// name, an optional idempotency key and its steps, each a submit document
// (SubmitFields, def filling what it leaves out) with a name, the names of
// the steps it runs after and input_from. Every problem (an unknown step,
// a cycle, a repeated name) is an ErrInvalidInput that names the step.
func DecodeWorkflow(doc []byte, def SubmitDefaults) (*WorkflowSpec, error) {
	spec, err := decodeWorkflow(doc, def)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidInput, err)
	}
	return spec, nil
}

func decodeWorkflow(doc []byte, def SubmitDefaults) (*WorkflowSpec, error) {
	var top map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(doc))
	if err := dec.Decode(&top); err != nil {
		return nil, fmt.Errorf("workflow file: %s", jsonErrorText(err))
	}
	if top == nil {
		return nil, errors.New("workflow file: want a JSON object with steps, got null")
	}
	if dec.More() {
		return nil, errors.New("workflow file: more than one JSON value (want one object)")
	}
	if err := knownFields("workflow file", top, WorkflowFields); err != nil {
		return nil, err
	}
	spec := &WorkflowSpec{}
	var err error
	if spec.Name, err = stringField(top, "name"); err != nil {
		return nil, err
	}
	if spec.Name != "" {
		if err := ValidateWorkflowName("workflow name", spec.Name); err != nil {
			return nil, errors.New(inputText(err))
		}
	}
	if spec.IdempotencyKey, err = stringField(top, "idempotency_key"); err != nil {
		return nil, err
	}
	if len(spec.IdempotencyKey) > MaxIdempotencyKeyLen {
		return nil, fmt.Errorf("idempotency_key is %d bytes long (at most %d)", len(spec.IdempotencyKey), MaxIdempotencyKeyLen)
	}
	var steps []json.RawMessage
	if raw, ok := top["steps"]; !ok || isNull(raw) {
		return nil, errors.New(`workflow file: missing "steps" (a list of steps, each with a name and a type)`)
	} else if err := json.Unmarshal(raw, &steps); err != nil {
		return nil, errors.New(`"steps" must be a list of step objects`)
	}
	switch {
	case len(steps) == 0:
		return nil, errors.New(`"steps" is empty: a workflow needs at least one step`)
	case len(steps) > MaxWorkflowSteps:
		return nil, fmt.Errorf("%d steps (at most %d): split the workflow", len(steps), MaxWorkflowSteps)
	}
	byName := map[string]int{}
	for i, raw := range steps {
		st, err := decodeStep(raw, def)
		if err != nil {
			if st.Name != "" {
				return nil, fmt.Errorf("step %q: %w", st.Name, err)
			}
			return nil, fmt.Errorf("step %d: %w", i+1, err)
		}
		if _, dup := byName[st.Name]; dup {
			return nil, fmt.Errorf("step %q: the name is used twice (step names are unique)", st.Name)
		}
		byName[st.Name] = i
		spec.Steps = append(spec.Steps, st)
	}
	for _, st := range spec.Steps {
		for _, a := range st.After {
			if _, ok := byName[a]; !ok {
				return nil, fmt.Errorf("step %q: after %q: no such step (steps: %s)", st.Name, a, stepNames(spec.Steps))
			}
		}
	}
	if _, err := spec.levels(); err != nil {
		return nil, err
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, top["steps"]); err != nil {
		return nil, err
	}
	spec.digest = digest(compact.Bytes())
	return spec, nil
}

func knownFields(what string, fields map[string]json.RawMessage, known []string) error {
	names := make([]string, 0, len(fields))
	for k := range fields {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if !slices.Contains(known, k) {
			return fmt.Errorf("%s: unknown field %q (known: %s)", what, k, strings.Join(known, ", "))
		}
	}
	return nil
}

func stepNames(steps []WorkflowStepSpec) string {
	var names []string
	for _, s := range steps {
		names = append(names, s.Name)
	}
	if len(names) > 10 {
		names = append(names[:10], "...")
	}
	return strings.Join(names, ", ")
}

// decodeStep decodes one step: its own fields, then the rest as a submit
// document.
func decodeStep(raw json.RawMessage, def SubmitDefaults) (WorkflowStepSpec, error) {
	var st WorkflowStepSpec
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		return st, errors.New("want a JSON object with a name and a type")
	}
	name, err := stringField(fields, "name")
	if err != nil {
		return st, err
	}
	if name == "" {
		return st, errors.New(`missing "name" (each step has a unique name that others use in after and input_from)`)
	}
	if err := ValidateWorkflowName("step name", name); err != nil {
		return st, errors.New(inputText(err))
	}
	st.Name = name
	if _, ok := fields["idempotency_key"]; ok {
		return st, errors.New(`a step has no "idempotency_key": give the workflow one (its top-level "idempotency_key")`)
	}
	if raw, ok := fields["after"]; ok && !isNull(raw) {
		if err := json.Unmarshal(raw, &st.After); err != nil {
			return st, errors.New(`"after" must be a list of step names`)
		}
	}
	if raw, ok := fields["input_from"]; ok && !isNull(raw) {
		if err := json.Unmarshal(raw, &st.InputFrom); err != nil {
			return st, errors.New(`"input_from" must map input fields to "STEP.output" or "STEP.output.PATH"`)
		}
	}
	seen := map[string]bool{}
	for _, a := range st.After {
		if a == name {
			return st, errors.New("it runs after itself")
		}
		if seen[a] {
			return st, fmt.Errorf("after lists %q twice", a)
		}
		seen[a] = true
	}
	for _, f := range slices.Sorted(maps.Keys(st.InputFrom)) {
		parent, _, err := parseFrom(st.InputFrom[f])
		if f == "" {
			return st, errors.New("input_from has an empty field name")
		}
		if err != nil {
			return st, fmt.Errorf("input_from %q: %w", f, err)
		}
		if parent == name {
			return st, fmt.Errorf("input_from %q: a step cannot take its own output", f)
		}
		if !seen[parent] {
			st.After = append(st.After, parent) // taking a step's output means running after it
			seen[parent] = true
		}
	}
	if len(st.After) > MaxParents {
		return st, fmt.Errorf("%d parents (at most %d): fan in through intermediate steps", len(st.After), MaxParents)
	}
	rest := map[string]json.RawMessage{}
	for k, v := range fields {
		if !slices.Contains(WorkflowStepFields, k) {
			rest[k] = v
		}
	}
	policy, err := stringField(rest, "on_parent_failure")
	if err != nil {
		return st, err
	}
	if policy != "" && len(st.After) == 0 {
		return st, errors.New(`"on_parent_failure" on a step without parents (it only applies with after)`)
	}
	delete(rest, "on_parent_failure") // the submit document's check wants after, which here are names
	body, err := json.Marshal(rest)
	if err != nil {
		return st, err
	}
	if st.Doc, err = decodeSubmit(body, def); err != nil {
		return st, err
	}
	p, err := ParseParentFailure(policy)
	if err != nil {
		return st, errors.New(inputText(err))
	}
	if policy != "" {
		st.Doc.Request.OnParentFailure = p
	}
	if len(st.InputFrom) > 0 && !isJSONNull(st.Doc.Request.Input) && !bytes.HasPrefix(bytes.TrimSpace(st.Doc.Request.Input), []byte("{")) {
		return st, errors.New(`"input" must be an object (or absent) when the step has input_from: the values from parents become its fields`)
	}
	return st, nil
}

// parseFrom parses an input_from source, "STEP.output" or
// "STEP.output.PATH".
func parseFrom(s string) (step, path string, _ error) {
	step, rest, ok := strings.Cut(s, ".output")
	if !ok || step == "" || (rest != "" && (rest[0] != '.' || len(rest) == 1)) {
		return "", "", fmt.Errorf("%q: want STEP.output or STEP.output.PATH (e.g. extract.output.rows)", s)
	}
	return step, strings.TrimPrefix(rest, "."), nil
}

// levels orders the steps for creation: levels[0] are the steps without
// children, each next level the steps whose children are all in earlier
// ones, so that a task is created only after every task that waits for it.
// A cycle is an error naming its steps.
func (spec *WorkflowSpec) levels() ([][]int, error) {
	idx := map[string]int{}
	for i, s := range spec.Steps {
		idx[s.Name] = i
	}
	children := make([][]int, len(spec.Steps))
	for i, s := range spec.Steps {
		for _, a := range s.After {
			children[idx[a]] = append(children[idx[a]], i)
		}
	}
	height := make([]int, len(spec.Steps))
	state := make([]int8, len(spec.Steps)) // 0 new, 1 on the path, 2 done
	var path []int
	var visit func(i int) error
	visit = func(i int) error {
		switch state[i] {
		case 2:
			return nil
		case 1:
			from := slices.Index(path, i)
			var names []string
			for _, j := range append(path[from:], i) {
				names = append(names, spec.Steps[j].Name)
			}
			return fmt.Errorf("steps %s form a cycle (each runs after the one before it)", strings.Join(names, " -> "))
		}
		state[i] = 1
		path = append(path, i)
		for _, c := range children[i] {
			if err := visit(c); err != nil {
				return err
			}
			height[i] = max(height[i], height[c]+1)
		}
		path = path[:len(path)-1]
		state[i] = 2
		return nil
	}
	top := 0
	for i := range spec.Steps {
		if err := visit(i); err != nil {
			return nil, err
		}
		top = max(top, height[i])
	}
	levels := make([][]int, top+1)
	for i, h := range height {
		levels[h] = append(levels[h], i)
	}
	return levels, nil
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

// WorkflowKey is the key of a workflow record: workflows/{shard}/{id}.json.
func (q *Queue) WorkflowKey(id uuid.UUID) string {
	return WorkflowsPrefix + q.ShardOf(id) + "/" + id.String() + ".json"
}

// WorkflowNameKey is the key of a name's pointer to its latest workflow.
func WorkflowNameKey(name string) string { return WorkflowNamesPrefix + name + ".json" }

// workflowMarkerKey binds a workflow idempotency key to its workflow; it
// shares idempotency/ with the tasks' markers (a NUL first byte keeps the
// two apart: a task type is never empty).
func workflowMarkerKey(key string) string { return IdempotencyKey("", "workflow\x00"+key) }

// SubmitWorkflow submits a workflow (see doc.go, "Workflows"): a marker
// binding its idempotency key (create-only), its record (create-only),
// then its tasks, every task created only after the tasks that wait for
// it, so that a submit that stops half-way leaves nothing that runs
// before its children exist; a submit with the same key and steps finishes
// it and returns it with created=false (the same key with other steps is
// ErrIdempotencyMismatch). Each step costs what its task's submit costs
// (2 PUTs, plus the input's when offloaded), with no extra write per edge;
// the workflow adds 2 PUTs, 3 with a name. The error of a submit that
// stopped half-way says how to finish it.
func (q *Queue) SubmitWorkflow(ctx context.Context, spec *WorkflowSpec) (*Workflow, bool, error) {
	if spec == nil || len(spec.Steps) == 0 || spec.digest == "" {
		return nil, false, fmt.Errorf("submit workflow: %w", invalidInput("a workflow comes from DecodeWorkflow"))
	}
	levels, err := spec.levels()
	if err != nil {
		return nil, false, fmt.Errorf("submit workflow: %w", invalidInput("%v", err))
	}
	now := q.Now()
	w := &Workflow{Format: FormatVersion, ID: q.newID(now), Name: spec.Name, IdempotencyKey: spec.IdempotencyKey, Digest: spec.digest, CreatedAt: now}
	if w.IdempotencyKey == "" {
		w.IdempotencyKey = w.ID.String()
	}
	for _, s := range spec.Steps {
		w.Steps = append(w.Steps, WorkflowStep{Name: s.Name, Type: s.Doc.Request.Type, TaskID: q.newID(now), After: s.After})
	}
	w, created, err := q.claimWorkflow(ctx, w)
	if err != nil {
		return nil, false, fmt.Errorf("submit workflow: %w", err)
	}
	tasks, err := q.workflowTasks(w, spec, now)
	if err != nil {
		return nil, false, fmt.Errorf("submit workflow: %w", err)
	}
	var mu sync.Mutex
	made, fresh := 0, 0
	for _, level := range levels {
		errs := make([]error, len(level))
		forEach(len(level), edgeParallelism, func(i int) {
			t := tasks[level[i]]
			existing, err := q.create(ctx, t)
			switch {
			case err != nil:
				errs[i] = fmt.Errorf("step %q: %w", t.Workflow.Step, err)
			case existing != nil && !sameWorkflow(existing.Workflow, t.Workflow):
				errs[i] = fmt.Errorf("step %q: task %s exists and is not this step: %w", t.Workflow.Step, t.ID, ErrConflict)
			default:
				mu.Lock()
				made++
				if existing == nil {
					fresh++
				}
				mu.Unlock()
			}
		})
		if err := errors.Join(errs...); err != nil {
			return w, created, fmt.Errorf("submit workflow %s: %w (%d of %d steps exist and none of the rest runs before they do; submit the same file again with idempotency key %q to finish it)",
				w.ID, err, made, len(w.Steps), w.IdempotencyKey)
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
		if isDefinite(perr) {
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
	if _, perr := q.s.Put(ctx, q.WorkflowKey(w.ID), body, store.CreateOnly); perr != nil {
		if isDefinite(perr) {
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

// workflowTasks builds the task of each step of w (spec in the same
// order).
func (q *Queue) workflowTasks(w *Workflow, spec *WorkflowSpec, now time.Time) ([]*Task, error) {
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
		t, err := q.newTask(s.Doc.Resolve(now))
		if err != nil {
			return nil, fmt.Errorf("step %q: %w", s.Name, err)
		}
		t.ID = w.Steps[i].TaskID
		t.Shard = q.ShardOf(t.ID)
		t.Workflow = &WorkflowRef{ID: w.ID, Step: s.Name}
		t.Children = children[s.Name]
		if len(s.After) > 0 {
			if t.OnParentFailure, err = ParseParentFailure(string(s.Doc.Request.OnParentFailure)); err != nil {
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
	key := q.WorkflowKey(id)
	obj, err := q.s.Get(ctx, key)
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

// GetWorkflow reads a workflow by id, or by name (the latest workflow
// submitted with it): 1 GET, 2 by name.
func (q *Queue) GetWorkflow(ctx context.Context, ref string) (*Workflow, error) {
	if id, err := uuid.Parse(ref); err == nil {
		return q.readWorkflow(ctx, id)
	}
	if err := ValidateWorkflowName("workflow name", ref); err != nil {
		return nil, fmt.Errorf("workflow %q: %w (give a workflow id or name)", ref, err)
	}
	obj, err := q.s.Get(ctx, WorkflowNameKey(ref))
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

// WorkflowSummary is one name of WorkflowNames: the latest workflow
// submitted with it.
type WorkflowSummary struct {
	Name      string    `json:"name"`
	ID        uuid.UUID `json:"id"`
	CreatedAt time.Time `json:"created_at"`
}

// WorkflowNames lists the workflow names and the latest workflow of each,
// up to limit (0: 1000): a LIST page and one GET per name, whatever the
// number of workflows ever submitted.
func (q *Queue) WorkflowNames(ctx context.Context, limit int) ([]WorkflowSummary, error) {
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
		obj, err := q.s.Get(ctx, page.Objects[i].Key)
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

// WorkflowStatus is where a workflow stands, from its steps' statuses.
type WorkflowStatus string

// The workflow statuses.
const (
	// WorkflowIncomplete: a step's task does not exist (the submit
	// stopped half-way; submitting it again finishes it).
	WorkflowIncomplete WorkflowStatus = "incomplete"
	WorkflowRunning    WorkflowStatus = "running"   // a step waits, is pending or runs
	WorkflowCompleted  WorkflowStatus = "completed" // every step completed
	WorkflowFailed     WorkflowStatus = "failed"    // every step ended, one failed or expired
	WorkflowCancelled  WorkflowStatus = "cancelled" // every step ended, one was cancelled, none failed
)

// Ended reports whether no step of the workflow will run again without an
// operator.
func (s WorkflowStatus) Ended() bool {
	return s == WorkflowCompleted || s == WorkflowFailed || s == WorkflowCancelled
}

// WorkflowView is a workflow with its steps' tasks as read now.
type WorkflowView struct {
	Workflow *Workflow
	// Tasks holds each step's task, in the order of Workflow.Steps; nil
	// when it does not exist or could not be read (Problems says which).
	Tasks    []*Task
	Problems map[string]string // by step name
	Status   WorkflowStatus
	Counts   map[Status]int
	// EndedAt is when the last step ended, once the workflow has.
	EndedAt *time.Time
}

// ReadWorkflow reads a workflow (see GetWorkflow) and each step's task
// (1 GET per step, in parallel): the cost is the workflow's size, never
// the bucket's history.
func (q *Queue) ReadWorkflow(ctx context.Context, ref string) (*WorkflowView, error) {
	w, err := q.GetWorkflow(ctx, ref)
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

// SummarizeWorkflow makes a view of w from its steps' tasks as read
// elsewhere (nil where missing; problems by step name).
func SummarizeWorkflow(w *Workflow, tasks []*Task, problems map[string]string) *WorkflowView {
	v := &WorkflowView{Workflow: w, Tasks: tasks, Problems: problems}
	if v.Problems == nil {
		v.Problems = map[string]string{}
	}
	v.summarize()
	return v
}

// summarize sets Status, Counts and EndedAt from Tasks.
func (v *WorkflowView) summarize() {
	v.Counts = map[Status]int{}
	v.EndedAt = nil
	missing, running, failed, cancelled := 0, 0, 0, 0
	for _, t := range v.Tasks {
		if t == nil {
			missing++
			continue
		}
		v.Counts[t.Status]++
		st, done := ended(t)
		switch {
		case !done:
			running++
		case st == StatusFailed || st == StatusExpired:
			failed++
		case st == StatusCancelled:
			cancelled++
		}
		if done && t.CompletedAt != nil && (v.EndedAt == nil || t.CompletedAt.After(*v.EndedAt)) {
			v.EndedAt = cloneTime(t.CompletedAt)
		}
	}
	switch {
	case missing > 0:
		v.Status = WorkflowIncomplete
	case running > 0:
		v.Status = WorkflowRunning
	case failed > 0:
		v.Status = WorkflowFailed
	case cancelled > 0:
		v.Status = WorkflowCancelled
	default:
		v.Status = WorkflowCompleted
	}
	if !v.Status.Ended() {
		v.EndedAt = nil
	}
}

// Refresh reads again the tasks of the steps that have not ended (1 GET
// each): what a wait loop pays per round.
func (q *Queue) Refresh(ctx context.Context, v *WorkflowView) error {
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

// CancelWorkflow cancels every step of a workflow that has not ended
// (running ones are asked to stop, as Cancel does), children before their
// parents so that each carries the operator's reason, and returns how many
// it cancelled; steps that ended meanwhile are left as they are.
func (q *Queue) CancelWorkflow(ctx context.Context, ref, reason string) (int, error) {
	v, err := q.ReadWorkflow(ctx, ref)
	if err != nil {
		return 0, err
	}
	spec := &WorkflowSpec{}
	for _, s := range v.Workflow.Steps {
		spec.Steps = append(spec.Steps, WorkflowStepSpec{Name: s.Name, After: s.After})
	}
	levels, err := spec.levels()
	if err != nil {
		return 0, &MalformedError{Key: q.WorkflowKey(v.Workflow.ID), Err: err}
	}
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

// Depths returns each step's depth: 0 for a step without parents, else
// one more than its deepest parent (the order to draw the graph in).
func (w *Workflow) Depths() []int {
	idx := make(map[string]int, len(w.Steps))
	for i, s := range w.Steps {
		idx[s.Name] = i
	}
	depth := make([]int, len(w.Steps))
	done := make([]bool, len(w.Steps))
	var visit func(i, guard int) int
	visit = func(i, guard int) int {
		if done[i] || guard > len(w.Steps) { // guard: a hand-edited record with a cycle
			return depth[i]
		}
		for _, a := range w.Steps[i].After {
			if j, ok := idx[a]; ok {
				depth[i] = max(depth[i], visit(j, guard+1)+1)
			}
		}
		done[i] = true
		return depth[i]
	}
	for i := range w.Steps {
		visit(i, 0)
	}
	return depth
}

// WorkflowReport is a workflow as read now, in the shape qo workflow
// --json and the HTTP API print: steps by depth, roots first.
type WorkflowReport struct {
	ID             uuid.UUID      `json:"id"`
	Name           string         `json:"name,omitempty"`
	IdempotencyKey string         `json:"idempotency_key"`
	Status         WorkflowStatus `json:"status"`
	CreatedAt      time.Time      `json:"created_at"`
	EndedAt        *time.Time     `json:"ended_at"`
	Counts         map[Status]int `json:"counts"`
	Steps          []StepReport   `json:"steps"`
}

// StepReport is one step of a WorkflowReport.
type StepReport struct {
	Name         string     `json:"name"`
	Type         string     `json:"task_type"`
	TaskID       uuid.UUID  `json:"task_id"`
	After        []string   `json:"after"`
	Depth        int        `json:"depth"`
	Status       Status     `json:"status"` // "" when the task is missing (see problem)
	Attempt      int        `json:"attempt"`
	WaitingFor   string     `json:"waiting_for,omitempty"`
	LastError    string     `json:"last_error,omitempty"`
	CancelReason string     `json:"cancel_reason,omitempty"`
	UpdatedAt    *time.Time `json:"updated_at"`
	CompletedAt  *time.Time `json:"completed_at"`
	Problem      string     `json:"problem,omitempty"`
}

// Report renders the view (see WorkflowReport).
func (v *WorkflowView) Report() WorkflowReport {
	w := v.Workflow
	r := WorkflowReport{ID: w.ID, Name: w.Name, IdempotencyKey: w.IdempotencyKey, Status: v.Status,
		CreatedAt: w.CreatedAt, EndedAt: v.EndedAt, Counts: v.Counts, Steps: make([]StepReport, len(w.Steps))}
	depths := w.Depths()
	for i, s := range w.Steps {
		sr := StepReport{Name: s.Name, Type: s.Type, TaskID: s.TaskID, After: s.After, Depth: depths[i], Problem: v.Problems[s.Name]}
		if sr.After == nil {
			sr.After = []string{}
		}
		if t := v.Tasks[i]; t != nil {
			sr.Status, sr.Attempt, sr.LastError, sr.CancelReason = t.Status, t.Attempt, t.LastError, t.CancelReason
			sr.UpdatedAt, sr.CompletedAt = timePtr(t.UpdatedAt), cloneTime(t.CompletedAt)
			if t.Status == StatusWaiting {
				sr.WaitingFor = t.WaitingFor()
			}
		}
		r.Steps[i] = sr
	}
	sort.SliceStable(r.Steps, func(a, b int) bool { return r.Steps[a].Depth < r.Steps[b].Depth })
	return r
}
