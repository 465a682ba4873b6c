package worker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/qo-queue/qo/queue"
)

// Progress
//
// A handler reports how far it got with ReportProgress (an exec handler:
// by writing lines to the file named by QO_PROGRESS_FILE). A report only
// updates the running task in memory; the worker's next heartbeat carries
// the latest report of each running task in its registry entry
// (queue.WorkerInfo.Progress), so however often a handler reports, the
// store sees no write beyond the heartbeat's one PUT per HeartbeatInterval.
// Readers (qo status, the HTTP API, the console, the web UI) find it with
// one GET of the entry the task's lease names. See queue/doc.go,
// "Progress".

// ErrNoRunningTask: ReportProgress was given a context that is not a
// handler's context (or one derived from it).
var ErrNoRunningTask = errors.New("not a handler's context: progress is reported from the context a worker passes its handler")

// ReportProgress records the progress of the task whose handler got ctx: a
// fraction done from 0 to 1 and a short message (at most
// queue.MaxProgressMessage bytes, no control characters). It costs no
// store request: the worker's next heartbeat publishes the latest report,
// so call it as often as is convenient. Errors wrap queue.ErrInvalidInput
// for a bad report and ErrNoRunningTask outside a handler.
func ReportProgress(ctx context.Context, fraction float64, msg string) error {
	if err := queue.ValidateProgress(fraction, msg); err != nil {
		return fmt.Errorf("report progress: %w", err)
	}
	rt, _ := ctx.Value(runningTaskKey{}).(*runningTask)
	if rt == nil {
		return fmt.Errorf("report progress: %w", ErrNoRunningTask)
	}
	rt.prog.report(fraction, msg, rt.now())
	return nil
}

// runningTaskKey marks a handler's context with its *runningTask.
type runningTaskKey struct{}

// taskProgress is a running task's latest report, and for an exec handler
// the file it reports through.
type taskProgress struct {
	mu      sync.Mutex
	latest  *queue.Progress
	attempt int
	file    string // QO_PROGRESS_FILE of an exec handler, read at each heartbeat
}

func (p *taskProgress) report(fraction float64, msg string, at time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.latest = &queue.Progress{Attempt: p.attempt, Fraction: fraction, Message: msg, At: at}
}

// snapshot returns the latest report (nil: none), first reading the
// progress file of an exec handler if it has one.
func (p *taskProgress) snapshot(now time.Time) *queue.Progress {
	p.mu.Lock()
	file := p.file
	p.mu.Unlock()
	if file != "" {
		if fraction, msg, ok := readProgressFile(file); ok {
			p.mu.Lock()
			if p.latest == nil || p.latest.Fraction != fraction || p.latest.Message != msg {
				p.latest = &queue.Progress{Attempt: p.attempt, Fraction: fraction, Message: msg, At: now}
			}
			p.mu.Unlock()
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.latest == nil {
		return nil
	}
	c := *p.latest
	return &c
}

func (p *taskProgress) setFile(path string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.file = path
}

// progressTail is how much of the end of a progress file is read: enough
// for a few full lines.
const progressTail = 4 << 10

// readProgressFile returns the last well-formed report of an exec
// handler's progress file (see ParseProgressLine); ok is false when it
// holds none.
func readProgressFile(path string) (fraction float64, msg string, ok bool) {
	f, err := os.Open(path)
	if err != nil {
		return 0, "", false
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > progressTail {
		if _, err := f.Seek(st.Size()-progressTail, io.SeekStart); err != nil {
			return 0, "", false
		}
	}
	buf, err := io.ReadAll(io.LimitReader(f, progressTail))
	if err != nil {
		return 0, "", false
	}
	// Only complete lines: a report being written is read next time.
	end := bytes.LastIndexByte(buf, '\n')
	if end < 0 {
		return 0, "", false
	}
	lines := strings.Split(string(buf[:end]), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if fraction, msg, err := ParseProgressLine(lines[i]); err == nil {
			return fraction, msg, true
		}
	}
	return 0, "", false
}

// ParseProgressLine parses one line of an exec handler's progress file:
// a fraction (0.42) or a percentage (42%), then optionally a space and a
// message, e.g. "0.42 resized 42 of 100 images" or "42%". Trailing
// carriage returns and spaces are ignored.
func ParseProgressLine(line string) (fraction float64, msg string, err error) {
	line = strings.TrimRight(line, "\r \t")
	num, msg, _ := strings.Cut(line, " ")
	msg = strings.TrimSpace(msg)
	if pct, isPct := strings.CutSuffix(num, "%"); isPct {
		fraction, err = strconv.ParseFloat(pct, 64)
		fraction /= 100
	} else {
		fraction, err = strconv.ParseFloat(num, 64)
	}
	if err != nil {
		return 0, "", fmt.Errorf("%w: progress line %q: want a fraction (0.42) or a percentage (42%%), then a message", queue.ErrInvalidInput, line)
	}
	if err := queue.ValidateProgress(fraction, msg); err != nil {
		return 0, "", err
	}
	return fraction, msg, nil
}

// progressNow returns the latest progress of a running task, for the
// heartbeat.
func (rt *runningTask) progressNow() *queue.Progress {
	return rt.prog.snapshot(rt.now())
}
