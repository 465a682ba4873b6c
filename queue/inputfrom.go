package queue

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/google/uuid"
)

// Limits of what passes from parents to children (input_from).
const (
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
	in, err := q.LoadPayload(ctx, t, InputPayload)
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
