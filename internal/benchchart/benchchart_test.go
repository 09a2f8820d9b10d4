package benchchart

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// Hand-worked series: input 0 of "a" is 1, 2, 3 (a warmup 100 ignored): median 2, no
// interval under six values; input 1 is 10, 20, ..., 100: median 55 and benchstat's
// interval for n = 10, the 2nd and 9th order statistics (20, 90: binomial coverage
// 0.979); ratio of medians 55/2. "b" has one value per input: no interval, and a zero
// baseline gives no ratio. Dimensions sort by key.
func TestSeries(t *testing.T) {
	d := map[string]string{"size": "8", "mode": "x"}
	ms := []Measurement{
		{Input: 0, Benchmark: "a", Unit: "ns", Value: 100, Warmup: true, Dimensions: d},
		{Input: 0, Benchmark: "a", Unit: "ns", Value: 1, Dimensions: d},
		{Input: 0, Benchmark: "a", Unit: "ns", Value: 2, Dimensions: d},
		{Input: 0, Benchmark: "a", Unit: "ns", Value: 3, Dimensions: d},
		{Input: 1, Benchmark: "b", Unit: "bytes", Value: 7},
		{Input: 0, Benchmark: "b", Unit: "bytes", Value: 0},
	}
	for _, v := range []float64{70, 10, 40, 100, 20, 90, 30, 60, 50, 80} {
		ms = append(ms, Measurement{Input: 1, Benchmark: "a", Unit: "ns", Value: v, Dimensions: d})
	}
	nan, inf := math.NaN(), math.Inf(1)
	want := []Series{
		{Input: 0, Benchmark: "a", Unit: "ns", Dimensions: "mode=x, size=8", N: 3, Median: 2, Low: -inf, High: inf, Mean: 2, Ratio: 1},
		{Input: 1, Benchmark: "a", Unit: "ns", Dimensions: "mode=x, size=8", N: 10, Median: 55, Low: 20, High: 90, Mean: 55, Ratio: 27.5},
		{Input: 0, Benchmark: "b", Unit: "bytes", N: 1, Median: 0, Low: -inf, High: inf, Mean: 0, Ratio: nan},
		{Input: 1, Benchmark: "b", Unit: "bytes", N: 1, Median: 7, Low: -inf, High: inf, Mean: 7, Ratio: nan},
	}
	c := New(ms, 0)
	c.Inputs = []string{"input-0001 (pyperf)", "input-0002 <x>"}
	if d := cmp.Diff(want, c.Series, cmpopts.EquateApprox(1e-12, 0), cmpopts.EquateNaNs()); d != "" {
		t.Errorf("series (-want +got):\n%s", d)
	}
	// Widths: group "a" is scaled to its largest interval end, 90.
	var b bytes.Buffer
	if err := c.WriteSVG(&b, "<t>"); err != nil {
		t.Fatal(err)
	}
	svg := b.String()
	for _, s := range []string{
		`width="` + f3(2.0/90*Plot) + `"`, `width="` + f3(55.0/90*Plot) + `"`, // bars of a
		`x1="` + f3(Label+20.0/90*Plot) + `" x2="` + f3(Label+Plot) + `"`, // a's candidate interval
		`data-input="0" data-input-name="input-0001 (pyperf)" data-benchmark="b" data-unit="bytes" data-dimensions="" data-n="1" data-median="0" data-low="" data-high="" data-mean="0" data-ratio=""`,
		`width="` + f3(Plot) + `"`, // b's input 1 is its group's maximum
		"&lt;t&gt;", "input-0002 &lt;x&gt;",
		// One heading per group, one label per series.
		`<text class="group" x="4" y="60.0" font-weight="bold">a [mode=x, size=8] · time</text>`,
		`>55 ns ±64%  ×27.500</text>`, `>2 ns ±∞ (n=3)  ×1.000</text>`,
		"ratios of medians to input-0001 (pyperf)",
	} {
		if !strings.Contains(svg, s) {
			t.Errorf("the SVG lacks %s:\n%s", s, svg)
		}
	}
	if n := strings.Count(svg, `class="ci"`); n != 1 {
		t.Errorf("%d interval lines, want 1 (under six values there is none)", n)
	}
	if n := strings.Count(svg, `class="group"`); n != 2 {
		t.Errorf("%d group headings, want 2", n)
	}
	if n := strings.Count(svg, `class="name"`); n != 4 {
		t.Errorf("%d series labels, want 4", n)
	}
}

// f3 is a coordinate as the SVG writes it.
func f3(v float64) string { return fmt.Sprintf("%.3f", v) }

// Humanize writes four significant digits in the unit that keeps a value under 1000.
func TestHumanize(t *testing.T) {
	cases := []struct {
		v    float64
		unit string
		want string
	}{
		{22530700, "ns", "22.53 ms"},
		{2.25307e+07, "ns", "22.53 ms"},
		{0, "ns", "0 ns"},
		{0.5, "ns", "0.5 ns"},
		{999, "ns", "999 ns"},
		{999.96, "ns", "1 µs"},
		{1500, "ns", "1.5 µs"},
		{123456789012, "ns", "123.5 s"},
		{12345e9, "ns", "12345 s"},
		{-2500, "ns", "-2.5 µs"},
		{0.0225, "s", "22.5 ms"},
		{22.5, "ms", "22.5 ms"},
		{3, "us", "3 µs"},
		{7360512, "bytes", "7.361 MB"},
		{1200, "MB/s", "1.2 GB/s"},
		{1.2e9, "B/s", "1.2 GB/s"},
		{512, "B/op", "512 B/op"},
		{2048, "B/op", "2.048 kB/op"},
		{22530700, "ns/op", "22.53 ms/op"},
		{0.0225307, "sec/op", "22.53 ms/op"},
		{12345, "count", "12.35k"},
		{7, "count", "7"},
		{1.5e6, "tokens/s", "1.5M tokens/s"},
		{0.25, "ratio", "0.25 ratio"},
		{math.NaN(), "ns", "NaN"},
	}
	for _, c := range cases {
		if got := Humanize(c.v, c.unit); got != c.want {
			t.Errorf("Humanize(%v, %q) = %q, want %q", c.v, c.unit, got, c.want)
		}
	}
	for unit, want := range map[string]string{"ns": "time", "bytes": "bytes", "MB/s": "bytes/s", "ns/op": "time/op", "count": "count", "tokens/s": "tokens/s"} {
		if got := UnitName(unit); got != want {
			t.Errorf("UnitName(%q) = %q, want %q", unit, got, want)
		}
	}
}

// No normal quantile is left in the chart: its intervals are internal/stats'.
func TestNoNormalQuantile(t *testing.T) {
	var b bytes.Buffer
	c := New([]Measurement{{Benchmark: "a", Unit: "ns", Value: 1}, {Benchmark: "a", Unit: "ns", Value: 2}}, 0)
	if err := c.WriteSVG(&b, "t"); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "1.96") || strings.Contains(b.String(), "normal") {
		t.Errorf("the chart mentions a normal interval:\n%s", b.String())
	}
}
