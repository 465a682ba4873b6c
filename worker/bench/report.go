package bench

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/qo-queue/qo/store"
)

// targets checks the report against the goals of docs/performance.md.
func targets(r *Report) []Target {
	e := r.EndToEnd
	ts := append(historyTargets(r.History), fanTargets(r.Fans)...)
	ts = append(ts, keyedTargets(r.Keyed)...)
	if e.Tasks == 0 {
		return ts // only the history or dependency steps ran
	}
	ts = append(ts, []Target{
		{"PUT per task", "<= 5", e.RequestsPerTask[store.OpPut], e.RequestsPerTask[store.OpPut] <= 5},
		{"GET per task", "<= 1.1", e.RequestsPerTask[store.OpGet], e.RequestsPerTask[store.OpGet] <= 1.1},
		{"DELETE per task", "<= 2.02", e.RequestsPerTask[store.OpDelete], e.RequestsPerTask[store.OpDelete] <= 2.02},
		{"LIST per task", "<= 0.02", e.RequestsPerTask[store.OpList], e.RequestsPerTask[store.OpList] <= 0.02},
		{"efficiency vs raw ceiling", ">= 0.85", r.Efficiency, r.Efficiency >= 0.85},
		{"claim p99 (ms)", "< 20", r.Claim.P99, r.Claim.P99 < 20},
		{"pickup p50 (ms)", "< 100", r.Pickup.P50, r.Pickup.P50 < 100},
		{"pickup p95 (ms)", "< 300", r.Pickup.P95, r.Pickup.P95 < 300},
	}...)
	for _, idle := range r.Idle {
		name := "idle LIST per worker per poll"
		if idle.ShardLeasing {
			name += " (shard leasing)"
		}
		ts = append(ts, Target{name, "<= 1", idle.ListsPerPoll, idle.ListsPerPoll <= 1.0001})
	}
	if r.Seeded != nil && e.TasksPerSecond > 0 {
		ratio := r.Seeded.TasksPerSecond / e.TasksPerSecond
		ts = append(ts, Target{fmt.Sprintf("throughput over %d finished tasks vs empty", r.Config.SeedFinished), ">= 0.95", ratio, ratio >= 0.95})
	}
	return ts
}

// historyTargets: reads beside the largest history against the goals, and
// against the same reads in an empty bucket.
func historyTargets(hs []History) []Target {
	if len(hs) < 2 {
		return nil
	}
	empty, full := hs[0], hs[len(hs)-1]
	n := fmt.Sprintf(" (%d finished)", full.Finished)
	leader := float64(Read{Requests: full.LeaderMinute}.Total())
	ts := []Target{
		{"idle worker + leader, first minute, requests" + n, "<= 100", leader, leader <= 100},
		{"stats refresh warm, requests" + n, "<= 20", float64(full.StatsWarm.Total()), full.StatsWarm.Total() <= 20},
		{"stats refresh warm, ms" + n, "< 1000", full.StatsWarm.Millis, full.StatsWarm.Millis < 1000},
		{"dead-letter page of 100, LIST" + n, "<= 5", float64(full.DeadPage1.Requests[store.OpList]), full.DeadPage1.Requests[store.OpList] <= 5},
		{"dead-letter page of 100, GET" + n, "<= 100", float64(full.DeadPage1.Requests[store.OpGet]), full.DeadPage1.Requests[store.OpGet] <= 100},
	}
	same := func(name string, a, b Read) {
		ts = append(ts, Target{name + ": requests vs empty bucket" + n, "same", float64(b.Total() - a.Total()), a.Total() == b.Total()})
	}
	same("stats refresh, warm", empty.StatsWarm, full.StatsWarm)
	same("completed in the last hour", empty.RecentHour, full.RecentHour)
	return ts
}

// AddProcesses records the end-to-end run through worker processes and
// its targets.
func (r *Report) AddProcesses(e *EndToEnd) {
	r.Processes = e
	list, get, del := e.RequestsPerTask[store.OpList], e.RequestsPerTask[store.OpGet], e.RequestsPerTask[store.OpDelete]
	r.Targets = append(r.Targets,
		Target{"LIST per task, worker processes", "<= 0.02", list, list <= 0.02},
		Target{"GET per task, worker processes", "<= 1.1", get, get <= 1.1},
		Target{"DELETE per task, worker processes", "<= 2.02", del, del <= 2.02})
}

// AddRSS records a worker's peak memory and its target.
func (r *Report) AddRSS(mb float64) {
	r.WorkerRSSMB = mb
	r.Targets = append(r.Targets, Target{"worker RSS at concurrency 32 (MB)", "< 60", mb, mb < 60})
}

// writeProcesses prints the line of the run through worker processes, if
// it ran.
func (r *Report) writeProcesses(p func(format string, args ...any)) {
	if e := r.Processes; e != nil {
		p("end to end, %d worker processes x %d\t%.0f tasks/s (%.1f s), %s", r.Config.Workers, r.Config.Concurrency, e.TasksPerSecond, e.Seconds, opsLine(e.RequestsPerTask))
	}
}

// WriteText prints the report as tables.
func (r *Report) WriteText(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	p := func(format string, args ...any) { fmt.Fprintf(tw, format+"\n", args...) }
	if r.EndToEnd.Tasks == 0 { // only the history, dependency, keys or processes steps ran
		if r.Processes != nil || r.Keyed != nil {
			p("MEASUREMENT\tVALUE")
			r.writeProcesses(p)
			if r.Keyed != nil {
				writeKeyed(p, r.Keyed)
			}
			tw.Flush()
			fmt.Fprintln(w)
		}
		if len(r.History) > 0 {
			writeHistory(w, r.History)
			fmt.Fprintln(w)
		}
		if len(r.Fans) > 0 {
			writeFans(w, r.Fans)
			fmt.Fprintln(w)
		}
		r.writeTargets(w)
		return
	}
	p("MEASUREMENT\tVALUE")
	for _, s := range r.Submit {
		p("submit throughput, concurrency %d\t%.0f tasks/s", s.Concurrency, s.PerSecond)
	}
	e := r.EndToEnd
	p("end to end, %d no-op tasks, %d workers x %d\t%.0f tasks/s (%.1f s)", e.Tasks, r.Config.Workers, r.Config.Concurrency, e.TasksPerSecond, e.Seconds)
	p("S3 requests per task\t%s", opsLine(e.RequestsPerTask))
	p("cost per million tasks\t$%.2f", e.CostPerMillion)
	p("duplicate executions\t%d", e.Duplicates)
	p("ordering: tasks that overtook a task (became ready after it, started before it)\tmax %d, p99 %d, mean %.1f", e.Overtaken.Max, e.Overtaken.P99, e.Overtaken.Mean)
	if l := r.Limited; l != nil {
		p("end to end, fleet-wide cap %d and rate %d/s\t%.0f tasks/s (%.1f s), %s", l.Cap, l.RatePerSecond, l.TasksPerSecond, l.Seconds, opsLine(l.RequestsPerTask))
	}
	if r.Keyed != nil {
		writeKeyed(p, r.Keyed)
	}
	r.writeProcesses(p)
	if r.Seeded != nil {
		p("end to end over %d finished tasks\t%.0f tasks/s (%s)", r.Config.SeedFinished, r.Seeded.TasksPerSecond, opsLine(r.Seeded.RequestsPerTask))
	}
	p("claim latency p50 / p95 / p99\t%.1f / %.1f / %.1f ms (n=%d)", r.Claim.P50, r.Claim.P95, r.Claim.P99, r.Claim.N)
	p("pickup latency p50 / p95 / p99 (warm idle worker)\t%.0f / %.0f / %.0f ms (n=%d)", r.Pickup.P50, r.Pickup.P95, r.Pickup.P99, r.Pickup.N)
	p("raw ceiling at concurrency %d\t%.0f conditional PUT/s, %.0f GET/s%s", r.Raw.Concurrency, r.Raw.PutPerSec, r.Raw.GetPerSec, rawRuns(r.Raw))
	p("efficiency (end to end requests/s / raw)\t%.2f", r.Efficiency)
	if t := r.TaskCeiling; t.PerSecond > 0 {
		p("task ceiling: a task's requests, no dispatcher, concurrency %d\t%.0f tasks/s; end to end is %.2f of it", t.Concurrency, t.PerSecond, r.OfTaskCeiling)
	}
	for _, idle := range r.Idle {
		mode := "without shard leasing"
		if idle.ShardLeasing {
			mode = "with shard leasing"
		}
		p("idle worker %s\t%s per minute, %.2f LIST per poll, $%.4f per month", mode, opsLine(idle.RequestsPerMinute), idle.ListsPerPoll, idle.CostPerMonth)
	}
	if r.WorkerRSSMB > 0 {
		p("worker RSS at concurrency 32 (peak)\t%.1f MB", r.WorkerRSSMB)
	}
	tw.Flush()
	fmt.Fprintln(w)
	if len(r.History) > 0 {
		writeHistory(w, r.History)
		fmt.Fprintln(w)
	}
	if len(r.Fans) > 0 {
		writeFans(w, r.Fans)
		fmt.Fprintln(w)
	}
	r.writeTargets(w)
}

// writeTargets prints the targets table and the prices used.
func (r *Report) writeTargets(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TARGET\tGOAL\tMEASURED\tMET")
	for _, t := range r.Targets {
		met := "yes"
		if !t.Met {
			met = "NO"
		}
		fmt.Fprintf(tw, "%s\t%s\t%.3g\t%s\n", t.Name, t.Goal, t.Measured, met)
	}
	tw.Flush()
	fmt.Fprintf(w, "\nPrices: $%g per 1,000 PUT/LIST, $%g per 1,000 GET, $%g per 1,000 DELETE.\n",
		r.Prices.PutPer1000, r.Prices.GetPer1000, r.Prices.DeletePer1000)
}

func opsLine(m map[store.Op]float64) string {
	var parts []string
	for _, op := range store.Ops {
		if v, ok := m[op]; ok {
			parts = append(parts, fmt.Sprintf("%s %.2f", op, v))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// rawRuns names the measurements behind the raw ceiling's mean.
func rawRuns(raw Raw) string {
	if len(raw.Runs) < 2 {
		return ""
	}
	puts := make([]string, len(raw.Runs))
	for i, m := range raw.Runs {
		puts[i] = fmt.Sprintf("%.0f", m.PutPerSec)
	}
	return fmt.Sprintf(" (mean of the runs before and after end to end: %s conditional PUT/s)", strings.Join(puts, " and "))
}
