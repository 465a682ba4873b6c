package command

// Shell completion: qo completion bash|zsh|fish prints a script.
//
// bash and zsh complete dynamically: the script runs the hidden command
// `qo __complete WORDS... CUR --generate-bash-completion`, which runs the app in
// urfave/cli's completion mode (commands, flags, and each command's own
// BashComplete, which also offers flag values and names read from the
// bucket: see flagValues and argValues). fish gets urfave/cli's static
// script (App.ToFishCompletion).

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/queue/control"
	"github.com/qo-queue/qo/queue/registry"
	"github.com/qo-queue/qo/queue/schedule"
)

var completionShells = []string{"bash", "zsh", "fish"}

func completionCommand() *cli.Command {
	return &cli.Command{
		Name:      "completion",
		Usage:     "print a shell completion script (bash, zsh or fish)",
		UsageText: "qo completion bash|zsh|fish",
		Description: `Prints a script that completes qo's commands and flags when you press Tab.
Install it once for your shell:

  bash  add to ~/.bashrc:
          source <(qo completion bash)
        or, with the bash-completion package:
          qo completion bash > ~/.local/share/bash-completion/completions/qo
  zsh   add to ~/.zshrc (after compinit):
          source <(qo completion zsh)
        or put it on your $fpath:
          qo completion zsh > "${fpath[1]}/_qo"
  fish  qo completion fish > ~/.config/fish/completions/qo.fish

Open a new shell afterwards. bash and zsh ask qo itself for the candidates,
so they follow the installed version; regenerate the fish script after an
upgrade. Besides commands and flags they complete task statuses (--status),
task types (--type, qo pause and resume: the types registered workers serve
and the paused ones), schedule names (qo schedule show, trigger, ...) and
workflow names (qo workflow show, status, cancel), read from the bucket in
at most 2 seconds; when it cannot be read they offer nothing.

Examples:
  source <(qo completion bash)
  qo completion zsh > "${fpath[1]}/_qo"
  qo completion fish > ~/.config/fish/completions/qo.fish`,
		BashComplete: func(c *cli.Context) {
			if c.NArg() == 0 {
				for _, s := range completionShells {
					fmt.Fprintln(c.App.Writer, s)
				}
			}
		},
		Action: func(c *cli.Context) error {
			args, err := positionalArgs(c)
			if err != nil {
				return err
			}
			if len(args) != 1 || !slices.Contains(completionShells, args[0]) {
				got := "nothing"
				if len(args) > 0 {
					got = fmt.Sprintf("%q", args[0])
				}
				return usageError("want one shell: bash, zsh or fish, got %s (e.g. qo completion bash)", got)
			}
			w := c.App.Writer
			switch args[0] {
			case "bash":
				_, err = io.WriteString(w, bashCompletion)
			case "zsh":
				_, err = io.WriteString(w, zshCompletion)
			case "fish":
				var script string
				script, err = c.App.ToFishCompletion()
				if err == nil {
					_, err = io.WriteString(w, tidyFish(script))
				}
			}
			return err
		},
	}
}

// completeCommand is the hidden helper the bash and zsh scripts call:
//
//	qo __complete WORDS... CUR --generate-bash-completion
//
// prints the candidates for CUR (the word being completed, possibly empty)
// after WORDS, one per line, using urfave/cli's completion mode (command
// names, flags, each command's BashComplete). It never runs a command. After
// a flag that takes a value it prints nothing, so the shell falls back to
// file names.
func completeCommand(build Build) *cli.Command {
	return &cli.Command{
		Name:            "__complete",
		Hidden:          true,
		HideHelp:        true,
		SkipFlagParsing: true,
		Action: func(c *cli.Context) (err error) {
			// Completion must never fail loudly: a malformed command line
			// (urfave/cli can panic on one in completion mode) completes
			// nothing.
			defer func() {
				if recover() != nil {
					err = nil
				}
			}()
			flag := "--" + cli.BashCompletionFlag.Names()[0]
			words := c.Args().Slice()
			if n := len(words); n > 0 && words[n-1] == flag {
				words = words[:n-1]
			}
			cur := ""
			if len(words) > 0 {
				cur, words = words[len(words)-1], words[:len(words)-1]
			}
			// After "--" every word is an argument: nothing to offer (and
			// urfave/cli would run the command instead of completing).
			if slices.Contains(words, "--") {
				return nil
			}
			app := New(build, *envOf(c))
			ctx := c.Context
			if !strings.HasPrefix(cur, "-") && flagTakesValue(app, words) {
				// A flag's value: the values of the flags that have them
				// (statuses, task types), else nothing (the shell offers
				// file names).
				name := strings.TrimLeft(words[len(words)-1], "-")
				if _, ok := flagValues[name]; !ok {
					return nil
				}
				ctx = context.WithValue(ctx, completeFlagKey{}, name)
				words = words[:len(words)-1]
			}
			completeValues(app.Commands, "")
			app.EnableBashCompletion = true
			// Short-option handling turns parse errors into panics in
			// completion mode; commands keep the setting from earlier runs.
			app.UseShortOptionHandling = false
			noShortOptions(app.Commands)
			app.Writer = c.App.Writer
			app.ErrWriter = io.Discard
			app.OnUsageError = func(*cli.Context, error, bool) error { return nil }
			// urfave/cli's flag completion reads the word being completed
			// from os.Args[len(os.Args)-2].
			lastArg := ""
			if strings.HasPrefix(cur, "-") {
				lastArg = cur
			}
			saved := os.Args
			os.Args = append(append([]string{c.App.Name}, words...), lastArg, flag)
			defer func() { os.Args = saved }()
			_ = app.RunContext(ctx, append(append([]string{c.App.Name}, words...), flag))
			return nil
		},
	}
}

// completeFlagKey marks a completion run for the value of a flag (its
// name) rather than for the next word.
type completeFlagKey struct{}

// flagValues completes the values of flags, by flag name, wherever they
// appear.
var flagValues = map[string]func(*cli.Context) []string{
	"status": func(*cli.Context) []string { return statusNames() },
	"type":   taskTypeNames,
}

// argValues completes the arguments of commands, by command path.
var argValues = map[string]func(*cli.Context) []string{
	"pause":            taskTypeNames,
	"resume":           taskTypeNames,
	"schedule show":    scheduleNames,
	"schedule enable":  scheduleNames,
	"schedule disable": scheduleNames,
	"schedule delete":  scheduleNames,
	"schedule trigger": scheduleNames,
	"workflow show":    workflowNames,
	"workflow status":  workflowNames,
	"workflow cancel":  workflowNames,
}

// manyArgs are the commands of argValues that take several arguments.
var manyArgs = map[string]bool{"pause": true, "resume": true}

// completeValues gives every command below path (of cmds) a BashComplete
// that offers flag values and argument names (see flagValues and
// argValues), and otherwise does what the command did before.
func completeValues(cmds []*cli.Command, path string) {
	for _, cmd := range cmds {
		full := strings.TrimSpace(path + " " + cmd.Name)
		if len(cmd.Subcommands) > 0 {
			completeValues(cmd.Subcommands, full)
			continue
		}
		cmd, before, args := cmd, cmd.BashComplete, argValues[full]
		cmd.BashComplete = func(c *cli.Context) {
			if name, ok := c.Context.Value(completeFlagKey{}).(string); ok {
				printLines(c.App.Writer, flagValues[name](c))
				return
			}
			last := ""
			if n := len(os.Args); n >= 2 {
				last = os.Args[n-2] // the word being completed, when a flag
			}
			if args != nil && !strings.HasPrefix(last, "-") && (c.NArg() == 0 || manyArgs[full]) {
				printLines(c.App.Writer, args(c))
				return
			}
			if before != nil {
				before(c)
				return
			}
			cli.DefaultCompleteWithFlags(cmd)(c)
		}
	}
}

func printLines(w io.Writer, lines []string) {
	for _, l := range lines {
		fmt.Fprintln(w, l)
	}
}

// completionBudget bounds what completion may spend reading the bucket:
// a Tab press that waits longer is worse than no candidates.
const completionBudget = 2 * time.Second

// completionQueue opens the queue for completion within the budget, or
// returns nil: completion fails silently.
func completionQueue(c *cli.Context) (*queue.Queue, context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(c.Context, completionBudget)
	cc := *c
	cc.Context = ctx
	s, err := envOf(c).OpenStore(&cc)
	if err != nil {
		cancel()
		return nil, nil, nil
	}
	q, err := queue.Open(ctx, s, queue.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		cancel()
		return nil, nil, nil
	}
	return q, ctx, cancel
}

func statusNames() []string {
	out := make([]string, len(queue.Statuses))
	for i, st := range queue.Statuses {
		out[i] = string(st)
	}
	return out
}

// taskTypeNames are the task types the registered workers serve and the
// paused ones: one LIST and one GET per worker, and one GET of the
// control object, whatever the number of tasks.
func taskTypeNames(c *cli.Context) []string {
	q, ctx, cancel := completionQueue(c)
	if q == nil {
		return nil
	}
	defer cancel()
	seen := map[string]bool{}
	if ws, err := registry.List(ctx, q); err == nil {
		for _, w := range ws {
			for _, t := range w.Types {
				seen[t] = true
			}
		}
	}
	if ctl, err := control.Read(ctx, q); err == nil {
		for _, t := range ctl.PausedTypes() {
			seen[t] = true
		}
	}
	return sortedKeys(seen)
}

// scheduleNames are the live schedules' names: one LIST and one GET per
// schedule.
func scheduleNames(c *cli.Context) []string {
	q, ctx, cancel := completionQueue(c)
	if q == nil {
		return nil
	}
	defer cancel()
	live, _, err := schedule.List(ctx, q)
	if err != nil {
		return nil
	}
	out := make([]string, len(live))
	for i, s := range live {
		out[i] = s.Name
	}
	return out
}

// workflowNames are the names workflows were submitted with (one LIST
// page and one GET per name, at most completionWorkflows).
func workflowNames(c *cli.Context) []string {
	q, ctx, cancel := completionQueue(c)
	if q == nil {
		return nil
	}
	defer cancel()
	names, err := q.Workflows().Names(ctx, completionWorkflows)
	if err != nil {
		return nil
	}
	out := make([]string, 0, len(names))
	for _, n := range names {
		out = append(out, n.Name)
	}
	return out
}

// completionWorkflows caps the workflow names completion reads.
const completionWorkflows = 200

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func noShortOptions(cmds []*cli.Command) {
	for _, c := range cmds {
		c.UseShortOptionHandling = false
		noShortOptions(c.Subcommands)
	}
}

// flagTakesValue reports whether the last of words is a flag that expects a
// value (of the command named in words, or of the app).
func flagTakesValue(app *cli.App, words []string) bool {
	if len(words) == 0 {
		return false
	}
	last := words[len(words)-1]
	if !strings.HasPrefix(last, "-") || strings.Contains(last, "=") {
		return false
	}
	name := strings.TrimLeft(last, "-")
	flags := app.Flags
	for _, w := range words {
		if cmd := app.Command(w); cmd != nil && !strings.HasPrefix(w, "-") {
			flags = cmd.Flags
			break
		}
	}
	for _, f := range flags {
		if !slices.Contains(f.Names(), name) {
			continue
		}
		if df, ok := f.(cli.DocGenerationFlag); ok {
			return df.TakesValue()
		}
	}
	return false
}

// tidyFish drops the duplicate lines urfave/cli emits for the help and
// version flags and the backquotes of flag placeholders in descriptions.
func tidyFish(script string) string {
	var b strings.Builder
	seen := map[string]bool{}
	for _, line := range strings.SplitAfter(script, "\n") {
		if strings.HasPrefix(line, "complete ") {
			if seen[line] {
				continue
			}
			seen[line] = true
			line = strings.ReplaceAll(line, "`", "")
		}
		b.WriteString(line)
	}
	return b.String()
}

const bashCompletion = `# bash completion for qo (generated by 'qo completion bash')
_qo_complete() {
	local cur=${COMP_WORDS[COMP_CWORD]}
	local -a words=("${COMP_WORDS[@]:1:COMP_CWORD-1}")
	local IFS=$'\n'
	COMPREPLY=($(compgen -W "$("${COMP_WORDS[0]}" __complete "${words[@]}" "$cur" --generate-bash-completion 2>/dev/null)" -- "$cur"))
}
complete -o bashdefault -o default -F _qo_complete qo
`

const zshCompletion = `#compdef qo
# zsh completion for qo (generated by 'qo completion zsh')
_qo() {
	local cur=${words[CURRENT]}
	local -a args opts
	args=("${(@)words[2,CURRENT-1]}")
	opts=("${(@f)$("${words[1]}" __complete "${args[@]}" "$cur" --generate-bash-completion 2>/dev/null)}")
	opts=("${(@)opts:#}")
	if (( ${#opts} )); then
		compadd -a opts
	else
		_files
	fi
}
if [[ ${zsh_eval_context[-1]} == loadautofunc ]]; then
	_qo "$@"
else
	compdef _qo qo
fi
`
