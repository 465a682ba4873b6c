package command

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/urfave/cli/v2"

	"github.com/qo-queue/qo/queue"
)

// TestHelpTeaches: every command of this file group explains itself in
// --help with at least two examples.
func TestHelpTeaches(t *testing.T) {
	t.Parallel()
	q := newQueueCLI(t)
	for _, name := range []string{"init", "submit", "status", "history", "list", "replay", "archive", "cancel",
		"wait", "tail", "completion"} {
		t.Run(name, func(t *testing.T) {
			help := q.ok(name, "--help")
			_, examples, ok := strings.Cut(help, "Examples:\n")
			require.True(t, ok, "no Examples section:\n%s", help)
			n := 0
			for _, line := range strings.Split(examples, "\n") {
				line = strings.TrimSpace(line)
				if line == "" {
					break
				}
				if strings.Contains(line, "qo "+name) || strings.Contains(line, "qo completion") {
					n++
				}
			}
			require.GreaterOrEqual(t, n, 2, "want 2+ examples of qo %s:\n%s", name, examples)
		})
	}
}

// TestStatusFlagsListEveryStatus: wherever a flag takes a task status,
// its help lists every status it accepts: all of them, or for an operator
// action (qo cancel --status) every status the action applies to.
func TestStatusFlagsListEveryStatus(t *testing.T) {
	t.Parallel()
	n := 0
	walkCommands(New(Build{}, Env{}).Commands, func(cmd *cli.Command) {
		for _, f := range cmd.Flags {
			if !slices.Contains(f.Names(), "status") {
				continue
			}
			n++
			usage := f.(cli.DocGenerationFlag).GetUsage()
			accepted := queue.Statuses
			if from := queue.OperatorFrom(cmd.Name); from != nil {
				accepted = from
			}
			for _, st := range accepted {
				require.Contains(t, usage, string(st), "qo %s --status", cmd.Name)
			}
		}
	})
	require.NotZero(t, n, "no --status flag found")
}
