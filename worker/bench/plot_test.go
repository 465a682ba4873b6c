package bench

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"math"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestAxisTicks(t *testing.T) {
	t.Parallel()
	tests := []struct {
		top      float64
		want     []string
		decimals int
	}{
		{0, []string{"0.0", "0.2", "0.4", "0.6", "0.8", "1.0"}, 1},
		{math.NaN(), []string{"0.0", "0.2", "0.4", "0.6", "0.8", "1.0"}, 1},
		{1, []string{"0.0", "0.2", "0.4", "0.6", "0.8", "1.0"}, 1},
		{14.5, []string{"0", "5", "10", "15"}, 0},
		{46, []string{"0", "10", "20", "30", "40", "50"}, 0},
		{60, []string{"0", "10", "20", "30", "40", "50", "60"}, 0},
		{1234, []string{"0", "500", "1000", "1500"}, 0},
		{0.004, []string{"0.000", "0.001", "0.002", "0.003", "0.004"}, 3},
	}
	for _, tt := range tests {
		t.Run(strconv.FormatFloat(tt.top, 'g', -1, 64), func(t *testing.T) {
			t.Parallel()
			ticks, decimals := axisTicks(tt.top)
			var got []string
			for _, v := range ticks {
				got = append(got, strconv.FormatFloat(v, 'f', decimals, 64))
			}
			require.Equal(t, tt.want, got)
			require.Equal(t, tt.decimals, decimals)
			if tt.top > 0 {
				require.GreaterOrEqual(t, ticks[len(ticks)-1], tt.top, "the axis reaches the largest value")
			}
		})
	}
}

// svgBar is a bar of a chart, as the chart's markup has it.
type svgBar struct {
	Y, Height float64
	Title     string
}

// chartBars parses an SVG document (failing on malformed markup) and
// returns its bars (the rectangles with a title) and its texts.
func chartBars(t *testing.T, doc []byte) (bars []svgBar, texts []string) {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(doc))
	var inText, inTitle bool
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			return bars, texts
		}
		require.NoError(t, err, "the chart is well-formed XML")
		switch tok := tok.(type) {
		case xml.StartElement:
			switch tok.Name.Local {
			case "rect":
				var b svgBar
				for _, a := range tok.Attr {
					switch a.Name.Local {
					case "y":
						b.Y, _ = strconv.ParseFloat(a.Value, 64)
					case "height":
						b.Height, _ = strconv.ParseFloat(a.Value, 64)
					}
				}
				bars = append(bars, b)
			case "text":
				inText = true
			case "title":
				inTitle = true
			}
		case xml.EndElement:
			inText, inTitle = false, false
		case xml.CharData:
			if inText {
				texts = append(texts, string(tok))
			}
			if inTitle {
				bars[len(bars)-1].Title = string(tok)
			}
		}
	}
}

func TestBarsSVG(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		labels []string
		values []float64
		// heights of the bars relative to the tallest
		want []float64
	}{
		{"sweep", []string{"1x1", "4x8"}, []float64{10, 40}, []float64{0.25, 1}},
		{"zero, negative, NaN and infinite draw no bar", []string{"a", "b", "c", "d", "e"},
			[]float64{0, -3, math.NaN(), math.Inf(1), 2}, []float64{0, 0, 0, 0, 1}},
		{"all zero", []string{"a", "b"}, []float64{0, 0}, []float64{0, 0}},
		{"markup in labels", []string{`<b>&"x"`}, []float64{1}, []float64{1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			doc := barsSVG("Title & <more>", "units", tt.labels, tt.values)
			rects, texts := chartBars(t, doc)
			require.Contains(t, texts, "Title & <more>")
			require.Contains(t, texts, "units")
			var bars []svgBar
			for _, r := range rects {
				if r.Title != "" {
					bars = append(bars, r)
				}
			}
			require.Len(t, bars, len(tt.values))
			tallest := 0.0
			for _, b := range bars {
				tallest = max(tallest, b.Height)
				require.GreaterOrEqual(t, b.Y, float64(barTopPad), "a bar stays below the title")
				require.InDelta(t, float64(barTopPad+barHeight), b.Y+b.Height, 0.1, "every bar stands on the axis")
			}
			for i, b := range bars {
				require.Contains(t, texts, tt.labels[i], "the label under bar %d", i)
				require.Contains(t, b.Title, tt.labels[i]+": ")
				if tallest > 0 {
					require.InDelta(t, tt.want[i], b.Height/tallest, 0.01, "bar %d", i)
				} else {
					require.Zero(t, b.Height)
				}
			}
		})
	}
}
