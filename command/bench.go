package command

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/store/s3store"
	"github.com/qo-queue/qo/worker/bench"
)

func benchCommand() *cli.Command {
	return &cli.Command{
		Name:      "bench",
		Usage:     "measure throughput, latency, S3 requests per task and their cost on this S3 server",
		UsageText: "qo bench [--tasks 2000] [--workers 4] [--concurrency 8] [--idle 30s] [--json]",
		Description: `Runs a fixed workload against the configured S3 server (the dev server when
nothing is configured) and prints what it measured, with each target of
docs/performance.md met or not:

  - submit throughput at concurrency 1 and 32;
  - end to end: --tasks no-op tasks through --workers x --concurrency, from
    the first submit to the last completion, with S3 requests per task by
    kind (qo's own counters) and the cost per million tasks;
  - claim latency (one claim at a time) and pickup latency (submitted to
    running, with a warm idle worker);
  - the server's raw ceiling (conditional PUT and GET per second at the same
    concurrency, measured right before and right after the end-to-end run,
    averaged) and the efficiency ratio against it;
  - the task ceiling: the requests of --tasks tasks sent in their order by
    as many goroutines as there are worker slots, with no dispatcher, and
    the end-to-end rate as a share of it (what finding and handing out
    work costs, apart from the server's cost of new objects and deletes);
  - idle cost: requests per minute of idle workers, with and without shard
    leasing, priced per month;
  - with --seed-finished N (1% of them failed): what reads cost beside that
    history and in an empty bucket, side by side (an idle worker whose
    embedded monitor leads, over its first --leader-window; a stats refresh
    cold and warm; two pages of 100 dead letters; the tasks completed in the
    last hour), then the end-to-end run again over the N tasks
    (--history-only skips everything else);
  - with --fan-out N and --fan-in N: one parent with N children and N
    parents with one child, each submitted as a workflow and with --after,
    in fresh buckets: what submitting costs per edge, what the parents'
    end costs per edge until every child is released (and how long that
    takes), the bytes each write of the parent (or child) carries, and
    whether the fan-in's child is released exactly once (--deps-only skips
    everything else);
` + benchKeysHelp + `  - end to end again through --workers real 'qo worker' processes x
    --concurrency, with requests per task from the processes' own counters
    (their /metrics, from the first submit to the last task finished);
  - the peak memory of a real 'qo worker' at concurrency 32 (Linux).

--simulate-partitions needs no S3 server: it drives --sim-rate tasks per
second for --sim-seconds of simulated time through qo's real queue code over
an in-memory store, with workers holding an even share of --sim-shards shards
by shard lease and sending what deployed workers send besides (heartbeats,
leasing rounds, embedded monitors, the leader's lease check), maps every
request to the key prefix S3 could partition on, and reports the busiest
prefix against S3's limits of 3,500 writes and 5,500 reads per second per
prefix (docs/scaling.md). Before the load, --sim-idle-seconds of an idle
fleet are priced per month.

Each phase runs in a fresh bucket named qo-bench-..., removed afterwards
(--keep leaves them): a real queue is never touched. Prices are flags, so
other providers can be priced. The machine's other load shows in the
numbers: compare runs on the same machine.

Examples:
  qo bench
  qo bench --tasks 5000 --workers 8 --concurrency 16 --json > run.json
  qo bench --deps-only --fan-out 10000 --fan-in 1000
  qo bench --processes-only --workers 8 --concurrency 4
  qo bench --price-put 0.0045 --price-get 0.00036     # another provider's prices
  qo bench --simulate-partitions --sim-rate 20000 --sim-shards 256
  qo bench --simulate-partitions --sim-workers 1000                # a fleet's idle cost and busiest prefix`,
		Flags: append([]cli.Flag{
			&cli.IntFlag{Name: "tasks", Value: 2000, Usage: "tasks of the end-to-end run"},
			&cli.IntFlag{Name: "workers", Value: 4, Usage: "workers of the end-to-end runs (in this process, then as worker processes)"},
			&cli.IntFlag{Name: "concurrency", Value: 8, Usage: "concurrency per worker"},
			&cli.IntFlag{Name: "submit-tasks", Value: 500, Usage: "tasks per submit-throughput run"},
			&cli.IntFlag{Name: "samples", Value: 200, Usage: "claim-latency samples (pickup takes a quarter as many)"},
			&cli.DurationFlag{Name: "idle", Value: 30 * time.Second, Usage: "how long idle workers are watched (each mode)"},
			&cli.IntFlag{Name: "idle-workers", Value: 4, Usage: "idle workers watched"},
			&cli.IntFlag{Name: "seed-finished", Usage: "also measure reads and run end to end beside `N` finished tasks (written with parallel PUTs)"},
			&cli.DurationFlag{Name: "leader-window", Value: time.Minute, Usage: "with --seed-finished: how long the idle leading worker is watched"},
			&cli.BoolFlag{Name: "history-only", Usage: "with --seed-finished: measure only the reads beside history"},
			&cli.IntFlag{Name: "fan-out", Usage: "also measure one parent with `N` children (at most 10,000), as a workflow and with --after"},
			&cli.IntFlag{Name: "fan-in", Usage: "also measure `N` parents (at most 1,000) with one child, as a workflow and with --after"},
			&cli.IntFlag{Name: "fan-out-after", Usage: "children of the fan-out submitted with --after, if not --fan-out's `N` (each child_added write carries the parent's whole, growing, list of children; -1 skips it)"},
			&cli.BoolFlag{Name: "deps-only", Usage: "with --fan-out or --fan-in: measure only the dependencies"},
			&cli.BoolFlag{Name: "no-limits", Usage: "skip the end-to-end run under a fleet-wide cap and rate"},
			&cli.BoolFlag{Name: "no-rss", Usage: "skip the worker memory measurement"},
			&cli.BoolFlag{Name: "no-processes", Usage: "skip the end-to-end run through real worker processes"},
			&cli.BoolFlag{Name: "processes-only", Usage: "run only the end-to-end run through real worker processes (--tasks, --workers, --concurrency)"},
			&cli.Float64Flag{Name: "price-put", Value: store.AWSStandardPrices.PutPer1000, Usage: "US$ per 1,000 PUT/COPY/POST/LIST"},
			&cli.Float64Flag{Name: "price-get", Value: store.AWSStandardPrices.GetPer1000, Usage: "US$ per 1,000 GET/HEAD"},
			&cli.Float64Flag{Name: "price-delete", Value: store.AWSStandardPrices.DeletePer1000, Usage: "US$ per 1,000 DELETE"},
			&cli.BoolFlag{Name: "keep", Usage: "keep the qo-bench-* buckets"},
			&cli.BoolFlag{Name: "simulate-partitions", Usage: "instead of the standard run, simulate the request load per S3 key prefix (no S3 server needed)"},
			&cli.IntFlag{Name: "sim-rate", Value: 20000, Usage: "with --simulate-partitions: tasks per `SECOND`"},
			&cli.IntFlag{Name: "sim-seconds", Value: 2, Usage: "with --simulate-partitions: simulated `SECONDS`"},
			&cli.IntFlag{Name: "sim-shards", Value: 256, Usage: "with --simulate-partitions: 16 or 256 shards"},
			&cli.IntFlag{Name: "sim-workers", Value: 64, Usage: "with --simulate-partitions: workers sharing the shards"},
			&cli.IntFlag{Name: "sim-idle-seconds", Value: 60, Usage: "with --simulate-partitions: simulated `SECONDS` of an idle fleet before the load, priced per month (0: none)"},
			&cli.StringFlag{Name: "plot", Usage: "instead of the standard run, sweep workers x concurrency (1x1 to 8x8) and poll ceilings (1s to 10s) and draw them as SVG into `DIR`"},
			jsonFlag(),
		}, benchKeysFlags()...),
		Action: runBench,
	}
}

// benchStoreConfig is the connection of the configured S3 server; the
// bucket is set per phase.
func benchStoreConfig(c *cli.Context) (s3store.Config, error) {
	cfg, err := storeConfig(c)
	if err == nil {
		return cfg, nil
	}
	endpoint := strings.TrimSpace(connString(c, "endpoint"))
	if endpoint == "" && connString(c, "region") == "" {
		return cfg, usageError("no S3 server configured: set S3_ENDPOINT (and credentials), or start one with 'qo dev'")
	}
	return s3store.Config{Endpoint: endpoint, Region: connString(c, "region"), Profile: connString(c, "profile"), PathStyle: endpoint != ""}, nil
}

func runBench(c *cli.Context) error {
	if c.NArg() > 0 {
		return usageError("bench takes no arguments, got %q", c.Args().First())
	}
	if c.Bool("simulate-partitions") {
		return simulatePartitions(c)
	}
	base, err := benchStoreConfig(c)
	if err != nil {
		return err
	}
	for _, f := range []string{"tasks", "workers", "concurrency", "submit-tasks", "samples", "idle-workers"} {
		if c.Int(f) < 1 {
			return usageError("--%s %d: want at least 1", f, c.Int(f))
		}
	}
	if c.Bool("processes-only") {
		for _, f := range []string{"history-only", "deps-only", "no-processes"} {
			if c.Bool(f) {
				return usageError("--processes-only and --%s exclude each other", f)
			}
		}
	}
	if c.Int("seed-finished") < 0 {
		return usageError("--seed-finished %d is negative", c.Int("seed-finished"))
	}
	if c.Bool("history-only") && c.Int("seed-finished") == 0 {
		return usageError("--history-only needs --seed-finished N")
	}
	if n := c.Int("fan-out"); n < 0 || n > queue.MaxChildren {
		return usageError("--fan-out %d: want 0 to %d (a task's children)", n, queue.MaxChildren)
	}
	if n := c.Int("fan-out-after"); n < -1 || n > queue.MaxChildren {
		return usageError("--fan-out-after %d: want -1 to %d (a task's children)", n, queue.MaxChildren)
	}
	if n := c.Int("fan-in"); n < 0 || n > queue.MaxParents {
		return usageError("--fan-in %d: want 0 to %d (a task's parents)", n, queue.MaxParents)
	}
	if c.Bool("deps-only") && c.Int("fan-out") == 0 && c.Int("fan-out-after") <= 0 && c.Int("fan-in") == 0 {
		return usageError("--deps-only needs --fan-out N or --fan-in N")
	}
	if err := checkBenchOnly(c); err != nil {
		return err
	}
	prices := store.Prices{PutPer1000: c.Float64("price-put"), GetPer1000: c.Float64("price-get"), DeletePer1000: c.Float64("price-delete")}
	if prices.PutPer1000 < 0 || prices.GetPer1000 < 0 || prices.DeletePer1000 < 0 {
		return usageError("prices cannot be negative")
	}
	newBucket := func(ctx context.Context, name string) (bench.Bucket, error) {
		cfg := base
		cfg.Bucket = name
		return s3store.New(ctx, cfg)
	}
	cfg := bench.Config{
		NewBucket: newBucket, Keep: c.Bool("keep"),
		Tasks: c.Int("tasks"), Workers: c.Int("workers"), Concurrency: c.Int("concurrency"),
		SubmitTasks: c.Int("submit-tasks"), LatencySamples: c.Int("samples"),
		Idle: c.Duration("idle"), IdleWorkers: c.Int("idle-workers"), SeedFinished: c.Int("seed-finished"),
		LeaderWindow: c.Duration("leader-window"), HistoryOnly: c.Bool("history-only"),
		FanOut: c.Int("fan-out"), FanOutAfter: c.Int("fan-out-after"), FanIn: c.Int("fan-in"), DepsOnly: c.Bool("deps-only"),
		NoLimits: c.Bool("no-limits"), Keys: c.Int("keys"), KeysOnly: c.Bool("keys-only"), Prices: prices, Log: c.App.ErrWriter,
	}
	if dir := c.String("plot"); dir != "" {
		if err := benchPlots(c.Context, cfg, dir); err != nil {
			return fmt.Errorf("bench: plots: %w", err)
		}
		fmt.Fprintf(c.App.ErrWriter, "bench: wrote %s and %s\n", filepath.Join(dir, "throughput.svg"), filepath.Join(dir, "idle-cost.svg"))
		return nil
	}
	only := c.Bool("processes-only")
	r := bench.NewReport(cfg)
	if !only {
		if r, err = bench.Run(c.Context, cfg); err != nil {
			return err
		}
	}
	if !c.Bool("no-processes") && !cfg.HistoryOnly && !cfg.DepsOnly && !cfg.KeysOnly {
		fmt.Fprintln(c.App.ErrWriter, "bench: end to end through worker processes...")
		e, err := workerProcesses(c.Context, base, newBucket, cfg)
		if err != nil {
			return fmt.Errorf("bench: worker processes: %w", err)
		}
		r.AddProcesses(e)
	}
	if !c.Bool("no-rss") && !only && !cfg.HistoryOnly && !cfg.DepsOnly && !cfg.KeysOnly && runtime.GOOS == "linux" {
		fmt.Fprintln(c.App.ErrWriter, "bench: worker memory...")
		mb, err := workerRSS(c.Context, base, newBucket)
		if err != nil {
			return fmt.Errorf("bench: worker memory: %w", err)
		}
		r.AddRSS(mb)
	}
	if c.Bool("json") {
		return emitJSON(c.App.Writer, r)
	}
	r.WriteText(c.App.Writer)
	return nil
}

// simulatePartitions runs bench.SimulatePartitions from the flags.
func simulatePartitions(c *cli.Context) error {
	chars := 0
	switch n := c.Int("sim-shards"); n {
	case 16:
		chars = 1
	case 256:
		chars = 2
	default:
		return usageError("--sim-shards %d: want 16 or 256", n)
	}
	for _, f := range []string{"sim-rate", "sim-seconds", "sim-workers"} {
		if c.Int(f) < 1 {
			return usageError("--%s %d: want at least 1", f, c.Int(f))
		}
	}
	if n := c.Int("sim-idle-seconds"); n < 0 {
		return usageError("--sim-idle-seconds %d: want 0 (no idle phase) or more", n)
	}
	r, err := bench.SimulatePartitions(c.Context, bench.SimConfig{
		Rate: c.Int("sim-rate"), Seconds: c.Int("sim-seconds"), ShardChars: chars, Workers: c.Int("sim-workers"),
		IdleSeconds: c.Int("sim-idle-seconds"),
		Prices:      store.Prices{PutPer1000: c.Float64("price-put"), GetPer1000: c.Float64("price-get"), DeletePer1000: c.Float64("price-delete")},
	})
	if err != nil {
		return fmt.Errorf("bench: simulate partitions: %w", err)
	}
	if c.Bool("json") {
		return emitJSON(c.App.Writer, r)
	}
	r.WriteText(c.App.Writer)
	return nil
}

// benchPlots sweeps shapes and poll ceilings and writes throughput.svg and
// idle-cost.svg into dir.
func benchPlots(ctx context.Context, cfg bench.Config, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var shapes []bench.Shape
	for _, wc := range [][2]int{{1, 1}, {1, 8}, {2, 8}, {4, 8}, {4, 16}, {8, 8}} {
		shapes = append(shapes, bench.Shape{Workers: wc[0], Concurrency: wc[1]})
	}
	points, err := bench.Sweep(ctx, cfg, shapes)
	if err != nil {
		return err
	}
	if err := bench.PlotSweep(points, filepath.Join(dir, "throughput.svg")); err != nil {
		return err
	}
	polls, err := bench.PollSweep(ctx, cfg, []time.Duration{time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second})
	if err != nil {
		return err
	}
	return bench.PlotPolls(polls, filepath.Join(dir, "idle-cost.svg"))
}

// benchBucket creates a fresh versioned bucket with an initialised queue
// for a phase that runs real worker processes; remove removes it.
func benchBucket(ctx context.Context, prefix string, newBucket func(context.Context, string) (bench.Bucket, error)) (b bench.Bucket, q *queue.Queue, name string, remove func(), err error) {
	name = prefix + strconv.FormatInt(time.Now().UnixNano()%1e9, 36)
	if b, err = newBucket(ctx, name); err != nil {
		return nil, nil, "", nil, err
	}
	if err = b.CreateBucket(ctx); err != nil {
		return nil, nil, "", nil, err
	}
	remove = func() { _ = b.RemoveBucket(context.WithoutCancel(ctx)) }
	if err = b.EnableVersioning(ctx); err == nil {
		_, err = queue.Init(ctx, b, 1)
	}
	if err == nil {
		q, err = queue.Open(ctx, b, queue.Options{})
	}
	if err != nil {
		remove()
		return nil, nil, "", nil, err
	}
	return b, q, name, remove, nil
}
