package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/worker"
)

// History is what reads cost beside a bucket's history: the same
// measurements in a bucket with Finished finished tasks (1% failed, so a
// dead-letter queue of Finished/100) and in an empty one.
type History struct {
	Finished    int     `json:"finished"`
	SeedSeconds float64 `json:"seed_seconds"`
	// LeaderMinute counts every request of an idle worker with its
	// embedded monitor (which becomes the leader) over LeaderSeconds after
	// its start.
	LeaderMinute  map[store.Op]int64 `json:"leader_minute"`
	LeaderSeconds float64            `json:"leader_seconds"`
	StatsCold     Read               `json:"stats_cold"`
	StatsWarm     Read               `json:"stats_warm"`
	DeadPage1     Read               `json:"dead_letters_page_1"`
	DeadPage2     Read               `json:"dead_letters_page_2"`
	RecentHour    Read               `json:"completed_last_hour"`
}

// Read is the cost of one read: requests by kind and time taken.
type Read struct {
	Requests map[store.Op]int64 `json:"requests"`
	Millis   float64            `json:"ms"`
	Shown    int                `json:"shown"`
}

// Total is the number of requests.
func (r Read) Total() int64 {
	var n int64
	for _, v := range r.Requests {
		n += v
	}
	return n
}

func byOp(d store.Counts) map[store.Op]int64 {
	out := map[store.Op]int64{}
	for _, op := range store.Ops {
		if n := d.Total(op); n > 0 {
			out[op] = n
		}
	}
	return out
}

// measureHistory seeds n finished tasks into the bucket (none when n is 0)
// and measures every read of History there.
func measureHistory(ctx context.Context, b Bucket, q *queue.Queue, n int, leaderWindow time.Duration, log io.Writer) (History, error) {
	h := History{Finished: n}
	start := time.Now()
	if err := SeedFinished(ctx, b, q, Seed{Tasks: n, FailedEvery: 100}); err != nil {
		return h, err
	}
	h.SeedSeconds = time.Since(start).Seconds()
	if n > 0 {
		fmt.Fprintf(log, "bench: seeded %d finished tasks in %.0f s (%.0f PUT/s)\n", n, h.SeedSeconds, float64(n+n/100)/h.SeedSeconds)
	}
	read := func(fn func() (int, error)) (Read, error) {
		before := b.Requests().Snapshot()
		t0 := time.Now()
		shown, err := fn()
		return Read{Requests: byOp(b.Requests().Snapshot().Sub(before)), Millis: float64(time.Since(t0).Microseconds()) / 1000, Shown: shown}, err
	}

	// An idle worker with its embedded monitor: it becomes the leader at
	// once, so its first minute holds a new leader's whole start.
	before := b.Requests().Snapshot()
	wctx, cancel := context.WithCancel(ctx)
	w := worker.New(q, worker.Options{ID: "bench-leader", Concurrency: 1, Logger: quiet})
	w.Handle("noop", func(context.Context, *queue.Task) (json.RawMessage, error) { return nil, nil })
	done := make(chan error, 1)
	go func() { done <- w.Run(wctx) }()
	select {
	case <-time.After(leaderWindow):
	case <-ctx.Done():
	}
	h.LeaderMinute = byOp(b.Requests().Snapshot().Sub(before))
	h.LeaderSeconds = leaderWindow.Seconds()
	cancel()
	if err := <-done; err != nil && ctx.Err() == nil {
		return h, err
	}

	c := q.NewStatsCounter(queue.StatsOptions{})
	var err error
	stats := func() (int, error) {
		st, err := c.Refresh(ctx)
		return st.Total, err
	}
	if h.StatsCold, err = read(stats); err != nil {
		return h, err
	}
	if h.StatsWarm, err = read(stats); err != nil {
		return h, err
	}
	cursor := ""
	page := func() (int, error) {
		p, err := q.List(ctx, queue.ListQuery{Status: queue.StatusFailed, Limit: 100, Cursor: cursor})
		cursor = p.Cursor
		return len(p.Tasks), err
	}
	if h.DeadPage1, err = read(page); err != nil {
		return h, err
	}
	if cursor != "" {
		if h.DeadPage2, err = read(page); err != nil {
			return h, err
		}
	}
	h.RecentHour, err = read(func() (int, error) {
		p, err := q.List(ctx, queue.ListQuery{Status: queue.StatusCompleted, Since: q.Now().Add(-time.Hour)})
		return len(p.Tasks), err
	})
	return h, err
}

// writeHistory prints the history measurements side by side.
func writeHistory(w io.Writer, hs []History) {
	if len(hs) == 0 {
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := "READ (requests, time)"
	for _, h := range hs {
		head += fmt.Sprintf("\t%d FINISHED", h.Finished)
	}
	fmt.Fprintln(tw, head)
	row := func(name string, cell func(History) string) {
		line := name
		for _, h := range hs {
			line += "\t" + cell(h)
		}
		fmt.Fprintln(tw, line)
	}
	readCell := func(r Read) string {
		if r.Requests == nil {
			return "-"
		}
		return fmt.Sprintf("%d (%s), %.0f ms", r.Total(), opsCount(r.Requests), r.Millis)
	}
	row("idle worker + leader, first minute", func(h History) string {
		return fmt.Sprintf("%d (%s)", Read{Requests: h.LeaderMinute}.Total(), opsCount(h.LeaderMinute))
	})
	row("stats refresh, cold", func(h History) string { return readCell(h.StatsCold) })
	row("stats refresh, warm", func(h History) string { return readCell(h.StatsWarm) })
	row("dead letters, page 1 of 100", func(h History) string { return readCell(h.DeadPage1) })
	row("dead letters, page 2 of 100", func(h History) string { return readCell(h.DeadPage2) })
	row("completed in the last hour", func(h History) string { return readCell(h.RecentHour) })
	tw.Flush()
}

func opsCount(m map[store.Op]int64) string {
	s := ""
	for _, op := range store.Ops {
		if n := m[op]; n > 0 {
			if s != "" {
				s += " "
			}
			s += fmt.Sprintf("%s %d", op, n)
		}
	}
	if s == "" {
		return "none"
	}
	return s
}
