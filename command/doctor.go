package command

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/qo-queue/qo/internal/termsafe"
	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/store/doctor"
	"github.com/qo-queue/qo/store/s3store"
)

func doctorCommand() *cli.Command {
	return &cli.Command{
		Name:      "doctor",
		Usage:     "check that the bucket can be trusted with a queue",
		UsageText: "qo doctor [--json] [--fix-lifecycle] [--timeout DURATION]",
		Description: `Checks the configured bucket the way qo uses it, by trying:

  reachable    the endpoint answers
  credentials  the credentials are accepted
  bucket       the bucket exists
  versioning   bucket versioning is on (task history lives in object versions)
  create-only  a PUT with If-None-Match: * refuses to overwrite
  if-match     a PUT with a stale or bogus If-Match ETag is refused (some
               providers, e.g. Garage, silently ignore If-Match: qo is unsafe there)
  torn-reads   GETs during chained If-Match PUTs return the body and the ETag
               of the same write (a server pairing an old body with a new ETag
               lets a worker claim a task another one claimed: it runs twice)
  list-paging  listings page with a limit, a continuation token and start-after
  versions     three or more versions are listed newest first (a warning when
               a server lists them otherwise: qo history sorts by rev) and old
               ones are readable
  clock        the server's clock versus this machine's
  lifecycle    rules expire old versions under the index prefixes
               (ready/, leases/, workers/, shard-leases/, monitor/)
  cleanup      the probe objects were removed

Probe objects are written under doctor/{random}/ and every version of them is
removed afterwards (about 60 PUTs and GETs in all, in well under a second on a
nearby server). The exit code is 0 when nothing failed (warnings are fine) and
5 otherwise. qo init and every worker run the create-only and if-match probes
(three PUTs to monitor/probe.json) as they start and refuse a server that
fails them.

S3 servers and providers tested with qo, and what this command says about
each: docs/providers.md.

Examples:
  S3_ENDPOINT=http://127.0.0.1:9000 S3_BUCKET=jobs qo doctor
  qo doctor --bucket jobs --json | jq '.checks[] | select(.status != "ok")'
  qo doctor --bucket jobs --fix-lifecycle   # add the recommended lifecycle rules`,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "json", Usage: "print the report as JSON ({target, ok, checks: [{name, status, detail, fix}]})"},
			&cli.BoolFlag{Name: "fix-lifecycle", Usage: "first add lifecycle rules expiring old versions under the index prefixes (after 1 day)"},
			&cli.DurationFlag{Name: "timeout", Value: 2 * time.Minute, Usage: "give up after this long"},
		},
		Action: runDoctor,
	}
}

// doctorOutput is the --json shape of qo doctor.
type doctorOutput struct {
	doctor.Report
	// LifecycleRulesAdded lists the rules --fix-lifecycle added.
	LifecycleRulesAdded []store.LifecycleRule `json:"lifecycle_rules_added,omitempty"`
}

func runDoctor(c *cli.Context) error {
	s, cfg, err := newStore(c)
	if err != nil {
		return err
	}
	if c.Duration("timeout") <= 0 {
		return usageError("--timeout must be positive, e.g. 2m")
	}
	ctx, cancel := context.WithTimeout(c.Context, c.Duration("timeout"))
	defer cancel()
	asJSON := c.Bool("json")
	opts := doctor.Options{AllowNoVersioning: allowNoVersioning()}
	out := c.App.Writer

	// When the bucket cannot be reached at all, one line says why.
	pctx, pcancel := context.WithTimeout(ctx, connectTimeout)
	perr := s.Ping(pctx)
	pcancel()
	if perr != nil {
		cerr := connError(c.Context, cfg, perr)
		if asJSON && c.Context.Err() == nil {
			if err := emitJSON(out, doctorOutput{Report: doctor.Run(ctx, s, opts)}); err != nil {
				return err
			}
		}
		return cerr
	}

	var res doctorOutput
	var fixErr error
	if c.Bool("fix-lifecycle") {
		res.LifecycleRulesAdded, fixErr = doctor.FixLifecycle(ctx, s, nil)
	}
	res.Report = doctor.Run(ctx, s, opts)
	if asJSON {
		if err := emitJSON(out, res); err != nil {
			return err
		}
	} else {
		printDoctor(out, res)
	}
	switch {
	case c.Context.Err() != nil:
		return c.Context.Err()
	case errors.Is(fixErr, store.ErrNotSupported):
		return storageError("--fix-lifecycle: the provider does not support lifecycle rules: delete old versions under the index prefixes by other means")
	case fixErr != nil:
		return storageError("--fix-lifecycle: %w", fixErr)
	case !res.OK:
		return doctorFailure(res.Report, cfg)
	}
	return nil
}

// doctorFailure is the one line for a report with failures.
func doctorFailure(r doctor.Report, cfg s3store.Config) error {
	fails := r.Failures()
	if len(fails) == 1 && fails[0].Name == doctor.CheckVersioning && strings.HasPrefix(fails[0].Detail, "off") {
		return versioningOffError(cfg)
	}
	parts := make([]string, 0, len(fails))
	for _, f := range fails {
		parts = append(parts, f.Name+": "+f.Detail)
	}
	return storageError("bucket %q at %s failed %d check(s): %s (fixes in the report above; servers tested with qo: %s)",
		cfg.Bucket, endpointName(cfg), len(fails), strings.Join(parts, "; "), doctor.ProvidersDoc)
}

// printDoctor prints the report as a table with the fixes under their checks.
func printDoctor(w io.Writer, res doctorOutput) {
	if res.Target != "" {
		fmt.Fprintf(w, "qo doctor: %s\n\n", res.Target)
	}
	for _, r := range res.LifecycleRulesAdded {
		fmt.Fprintf(w, "added lifecycle rule %s: noncurrent versions under %q expire after %d day(s)\n", r.ID, r.Prefix, r.NoncurrentDays)
	}
	if len(res.LifecycleRulesAdded) > 0 {
		fmt.Fprintln(w)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	counts := map[doctor.Status]int{}
	for _, ch := range res.Checks {
		counts[ch.Status]++
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", ch.Status, ch.Name, termsafe.Line(ch.Detail))
		if ch.Fix != "" && (ch.Status == doctor.StatusWarn || ch.Status == doctor.StatusFail) {
			fmt.Fprintf(tw, "  \t\tfix: %s\n", termsafe.Line(ch.Fix))
		}
	}
	_ = tw.Flush()
	verdict := "all checks passed"
	if !res.OK {
		verdict = "NOT READY"
	}
	fmt.Fprintf(w, "\n%s: %d ok, %d warning(s), %d failed, %d skipped\n",
		verdict, counts[doctor.StatusOK], counts[doctor.StatusWarn], counts[doctor.StatusFail], counts[doctor.StatusSkip])
	if !res.OK || counts[doctor.StatusWarn] > 0 {
		fmt.Fprintf(w, "S3 servers and providers tested with qo: see %s\n", doctor.ProvidersDoc)
	}
}
