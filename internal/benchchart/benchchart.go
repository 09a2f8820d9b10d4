// Package benchchart draws benchmark series as SVG bars with 95% confidence intervals.
// The input is summarize_benchmarks's measurement rows (per-iteration values of 1-32
// benchmark results); the chart is what a reviewer of compare_benchmarks wants to see:
// each input's mean per series, its interval, and its ratio to the baseline input.
//
// The figures (docs/decisions/0029-evidence-viewer.md):
//   - a series is the non-warmup values of one input with one benchmark, unit and set of
//     dimensions (compare_benchmarks's matching, per input);
//   - mean and sample standard deviation (n - 1); the interval is mean ± Z * stdev / √n
//     with the normal quantile Z = 1.95996 (no Student t: n is usually large, and the
//     interval is then slightly narrow for n < 30; a single value has no interval);
//   - ratio = mean / the baseline input's mean of the same series (null without one or
//     when it is 0), as compare_benchmarks computes it;
//   - bars of one benchmark group share a scale: width = mean / the group's largest
//     interval end * Plot.
package benchchart

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/flameox/flameox/internal/svgtext"
)

// Z is the two-sided 95% quantile of the standard normal distribution.
const Z = 1.959963984540054

// MaxSeries bounds the bars drawn.
const MaxSeries = 256

// SVG geometry.
const (
	Width     = 1200.0
	Label     = 320.0
	Plot      = Width - Label - 270
	BarHeight = 16.0
	GroupGap  = 12.0
	headerH   = 28.0
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
	Mean       float64
	Stdev      float64 // NaN when N < 2
	Low, High  float64 // the 95% interval; Mean, Mean when N < 2
	Ratio      float64 // NaN without a baseline
}

func (s Series) group() string { return s.Benchmark + "\x00" + s.Unit + "\x00" + s.Dimensions }

// Chart is a set of series in drawing order: by benchmark, dimensions, unit, then input.
type Chart struct {
	Series   []Series
	Baseline int
	LeftOut  int // series past MaxSeries
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
		s := Series{Input: k.input, Benchmark: k.bench, Unit: k.unit, Dimensions: k.dims, N: len(vs), Stdev: math.NaN(), Ratio: math.NaN()}
		for _, v := range vs {
			s.Mean += v
		}
		s.Mean /= float64(len(vs))
		s.Low, s.High = s.Mean, s.Mean
		if len(vs) > 1 {
			ss := 0.0
			for _, v := range vs {
				ss += (v - s.Mean) * (v - s.Mean)
			}
			s.Stdev = math.Sqrt(ss / float64(len(vs)-1))
			half := Z * s.Stdev / math.Sqrt(float64(len(vs)))
			s.Low, s.High = s.Mean-half, s.Mean+half
		}
		c.Series = append(c.Series, s)
	}
	slices.SortFunc(c.Series, func(a, b Series) int {
		return cmp.Or(strings.Compare(a.Benchmark, b.Benchmark), strings.Compare(a.Dimensions, b.Dimensions),
			strings.Compare(a.Unit, b.Unit), cmp.Compare(a.Input, b.Input))
	})
	base := map[string]float64{}
	for _, s := range c.Series {
		if s.Input == baseline {
			base[s.group()] = s.Mean
		}
	}
	for i, s := range c.Series {
		if b, ok := base[s.group()]; ok && b != 0 {
			c.Series[i].Ratio = s.Mean / b
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

// scales returns each group's largest interval end (its bars' full width).
func (c *Chart) scales() map[string]float64 {
	out := map[string]float64{}
	for _, s := range c.Series {
		out[s.group()] = math.Max(out[s.group()], math.Max(s.High, s.Mean))
	}
	return out
}

// px converts a value of s's group to a width in pixels.
func px(v, scale float64) float64 {
	if scale <= 0 || v <= 0 {
		return 0
	}
	return v / scale * Plot
}

// WriteSVG renders the chart: every series is a <g class="series"> with data-input,
// data-benchmark, data-unit, data-dimensions, data-n, data-mean, data-stdev, data-low,
// data-high and data-ratio (empty when not defined), a bar <rect class="bar"> and an
// interval <line class="ci">.
func (c *Chart) WriteSVG(w io.Writer, title string) error {
	scales := c.scales()
	groups := 0
	for i, s := range c.Series {
		if i == 0 || s.group() != c.Series[i-1].group() {
			groups++
		}
	}
	height := headerH + float64(len(c.Series))*(BarHeight+2) + float64(groups)*GroupGap + 8
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" class="benchchart" width="%g" height="%g" viewBox="0 0 %g %g" font-family="monospace" font-size="11">`+"\n",
		Width, height, Width, height)
	caption := fmt.Sprintf("%d series; bars are means, lines 95%% intervals (normal, mean ± %.4g·s/√n); ratios to input %d", len(c.Series), Z, c.Baseline)
	if c.LeftOut > 0 {
		caption += fmt.Sprintf("; %d series past %d left out", c.LeftOut, MaxSeries)
	}
	fmt.Fprintf(&b, `<text class="caption" x="4" y="16" font-size="13">%s: %s</text>`+"\n", esc(title), esc(caption))
	y := headerH
	for i, s := range c.Series {
		if i == 0 || s.group() != c.Series[i-1].group() {
			y += GroupGap
		}
		scale := scales[s.group()]
		name := s.Benchmark
		if s.Dimensions != "" {
			name += " [" + s.Dimensions + "]"
		}
		fmt.Fprintf(&b, `<g class="series" data-input="%d" data-benchmark="%s" data-unit="%s" data-dimensions="%s" data-n="%d" data-mean="%s" data-stdev="%s" data-low="%s" data-high="%s" data-ratio="%s">`,
			s.Input, esc(s.Benchmark), esc(s.Unit), esc(s.Dimensions), s.N, num(s.Mean), num(s.Stdev), num(s.Low), num(s.High), num(s.Ratio))
		fmt.Fprintf(&b, `<title>%s, input %d: mean %s %s, 95%% [%s, %s], n=%d</title>`, esc(name), s.Input,
			short(s.Mean), esc(s.Unit), short(s.Low), short(s.High), s.N)
		label := fmt.Sprintf("%s · input %d", name, s.Input)
		if r := []rune(label); len(r) > 46 {
			label = string(r[:45]) + "…"
		}
		fmt.Fprintf(&b, `<text x="4" y="%.1f">%s</text>`, y+BarHeight-4, esc(label))
		fmt.Fprintf(&b, `<rect class="bar" x="%g" y="%.1f" width="%.3f" height="%g" fill="%s"/>`,
			Label, y, px(s.Mean, scale), BarHeight, fill(s.Input == c.Baseline))
		if s.N > 1 {
			lo, hi := Label+px(s.Low, scale), Label+px(s.High, scale)
			mid := y + BarHeight/2
			fmt.Fprintf(&b, `<line class="ci" x1="%.3f" x2="%.3f" y1="%.1f" y2="%.1f" stroke="#222" stroke-width="1.5"/>`, lo, hi, mid, mid)
			fmt.Fprintf(&b, `<line x1="%.3f" x2="%.3f" y1="%.1f" y2="%.1f" stroke="#222"/><line x1="%.3f" x2="%.3f" y1="%.1f" y2="%.1f" stroke="#222"/>`,
				lo, lo, y+3, y+BarHeight-3, hi, hi, y+3, y+BarHeight-3)
		}
		value := fmt.Sprintf("%s %s", short(s.Mean), s.Unit)
		if s.N > 1 {
			value += fmt.Sprintf(" ± %s", short(s.High-s.Mean))
		}
		if !math.IsNaN(s.Ratio) {
			value += fmt.Sprintf("  ×%.4f", s.Ratio)
		}
		fmt.Fprintf(&b, `<text x="%g" y="%.1f">%s</text>`, Label+Plot+6, y+BarHeight-4, esc(value))
		b.WriteString("</g>\n")
		y += BarHeight + 2
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// num is a full-precision figure for data attributes; NaN is empty.
func num(v float64) string {
	if math.IsNaN(v) {
		return ""
	}
	return fmt.Sprintf("%.17g", v)
}

func short(v float64) string { return fmt.Sprintf("%.6g", v) }

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
