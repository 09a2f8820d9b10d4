// Package benchchart draws benchmark series as SVG bars with 95% confidence intervals.
// The input is summarize_benchmarks's measurement rows (per-iteration values of 1-32
// benchmark results); the chart is what a reviewer of compare_benchmarks wants to see:
// each input's median per series, its interval, and its ratio to the baseline input,
// as benchstat reports them.
//
// The figures (docs/decisions/0029-evidence-viewer.md, 0065, 0066):
//   - a series is the non-warmup values of one input with one benchmark, unit and set of
//     dimensions (compare_benchmarks's matching, per input);
//   - the median and its 95% confidence interval are internal/stats.MedianInterval's
//     (benchstat's: the order statistics whose binomial coverage reaches 95%, with no
//     assumption about the distribution; no interval under six values); the mean is
//     kept beside it;
//   - ratio = median / the baseline input's median of the same series (null without one
//     or when it is 0): benchstat's delta plus one;
//   - bars of one benchmark group share a scale: width = median / the group's largest
//     interval end (or median) * Plot;
//   - values are written with Humanize: 22.53 ms, 1.2 GB/s, 7.36 MB.
package benchchart

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/flameox/flameox/internal/stats"
	"github.com/flameox/flameox/internal/svgtext"
)

// MaxSeries bounds the bars drawn.
const MaxSeries = 256

// SVG geometry: a Label-wide column of input names, the bars, then the figures.
const (
	Width     = 1200.0
	Label     = 320.0
	Plot      = Width - Label - 300
	BarHeight = 16.0
	GroupGap  = 12.0
	GroupHead = 18.0 // the group's heading line
	headerH   = 36.0
	nameChars = 46 // (Label - 16) / 6.6
)

// Measurement is one per-iteration value.
type Measurement struct {
	Input      int
	Benchmark  string
	Unit       string
	Dimensions map[string]string
	Value      float64
	Warmup     bool
}

// Series is one input's figures for one benchmark.
type Series struct {
	Input      int
	Benchmark  string
	Unit       string
	Dimensions string // "k=v, k=v" sorted by key
	N          int
	Median     float64
	Low, High  float64 // the median's 95% interval; -Inf, +Inf when N < 6
	Mean       float64
	Ratio      float64 // of medians; NaN without a baseline
}

// Bounded reports whether the series has a finite interval.
func (s Series) Bounded() bool { return !math.IsInf(s.Low, 0) && !math.IsInf(s.High, 0) }

func (s Series) group() string { return s.Benchmark + "\x00" + s.Unit + "\x00" + s.Dimensions }

// Chart is a set of series in drawing order: by benchmark, dimensions, unit, then input.
type Chart struct {
	Series   []Series
	Baseline int
	LeftOut  int // series past MaxSeries
	// Inputs names the inputs by index (the evidence's input roles, formats and digests);
	// an input without a name is "input N".
	Inputs []string
}

// InputName is the label of input i.
func (c *Chart) InputName(i int) string {
	if i >= 0 && i < len(c.Inputs) && c.Inputs[i] != "" {
		return c.Inputs[i]
	}
	return "input " + strconv.Itoa(i)
}

// New computes the series of measurements against the baseline input.
func New(ms []Measurement, baseline int) *Chart {
	type key struct {
		input             int
		bench, unit, dims string
	}
	values := map[key][]float64{}
	for _, m := range ms {
		if m.Warmup || math.IsNaN(m.Value) || math.IsInf(m.Value, 0) {
			continue
		}
		k := key{m.Input, m.Benchmark, m.Unit, dims(m.Dimensions)}
		values[k] = append(values[k], m.Value)
	}
	c := &Chart{Baseline: baseline}
	for k, vs := range values {
		iv := stats.MedianInterval(vs)
		c.Series = append(c.Series, Series{Input: k.input, Benchmark: k.bench, Unit: k.unit, Dimensions: k.dims, N: len(vs),
			Median: iv.Estimate, Low: iv.Low, High: iv.High, Mean: stats.Mean(vs), Ratio: math.NaN()})
	}
	slices.SortFunc(c.Series, func(a, b Series) int {
		return cmp.Or(strings.Compare(a.Benchmark, b.Benchmark), strings.Compare(a.Dimensions, b.Dimensions),
			strings.Compare(a.Unit, b.Unit), cmp.Compare(a.Input, b.Input))
	})
	base := map[string]float64{}
	for _, s := range c.Series {
		if s.Input == baseline {
			base[s.group()] = s.Median
		}
	}
	for i, s := range c.Series {
		if b, ok := base[s.group()]; ok && b != 0 {
			c.Series[i].Ratio = s.Median / b
		}
	}
	if len(c.Series) > MaxSeries {
		c.LeftOut = len(c.Series) - MaxSeries
		c.Series = c.Series[:MaxSeries]
	}
	return c
}

func dims(d map[string]string) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(d)) {
		parts = append(parts, k+"="+d[k])
	}
	return strings.Join(parts, ", ")
}

// scales returns each group's largest interval end or median (its bars' full width).
func (c *Chart) scales() map[string]float64 {
	out := map[string]float64{}
	for _, s := range c.Series {
		top := s.Median
		if s.Bounded() {
			top = math.Max(top, s.High)
		}
		out[s.group()] = math.Max(out[s.group()], top)
	}
	return out
}

// px converts a value of s's group to a width in pixels.
func px(v, scale float64) float64 {
	if scale <= 0 || v <= 0 {
		return 0
	}
	return math.Min(v/scale, 1) * Plot
}

// Spread is the interval's half-width in percent of the median, as benchstat's "±": the
// larger distance from the median to an end. NaN when unbounded or the median is 0.
func (s Series) Spread() float64 {
	if !s.Bounded() || s.Median == 0 {
		return math.NaN()
	}
	return math.Max(s.Median-s.Low, s.High-s.Median) / math.Abs(s.Median) * 100
}

// Figures is the text beside a series' bar: the median, its interval's spread and the
// ratio to the baseline ("22.53 ms ±1% ×1.013", "7.36 MB ±∞ (n=3)").
func (s Series) Figures() string {
	v := Humanize(s.Median, s.Unit)
	switch sp := s.Spread(); {
	case !s.Bounded():
		v += fmt.Sprintf(" ±∞ (n=%d)", s.N)
	case math.IsNaN(sp):
	case sp < 1:
		v += fmt.Sprintf(" ±%.1f%%", sp)
	default:
		v += fmt.Sprintf(" ±%.0f%%", sp)
	}
	if !math.IsNaN(s.Ratio) {
		v += fmt.Sprintf("  ×%.3f", s.Ratio)
	}
	return v
}

// WriteSVG renders the chart. Each group (benchmark, dimensions, unit) has one heading,
// <text class="group">; each series is a <g class="series"> with data-input,
// data-input-name, data-benchmark, data-unit, data-dimensions, data-n, data-median,
// data-low, data-high (empty when the interval is unbounded), data-mean and data-ratio
// (empty when not defined), one label (<text class="name">: the input's name), a bar
// <rect class="bar">, an interval <line class="ci"> when bounded, and its figures
// (<text class="figures">); its <title> holds all of them.
func (c *Chart) WriteSVG(w io.Writer, title string) error {
	scales := c.scales()
	groups := 0
	for i, s := range c.Series {
		if i == 0 || s.group() != c.Series[i-1].group() {
			groups++
		}
	}
	height := headerH + float64(len(c.Series))*(BarHeight+2) + float64(groups)*(GroupGap+GroupHead) + 8
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" class="benchchart" width="%g" height="%g" viewBox="0 0 %g %g" font-family="monospace" font-size="11">`+"\n",
		Width, height, Width, height)
	caption := fmt.Sprintf("%d series; ratios of medians to %s", len(c.Series), c.InputName(c.Baseline))
	if c.LeftOut > 0 {
		caption += fmt.Sprintf("; %d series past %d left out", c.LeftOut, MaxSeries)
	}
	fmt.Fprintf(&b, `<text class="caption" x="4" y="16" font-size="13">%s: %s</text>`+"\n", esc(title), esc(caption))
	fmt.Fprintf(&b, `<text class="legend" x="4" y="31" fill="#666">%s</text>`+"\n",
		esc("bars: medians; lines: their 95% confidence intervals (benchstat's order statistics, none under 6 values); ±: the interval's half-width in % of the median"))
	y := headerH
	for i, s := range c.Series {
		if i == 0 || s.group() != c.Series[i-1].group() {
			y += GroupGap
			head := s.Benchmark
			if s.Dimensions != "" {
				head += " [" + s.Dimensions + "]"
			}
			head += " · " + UnitName(s.Unit)
			fmt.Fprintf(&b, `<text class="group" x="4" y="%.1f" font-weight="bold">%s</text>`+"\n", y+GroupHead-6, esc(head))
			y += GroupHead
		}
		scale := scales[s.group()]
		name := c.InputName(s.Input)
		lo, hi := "", ""
		interval := "no interval under 6 values"
		if s.Bounded() {
			lo, hi = num(s.Low), num(s.High)
			interval = fmt.Sprintf("95%% CI [%s, %s]", Humanize(s.Low, s.Unit), Humanize(s.High, s.Unit))
		}
		fmt.Fprintf(&b, `<g class="series" data-input="%d" data-input-name="%s" data-benchmark="%s" data-unit="%s" data-dimensions="%s" data-n="%d" data-median="%s" data-low="%s" data-high="%s" data-mean="%s" data-ratio="%s">`,
			s.Input, esc(name), esc(s.Benchmark), esc(s.Unit), esc(s.Dimensions), s.N, num(s.Median), lo, hi, num(s.Mean), num(s.Ratio))
		tip := fmt.Sprintf("%s, %s: median %s, %s, mean %s, n=%d", s.Benchmark, name, Humanize(s.Median, s.Unit), interval, Humanize(s.Mean, s.Unit), s.N)
		if !math.IsNaN(s.Ratio) {
			tip += fmt.Sprintf(", ×%.4f of %s", s.Ratio, c.InputName(c.Baseline))
		}
		fmt.Fprintf(&b, `<title>%s</title>`, esc(tip))
		fmt.Fprintf(&b, `<text class="name" x="16" y="%.1f">%s</text>`, y+BarHeight-4, esc(clip(name, nameChars)))
		fmt.Fprintf(&b, `<rect class="bar" x="%g" y="%.1f" width="%.3f" height="%g" fill="%s"/>`,
			Label, y, px(s.Median, scale), BarHeight, fill(s.Input == c.Baseline))
		if s.Bounded() {
			lo, hi := Label+px(s.Low, scale), Label+px(s.High, scale)
			mid := y + BarHeight/2
			fmt.Fprintf(&b, `<line class="ci" x1="%.3f" x2="%.3f" y1="%.1f" y2="%.1f" stroke="#222" stroke-width="1.5"/>`, lo, hi, mid, mid)
			fmt.Fprintf(&b, `<line x1="%.3f" x2="%.3f" y1="%.1f" y2="%.1f" stroke="#222"/><line x1="%.3f" x2="%.3f" y1="%.1f" y2="%.1f" stroke="#222"/>`,
				lo, lo, y+3, y+BarHeight-3, hi, hi, y+3, y+BarHeight-3)
		}
		fmt.Fprintf(&b, `<text class="figures" x="%g" y="%.1f">%s</text>`, Label+Plot+8, y+BarHeight-4, esc(s.Figures()))
		b.WriteString("</g>\n")
		y += BarHeight + 2
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// num is a full-precision figure for data attributes; NaN and infinities are empty.
func num(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return ""
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// clip shortens s to at most n runes, ending with an ellipsis when cut.
func clip(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

func fill(baseline bool) string {
	if baseline {
		return "#9aa7b8"
	}
	return "#e0954a"
}

// esc escapes s for SVG text and attribute values (svgtext.Escape).
func esc(s string) string { return svgtext.Escape(s) }

// FromRows reads summarize_benchmarks's measurement rows.
func FromRows(rows []map[string]any) []Measurement {
	out := make([]Measurement, 0, len(rows))
	for _, r := range rows {
		m := Measurement{Benchmark: str(r["benchmark"]), Unit: str(r["unit"]), Dimensions: map[string]string{}}
		if i, ok := r["input_index"].(float64); ok {
			m.Input = int(i)
		}
		m.Warmup, _ = r["is_warmup"].(bool)
		if v, ok := r["value_int"].(float64); ok {
			m.Value = v
		} else if v, ok := r["value_float"].(float64); ok {
			m.Value = v
		} else {
			continue
		}
		if d, ok := r["dimensions"].(map[string]any); ok {
			for k, v := range d {
				m.Dimensions[k] = str(v)
			}
		}
		out = append(out, m)
	}
	return out
}

func str(v any) string { s, _ := v.(string); return s }
