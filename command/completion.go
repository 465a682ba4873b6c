package command

// Shell completion: qo completion bash|zsh|fish prints a script.
//
// bash and zsh complete dynamically: the script runs the hidden command
// `qo __complete WORDS... CUR --generate-bash-completion`, which runs the app in
// urfave/cli's completion mode (commands, flags, and each command's own
// BashComplete). fish gets urfave/cli's static script (App.ToFishCompletion).

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"
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
upgrade.

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
			app := New(build)
			if !strings.HasPrefix(cur, "-") && flagTakesValue(app, words) {
				return nil
			}
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
			_ = app.RunContext(c.Context, append(append([]string{c.App.Name}, words...), flag))
			return nil
		},
	}
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
