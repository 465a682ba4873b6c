package command

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/urfave/cli/v2"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/queue/control"
	"github.com/qo-queue/qo/queue/registry"
	"github.com/qo-queue/qo/store"
)

func TestCompletionScripts(t *testing.T) {
	t.Parallel()
	q := newQueueCLI(t)
	for _, tc := range []struct {
		shell string
		want  []string
	}{
		{"bash", []string{"complete -o bashdefault -o default -F _qo_complete qo", "__complete"}},
		{"zsh", []string{"#compdef qo", "compdef _qo qo", "__complete"}},
		{"fish", []string{"complete -c qo", "-a 'wait'", "-a 'completion'", "-l fail-fast"}},
	} {
		t.Run(tc.shell, func(t *testing.T) {
			out := q.ok("completion", tc.shell)
			for _, w := range tc.want {
				require.Contains(t, out, w)
			}
			require.NotContains(t, out, "'__complete'", "hidden commands stay hidden")
			if tc.shell == "fish" {
				require.NotContains(t, out, "`")
				seen := map[string]bool{}
				for _, line := range strings.Split(out, "\n") {
					if strings.HasPrefix(line, "complete ") {
						require.False(t, seen[line], "duplicate line %q", line)
						seen[line] = true
					}
				}
			}
			if sh, err := exec.LookPath(tc.shell); err == nil {
				path := filepath.Join(t.TempDir(), "script")
				require.NoError(t, os.WriteFile(path, []byte(out), 0o644))
				res, err := exec.Command(sh, "-n", path).CombinedOutput()
				require.NoError(t, err, "%s -n: %s", tc.shell, res)
			}
		})
	}
	require.Contains(t, q.ok("completion", "--help"), "source <(qo completion bash)")
}

// complete runs the hidden completion helper the scripts call.
func (q *queueCLI) complete(words ...string) []string {
	q.t.Helper()
	args := append(append([]string{"__complete"}, words...), "--generate-bash-completion")
	code, out, errs := q.run(args...)
	require.Equal(q.t, 0, code, errs)
	require.Empty(q.t, errs)
	return strings.Fields(out)
}

// Not parallel: completion sets os.Args, where urfave/cli reads the word
// being completed.
func TestCompleteCandidates(t *testing.T) {
	q := newQueueCLI(t)
	q.ok("init")
	commands := q.complete("")
	for _, c := range []string{"submit", "wait", "tail", "completion", "status", "list", "version"} {
		require.Contains(t, commands, c)
	}
	require.NotContains(t, commands, "__complete")
	require.Equal(t, commands, q.complete("--bucket", "jobs", "st"), "after a global flag's value")

	tests := []struct {
		words []string
		want  []string // nil: no candidates
	}{
		{[]string{"completion", ""}, []string{"bash", "zsh", "fish"}},
		{[]string{"submit", "--con"}, []string{"--concurrency"}},
		{[]string{"submit", "--input", ""}, nil}, // a value: the shell offers files
		{[]string{"submit", "--type", "t", "--ret"}, []string{"--retries"}},
		{[]string{"submit", "--", ""}, nil},                              // after --: only arguments
		{[]string{"submit", "--bogus", "x", "--ty"}, []string{"--type"}}, // an unknown flag before does not matter
		{[]string{"--end"}, []string{"--endpoint"}},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.words, " "), func(t *testing.T) {
			before := q.puts()
			got := q.complete(tc.words...)
			if tc.want == nil {
				require.Empty(t, got)
			} else {
				require.Equal(t, tc.want, got)
			}
			require.Equal(t, before, q.puts(), "completion never runs a command")
		})
	}
	got := q.complete("wait", "--")
	for _, f := range []string{"--timeout", "--interval", "--max-interval", "--fail-fast", "--json", "--bucket"} {
		require.Contains(t, got, f)
	}
	got = q.complete("tail", "--count", "3", "--")
	require.NotContains(t, got, "--count", "flags already given are not offered again")
	require.Contains(t, got, "--until-done")
}

// TestCompleteNames: completion offers the task statuses, the task types
// (served by registered workers, or paused), the schedule names and the
// workflow names where a command takes them, reading the bucket at a
// bounded cost; it offers nothing, silently, when the bucket is out of
// reach.
// Not parallel: completion sets os.Args, where urfave/cli reads the word
// being completed.
func TestCompleteNames(t *testing.T) {
	q := newQueueCLI(t)
	q.ok("init")
	ctx := t.Context()
	qq, err := queue.Open(ctx, q.s, queue.Options{})
	require.NoError(t, err)
	require.NoError(t, registry.Put(ctx, qq, &queue.WorkerInfo{ID: "w1", Types: []string{"send_email", "resize"}, Concurrency: 1}))
	_, err = control.Pause(ctx, qq, "report", "")
	require.NoError(t, err)
	q.ok("schedule", "create", "nightly", "--cron", "0 2 * * *", "--type", "report")
	q.ok("schedule", "create", "hourly", "--cron", "@hourly", "--type", "report")
	q.ok("submit", "--workflow", "../examples/etl/etl.json")

	statuses := []string{"waiting", "pending", "running", "completed", "failed", "cancelled", "expired", "archived"}
	types := []string{"report", "resize", "send_email"}
	tests := []struct {
		words []string
		want  []string
	}{
		{[]string{"list", "--status", ""}, statuses},
		{[]string{"tui", "--status", ""}, statuses},
		{[]string{"list", "--status", "fa"}, statuses}, // the shell keeps those that fit
		{[]string{"submit", "--type", ""}, types},
		{[]string{"list", "--limit", "3", "--type", ""}, types},
		{[]string{"pause", ""}, types},
		{[]string{"resume", "report", ""}, types},
		{[]string{"schedule", "show", ""}, []string{"hourly", "nightly"}},
		{[]string{"schedule", "trigger", ""}, []string{"hourly", "nightly"}},
		{[]string{"schedule", "trigger", "nightly", ""}, nil}, // one name only
		{[]string{"schedule", "show", "--j"}, []string{"--json"}},
		{[]string{"workflow", "show", ""}, []string{"nightly-etl"}},
		{[]string{"workflow", "cancel", ""}, []string{"nightly-etl"}},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.words, " "), func(t *testing.T) {
			before := q.puts()
			got := q.complete(tc.words...)
			if tc.want == nil {
				require.Empty(t, got)
			} else {
				require.Equal(t, tc.want, got)
			}
			require.Equal(t, before, q.puts(), "completion never writes")
		})
	}

	// The bucket out of reach: no candidates, no error, no output on
	// stderr (complete checks both).
	q.env.OpenStore = func(*cli.Context) (store.Store, error) { return nil, errors.New("unreachable") }
	require.Empty(t, q.complete("submit", "--type", ""))
	require.Empty(t, q.complete("schedule", "show", ""))
	require.Equal(t, statuses, q.complete("list", "--status", ""), "statuses need no bucket")
}

// TestCompletionInShells drives the scripts in the real shells (those
// installed) against a built qo.
func TestCompletionInShells(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no POSIX shells")
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash not installed")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "qo")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = ".." // the module root, package main
	out, err := build.CombinedOutput()
	require.NoError(t, err, "go build: %s", out)
	env := append(os.Environ(), "PATH="+dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	run := func(shell string, script string) string {
		t.Helper()
		cmd := exec.Command(shell, "-c", script)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s: %s", shell, out)
		return string(out)
	}

	got := run(bash, `source <(qo completion bash)
c() { COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]}-1)); _qo_complete; echo "${COMPREPLY[*]}"; }
c qo wa
c qo completion ""
c qo submit --conc
c qo submit --type ""
`)
	require.Equal(t, "wait\nbash zsh fish\n--concurrency\n\n", got)

	if zsh, err := exec.LookPath("zsh"); err == nil {
		// compadd only works inside a completion widget: stand-ins print
		// what the function offers.
		got := run(zsh, `autoload -U compinit && compinit -u -D
source <(qo completion zsh)
compadd() { [[ $1 == -a ]] && print -r -- ${(P)2} }
_files() { print FILES }
words=(qo tail --until); CURRENT=3; _qo
words=(qo completion ""); CURRENT=3; _qo
words=(qo wait --timeout ""); CURRENT=4; _qo
`)
		require.Equal(t, "--until-done\nbash zsh fish\nFILES\n", got)
	}
	if fish, err := exec.LookPath("fish"); err == nil {
		got := run(fish, `qo completion fish | source; complete -C"qo wa"; complete -C"qo tail --unt"`)
		require.Contains(t, got, "wait\tblock until tasks finish")
		require.Contains(t, got, "--until-done\t")
	}
}
