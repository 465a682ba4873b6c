package command

// Bulk submit: qo submit --file tasks.jsonl (or - for stdin).
//
// The whole file is read and validated before anything is contacted, so a
// file with one bad line submits nothing. Valid files are submitted with
// bounded concurrency; every line is one queue.Submit (2 PUTs), a duplicate
// (an idempotency key already used, same input) costs 1 PUT + 1 GET and is
// counted, not failed. A line repeating an earlier line's type and key is
// not sent at all: it shares the earlier line's task.
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
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/charmbracelet/bubbles/progress"
	"github.com/mattn/go-isatty"
	"github.com/urfave/cli/v2"

	"github.com/qo-queue/qo/internal/termsafe"
	"github.com/qo-queue/qo/queue"
)

// onTerminal reports whether w is a terminal. Tests replace it.
var onTerminal = func(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}

const (
	defaultBulkConcurrency = 16
	maxBulkConcurrency     = 256
	// maxBulkLine bounds one line of a bulk file (the task input included).
	maxBulkLine = 16 << 20
	// maxListedBadLines bounds the bad or failed lines printed one per line
	// on stderr (--json lists every failed line).
	maxListedBadLines = 50
)

// bulkTask is one validated line.
type bulkTask struct {
	line int
	req  queue.SubmitRequest
	// doc keeps the relative times (delay, expires_in), resolved against
	// the queue clock at submit time.
	doc queue.SubmitDoc
	// dupOf is the index (in the task list) of an earlier line with the
	// same type and idempotency key, or -1. Such a line is not sent: it
	// gets the earlier line's task, so the first line wins however the
	// submits interleave.
	dupOf int
}

// bulkDefaults are the submit flags that act as defaults for every line.
type bulkDefaults struct {
	typ     string
	timeout time.Duration
	retries int
	delay   time.Duration
	at      time.Time
	extra   submitExtras
}

// lineError is a problem with one line of the file.
type lineError struct {
	Line  int    `json:"line"`
	Error string `json:"error"`
}

type bulkSummary struct {
	Submitted  int         `json:"submitted"`
	Duplicates int         `json:"duplicates"`
	Failed     int         `json:"failed"`
	Skipped    int         `json:"skipped"`
	IDs        []string    `json:"ids"`
	Errors     []lineError `json:"errors"`
}

// bulkFlags are the submit flags only bulk mode uses.
func bulkFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "file", Aliases: []string{"f"}, TakesFile: true,
			Usage: "submit one task per line of this JSON Lines `FILE` ('-' for stdin); see above for the fields"},
		&cli.IntFlag{Name: "concurrency", Aliases: []string{"c"}, Value: defaultBulkConcurrency, EnvVars: []string{"QO_SUBMIT_CONCURRENCY"},
			Usage: fmt.Sprintf("submits in flight at once with --file (1..%d)", maxBulkConcurrency)},
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
	if conc < 1 || conc > maxBulkConcurrency {
		return usageError("--concurrency %d: want 1..%d", conc, maxBulkConcurrency)
	}
	def, err := bulkDefaultsFromFlags(c)
	if err != nil {
		return err
	}
	name := c.String("file")
	display := name
	var r io.Reader
	if name == "-" {
		r, display = stdin, "stdin"
	} else {
		f, err := os.Open(name)
		if err != nil {
			return usageError("--file: %v", err)
		}
		defer f.Close()
		r = f
	}
	tasks, bad, err := parseBulk(r, def)
	if err != nil {
		return usageError("--file %s: %v", display, err)
	}
	if len(bad) > 0 {
		return badLinesError(c.App.ErrWriter, display, bad)
	}
	if len(tasks) == 0 {
		return usageError("--file %s holds no tasks (want one JSON object per line, e.g. {\"type\":\"resize\",\"input\":{\"w\":64}})", display)
	}

	q, err := openQueue(c)
	if err != nil {
		return err
	}
	var bar *progressBar
	if !c.Bool("no-progress") && onTerminal(c.App.ErrWriter) {
		bar = startProgress(c.App.ErrWriter, len(tasks))
	}
	res := submitAll(c.Context, q, tasks, conc, bar)
	bar.stop()

	sum := res.summary()
	if c.Bool("json") || !onTerminal(c.App.Writer) {
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
	return res.err(display, len(tasks))
}

func bulkDefaultsFromFlags(c *cli.Context) (bulkDefaults, error) {
	def := bulkDefaults{
		typ:     c.String("type"),
		timeout: c.Duration("timeout"),
		retries: c.Int("retries"),
		delay:   c.Duration("delay"),
	}
	if def.typ != "" {
		if err := queue.ValidateType(def.typ); err != nil {
			return def, usageError("--type: %s", inputMessage(err))
		}
	}
	if def.timeout < time.Second {
		return def, usageError("--timeout %s is below the 1s minimum", def.timeout)
	}
	if def.retries < 0 {
		return def, usageError("--retries %d is negative (0 runs the task once)", def.retries)
	}
	if c.IsSet("delay") && c.IsSet("at") {
		return def, usageError("give either --delay or --at, not both")
	}
	if def.delay < 0 {
		return def, usageError("--delay %s is negative", def.delay)
	}
	if c.IsSet("at") {
		at, err := time.Parse(time.RFC3339, c.String("at"))
		if err != nil {
			return def, usageError("--at %q is not an RFC 3339 time (e.g. 2025-06-01T08:00:00Z)", c.String("at"))
		}
		def.at = at
	}
	var err error
	def.extra, err = submitExtrasFromFlags(c)
	return def, err
}

// parseBulk reads and validates every line. bad lists the invalid lines; err
// is a read error of the file itself.
func parseBulk(r io.Reader, def bulkDefaults) (tasks []bulkTask, bad []lineError, err error) {
	br := bufio.NewReaderSize(r, 64<<10)
	type keyUse struct {
		line  int
		index int
		input json.RawMessage
	}
	keys := map[string]keyUse{} // type + "\x00" + idempotency key
	for n := 1; ; n++ {
		line, rerr := readLine(br)
		if rerr != nil && !errors.Is(rerr, io.EOF) {
			if errors.Is(rerr, errLineTooLong) {
				bad = append(bad, lineError{Line: n, Error: rerr.Error()})
				return tasks, bad, nil
			}
			return nil, nil, rerr
		}
		if len(bytes.TrimSpace(line)) > 0 {
			t, perr := parseBulkLine(line, def)
			if perr != nil {
				bad = append(bad, lineError{Line: n, Error: perr.Error()})
			} else {
				t.line, t.dupOf = n, -1
				if k := t.req.IdempotencyKey; k != "" {
					id := t.req.Type + "\x00" + k
					prev, ok := keys[id]
					switch {
					case ok && !sameInput(prev.input, t.req.Input):
						bad = append(bad, lineError{Line: n, Error: fmt.Sprintf(
							"idempotency key %q of type %q is used on line %d with a different input", k, t.req.Type, prev.line)})
					case ok:
						t.dupOf = prev.index
					default:
						keys[id] = keyUse{line: n, index: len(tasks), input: t.req.Input}
					}
				}
				tasks = append(tasks, t)
			}
		}
		if errors.Is(rerr, io.EOF) {
			return tasks, bad, nil
		}
	}
}

var errLineTooLong = fmt.Errorf("line longer than %d MiB", maxBulkLine>>20)

// readLine returns the next line without its line ending; io.EOF with the
// last (possibly empty) line.
func readLine(br *bufio.Reader) ([]byte, error) {
	var buf []byte
	for {
		chunk, err := br.ReadSlice('\n')
		buf = append(buf, chunk...)
		if len(buf) > maxBulkLine {
			return nil, errLineTooLong
		}
		switch {
		case err == nil:
			return bytes.TrimRight(buf, "\r\n"), nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		default:
			return bytes.TrimRight(buf, "\r\n"), err
		}
	}
}

// parseBulkLine validates one line: a submit document (queue.DecodeSubmit)
// with the submit flags as defaults.
func parseBulkLine(line []byte, def bulkDefaults) (bulkTask, error) {
	doc, err := queue.DecodeSubmit(line, queue.SubmitDefaults{
		Type: def.typ, Timeout: def.timeout, MaxRetries: def.retries, Delay: def.delay, AvailableAt: def.at,
		Priority: def.extra.priority, ExpiresIn: def.extra.expiresIn, ExpiresAt: def.extra.expiresAt,
		TypeHint: "or pass --type as the default for every line",
	})
	if err != nil {
		return bulkTask{}, errors.New(inputMessage(err))
	}
	return bulkTask{req: doc.Request, doc: doc}, nil
}

// sameInput compares two task inputs as JSON values (absent = null).
func sameInput(a, b json.RawMessage) bool {
	if bytes.Equal(a, b) {
		return true
	}
	var va, vb any
	if len(a) > 0 && json.Unmarshal(a, &va) != nil {
		return false
	}
	if len(b) > 0 && json.Unmarshal(b, &vb) != nil {
		return false
	}
	return reflect.DeepEqual(va, vb)
}

// badLinesError prints the invalid lines (one per line on w when there are
// several) and returns the one-line usage error for the whole file.
func badLinesError(w io.Writer, name string, bad []lineError) error {
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

// --- submitting --------------------------------------------------------------

type bulkOutcome struct {
	id      string
	created bool
	err     error
	done    bool // attempted
}

type bulkResult struct {
	tasks    []bulkTask
	outcomes []bulkOutcome
	stopErr  error // why the run stopped early (storage error, interrupt)
}

// submitAll submits tasks with conc submits in flight. A storage-level
// error (bucket unreachable, credentials refused) or the end of ctx stops
// dispatching; lines not attempted are skipped.
func submitAll(ctx context.Context, q *queue.Queue, tasks []bulkTask, conc int, bar *progressBar) *bulkResult {
	res := &bulkResult{tasks: tasks, outcomes: make([]bulkOutcome, len(tasks))}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	var stopOnce sync.Once
	next := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < conc; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				t := tasks[i]
				req := t.doc.Resolve(q.Now())
				task, created, err := q.Submit(ctx, req)
				o := bulkOutcome{created: created, err: err, done: true}
				if err == nil {
					o.id = task.ID.String()
				} else if exitCode(err) == exitStorage || ctx.Err() != nil {
					stopOnce.Do(func() {
						res.stopErr = err
						stop()
					})
				}
				res.outcomes[i] = o
				bar.add(1)
			}
		}()
	}
dispatch:
	for i := range tasks {
		if tasks[i].dupOf >= 0 {
			continue
		}
		select {
		case next <- i:
		case <-runCtx.Done():
			break dispatch
		}
	}
	close(next)
	wg.Wait()
	for i, t := range tasks {
		if t.dupOf < 0 {
			continue
		}
		first := res.outcomes[t.dupOf]
		switch {
		case !first.done:
		case first.err != nil:
			res.outcomes[i] = bulkOutcome{done: true, err: fmt.Errorf("not submitted: line %d with the same idempotency key failed", tasks[t.dupOf].line)}
		default:
			res.outcomes[i] = bulkOutcome{done: true, id: first.id}
		}
		bar.add(1)
	}
	if res.stopErr == nil && ctx.Err() != nil {
		res.stopErr = ctx.Err()
	}
	return res
}

func (r *bulkResult) summary() bulkSummary {
	s := bulkSummary{IDs: []string{}, Errors: []lineError{}}
	for i, o := range r.outcomes {
		switch {
		case !o.done:
			s.Skipped++
		case o.err != nil:
			s.Failed++
			s.Errors = append(s.Errors, lineError{Line: r.tasks[i].line, Error: errorText(o.err)})
		case o.created:
			s.Submitted++
			s.IDs = append(s.IDs, o.id)
		default:
			s.Duplicates++
			s.IDs = append(s.IDs, o.id)
		}
	}
	return s
}

// err is the command's error: nil when every line was submitted (or was a
// duplicate); else one line, with the exit code of the first failure.
func (r *bulkResult) err(name string, total int) error {
	s := r.summary()
	if s.Failed == 0 && s.Skipped == 0 {
		return nil
	}
	if r.stopErr != nil && errors.Is(r.stopErr, context.Canceled) {
		return fmt.Errorf("%s: interrupted after %d of %d lines (%d submitted, %d duplicates, %d failed): %w",
			name, total-s.Skipped, total, s.Submitted, s.Duplicates, s.Failed, r.stopErr)
	}
	var first error
	firstLine := 0
	for i, o := range r.outcomes {
		if o.done && o.err != nil {
			first, firstLine = o.err, r.tasks[i].line
			break
		}
	}
	msg := fmt.Sprintf("%s: %d of %d lines failed", name, s.Failed, total)
	if s.Skipped > 0 {
		msg += fmt.Sprintf(", %d not attempted (resubmitting is safe for lines with an idempotency_key)", s.Skipped)
	}
	return fmt.Errorf("%s; first, line %d: %w", msg, firstLine, first)
}

// errorText is err's message without the sentinel prefixes queue adds.
func errorText(err error) string {
	return strings.TrimPrefix(inputMessage(err), "submit: ")
}

func printBulkSummary(w io.Writer, s bulkSummary) {
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

func (p *progressBar) add(n int) {
	if p != nil {
		p.done.Add(int64(n))
	}
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
