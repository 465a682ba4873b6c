package command

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

// The CLI and configuration references in docs/ are generated from the
// app's own help and flag definitions, so they cannot drift: this test fails
// when they are stale. Regenerate with:
//
//	go test -run TestDocsUpToDate ./command -update
var updateDocs = flag.Bool("update", false, "rewrite the generated docs/ files")

func TestDocsUpToDate(t *testing.T) {
	files := map[string]string{
		"../docs/cli.md":           cliReference(t),
		"../docs/configuration.md": configReference(),
	}
	for path, want := range files {
		if *updateDocs {
			if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%s: %v (generate it with: go test -run TestDocsUpToDate ./command -update)", path, err)
		}
		if string(got) != want {
			t.Errorf("%s is stale: the CLI changed. Regenerate it with: go test -run TestDocsUpToDate ./command -update", path)
		}
	}
}

// visibleCommands walks the command tree depth first, skipping hidden ones,
// and returns each command's full path (e.g. ["ui", "deploy"]).
func visibleCommands(cmds []*cli.Command, parent []string) [][]string {
	var out [][]string
	for _, c := range cmds {
		if c.Hidden {
			continue
		}
		p := append(append([]string(nil), parent...), c.Name)
		out = append(out, p)
		out = append(out, visibleCommands(c.Subcommands, p)...)
	}
	return out
}

// helpText runs qo with args and returns what it printed.
func helpText(t *testing.T, args ...string) string {
	t.Helper()
	var out, errOut bytes.Buffer
	code := runApp(append([]string{"qo"}, args...), &out, &errOut)
	if code != 0 {
		t.Fatalf("qo %s: exit %d: %s", strings.Join(args, " "), code, errOut.String())
	}
	return strings.TrimRight(out.String(), "\n")
}

func cliReference(t *testing.T) string {
	var b strings.Builder
	b.WriteString("# qo command reference\n\n")
	b.WriteString("<!-- Generated from `qo --help` by command/docs_test.go; do not edit. Regenerate with `go test -run TestDocsUpToDate ./command -update`. -->\n\n")
	cmds := visibleCommands(New(Build{}, Env{}).Commands, nil)
	b.WriteString("| command | what it does |\n|---|---|\n")
	for _, p := range cmds {
		c := findCommand(New(Build{}, Env{}).Commands, p)
		fmt.Fprintf(&b, "| [`qo %s`](#qo-%s) | %s |\n", strings.Join(p, " "), strings.Join(p, "-"), c.Usage)
	}
	b.WriteString("\n## qo\n\n```text\n" + helpText(t, "--help") + "\n```\n")
	for _, p := range cmds {
		fmt.Fprintf(&b, "\n## qo %s\n\n```text\n%s\n```\n", strings.Join(p, " "), helpText(t, append(p, "--help")...))
	}
	return b.String()
}

func findCommand(cmds []*cli.Command, path []string) *cli.Command {
	for _, c := range cmds {
		if c.Name == path[0] {
			if len(path) == 1 {
				return c
			}
			return findCommand(c.Subcommands, path[1:])
		}
	}
	return nil
}

// configReference lists every flag with its environment variables and
// default, grouped by command, plus the variables read outside flags.
func configReference() string {
	var b strings.Builder
	b.WriteString("# qo configuration reference\n\n")
	b.WriteString("<!-- Generated from the flag definitions by command/docs_test.go; do not edit. Regenerate with `go test -run TestDocsUpToDate ./command -update`. -->\n\n")
	b.WriteString("Settings have an environment twin (flags that only shape one invocation, such as `--json`, do not); a flag on the command line wins over its variable. Credentials come from the standard AWS chain (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`, `AWS_PROFILE`, SSO, web identity, instance roles).\n\n")
	app := New(Build{}, Env{})
	b.WriteString("## Connection (every command that talks to a bucket)\n\n")
	writeFlagTable(&b, app.Flags)
	conn := map[string]bool{}
	for _, f := range app.Flags {
		conn[f.Names()[0]] = true
	}
	for _, p := range visibleCommands(app.Commands, nil) {
		c := findCommand(app.Commands, p)
		var own []cli.Flag
		for _, f := range c.Flags {
			if !conn[f.Names()[0]] {
				own = append(own, f)
			}
		}
		if len(own) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\n## qo %s\n\n", strings.Join(p, " "))
		writeFlagTable(&b, own)
	}
	return b.String()
}

func writeFlagTable(b *strings.Builder, flags []cli.Flag) {
	sorted := append([]cli.Flag(nil), flags...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Names()[0] < sorted[j].Names()[0] })
	b.WriteString("| flag | environment | default | meaning |\n|---|---|---|---|\n")
	for _, f := range sorted {
		df, ok := f.(cli.DocGenerationFlag)
		if !ok || f.Names()[0] == "help" {
			continue
		}
		names := make([]string, 0, len(f.Names()))
		for _, n := range f.Names() {
			if len(n) == 1 {
				names = append(names, "`-"+n+"`")
			} else {
				names = append(names, "`--"+n+"`")
			}
		}
		envs := make([]string, 0, len(df.GetEnvVars()))
		for _, e := range df.GetEnvVars() {
			envs = append(envs, "`"+e+"`")
		}
		def := df.GetDefaultText()
		if def == "" && df.TakesValue() {
			def = df.GetValue()
		}
		if def != "" {
			def = "`" + def + "`"
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s |\n", strings.Join(names, ", "), strings.Join(envs, ", "),
			strings.ReplaceAll(def, "|", "\\|"), strings.ReplaceAll(df.GetUsage(), "|", "\\|"))
	}
}
