package command

// Bulk submit: qo submit --file tasks.jsonl (or - for stdin).
//
// The whole file is read and validated (queue.ParseBulk) before anything is
// contacted, so a file with one bad line submits nothing; a valid file goes
// to queue.SubmitBulk, which says what each line costs. This file holds the
// flags, the progress bar and the output.
//
// --json output shape (stable; new fields may be added, none removed), also
// printed whenever stdout is not a terminal:
//
//	{"submitted": N, "duplicates": N, "failed": N, "skipped": N,
//	 "ids": ["..."], "errors": [{"line": N, "error": "..."}]}
//
// submitted counts new tasks, duplicates the lines whose idempotency key
// already named a task, failed the lines whose submit failed, skipped the
// lines never attempted (a storage error or an interrupt stopped the run).
// ids lists the task id of every submitted or duplicate line, in file order.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/charmbracelet/bubbles/progress"
	"github.com/urfave/cli/v2"

	"github.com/qo-queue/qo/internal/termsafe"
	"github.com/qo-queue/qo/queue"
)

// maxListedBadLines bounds the bad or failed lines printed one per line on
// stderr (--json lists every failed line).
const maxListedBadLines = 50

// bulkFlags are the submit flags only bulk mode uses.
func bulkFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "file", Aliases: []string{"f"}, TakesFile: true,
			Usage: "submit one task per line of this JSON Lines `FILE` ('-' for stdin); see above for the fields"},
		&cli.IntFlag{Name: "concurrency", Aliases: []string{"c"}, Value: queue.DefaultBulkConcurrency, EnvVars: []string{"QO_SUBMIT_CONCURRENCY"},
			Usage: fmt.Sprintf("submits in flight at once with --file (1..%d)", queue.MaxBulkConcurrency)},
		&cli.BoolFlag{Name: "no-progress", EnvVars: []string{"QO_NO_PROGRESS"},
			Usage: "with --file, do not draw the progress bar on a terminal"},
	}
}

// runBulkSubmit is qo submit --file.
func runBulkSubmit(c *cli.Context) error {
	for _, f := range []string{"input", "input-file", "idempotency-key"} {
		if c.IsSet(f) {
			return usageError("--%s cannot be combined with --file: put it on each line of the file instead", f)
		}
	}
	conc := c.Int("concurrency")
	if conc < 1 || conc > queue.MaxBulkConcurrency {
		return usageError("--concurrency %d: want 1..%d", conc, queue.MaxBulkConcurrency)
	}
	def, err := bulkDefaultsFromFlags(c)
	if err != nil {
		return err
	}
	name := c.String("file")
	display := name
	var r io.Reader
	if name == "-" {
		r, display = envOf(c).Stdin, "stdin"
	} else {
		f, err := os.Open(name)
		if err != nil {
			return usageError("--file: %v", err)
		}
		defer f.Close()
		r = f
	}
	items, bad, err := queue.ParseBulk(r, def)
	if err != nil {
		return usageError("--file %s: %v", display, err)
	}
	if len(bad) > 0 {
		return badLinesError(c.App.ErrWriter, display, bad)
	}
	if len(items) == 0 {
		return usageError("--file %s holds no tasks (want one JSON object per line, e.g. {\"type\":\"resize\",\"input\":{\"w\":64}})", display)
	}

	q, err := openQueue(c)
	if err != nil {
		return err
	}
	opt := queue.BulkOptions{Concurrency: conc}
	var bar *progressBar
	if !c.Bool("no-progress") && envOf(c).IsTerminal(c.App.ErrWriter) {
		bar = startProgress(c.App.ErrWriter, len(items))
		opt.Progress = func(done, _ int) { bar.set(done) }
	}
	res := q.SubmitBulk(c.Context, items, opt)
	bar.stop()

	sum := res.Summary()
	if c.Bool("json") || !envOf(c).IsTerminal(c.App.Writer) {
		if err := emitJSON(c.App.Writer, sum); err != nil {
			return err
		}
	} else {
		printBulkSummary(c.App.Writer, sum)
	}
	for i, e := range sum.Errors {
		if i == maxListedBadLines {
			fmt.Fprintf(c.App.ErrWriter, "qo: %s: ... and %d more failed lines\n", display, len(sum.Errors)-i)
			break
		}
		fmt.Fprintf(c.App.ErrWriter, "qo: %s:%d: %s\n", display, e.Line, termsafe.Line(e.Error))
	}
	return bulkError(res, sum, display)
}

// bulkDefaultFields are the task spec fields whose flags give the
// defaults of the lines of qo submit --file.
var bulkDefaultFields = []string{"type", "timeout_seconds", "max_retries", "delay", "available_at", "priority", "key", "expires_in", "expires_at"}

// bulkDefaultsFromFlags reads the submit flags that act as defaults for
// every line.
func bulkDefaultsFromFlags(c *cli.Context) (queue.SubmitDefaults, error) {
	req, err := readTaskSpec(c, true, bulkDefaultFields...)
	return queue.SubmitDefaults{SubmitRequest: req, TypeHint: "or pass --type as the default for every line"}, err
}

// badLinesError prints the invalid lines (one per line on w when there are
// several) and returns the one-line usage error for the whole file.
func badLinesError(w io.Writer, name string, bad []queue.LineError) error {
	if len(bad) == 1 {
		return usageError("%s:%d: %s; nothing submitted (fix the line and run again)", name, bad[0].Line, bad[0].Error)
	}
	for i, b := range bad {
		if i == maxListedBadLines {
			fmt.Fprintf(w, "qo: %s: ... and %d more bad lines\n", name, len(bad)-i)
			break
		}
		fmt.Fprintf(w, "qo: %s:%d: %s\n", name, b.Line, termsafe.Line(b.Error))
	}
	return usageError("%s: %d bad lines (first: line %d: %s); nothing submitted (fix them and run again)",
		name, len(bad), bad[0].Line, bad[0].Error)
}

// bulkError is the command's error: nil when every line was submitted (or
// was a duplicate); else one line, with the exit code of the first failure.
func bulkError(res *queue.BulkResult, s queue.BulkSummary, name string) error {
	if s.Failed == 0 && s.Skipped == 0 {
		return nil
	}
	total := len(res.Lines)
	if res.Stopped != nil && errors.Is(res.Stopped, context.Canceled) {
		return fmt.Errorf("%s: interrupted after %d of %d lines (%d submitted, %d duplicates, %d failed): %w",
			name, total-s.Skipped, total, s.Submitted, s.Duplicates, s.Failed, res.Stopped)
	}
	msg := fmt.Sprintf("%s: %d of %d lines failed", name, s.Failed, total)
	if s.Skipped > 0 {
		msg += fmt.Sprintf(", %d not attempted (resubmitting is safe for lines with an idempotency_key)", s.Skipped)
	}
	first, ok := res.FirstFailure()
	if !ok {
		return fmt.Errorf("%s: %w", msg, res.Stopped)
	}
	return fmt.Errorf("%s; first, line %d: %w", msg, first.Line, first.Err)
}

func printBulkSummary(w io.Writer, s queue.BulkSummary) {
	fmt.Fprintf(w, "submitted %d task%s", s.Submitted, plural(s.Submitted))
	if s.Duplicates > 0 {
		fmt.Fprintf(w, ", %d duplicate%s (idempotency key already used; not resubmitted)", s.Duplicates, plural(s.Duplicates))
	}
	if s.Failed > 0 {
		fmt.Fprintf(w, ", %d failed", s.Failed)
	}
	if s.Skipped > 0 {
		fmt.Fprintf(w, ", %d not attempted", s.Skipped)
	}
	fmt.Fprintln(w, " (--json lists the task ids)")
}

// --- progress bar --------------------------------------------------------------

// progressBar draws a bubbles progress bar on a terminal, redrawn a few
// times a second. A nil *progressBar draws nothing.
type progressBar struct {
	w     io.Writer
	total int
	done  atomic.Int64
	model progress.Model
	quit  chan struct{}
	wg    sync.WaitGroup
}

const progressRefresh = 100 * time.Millisecond

func startProgress(w io.Writer, total int) *progressBar {
	p := &progressBar{w: w, total: total, quit: make(chan struct{}),
		model: progress.New(progress.WithDefaultGradient(), progress.WithWidth(40))}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		tick := time.NewTicker(progressRefresh)
		defer tick.Stop()
		for {
			p.draw()
			select {
			case <-tick.C:
			case <-p.quit:
				return
			}
		}
	}()
	return p
}

// set records the lines done so far.
func (p *progressBar) set(done int) {
	p.done.Store(int64(done))
}

func (p *progressBar) draw() {
	done := int(p.done.Load())
	fmt.Fprintf(p.w, "\r%s %d/%d", p.model.ViewAs(float64(done)/float64(p.total)), done, p.total)
}

// stop draws the final state and ends the line.
func (p *progressBar) stop() {
	if p == nil {
		return
	}
	close(p.quit)
	p.wg.Wait()
	p.draw()
	fmt.Fprintln(p.w)
}
