package bench

import (
	"context"
	"fmt"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/qo-queue/qo/queue"
)

// Shape is one workers x concurrency setting of a sweep.
type Shape struct{ Workers, Concurrency int }

// SweepPoint is the end-to-end throughput at one shape.
type SweepPoint struct {
	Shape
	TasksPerSecond float64 `json:"tasks_per_second"`
}

// PollPoint is the idle cost at one poll ceiling.
type PollPoint struct {
	PollMax      time.Duration `json:"poll_max"`
	CostPerMonth float64       `json:"cost_per_worker_month"`
}

// Sweep runs the end-to-end phase once per shape, each in a fresh bucket.
func Sweep(ctx context.Context, cfg Config, shapes []Shape) ([]SweepPoint, error) {
	cfg.defaults()
	var out []SweepPoint
	for _, s := range shapes {
		c := cfg
		c.Workers, c.Concurrency = s.Workers, s.Concurrency
		fmt.Fprintf(cfg.Log, "bench: sweep %dx%d...\n", s.Workers, s.Concurrency)
		err := withBucket(ctx, c, func(b Bucket, q *queue.Queue) error {
			e, err := endToEnd(ctx, b, q, c)
			out = append(out, SweepPoint{Shape: s, TasksPerSecond: e.TasksPerSecond})
			return err
		})
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

// PollSweep measures the idle cost per worker at each poll ceiling.
func PollSweep(ctx context.Context, cfg Config, polls []time.Duration) ([]PollPoint, error) {
	cfg.defaults()
	var out []PollPoint
	for _, p := range polls {
		fmt.Fprintf(cfg.Log, "bench: idle at poll ceiling %s...\n", p)
		err := withBucket(ctx, cfg, func(b Bucket, q *queue.Queue) error {
			idle, err := idleCostPoll(ctx, b, q, cfg, false, p)
			out = append(out, PollPoint{PollMax: p, CostPerMonth: idle.CostPerMonth})
			return err
		})
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

// bars draws a bar chart to path (SVG or PNG by extension).
func bars(title, ylabel string, labels []string, values []float64, path string) error {
	p := plot.New()
	p.Title.Text = title
	p.Y.Label.Text = ylabel
	vs := make(plotter.Values, len(values))
	copy(vs, values)
	b, err := plotter.NewBarChart(vs, vg.Points(28))
	if err != nil {
		return err
	}
	b.LineStyle.Width = 0
	p.Add(b)
	p.NominalX(labels...)
	return p.Save(vg.Length(max(4, len(labels))*50)*vg.Points(1)+vg.Points(120), 3*vg.Inch, path)
}

// PlotSweep draws throughput against workers x concurrency.
func PlotSweep(points []SweepPoint, path string) error {
	var labels []string
	var values []float64
	for _, p := range points {
		labels = append(labels, fmt.Sprintf("%dx%d", p.Workers, p.Concurrency))
		values = append(values, p.TasksPerSecond)
	}
	return bars("End-to-end throughput (no-op tasks)", "tasks/s", labels, values, path)
}

// PlotPolls draws the monthly idle cost of a worker against its poll
// ceiling.
func PlotPolls(points []PollPoint, path string) error {
	var labels []string
	var values []float64
	for _, p := range points {
		labels = append(labels, p.PollMax.String())
		values = append(values, p.CostPerMonth)
	}
	return bars("Idle worker cost by poll ceiling", "US$ per worker-month", labels, values, path)
}
