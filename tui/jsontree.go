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
