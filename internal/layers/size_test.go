package layers

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Sizes a reader can hold in mind: no non-test Go file over maxFileLines
// (a package's doc.go, which states its rules, aside) and no function over
// maxFuncLines. A file or function that grows past them is split where
// its parts have their own job.
const (
	maxFileLines = 600
	maxFuncLines = 100
)

func TestSizes(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	files := 0
	err = walkGo(root, func(path, _, file string) error {
		if strings.HasSuffix(path, "_test.go") {
			return nil
		}
		files++
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if n := strings.Count(string(src), "\n"); n > maxFileLines && filepath.Base(path) != "doc.go" {
			t.Errorf("%s has %d lines, over %d: split it by what its parts do", file, n, maxFileLines)
		}
		f, err := parser.ParseFile(fset, path, src, parser.SkipObjectResolution)
		if err != nil {
			return fmt.Errorf("parse %s: %w", file, err)
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok {
				continue
			}
			if n := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1; n > maxFuncLines {
				t.Errorf("%s: %s has %d lines, over %d: split it", file, fd.Name.Name, n, maxFuncLines)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("only %d Go files found: the walk missed part of the module", files)
	}
}

// maxQueueMethods bounds the exported methods of *queue.Queue: the bucket's
// other object kinds (schedules, the registry, named leases, control.json)
// live in packages of their own, and a new one belongs there too.
const maxQueueMethods = 44

func TestQueueSurface(t *testing.T) {
	dir, err := filepath.Abs(filepath.Join("..", "..", "queue"))
	if err != nil {
		t.Fatal(err)
	}
	paths, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var names []string
	for _, path := range paths {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Recv == nil || !fd.Name.IsExported() {
				continue
			}
			if star, ok := fd.Recv.List[0].Type.(*ast.StarExpr); ok {
				if id, ok := star.X.(*ast.Ident); ok && id.Name == "Queue" {
					names = append(names, fd.Name.Name)
				}
			}
		}
	}
	if len(names) < 10 {
		t.Fatalf("only %d methods of *Queue found: the parse missed queue's files", len(names))
	}
	if len(names) > maxQueueMethods {
		t.Errorf("*queue.Queue has %d exported methods, over %d: %v; put what belongs to another object kind in its package", len(names), maxQueueMethods, names)
	}
}
