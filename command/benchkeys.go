package command

import "github.com/urfave/cli/v2"

// benchKeysHelp is the paragraph of qo bench's help on --keys.
const benchKeysHelp = `  - with --keys N, end to end over N task keys (one key's deep backlog
    submitted first, then N-1 keys of 5 tasks each) beside the same tasks
    without keys: requests per task of each, and how long the small keys'
    first tasks waited behind the backlog (--keys-only skips everything
    else);
`

// benchKeysFlags are qo bench's flags of the run over task keys.
func benchKeysFlags() []cli.Flag {
	return []cli.Flag{
		&cli.IntFlag{Name: "keys", Usage: "also run --tasks over `N` task keys: one key's deep backlog, then N-1 keys of 5 tasks each, beside the same run without keys (qo bench --keys-only --keys 20)"},
		&cli.BoolFlag{Name: "keys-only", Usage: "with --keys: measure only the run over keys"},
	}
}

// checkBenchOnly checks that the -only flags exclude each other, and
// --keys.
func checkBenchOnly(c *cli.Context) error {
	n := c.Int("keys")
	switch {
	case c.Bool("deps-only") && c.Bool("history-only"):
		return usageError("--deps-only and --history-only exclude each other")
	case n < 0:
		return usageError("--keys %d: want at least 1 (or leave it out)", n)
	case c.Bool("keys-only") && n == 0:
		return usageError("--keys-only needs --keys N")
	case c.Bool("keys-only") && (c.Bool("deps-only") || c.Bool("history-only") || c.Bool("processes-only")):
		return usageError("--keys-only excludes --deps-only, --history-only and --processes-only")
	case n > 0 && c.Int("tasks") < n*5:
		return usageError("--keys %d needs --tasks of at least %d (the deep key's backlog, then 5 tasks per other key)", n, n*5)
	}
	return nil
}
