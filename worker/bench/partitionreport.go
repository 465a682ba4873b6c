package bench

import (
	"fmt"
	"io"
	"sort"
	"text/tabwriter"

	"github.com/qo-queue/qo/store"
)

// idle turns what was counted over an idle phase into its report.
func (s *simStore) idle(cfg SimConfig) *SimIdle {
	secs := float64(cfg.IdleSeconds)
	out := &SimIdle{Seconds: cfg.IdleSeconds, Workers: cfg.Workers,
		RequestsPerSecond: map[store.Op]float64{}, ByPrefix: map[string]float64{}}
	c := store.Counts{OK: map[store.Op]int64{}}
	for op, n := range s.ops {
		out.RequestsPerSecond[op] = float64(n) / secs
		c.OK[op] = int64(n)
	}
	for root, n := range s.roots {
		out.ByPrefix[root] = float64(n) / secs
	}
	const secondsPerMonth = 30 * 24 * 3600
	out.CostPerMonth = c.Cost(cfg.Prices) / secs * secondsPerMonth
	var r SimReport
	r.summarize(s)
	out.BusiestPrefix = r.BusiestReads
	if r.BusiestWrites.PeakWrites > r.BusiestReads.PeakReads {
		out.BusiestPrefix = r.BusiestWrites
	}
	return out
}

func (r *SimReport) summarize(s *simStore) {
	peaks := map[string]*PrefixLoad{}
	for _, bySec := range s.counts {
		for p, c := range bySec {
			pl := peaks[p]
			if pl == nil {
				pl = &PrefixLoad{Prefix: p}
				peaks[p] = pl
			}
			pl.PeakWrites = max(pl.PeakWrites, c[0])
			pl.PeakReads = max(pl.PeakReads, c[1])
			pl.TotalRequests += c[0] + c[1]
		}
	}
	var all []PrefixLoad
	for _, pl := range peaks {
		all = append(all, *pl)
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].PeakWrites != all[j].PeakWrites {
			return all[i].PeakWrites > all[j].PeakWrites
		}
		return all[i].Prefix < all[j].Prefix
	})
	r.Prefixes = len(all)
	if len(all) > 0 {
		r.BusiestWrites = all[0]
	}
	r.Top = all[:min(len(all), 8)]
	for _, pl := range all {
		if pl.PeakReads > r.BusiestReads.PeakReads {
			r.BusiestReads = pl
		}
	}
	if r.Tasks > 0 {
		r.RequestsPerTask = float64(s.total) / float64(r.Tasks)
	}
	r.WritesOK = r.BusiestWrites.PeakWrites <= S3WritesPerPrefix
	r.ReadsOK = r.BusiestReads.PeakReads <= S3ReadsPerPrefix
}

// WriteText prints the simulation's findings.
func (r SimReport) WriteText(w io.Writer) {
	c := r.Config
	shards := 1 << (4 * c.ShardChars)
	share := fmt.Sprintf("%d workers each owning %d shards", c.Workers, max(1, shards/c.Workers))
	switch {
	case c.Workers == shards:
		share = fmt.Sprintf("%d workers each owning 1 shard", c.Workers)
	case c.Workers > shards:
		share = fmt.Sprintf("%d workers, %d of them owning 1 shard each", c.Workers, shards)
	}
	if i := r.Idle; i != nil {
		fmt.Fprintf(w, "idle for %d s: the fleet of %d workers sent %.0f LIST, %.0f GET, %.0f PUT per second ($%.2f per month, $%.2f per worker); by prefix:",
			i.Seconds, i.Workers, i.RequestsPerSecond[store.OpList], i.RequestsPerSecond[store.OpGet], i.RequestsPerSecond[store.OpPut],
			i.CostPerMonth, i.CostPerMonth/float64(max(i.Workers, 1)))
		roots := make([]string, 0, len(i.ByPrefix))
		for root := range i.ByPrefix {
			roots = append(roots, root)
		}
		sort.Strings(roots)
		for _, root := range roots {
			fmt.Fprintf(w, " %s %.0f/s", root, i.ByPrefix[root])
		}
		fmt.Fprintf(w, "; busiest prefix %s, %d writes/s and %d reads/s at peak\n\n", i.BusiestPrefix.Prefix, i.BusiestPrefix.PeakWrites, i.BusiestPrefix.PeakReads)
	}
	fmt.Fprintf(w, "simulated %d tasks/s for %d s: %d shards, %s; %d tasks submitted, %d finished, %.2f requests per task over %d prefixes\n\n",
		c.Rate, c.Seconds, shards, share, r.Tasks, r.Completed, r.RequestsPerTask, r.Prefixes)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PREFIX\tPEAK WRITES/S\tPEAK READS/S")
	for _, p := range r.Top {
		fmt.Fprintf(tw, "%s\t%d\t%d\n", p.Prefix, p.PeakWrites, p.PeakReads)
	}
	tw.Flush()
	verdict := func(ok bool) string {
		if ok {
			return "within"
		}
		return "OVER"
	}
	fmt.Fprintf(w, "\nbusiest prefix by writes: %s, %d/s (%s S3's %d/s)\n", r.BusiestWrites.Prefix, r.BusiestWrites.PeakWrites, verdict(r.WritesOK), S3WritesPerPrefix)
	fmt.Fprintf(w, "busiest prefix by reads:  %s, %d/s (%s S3's %d/s)\n", r.BusiestReads.Prefix, r.BusiestReads.PeakReads, verdict(r.ReadsOK), S3ReadsPerPrefix)
}
