package queue

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Bounds of one workflow file, checked before anything is written: each
// step costs a few requests to submit (its task, its index entry) and one
// to read back, and each edge a name in the record and an id in two tasks.
const (
	MaxWorkflowSteps = 1000
	MaxWorkflowEdges = 10000
)

// WorkflowSpec is a decoded workflow file (see DecodeWorkflow).
type WorkflowSpec struct {
	Name string
	// IdempotencyKey makes the submit repeatable: the same key and the
	// same steps return the workflow the first submit made, and finish it
	// when that submit stopped half-way. Empty: Workflows.Submit picks one.
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
	Request   SubmitRequest
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
	if err := knownFields(top, WorkflowFields); err != nil {
		return nil, fmt.Errorf("workflow file: %w", err)
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
	edges := 0
	for _, st := range spec.Steps {
		edges += len(st.After)
	}
	if edges > MaxWorkflowEdges {
		return nil, fmt.Errorf("%d edges (\"after\" entries; at most %d): fan in or out through intermediate steps, or split the workflow", edges, MaxWorkflowEdges)
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

// knownFields refuses the first field (in name order) not in known.
func knownFields(fields map[string]json.RawMessage, known []string) error {
	for _, k := range slices.Sorted(maps.Keys(fields)) {
		if !slices.Contains(known, k) {
			return fmt.Errorf("unknown field %q (known: %s)", k, strings.Join(known, ", "))
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
	if st.Request, err = decodeSubmit(body, def); err != nil {
		return st, errors.New(inputText(err))
	}
	p, err := ParseParentFailure(policy)
	if err != nil {
		return st, errors.New(inputText(err))
	}
	if policy != "" {
		st.Request.OnParentFailure = p
	}
	if len(st.InputFrom) > 0 && !isJSONNull(st.Request.Input) && !bytes.HasPrefix(bytes.TrimSpace(st.Request.Input), []byte("{")) {
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
