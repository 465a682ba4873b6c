package queue

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/google/uuid"

	"github.com/qo-queue/qo/store"
)

// Bounds of bulk submits.
const (
	DefaultBulkConcurrency = 16
	MaxBulkConcurrency     = 256
	// MaxBulkLine bounds one line of a bulk stream, its input included.
	MaxBulkLine = 16 << 20
)

// BulkItem is one submit document of a bulk submit.
type BulkItem struct {
	Line    int // its line number (from 1), which results and errors name
	Request SubmitRequest
}

// LineError is a problem with one line of a bulk submit.
type LineError struct {
	Line  int    `json:"line"`
	Error string `json:"error"`
}

var errLineTooLong = fmt.Errorf("line longer than %d MiB", MaxBulkLine>>20)

// ParseBulk reads a JSON Lines stream of submit documents, one per line
// (DecodeSubmit, with def filling the fields a line leaves out; blank lines
// are skipped), and validates every line before anything is written, so a
// caller can refuse the whole stream when one line is bad. bad lists the
// invalid lines in order, with their numbers and what is wrong, including a
// line that reuses an earlier line's type and idempotency key with another
// input; a line longer than MaxBulkLine is reported and ends the reading.
// err is a read error of r itself.
func ParseBulk(r io.Reader, def SubmitDefaults) (items []BulkItem, bad []LineError, err error) {
	br := bufio.NewReaderSize(r, 64<<10)
	keys := bulkKeys{}
	for n := 1; ; n++ {
		line, rerr := readLine(br)
		if rerr != nil && !errors.Is(rerr, io.EOF) {
			if errors.Is(rerr, errLineTooLong) {
				return items, append(bad, LineError{Line: n, Error: rerr.Error()}), nil
			}
			return nil, nil, fmt.Errorf("read line %d: %w", n, rerr)
		}
		if len(bytes.TrimSpace(line)) > 0 {
			doc, derr := DecodeSubmit(line, def)
			if derr != nil {
				bad = append(bad, LineError{Line: n, Error: inputText(derr)})
			} else {
				items = append(items, BulkItem{Line: n, Request: doc})
				if _, kerr := keys.add(items, len(items)-1); kerr != nil {
					bad = append(bad, LineError{Line: n, Error: kerr.Error()})
				}
			}
		}
		if errors.Is(rerr, io.EOF) {
			return items, bad, nil
		}
	}
}

// readLine returns the next line without its line ending; io.EOF with the
// last (possibly empty) line.
func readLine(br *bufio.Reader) ([]byte, error) {
	var buf []byte
	for {
		chunk, err := br.ReadSlice('\n')
		buf = append(buf, chunk...)
		if len(buf) > MaxBulkLine {
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

// bulkKeys maps type NUL idempotency key to the first item using it.
type bulkKeys map[string]int

// add records items[i]'s key and returns the index of an earlier item with
// the same type, key and input (-1 when there is none): that item's task is
// items[i]'s too. An earlier item with the same key and another input is an
// error naming its line.
func (k bulkKeys) add(items []BulkItem, i int) (int, error) {
	req := items[i].Request
	if req.IdempotencyKey == "" {
		return -1, nil
	}
	id := req.Type + "\x00" + req.IdempotencyKey
	first, ok := k[id]
	switch {
	case !ok:
		k[id] = i
		return -1, nil
	case !sameJSON(items[first].Request.Input, req.Input):
		return -1, &keyReuseError{fmt.Sprintf("idempotency key %q of type %q is used on line %d with a different input",
			req.IdempotencyKey, req.Type, items[first].Line)}
	}
	return first, nil
}

// keyReuseError is an idempotency key used by two items with different
// inputs; it matches ErrIdempotencyMismatch.
type keyReuseError struct{ msg string }

func (e *keyReuseError) Error() string { return e.msg }
func (e *keyReuseError) Unwrap() error { return ErrIdempotencyMismatch }

// BulkOptions tune SubmitBulk.
type BulkOptions struct {
	// Concurrency is the number of submits in flight
	// (DefaultBulkConcurrency when 0, at most MaxBulkConcurrency).
	Concurrency int
	// Progress, when set, is called after each line is done with the
	// number of lines done and the total; calls come one at a time, from
	// SubmitBulk's goroutines.
	Progress func(done, total int)
}

// BulkLineResult is what became of one item of SubmitBulk.
type BulkLineResult struct {
	Line int
	// ID is the item's task: the one created, or the one its idempotency
	// key already named (Created false).
	ID      uuid.UUID
	Created bool
	// Attempted is false for an item never submitted because the run
	// stopped first (BulkResult.Stopped).
	Attempted bool
	Err       error
}

// BulkResult is the outcome of SubmitBulk.
type BulkResult struct {
	Lines []BulkLineResult // one per item, in order
	// Stopped is why the run stopped sending: a storage error (the bucket
	// unreachable, credentials refused) or the end of ctx; the items not
	// attempted by then are skipped. nil when nothing stopped it.
	Stopped error
}

// BulkSummary counts a bulk submit's lines (the JSON of qo submit --file).
type BulkSummary struct {
	Submitted  int         `json:"submitted"`  // new tasks
	Duplicates int         `json:"duplicates"` // lines whose idempotency key already named a task
	Failed     int         `json:"failed"`     // lines whose submit failed
	Skipped    int         `json:"skipped"`    // lines never attempted
	IDs        []uuid.UUID `json:"ids"`        // the task of every submitted or duplicate line, in order
	Errors     []LineError `json:"errors"`     // every failed line
}

// SubmitBulk submits items with opt.Concurrency submits in flight, each a
// Submit (2 PUTs; 3 with an idempotency key; a duplicate key with the same
// input 1 PUT + 2 GETs and counted, not failed). An item repeating an
// earlier item's type and idempotency key is not sent: it gets the earlier
// item's task, so the first wins however the submits interleave (with
// another input it fails without being sent; ParseBulk reports that before
// anything is written). Delays and expiries relative to the submit
// count from each item's own submit. A storage error or
// the end of ctx stops the run: items not sent by then are skipped, and
// submitting the same items again is safe for those with an idempotency
// key.
func (q *Queue) SubmitBulk(ctx context.Context, items []BulkItem, opt BulkOptions) *BulkResult {
	conc := opt.Concurrency
	if conc <= 0 {
		conc = DefaultBulkConcurrency
	}
	conc = min(conc, MaxBulkConcurrency)
	res := &BulkResult{Lines: make([]BulkLineResult, len(items))}
	dupOf := make([]int, len(items))
	keys := bulkKeys{}
	for i, it := range items {
		res.Lines[i].Line = it.Line
		var err error
		if dupOf[i], err = keys.add(items, i); err != nil {
			res.Lines[i].Attempted, res.Lines[i].Err = true, err
			dupOf[i] = i // settled: not sent
		}
	}

	var mu sync.Mutex
	done := 0
	progress := func() {
		if opt.Progress == nil {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		done++
		opt.Progress(done, len(items))
	}

	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	var stopOnce sync.Once
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(conc, len(items)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				task, created, err := q.Submit(ctx, items[i].Request)
				r := &res.Lines[i]
				r.Attempted, r.Created, r.Err = true, created, err
				if err == nil {
					r.ID = task.ID
				} else if isStorageFailure(err) || ctx.Err() != nil {
					stopOnce.Do(func() {
						res.Stopped = err
						stop()
					})
				}
				progress()
			}
		}()
	}
dispatch:
	for i := range items {
		if dupOf[i] >= 0 {
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
	for i := range items {
		first := dupOf[i]
		if first < 0 {
			continue
		}
		if first != i {
			f := res.Lines[first]
			switch {
			case !f.Attempted:
				continue // skipped with it
			case f.Err != nil:
				res.Lines[i].Attempted = true
				res.Lines[i].Err = fmt.Errorf("not submitted: line %d with the same idempotency key failed", f.Line)
			default:
				res.Lines[i].Attempted, res.Lines[i].ID = true, f.ID
			}
		}
		progress()
	}
	if res.Stopped == nil && ctx.Err() != nil {
		res.Stopped = ctx.Err()
	}
	return res
}

// isStorageFailure reports errors that fail every request alike: the bucket
// unreachable, missing or refusing the credentials.
func isStorageFailure(err error) bool {
	for _, kind := range []error{store.ErrUnreachable, store.ErrAccessDenied, store.ErrBucketNotFound, store.ErrNotSupported} {
		if errors.Is(err, kind) {
			return true
		}
	}
	return false
}

// Summary counts the lines and lists the ids and the failures.
func (r *BulkResult) Summary() BulkSummary {
	s := BulkSummary{IDs: []uuid.UUID{}, Errors: []LineError{}}
	for _, l := range r.Lines {
		switch {
		case !l.Attempted:
			s.Skipped++
		case l.Err != nil:
			s.Failed++
			s.Errors = append(s.Errors, LineError{Line: l.Line, Error: strings.TrimPrefix(inputText(l.Err), "submit: ")})
		case l.Created:
			s.Submitted++
			s.IDs = append(s.IDs, l.ID)
		default:
			s.Duplicates++
			s.IDs = append(s.IDs, l.ID)
		}
	}
	return s
}

// FirstFailure returns the first line whose submit failed.
func (r *BulkResult) FirstFailure() (BulkLineResult, bool) {
	for _, l := range r.Lines {
		if l.Attempted && l.Err != nil {
			return l, true
		}
	}
	return BulkLineResult{}, false
}
