package layers

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// binaryOnly are the packages of the library layers that only the qo
// binary links: the embedded S3 gateway (versitygw and what it brings) is
// imported by devenv, command and main.go, never by a library package.
var binaryOnly = []string{"store/gateway"}

// libraryRank is the highest layer a Go program importing qo as a library
// builds (the interfaces, commands and programs sit above it).
const libraryRank = 6

// binaryModules are module path prefixes the binary links and the library
// must not: the embedded gateway, the console and the command line.
var binaryModules = []string{
	"github.com/versity/",
	"github.com/charmbracelet/",
	"github.com/urfave/",
}

// TestLibraryLinksFewModules keeps what a program importing qo's library
// builds small. The root go.mod also carries the qo binary (the embedded
// gateway alone brings about sixty modules), but Go's pruned module graph
// puts in a program's go.mod only the modules of the packages it builds:
// this is that set, for every library package at once and for the core
// ones alone.
func TestLibraryLinksFewModules(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	var pats []string
	for _, l := range layers {
		if l.tree != "" && l.rank <= libraryRank {
			pats = append(pats, "./"+l.tree+"/...")
		}
	}
	var lib []string
	for _, p := range goList(t, root, append([]string{"list"}, pats...)...) {
		rel := strings.TrimPrefix(strings.TrimPrefix(p, module), "/")
		if !slices.Contains(binaryOnly, rel) {
			lib = append(lib, p)
		}
	}
	if len(lib) < 20 {
		t.Fatalf("only %d library packages listed: %v", len(lib), lib)
	}
	all := linkedModules(t, root, lib...)
	for _, m := range all {
		for _, bad := range binaryModules {
			if strings.HasPrefix(m, bad) {
				t.Errorf("the library links %s, which only the qo binary should: find the import with go mod why -m %s", m, m)
			}
		}
	}
	// 40 today (the AWS SDK's 17, Prometheus and OpenTelemetry for the
	// metrics and tracing packages); the bound for the library's
	// go.mod was 90.
	if len(all) >= 50 {
		t.Errorf("the library links %d modules, want fewer than 50:\n%s", len(all), strings.Join(all, "\n"))
	}
	for _, tc := range []struct {
		pkg string
		max int
	}{
		{"queue", 2},  // google/uuid
		{"worker", 6}, // + robfig/cron, godotenv, x/sys, x/time
	} {
		got := linkedModules(t, root, module+"/"+tc.pkg)
		if len(got) > tc.max {
			t.Errorf("package %s links %d modules, want at most %d: %v", tc.pkg, len(got), tc.max, got)
		}
	}
}

// linkedModules returns the modules other than qo that provide the
// packages pkgs build with (tests aside).
func linkedModules(t *testing.T, root string, pkgs ...string) []string {
	t.Helper()
	var mods []string
	for _, m := range goList(t, root, append([]string{"list", "-deps", "-f", "{{with .Module}}{{.Path}}{{end}}"}, pkgs...)...) {
		if m != module && !slices.Contains(mods, m) {
			mods = append(mods, m)
		}
	}
	slices.Sort(mods)
	return mods
}

// goList runs the go command in dir and returns its non-empty output lines.
func goList(t *testing.T, dir string, args ...string) []string {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to list the library's modules: %v", err)
	}
	cmd := exec.Command(gobin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly")
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, stderr)
	}
	return strings.Fields(string(out))
}
