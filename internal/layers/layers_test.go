package layers

import (
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/qo-queue/qo"

// layer is one tree of packages: tree and everything under it, or only the
// root package when tree is "".
type layer struct {
	tree string
	rank int
}

// layers is the order package doc.go states. Trees of one rank may not
// import each other.
var layers = []layer{
	{"internal", 0},
	{"store", 1},
	// The object kinds of the bucket that are not tasks, each above
	// queue (listed before it: the first tree that holds a package is
	// its layer).
	{"queue/control", 3},
	{"queue/namedlease", 3},
	{"queue/registry", 3},
	{"queue/schedule", 3},
	{"queue/sweepstate", 3},
	{"queue/throughput", 3},
	{"queue", 2},
	{"monitor", 4},
	{"connect", 4},
	{"worker", 5},
	{"inspect", 5},
	{"metrics", 6},
	{"queuetest", 6},
	{"qotel", 6},
	{"tui", 7},
	{"webui", 7},
	{"httpapi", 7},
	{"devenv", 7},
	{"command", 8},
	{"", 9},
	{"deploy", 9},
	{"examples", 9},
	{"e2e", 10},
}

// layerOf returns the layer of the package at rel (a path relative to the
// module root, "" for the root package).
func layerOf(rel string) (layer, bool) {
	for _, l := range layers {
		if l.tree == "" {
			if rel == "" {
				return l, true
			}
			continue
		}
		if rel == l.tree || strings.HasPrefix(rel, l.tree+"/") {
			return l, true
		}
	}
	return layer{}, false
}

// allowed reports whether the package at from may import the package at
// to, both relative to the module root, and why not.
func allowed(from, to string) (bool, string) {
	lf, ok := layerOf(from)
	if !ok {
		return false, fmt.Sprintf("%s has no layer: add its tree to layers", pkgName(from))
	}
	lt, ok := layerOf(to)
	if !ok {
		return false, fmt.Sprintf("%s has no layer: add its tree to layers", pkgName(to))
	}
	switch {
	case lf.tree == lt.tree:
		return true, ""
	case lt.rank < lf.rank:
		return true, ""
	case lt.rank == lf.rank:
		return false, fmt.Sprintf("%s and %s are side by side (layer %d); neither may import the other", pkgName(from), pkgName(to), lf.rank)
	default:
		return false, fmt.Sprintf("%s (layer %d) is above %s (layer %d)", pkgName(to), lt.rank, pkgName(from), lf.rank)
	}
}

func pkgName(rel string) string {
	if rel == "" {
		return module
	}
	return module + "/" + rel
}

func TestAllowed(t *testing.T) {
	for _, tc := range []struct {
		from, to string
		ok       bool
	}{
		{"store/memstore", "store", true},
		{"store/storetest", "store/s3store", true},
		{"store/s3store", "queue", false},
		{"store", "internal/termsafe", true},
		{"internal/termsafe", "store", false},
		{"queue", "store", true},
		{"queue", "worker", false},
		{"queue", "monitor", false},
		{"queue/registry", "queue", true},
		{"queue", "queue/registry", false},
		{"queue/control", "queue/namedlease", false},
		{"monitor", "queue/throughput", true},
		{"queue/sweepstate", "monitor", false},
		{"queue/schedule", "store", true},
		{"monitor", "queue", true},
		{"monitor/view", "monitor", true},
		{"monitor", "worker", false},
		{"monitor/view", "metrics", false},
		{"inspect", "monitor/view", true},
		{"monitor", "inspect", false},
		{"inspect", "worker", false},
		{"tui", "inspect", true},
		{"httpapi", "inspect", true},
		{"worker", "monitor", true},
		{"worker/bench", "worker", true},
		{"worker", "metrics", false},
		{"metrics", "worker", true},
		{"queuetest", "worker", true},
		{"queuetest", "store/memstore", true},
		{"worker", "queuetest", false},
		{"metrics", "httpapi", false},
		{"httpapi", "metrics", true},
		{"httpapi", "monitor/view", true},
		{"tui", "httpapi", false},
		{"webui", "tui", false},
		{"worker", "tui", false},
		{"command", "tui", true},
		{"command", "httpapi", true},
		{"command", "devenv", true},
		{"connect", "store/s3store", true},
		{"connect", "queue", true},
		{"connect", "monitor", false},
		{"connect", "store/gateway", true},
		{"connect", "devenv", false},
		{"devenv", "connect", true},
		{"command", "connect", true},
		{"queue", "connect", false},
		{"devenv", "worker", true},
		{"devenv", "store/gateway", true},
		{"devenv", "command", false},
		{"devenv", "tui", false},
		{"", "command", true},
		{"", "webui", true},
		{"command", "", false},
		{"deploy/image", "", false},
		{"e2e", "worker", true},
		{"examples", "connect", true},
		{"queue", "examples", false},
		{"tools", "queue", false}, // a tree with no layer
	} {
		ok, why := allowed(tc.from, tc.to)
		if ok != tc.ok {
			t.Errorf("allowed(%q, %q) = %v (%s), want %v", tc.from, tc.to, ok, why, tc.ok)
		}
	}
}

// TestImports checks every import of the module's non-test files against
// the layers.
func TestImports(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root: %v", err)
	}
	imports, err := moduleImports(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"", "store", "queue", "monitor", "worker", "metrics", "httpapi", "tui", "webui", "deploy/image", "e2e"} {
		if _, ok := imports[want]; !ok {
			t.Errorf("no package %s found: the walk missed part of the module", pkgName(want))
		}
	}
	var froms []string
	for from := range imports {
		froms = append(froms, from)
	}
	sort.Strings(froms)
	for _, from := range froms {
		if _, ok := layerOf(from); !ok {
			t.Errorf("%s has no layer: add its tree to layers (and to doc.go)", pkgName(from))
			continue
		}
		for _, imp := range imports[from] {
			if ok, why := allowed(from, imp.to); !ok {
				t.Errorf("%s imports %s: %s", imp.file, pkgName(imp.to), why)
			}
		}
	}
}

type importRef struct {
	to   string // relative to the module root
	file string // relative to the module root
}

// moduleImports parses the import clauses of every non-test Go file under
// root, whatever its build constraints, and returns the imports of module
// packages by importing package (paths relative to root). A package with
// test files only is listed with no imports. qo's nested modules (e2e,
// deploy: their own go.mod keeps what only they need out of the library's)
// are walked too, as their packages keep the import paths of this tree.
func moduleImports(root string) (map[string][]importRef, error) {
	out := map[string][]importRef{}
	fset := token.NewFileSet()
	err := walkGo(root, func(path, rel, file string) error {
		if _, ok := out[rel]; !ok {
			out[rel] = nil
		}
		if strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return fmt.Errorf("parse imports: %w", err)
		}
		for _, spec := range f.Imports {
			p, err := strconv.Unquote(spec.Path.Value)
			if err != nil {
				return fmt.Errorf("%s: import path %s: %w", file, spec.Path.Value, err)
			}
			var to string
			switch {
			case p == module:
				to = ""
			case strings.HasPrefix(p, module+"/"):
				to = strings.TrimPrefix(p, module+"/")
			default:
				continue
			}
			out[rel] = append(out[rel], importRef{to: to, file: file})
		}
		return nil
	})
	return out, err
}

// walkGo calls fn for every Go file of qo's modules under root (nested
// modules included, other projects' modules, testdata, node_modules and
// hidden directories left out), with its path, its package directory and
// its own path relative to root (slash-separated; "" for the root).
func walkGo(root string, fn func(path, rel, file string) error) error {
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (name == "testdata" || name == "node_modules" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			if path != root {
				own, err := ownModule(root, path)
				if err != nil {
					return err
				}
				if !own {
					return filepath.SkipDir // another project's module
				}
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") {
			return nil
		}
		rel, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return fmt.Errorf("relative path of %s: %w", path, err)
		}
		rel = filepath.ToSlash(rel)
		if rel == "." {
			rel = ""
		}
		return fn(path, rel, strings.TrimPrefix(filepath.ToSlash(strings.TrimPrefix(path, root)), "/"))
	})
	if err != nil {
		return fmt.Errorf("walk %s: %w", root, err)
	}
	return nil
}

// ownModule reports whether dir is a directory of root's module, or the
// root of one of qo's nested modules (a go.mod whose module path is the
// directory's import path under module), rather than another module.
func ownModule(root, dir string) (bool, error) {
	b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if errors.Is(err, fs.ErrNotExist) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("read go.mod: %w", err)
	}
	rel, err := filepath.Rel(root, dir)
	if err != nil {
		return false, fmt.Errorf("relative path of %s: %w", dir, err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if p, ok := strings.CutPrefix(strings.TrimSpace(line), "module "); ok {
			return strings.Trim(strings.TrimSpace(p), `"`) == pkgName(filepath.ToSlash(rel)), nil
		}
	}
	return false, fmt.Errorf("%s: no module line", filepath.Join(dir, "go.mod"))
}
