package tui

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// jsonTree is a foldable view of a JSON document. Task input and output
// are untrusted: values are shown as JSON text, never interpreted.
type jsonTree struct {
	roots []*jnode
}

type jnode struct {
	label     string // "key: " or "[i] " or the root's name
	open      byte   // '{' or '[' for containers, 0 for scalars
	scalar    string // a scalar's JSON text
	children  []*jnode
	collapsed bool
}

// jline is one visible line of the tree.
type jline struct {
	node  *jnode
	depth int
}

// addRoot adds a document under name; invalid JSON shows as a string.
func (t *jsonTree) addRoot(name string, doc json.RawMessage) {
	n := &jnode{label: name + ": "}
	if len(bytes.TrimSpace(doc)) == 0 {
		n.scalar = "null"
	} else if err := fill(n, json.NewDecoder(bytes.NewReader(doc))); err != nil {
		n.open, n.children, n.scalar = 0, nil, fmt.Sprintf("%q (not JSON: %v)", string(doc), err)
	}
	t.roots = append(t.roots, n)
}

// fill reads one value from dec into n, keeping the key order.
func fill(n *jnode, dec *json.Decoder) error {
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch v := tok.(type) {
	case json.Delim:
		n.open = byte(v)
		for i := 0; dec.More(); i++ {
			c := &jnode{label: fmt.Sprintf("[%d] ", i)}
			if v == '{' {
				k, err := dec.Token()
				if err != nil {
					return err
				}
				kb, _ := json.Marshal(k)
				c.label = string(kb) + ": "
			}
			if err := fill(c, dec); err != nil {
				return err
			}
			n.children = append(n.children, c)
		}
		_, err = dec.Token() // the closing delimiter
		return err
	default:
		b, _ := json.Marshal(v)
		n.scalar = string(b)
		return nil
	}
}

// lines returns the visible lines, depth first.
func (t *jsonTree) lines() []jline {
	var out []jline
	var walk func(n *jnode, depth int)
	walk = func(n *jnode, depth int) {
		out = append(out, jline{n, depth})
		if n.open != 0 && !n.collapsed {
			for _, c := range n.children {
				walk(c, depth+1)
			}
		}
	}
	for _, r := range t.roots {
		walk(r, 0)
	}
	return out
}

// render draws one line. JSON text escapes C0 controls but not DEL, C1
// controls or bidirectional overrides: safe escapes those.
func (l jline) render() string {
	n := l.node
	label, scalar := safe(n.label), safe(n.scalar)
	pad := strings.Repeat("  ", l.depth)
	if n.open == 0 {
		return pad + "  " + label + scalar
	}
	closer := map[byte]string{'{': "}", '[': "]"}[n.open]
	unit := map[byte]string{'{': "key", '[': "item"}[n.open]
	if len(n.children) != 1 {
		unit += "s"
	}
	if n.collapsed || len(n.children) == 0 {
		return fmt.Sprintf("%s▸ %s%c…%s %d %s", pad, label, n.open, closer, len(n.children), unit)
	}
	return fmt.Sprintf("%s▾ %s%c %d %s", pad, label, n.open, len(n.children), unit)
}

// toggle folds or unfolds the container at visible line i.
func (t *jsonTree) toggle(i int) {
	ls := t.lines()
	if i >= 0 && i < len(ls) && ls[i].node.open != 0 {
		ls[i].node.collapsed = !ls[i].node.collapsed
	}
}

// field is one leaf of a JSON document: its path and its value as JSON
// text. Empty objects and arrays are leaves too ({} and []).
type field struct{ path, value string }

// fields flattens doc into its leaves, in document order. Invalid JSON is
// one field holding the text.
func fields(doc []byte) []field {
	n := &jnode{}
	if err := fill(n, json.NewDecoder(bytes.NewReader(doc))); err != nil {
		return []field{{path: "(not JSON)", value: string(doc)}}
	}
	var out []field
	var walk func(n *jnode, path string)
	walk = func(n *jnode, path string) {
		if n.open == 0 || len(n.children) == 0 {
			v := n.scalar
			if n.open != 0 {
				v = map[byte]string{'{': "{}", '[': "[]"}[n.open]
			}
			out = append(out, field{path, v})
			return
		}
		for _, c := range n.children {
			label := strings.TrimSuffix(c.label, ": ")
			switch {
			case n.open == '[':
				label = strings.TrimSpace(c.label)
			default:
				var k string
				if json.Unmarshal([]byte(label), &k) == nil && k != "" && strings.Trim(k, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") == "" {
					label = k
				}
				if path != "" {
					label = "." + label
				}
			}
			walk(c, path+label)
		}
	}
	walk(n, "")
	return out
}

// fieldDiff compares two JSON documents field by field: a field whose
// value is the same in both is never shown, however its line moved (a
// multi-line output appearing above it shifts every line, not the field).
// Lines start with "-" (the old value of a changed or removed field) or
// "+" (the new value of a changed or added field), in document order.
func fieldDiff(a, b []byte) (lines []string, same int) {
	fa, fb := fields(a), fields(b)
	inA, inB := map[string]string{}, map[string]bool{}
	for _, f := range fa {
		inA[f.path] = f.value
	}
	for _, f := range fb {
		inB[f.path] = true
	}
	ia := 0
	// removedUpTo emits the fields of a that b lacks, up to path p.
	removedUpTo := func(p string) {
		for ia < len(fa) && fa[ia].path != p {
			if !inB[fa[ia].path] {
				lines = append(lines, "- "+fa[ia].path+": "+fa[ia].value)
			}
			ia++
		}
	}
	for _, f := range fb {
		old, ok := inA[f.path]
		if !ok {
			for ia < len(fa) && !inB[fa[ia].path] { // a removal here comes first
				lines = append(lines, "- "+fa[ia].path+": "+fa[ia].value)
				ia++
			}
			lines = append(lines, "+ "+f.path+": "+f.value)
			continue
		}
		removedUpTo(f.path)
		if ia < len(fa) {
			ia++
		}
		if old == f.value {
			same++
			continue
		}
		lines = append(lines, "- "+f.path+": "+old, "+ "+f.path+": "+f.value)
	}
	removedUpTo("\x00")
	return lines, same
}
