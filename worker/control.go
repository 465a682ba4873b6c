package worker

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/queue/control"
)

// Pause switches and per-type limits
//
// Before each poll the worker works out which of its types it may claim:
// not paused by the queue's control.json and below its Limits; when
// nothing is claimable it does not list at all. The switches are read
// when a listing found something to claim and the copy in hand is older
// than a second (so a pause stops new claims within about a second), and,
// while something the worker serves is paused, every ControlRefresh (so it
// notices a resume). An idle worker with nothing paused reads them once,
// at its first poll.
// A control.json that cannot be read keeps the last known switches (a
// warning is logged once). Until it has been read once the worker knows no
// switches and no fleet-wide limits at all: it claims nothing, and tries
// again at every poll (a worker started while the bucket answers only in
// part would otherwise run a paused type, or past a fleet-wide cap).

// controlFresh is the oldest copy of the switches a claim relies on.
const controlFresh = time.Second

type controlState struct {
	ctl     queue.Control
	readAt  time.Time
	known   bool // read once: ctl holds the queue's switches and limits
	failing bool
	summary string // last logged pause state
}

// claimableTypes returns the types a poll may claim now (nil, false when
// none).
func (w *Worker) claimableTypes(ctx context.Context) ([]string, bool) {
	switch {
	case !w.control.known:
		if w.refreshControl(ctx, 0); !w.control.known {
			return nil, false
		}
	case w.pauseSummary() != "":
		w.refreshControl(ctx, w.opts.ControlRefresh)
	}
	running := w.runningByType()
	out := make([]string, 0, len(w.types))
	for _, t := range w.types {
		if w.control.ctl.IsPaused(t) {
			continue
		}
		if n, ok := w.typeLimit(t); ok && running[t] >= n {
			continue
		}
		if !w.rateReadyNow(t) {
			continue
		}
		out = append(out, t)
	}
	return out, len(out) > 0
}

// dropPaused re-reads the switches when they are older than controlFresh
// and removes the entries of types paused meanwhile.
func (w *Worker) dropPaused(ctx context.Context, entries []queue.ReadyEntry) []queue.ReadyEntry {
	if len(entries) == 0 {
		return entries
	}
	w.refreshControl(ctx, min(controlFresh, w.opts.ControlRefresh))
	return slices.DeleteFunc(entries, func(e queue.ReadyEntry) bool { return w.control.ctl.IsPaused(e.Type) })
}

// refreshControl reads control.json when the copy in hand is older than
// maxAge.
func (w *Worker) refreshControl(ctx context.Context, maxAge time.Duration) {
	cs := &w.control
	if cs.known && time.Since(cs.readAt) < maxAge {
		return
	}
	ctl, err := control.Read(ctx, w.q)
	cs.readAt = time.Now()
	if err != nil {
		if !cs.failing {
			w.log.Warn("cannot read the queue's pause switches; keeping the last known ones", "err", err)
			cs.failing = true
		}
		return
	}
	cs.failing, cs.known = false, true
	cs.ctl = ctl
	w.setCaps(ctl)
	if s := w.pauseSummary(); s != cs.summary {
		if s == "" {
			w.log.Info("resumed: no served type is paused")
		} else {
			w.log.Info("paused by an operator: not claiming " + s)
		}
		cs.summary = s
	}
}

// pauseSummary names what of this worker's types is paused ("" for
// nothing).
func (w *Worker) pauseSummary() string {
	ctl := w.control.ctl
	if ctl.Paused {
		return "any task (the whole queue is paused" + reasonText(ctl.Reason) + ")"
	}
	var paused []string
	for _, t := range w.types {
		if p, ok := ctl.Types[t]; ok {
			paused = append(paused, t+reasonText(p.Reason))
		}
	}
	return strings.Join(paused, ", ")
}

func reasonText(r string) string {
	if r == "" {
		return ""
	}
	return ": " + r
}

func (w *Worker) runningByType() map[string]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	m := make(map[string]int, len(w.types))
	for _, rt := range w.running {
		m[rt.typ]++
	}
	for typ, n := range w.claiming {
		m[typ] += n
	}
	return m
}

// atLimit reports whether starting one more task of typ would exceed its
// limit, counting claimed (tasks already running plus claims of this poll).
func (w *Worker) atLimit(typ string, claimed map[string]int) bool {
	n, ok := w.typeLimit(typ)
	return ok && claimed[typ] >= n
}

// byPriority orders entries high first, keeping the (key) order within
// each level.
func byPriority(entries []queue.ReadyEntry) {
	slices.SortStableFunc(entries, func(a, b queue.ReadyEntry) int { return a.Priority.Level() - b.Priority.Level() })
}
