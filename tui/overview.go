package tui

import (
	"fmt"
	"sort"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/qo-queue/qo/monitor"
	"github.com/qo-queue/qo/monitor/view"
	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store"
)

// overview is the first screen: counts by status, a grid of every shard,
// recent throughput, the oldest pending task, and what the fleet's S3
// requests cost.
type overview struct {
	st     Styles
	prices store.Prices
	shards []string
	w, h   int

	loaded     bool
	stats      queue.Stats
	workers    []monitor.WorkerHealth
	badWorker  []queue.MalformedError
	control    queue.Control
	controlErr error

	// rate is the fleet's S3 request rate and unserved the types nothing
	// runs, from the read model (see inspect.Snapshot).
	rate     *view.Rate
	unserved []view.Unserved
	lastDay  []queue.MinuteCount
}

func newOverview(st Styles, prices store.Prices, shards []string) overview {
	return overview{st: st, prices: prices, shards: shards}
}

func (o *overview) SetSize(w, h int) { o.w, o.h = w, h }

// take takes a fresh overviewMsg.
func (o *overview) take(m overviewMsg) {
	o.loaded = true
	o.stats, o.workers, o.badWorker = m.stats, m.workers, m.malformed
	o.controlErr = m.controlErr
	if m.controlErr == nil {
		o.control = m.control
	}
	o.rate, o.unserved, o.lastDay = m.snap.Rate, m.snap.Unserved, m.snap.LastDay
}

// requestRate returns the fleet's S3 requests per second and the cost per
// hour at that rate; ok is false until some worker's counters were seen
// at two heartbeats.
func (o *overview) requestRate() (perSec, perHour float64, ok bool) {
	if o.rate == nil {
		return 0, 0, false
	}
	return o.rate.PerSecond, o.rate.DollarsPerHour, true
}

func (o *overview) View(time.Time) string {
	if !o.loaded {
		return o.st.Dim.Render("Counting tasks…")
	}
	s := o.stats
	var b strings.Builder
	b.WriteString(o.pauseBanner())

	// Totals by status.
	var parts []string
	for _, st := range s.Counted {
		label := o.st.status(st)
		if st == queue.StatusFailed {
			label += " (dead letters)"
		}
		parts = append(parts, fmt.Sprintf("%s %s", label, count(s.ByStatus[st])))
	}
	b.WriteString(o.st.Header.Render("Tasks") + "  " + strings.Join(parts, "  "))
	if s.Partial {
		b.WriteString(o.st.Dim.Render("  (lower bounds: large backlog)"))
	}
	b.WriteString("\n")
	waiting := "nothing pending"
	if !s.OldestPending.IsZero() {
		waiting = "oldest pending " + short(s.OldestPendingAge)
	}
	fmt.Fprintf(&b, "       total %s  ·  %s  ·  %s delayed or in backoff\n\n", count(s.Total), waiting, count(s.Delayed))

	// Throughput over the last minutes.
	var done, failed []int
	sumDone, sumFailed := 0, 0
	for _, m := range s.Recent {
		done = append(done, m.Completed)
		failed = append(failed, m.Failed)
		sumDone += m.Completed
		sumFailed += m.Failed
	}
	rate := "-"
	if sumDone+sumFailed > 0 {
		rate = fmt.Sprintf("%.1f%%", 100*float64(sumFailed)/float64(sumDone+sumFailed))
	}
	mins := len(s.Recent)
	fmt.Fprintf(&b, "%s last %d min, one mark per minute (kept across restarts)\n", o.st.Header.Render("Throughput"), mins)
	fmt.Fprintf(&b, "  completed       %s %s (%.1f/min)\n", sparkline(done), count(sumDone), float64(sumDone)/float64(max(mins, 1)))
	fmt.Fprintf(&b, "  failed attempts %s %s (%s of attempts, retries included)\n", sparkline(failed), count(sumFailed), rate)
	dayDone, dayFailed := 0, 0
	for _, m := range o.lastDay {
		dayDone += m.Completed
		dayFailed += m.Failed
	}
	fmt.Fprintf(&b, "  last %d h: %s completed, %s failed attempts\n\n", len(o.lastDay), count(dayDone), count(dayFailed))
	for _, u := range o.unserved {
		b.WriteString(o.st.Error.Render(cut(fmt.Sprintf("! %s: %d pending, %s", safe(u.Type), u.Pending, u.Reason), max(o.w, 20))) + "\n")
	}
	if len(o.unserved) > 0 {
		b.WriteString("\n")
	}

	// The fleet.
	active := 0
	for _, h := range o.workers {
		if h.State == monitor.Active {
			active++
		}
	}
	fmt.Fprintf(&b, "%s %d active of %d registered", o.st.Header.Render("Workers"), active, len(o.workers))
	if perSec, perHour, ok := o.requestRate(); ok {
		fmt.Fprintf(&b, "  ·  S3 %.1f req/s ≈ %s/hour", perSec, dollars(perHour))
	} else {
		b.WriteString(o.st.Dim.Render("  ·  S3 rate after the next heartbeat"))
	}
	b.WriteString("\n\n")

	b.WriteString(o.shardGrid())

	// Counts come from the indexes, so malformed task objects show where
	// they are met (the task list); malformed worker entries show here.
	var warn []string
	if n := len(o.badWorker); n > 0 {
		warn = append(warn, fmt.Sprintf("%d malformed worker entr(ies) skipped, e.g. %s", n, safe(o.badWorker[0].Key)))
	}
	for _, w := range warn {
		b.WriteString("\n" + o.st.Error.Render("! ") + cut(oneLine(w), max(o.w-2, 10)))
	}
	return b.String()
}

// pauseBanner says what is paused (nothing when nothing is).
func (o *overview) pauseBanner() string {
	var lines []string
	c := o.control
	if c.Paused {
		since := ""
		if c.PausedAt != nil {
			since = " since " + c.PausedAt.UTC().Format("15:04:05")
		}
		lines = append(lines, "PAUSED: the whole queue"+since+reasonText(c.Reason)+" · P resumes")
	}
	if ts := c.PausedTypes(); len(ts) > 0 {
		var parts []string
		for _, t := range ts {
			parts = append(parts, safe(t)+reasonText(c.Types[t].Reason))
		}
		lines = append(lines, "PAUSED types: "+strings.Join(parts, ", ")+" · U lists them to resume")
	}
	if o.controlErr != nil {
		lines = append(lines, "pause switches unreadable: "+oneLine(o.controlErr.Error()))
	}
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(o.st.Error.Render(cut(l, max(o.w, 20))) + "\n")
	}
	if ts := c.LimitedTypes(); len(ts) > 0 {
		var parts, rates, perKey []string
		for _, t := range ts {
			if n, ok := c.ConcurrencyCap(t); ok {
				parts = append(parts, fmt.Sprintf("%s %d", safe(t), n))
			}
			if r, ok := c.RateLimit(t); ok {
				rates = append(rates, fmt.Sprintf("%s %s", safe(t), r))
			}
			if k := keyLimitText(c, t); k != "" {
				perKey = append(perKey, safe(t)+" "+k)
			}
		}
		if len(parts) > 0 {
			b.WriteString(o.st.Dim.Render(cut("fleet-wide caps (running at once): "+strings.Join(parts, ", "), max(o.w, 20))) + "\n")
		}
		if len(rates) > 0 {
			b.WriteString(o.st.Dim.Render(cut("fleet-wide rates (starts): "+strings.Join(rates, ", "), max(o.w, 20))) + "\n")
		}
		if len(perKey) > 0 {
			b.WriteString(o.st.Dim.Render(cut("per key: "+strings.Join(perKey, "; "), max(o.w, 20))) + "\n")
		}
		lines = append(lines, "")
	}
	if len(lines) > 0 {
		b.WriteString("\n")
	}
	return b.String()
}

// keyLimitText is typ's per-key cap and rate as the overview shows them
// ("3 running, 10/s"), "" for none.
func keyLimitText(c queue.Control, typ string) string {
	var parts []string
	if n, ok := c.KeyConcurrencyCap(typ); ok {
		parts = append(parts, fmt.Sprintf("%d running", n))
	}
	if r, ok := c.KeyRateLimit(typ); ok {
		parts = append(parts, r.String())
	}
	return strings.Join(parts, ", ")
}

func reasonText(r string) string {
	if r == "" {
		return ""
	}
	return " (" + oneLine(r) + ")"
}

// shardGrid draws one cell per shard, coloured by what it holds, with the
// backlog as a digit, so 16 and 256 shards both fit on one screen; below it
// the busiest shards by backlog.
func (o *overview) shardGrid() string {
	var b strings.Builder
	b.WriteString(o.st.Header.Render("Shards") + o.st.Dim.Render("  backlog per shard: · none  1-9  + 10 or more; ! after it: has failed tasks") + "\n")
	perRow := 16
	if len(o.shards) <= 16 {
		perRow = len(o.shards)
	}
	for i := 0; i < len(o.shards); i += perRow {
		row := o.shards[i:min(i+perRow, len(o.shards))]
		fmt.Fprintf(&b, "  %-3s", row[0])
		for _, sh := range row {
			c := o.stats.ByShard[sh]
			backlog := c[queue.StatusPending] + c[queue.StatusRunning]
			cell := "·"
			switch {
			case backlog >= 10:
				cell = "+"
			case backlog > 0:
				cell = fmt.Sprint(backlog)
			}
			// The backlog stays readable beside a dead letter: a shard
			// with failed tasks is marked after its count, not instead.
			if c[queue.StatusRunning] > 0 {
				cell = o.st.Status[queue.StatusRunning].Render(cell)
			}
			mark := " "
			if c[queue.StatusFailed] > 0 {
				mark = o.st.Status[queue.StatusFailed].Render("!")
			}
			b.WriteString(" " + cell + mark)
		}
		b.WriteString("\n")
	}
	type busy struct {
		shard string
		n     int
	}
	var top []busy
	for sh, c := range o.stats.ByShard {
		if n := c[queue.StatusPending] + c[queue.StatusRunning] + c[queue.StatusFailed]; n > 0 {
			top = append(top, busy{sh, n})
		}
	}
	sort.Slice(top, func(i, j int) bool {
		if top[i].n != top[j].n {
			return top[i].n > top[j].n
		}
		return top[i].shard < top[j].shard
	})
	if rows := min(len(top), 4); rows > 0 {
		b.WriteString(o.st.Dim.Render("  busiest:"))
		for _, t := range top[:rows] {
			c := o.stats.ByShard[t.shard]
			fmt.Fprintf(&b, "  %s p%d r%d f%d", t.shard, c[queue.StatusPending], c[queue.StatusRunning], c[queue.StatusFailed])
		}
		b.WriteString("\n")
	}
	return b.String()
}

// The overview reads nothing of its own: the root loads its counts on
// every refresh, for the header and the workers screen too.
func (o *overview) load(*Model, bool) tea.Cmd { return nil }

// apply takes the counts, and passes on what the task list and the
// workers screen show of them.
func (o *overview) apply(r *Model, msg tea.Msg) (tea.Cmd, bool) {
	m, ok := msg.(overviewMsg)
	if !ok {
		return nil, false
	}
	if r.fresh("overview", m.seq) {
		r.noteLoad(m.err)
		if m.err == nil {
			o.take(m)
			r.tasks.control, r.tasks.stats = o.control, o.stats
			r.workers.health, r.workers.loaded = o.workers, o.loaded
		}
	}
	return nil, true
}

func (o *overview) capture(*Model, tea.KeyMsg) (tea.Cmd, bool) { return nil, false }

func (o *overview) key(*Model, tea.KeyMsg) tea.Cmd { return nil }

func (o *overview) writes(tea.KeyMsg) bool { return false }

func (o *overview) hints(*Model) string {
	if len(o.control.Types) > 0 {
		return "1-4 screens · / search · U resume types · P pause queue · " + commonHints
	}
	return "1-4 screens · / search · P pause queue · " + commonHints
}
