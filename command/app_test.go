package command

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/urfave/cli/v2"
)

func TestErrorLine(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err  error
		want string
	}{
		{errors.New("bucket missing"), "qo: bucket missing"},
		{errors.New("qo: already prefixed"), "qo: already prefixed"},
		{errors.New("two\nlines  with   spaces"), "qo: two; lines with spaces"},
		{fmt.Errorf("wait: %w", context.Canceled), "qo: interrupted"},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, errorLine(tt.err))
	}
}

func TestNearestCommand(t *testing.T) {
	t.Parallel()
	cmds := New(Build{}, Env{}).Commands
	for typed, want := range map[string]string{
		"submti": "submit", "sumbit": "submit", "stats": "stats", "wokrer": "worker", "tial": "tail",
		"frobnicate": "", "no-such-command": "", "": "",
	} {
		require.Equal(t, want, nearestCommand(cmds, typed), "typed %q", typed)
	}
}

func TestRunPrintsOneLine(t *testing.T) {
	t.Parallel()
	var stdout, stderr bytes.Buffer
	code := runApp([]string{"qo", "no-such-command"}, &stdout, &stderr)
	require.Equal(t, exitUsage, code)
	require.Equal(t, "qo: unknown command \"no-such-command\": run 'qo --help' for the list of commands\n", stderr.String())

	stdout.Reset()
	stderr.Reset()
	require.Equal(t, exitOK, runApp([]string{"qo", "version", "--json"}, &stdout, &stderr))
	require.Contains(t, stdout.String(), `"version"`)
	require.Empty(t, stderr.String())
}

// TestUnknownSubcommand: a mistyped command of a group is a usage error
// (exit 2) with the nearest command, like a mistyped top-level command.
func TestUnknownSubcommand(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"schedule", "lsit"}, exitUsage,
			"qo: unknown command \"lsit\" of qo schedule: did you mean \"list\"? (run 'qo schedule --help' for its commands)\n"},
		{[]string{"workflow", "shwo"}, exitUsage, `did you mean "show"?`},
		{[]string{"ui", "frobnicate"}, exitUsage,
			"qo: unknown command \"frobnicate\" of qo ui: run 'qo ui --help' for its commands\n"},
		{[]string{"schedule"}, exitOK, ""},
		{[]string{"--no-such-flag", "stats"}, exitUsage, "(see 'qo --help')"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			t.Parallel()
			var stdout, stderr bytes.Buffer
			code := runApp(append([]string{"qo"}, tt.args...), &stdout, &stderr)
			require.Equal(t, tt.code, code, "stderr: %s", stderr.String())
			if tt.want == "" {
				require.Empty(t, stderr.String())
				require.Contains(t, stdout.String(), "COMMANDS:")
				return
			}
			require.Contains(t, stderr.String(), tt.want)
			require.Equal(t, 1, strings.Count(stderr.String(), "\n"), "one line")
		})
	}
}

func TestVersionPrintsTheBuild(t *testing.T) {
	t.Parallel()
	var stdout, stderr bytes.Buffer
	build := Build{Version: "v1.2.3", Commit: "0123456789ab", Date: "2025-06-01T08:00:00Z"}
	require.Equal(t, exitOK, Run([]string{"qo", "--version"}, Env{Stdout: &stdout, Stderr: &stderr}, build))
	require.Equal(t, "qo version v1.2.3 (commit 0123456789ab, built 2025-06-01T08:00:00Z)\n", stdout.String())
	stdout.Reset()
	require.Equal(t, exitOK, Run([]string{"qo", "version", "--json"}, Env{Stdout: &stdout, Stderr: &stderr}, build))
	require.Contains(t, stdout.String(), `"version": "v1.2.3"`)
	require.Contains(t, stdout.String(), `"commit": "0123456789ab"`)
}

// walkCommands calls fn for cmd and every command below it.
func walkCommands(cmds []*cli.Command, fn func(*cli.Command)) {
	for _, c := range cmds {
		fn(c)
		walkCommands(c.Subcommands, fn)
	}
}

// TestNewBuildsFreshCommands: every app New builds has its own commands
// and flags, even after another app ran (urfave/cli writes to both), and
// each command has the connection flags exactly when it talks to a bucket.
func TestNewBuildsFreshCommands(t *testing.T) {
	t.Parallel()
	var stdout, stderr bytes.Buffer
	require.Equal(t, exitOK, runApp([]string{"qo", "doctor", "--help"}, &stdout, &stderr))
	a, b := New(Build{}, Env{}), New(Build{}, Env{})
	seen := map[any]bool{}
	for _, app := range []*cli.App{a, b} {
		walkCommands(app.Commands, func(cmd *cli.Command) {
			require.False(t, seen[cmd], "command %s is shared between apps", cmd.Name)
			seen[cmd] = true
			names := map[string]int{}
			for _, f := range cmd.Flags {
				require.False(t, seen[f], "flag --%s of %s is shared", f.Names()[0], cmd.Name)
				seen[f] = true
				names[f.Names()[0]]++
			}
			for name, n := range names {
				require.Equal(t, 1, n, "flag --%s of %s", name, cmd.Name)
			}
			require.NotEqual(t, "help", cmd.Name, "no help subcommands")
		})
	}

	local := map[string]bool{"__complete": true, "completion": true, "dev": true, "gateway": true, "version": true}
	for _, cmd := range a.Commands {
		walkCommands([]*cli.Command{cmd}, func(c *cli.Command) {
			require.Equal(t, !local[cmd.Name], hasFlag(c, "endpoint"), "connection flags of %s", c.FullName())
		})
	}
}

// TestRunConcurrently runs apps at once, as tests do (go test -race finds
// any state they share).
func TestRunConcurrently(t *testing.T) {
	t.Parallel()
	runs := [][]string{
		{"--help"}, {"--version"}, {"version"}, {"status", "--help"}, {"worker", "--help"},
		{"dev", "--help"}, {"ui", "deploy", "--help"}, {"submit", "--bogus"}, {"list", "--limit", "x"},
	}
	want := make([]string, len(runs))
	for i, args := range runs {
		var out, errOut bytes.Buffer
		code := runApp(append([]string{"qo"}, args...), &out, &errOut)
		want[i] = fmt.Sprintf("%d\n%s\n%s", code, out.String(), errOut.String())
	}
	var wg sync.WaitGroup
	got := make([]string, 2*len(runs))
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var out, errOut bytes.Buffer
			code := runApp(append([]string{"qo"}, runs[i%len(runs)]...), &out, &errOut)
			got[i] = fmt.Sprintf("%d\n%s\n%s", code, out.String(), errOut.String())
		}()
	}
	wg.Wait()
	for i, g := range got {
		require.Equal(t, want[i%len(runs)], g, "qo %s", strings.Join(runs[i%len(runs)], " "))
	}
}

func TestJSONRequested(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args []string
		want bool
	}{
		{[]string{"qo", "status", "ID"}, false},
		{[]string{"qo", "status", "--json", "ID"}, true},
		{[]string{"qo", "status", "-json", "ID"}, true},
		{[]string{"qo", "status", "--json=true", "ID"}, true},
		{[]string{"qo", "status", "--json", "--json=false", "ID"}, false},
		{[]string{"qo", "submit", "--", "--json"}, false},
		{[]string{"qo", "submit", "--input", "json"}, false},
		{[]string{"qo", "--jsonx"}, false},
		{[]string{"qo"}, false},
		{nil, false},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, jsonRequested(tt.args), "%q", tt.args)
	}
}
