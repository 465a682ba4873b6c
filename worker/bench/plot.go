package bench

import (
	"bytes"
	"context"
	"encoding/xml"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

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

// Bar chart geometry, in SVG user units (pixels at 100%).
const (
	barSlot     = 64  // horizontal room of one bar
	barWidth    = 36  // the bar itself
	barHeight   = 220 // the plot area's height
	barFont     = 12  // tick and bar labels; the title is larger
	barCharW    = 0.6 // a character's width in em, an estimate for a sans-serif font
	barTopPad   = 40  // room for the title
	barFootPad  = 28  // room for the bar labels
	barRightPad = 16
)

// bars writes a bar chart to path as SVG: a title, a y axis labelled ylabel
// with gridlines at round values from 0, and one bar per value with its
// label below. It draws the few shapes it needs itself (a plotting library
// with its fonts weighed 7 MB of the binary): no font is measured, the
// text is anchored and the viewer lays it out.
func bars(title, ylabel string, labels []string, values []float64, path string) error {
	if err := os.WriteFile(path, barsSVG(title, ylabel, labels, values), 0o644); err != nil {
		return fmt.Errorf("write the chart: %w", err)
	}
	return nil
}

// barsSVG is bars' document.
func barsSVG(title, ylabel string, labels []string, values []float64) []byte {
	top := 0.0
	for _, v := range values {
		if v > top && !math.IsInf(v, 1) {
			top = v
		}
	}
	ticks, decimals := axisTicks(top)
	top = ticks[len(ticks)-1]
	tickText := make([]string, len(ticks))
	widest := 0
	for i, t := range ticks {
		tickText[i] = strconv.FormatFloat(t, 'f', decimals, 64)
		widest = max(widest, len(tickText[i]))
	}
	left := 2*barFont + int(float64(widest*barFont)*barCharW) + 10 // the axis label, the tick labels, a gap
	plotW := max(4, len(values)) * barSlot
	width, height := left+plotW+barRightPad, barTopPad+barHeight+barFootPad
	width = max(width, int(float64(len(title)*(barFont+2))*barCharW)+2*barRightPad)
	y := func(v float64) float64 { return barTopPad + barHeight*(1-v/top) }

	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="%d">`+"\n",
		width, height, width, height, barFont)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="#fff"/>`+"\n", width, height)
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle" font-size="%d">%s</text>`+"\n",
		width/2, barTopPad/2+barFont/2, barFont+2, escapeXML(title))
	fmt.Fprintf(&b, `<text transform="translate(%d %d) rotate(-90)" text-anchor="middle">%s</text>`+"\n",
		barFont, barTopPad+barHeight/2, escapeXML(ylabel))
	for i, t := range ticks {
		ty := y(t)
		fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", left, left+plotW, ty, ty)
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end" dominant-baseline="middle">%s</text>`+"\n", left-6, ty, tickText[i])
	}
	for i, v := range values {
		if !(v > 0) || math.IsInf(v, 1) { // NaN, negative or infinite: no bar
			v = 0
		}
		x := left + i*barSlot + (barSlot-barWidth)/2
		fmt.Fprintf(&b, `<rect x="%d" y="%.1f" width="%d" height="%.1f" fill="#4c72b0"><title>%s: %s</title></rect>`+"\n",
			x, y(v), barWidth, barTopPad+barHeight-y(v), escapeXML(label(labels, i)), strconv.FormatFloat(values[i], 'g', 6, 64))
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">%s</text>`+"\n",
			x+barWidth/2, barTopPad+barHeight+barFont+6, escapeXML(label(labels, i)))
	}
	fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="#000"/>`+"\n", left, left+plotW, barTopPad+barHeight, barTopPad+barHeight)
	fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="#000"/>`+"\n", left, left, barTopPad, barTopPad+barHeight)
	b.WriteString("</svg>\n")
	return b.Bytes()
}

func label(labels []string, i int) string {
	if i < len(labels) {
		return labels[i]
	}
	return ""
}

// axisTicks returns the gridline values of an axis from 0 that reaches
// at least top: a step of 1, 2 or 5 times a power of ten giving at most 6
// steps, and the decimals that step needs.
func axisTicks(top float64) (ticks []float64, decimals int) {
	if !(top > 0) {
		top = 1
	}
	mag := math.Pow(10, math.Floor(math.Log10(top/6)))
	step := 10 * mag
	for _, m := range []float64{1, 2, 5} {
		if top/(m*mag) <= 6 {
			step = m * mag
			break
		}
	}
	n := int(math.Ceil(top/step - 1e-9))
	for i := 0; i <= n; i++ {
		ticks = append(ticks, float64(i)*step)
	}
	return ticks, max(0, -int(math.Floor(math.Log10(step)+1e-9)))
}

// escapeXML escapes s for SVG text.
func escapeXML(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
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
