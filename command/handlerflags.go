package command

import (
	"slices"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/worker"
)

// parseExecFlags parses repeated --exec TYPE=COMMAND values (blank ones are
// ignored), refusing a type given twice or a command that cannot run.
func parseExecFlags(vals []string) ([]worker.ExecSpec, error) {
	var specs []worker.ExecSpec
	seen := map[string]bool{}
	for _, raw := range vals {
		if raw = strings.TrimSpace(raw); raw == "" {
			continue
		}
		spec, err := worker.ParseExecSpec(raw)
		if err != nil {
			return nil, usageError("invalid --exec: %v", err)
		}
		if seen[spec.Type] {
			return nil, usageError("invalid --exec: type %q is given twice", spec.Type)
		}
		seen[spec.Type] = true
		if err := spec.Check(); err != nil {
			return nil, usageError("invalid --exec: %v", err)
		}
		specs = append(specs, spec)
	}
	return specs, nil
}

// limitFlag is --limit TYPE=N, shared by run-worker and dev.
func limitFlag(category, env string) cli.Flag {
	return &cli.StringSliceFlag{Name: "limit", Category: category, EnvVars: []string{env},
		Usage: "`TYPE=N`: run at most N tasks of TYPE at once in this worker, repeatable (in " + env + ": comma separated)"}
}

// parseLimits reads --limit values ("send_email=4").
func parseLimits(vals []string) (map[string]int, error) {
	var out map[string]int
	for _, v := range splitList(vals) {
		typ, num, ok := strings.Cut(v, "=")
		n, err := strconv.Atoi(strings.TrimSpace(num))
		typ = strings.TrimSpace(typ)
		if !ok || err != nil {
			return nil, usageError("invalid --limit %q: want TYPE=N, e.g. --limit send_email=4", v)
		}
		if err := queue.ValidateType(typ); err != nil {
			return nil, usageError("invalid --limit %q: %s", v, inputMessage(err))
		}
		if n < 1 {
			return nil, usageError("invalid --limit %q: N must be at least 1 (to stop a type, use: qo pause %s)", v, typ)
		}
		if _, dup := out[typ]; dup {
			return nil, usageError("--limit names type %q twice", typ)
		}
		if out == nil {
			out = map[string]int{}
		}
		out[typ] = n
	}
	return out, nil
}

// parseTypes reads --types: TYPE or TYPE=W (a weight >= 1, see
// worker.Options.Weights). weights is nil when none is given.
func parseTypes(vals []string) (types []string, weights map[string]int, err error) {
	for _, v := range splitList(vals) {
		typ, num, weighted := strings.Cut(v, "=")
		typ = strings.TrimSpace(typ)
		if err := queue.ValidateType(typ); err != nil {
			return nil, nil, usageError("invalid --types: %v", err)
		}
		if !slices.Contains(types, typ) {
			types = append(types, typ)
		}
		if !weighted {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSpace(num))
		if err != nil || n < 1 {
			return nil, nil, usageError("invalid --types %q: the weight must be a whole number >= 1, e.g. --types %s=3", v, typ)
		}
		if _, dup := weights[typ]; dup {
			return nil, nil, usageError("--types weighs type %q twice", typ)
		}
		if weights == nil {
			weights = map[string]int{}
		}
		weights[typ] = n
	}
	return types, weights, nil
}

// execEnvFlag is --env NAME[=VALUE], shared by run-worker and dev. Each
// --env on the command line is one entry, commas and all (a value may
// hold commas); the variable holds a comma-separated list. It is a
// GenericFlag because a string slice flag would split values on commas:
// the variable's value goes to Value, the command line's to Destination
// (see execEnvFromFlags).
func execEnvFlag(category, env string) cli.Flag {
	return &cli.GenericFlag{Name: "env", Category: category, EnvVars: []string{env},
		Value: &envEntries{}, Destination: &envEntries{},
		Usage: "exec handlers: pass the worker's variable `NAME`, or set NAME=VALUE, repeatable; they inherit no other but PATH, HOME, the locale and the like (in " + env + ": names, comma separated)"}
}

// execEnvFileFlag is --env-file FILE, shared by run-worker and dev.
func execEnvFileFlag(category, env string) cli.Flag {
	return &cli.StringFlag{Name: "env-file", Category: category, EnvVars: []string{env}, TakesFile: true,
		Usage: "exec handlers: set the variables of the dotenv `FILE` (NAME=VALUE lines, # comments) in their environment"}
}

// envEntries collects the values of --env, one entry per flag.
type envEntries struct{ vals []string }

func (e *envEntries) Set(v string) error { e.vals = append(e.vals, v); return nil }
func (e *envEntries) String() string     { return strings.Join(e.vals, ",") }

// execEnvFromFlags reads --env and --env-file into the exec handler
// options: the names to pass through and the NAME=VALUE entries (those of
// the file first, so --env NAME=VALUE wins over the file).
func execEnvFromFlags(c *cli.Context) (pass, set []string, err error) {
	var entries []string
	if d, ok := c.Generic("env").(*envEntries); ok && len(d.vals) > 0 {
		entries = d.vals // the command line wins over the variable
	} else {
		for _, f := range c.Command.Flags {
			if g, ok := f.(*cli.GenericFlag); ok && g.Name == "env" {
				if v, ok := g.Value.(*envEntries); ok {
					entries = splitList(v.vals)
				}
			}
		}
	}
	if path := strings.TrimSpace(c.String("env-file")); path != "" {
		if set, err = worker.ReadEnvFile(path); err != nil {
			return nil, nil, usageError("invalid --env-file: %s", execEnvMessage(err))
		}
	}
	for _, raw := range entries {
		if strings.TrimSpace(raw) == "" {
			continue
		}
		name, value, hasValue, err := worker.ParseEnvEntry(raw)
		if err != nil {
			return nil, nil, usageError("invalid --env %s", execEnvMessage(err))
		}
		if hasValue {
			set = append(set, name+"="+value)
		} else {
			pass = append(pass, name)
		}
	}
	return pass, set, nil
}

// execEnvMessage strips the sentinel's prefix from an exec environment
// error.
func execEnvMessage(err error) string {
	return strings.Replace(err.Error(), worker.ErrExecEnv.Error()+": ", "", 1)
}
