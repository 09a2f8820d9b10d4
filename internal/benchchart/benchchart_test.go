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

// Hand-worked series: input 0 of "a" is 1, 2, 3 (a warmup 100 ignored): mean 2, s 1,
// interval 2 ± Z/√3; input 1 is 4, 6: mean 5, s √2, interval 5 ± Z; ratio 5/2. "b" has one
// value per input: no interval, and a zero baseline gives no ratio. Dimensions sort by key.
func TestSeries(t *testing.T) {
	d := map[string]string{"size": "8", "mode": "x"}
	ms := []Measurement{
		{Input: 0, Benchmark: "a", Unit: "ns", Value: 100, Warmup: true, Dimensions: d},
		{Input: 0, Benchmark: "a", Unit: "ns", Value: 1, Dimensions: d},
		{Input: 1, Benchmark: "a", Unit: "ns", Value: 4, Dimensions: d},
		{Input: 0, Benchmark: "a", Unit: "ns", Value: 2, Dimensions: d},
		{Input: 1, Benchmark: "a", Unit: "ns", Value: 6, Dimensions: d},
		{Input: 0, Benchmark: "a", Unit: "ns", Value: 3, Dimensions: d},
		{Input: 1, Benchmark: "b", Unit: "bytes", Value: 7},
		{Input: 0, Benchmark: "b", Unit: "bytes", Value: 0},
	}
	nan := math.NaN()
	want := []Series{
		{Input: 0, Benchmark: "a", Unit: "ns", Dimensions: "mode=x, size=8", N: 3, Mean: 2, Stdev: 1, Low: 2 - Z/math.Sqrt(3), High: 2 + Z/math.Sqrt(3), Ratio: 1},
		{Input: 1, Benchmark: "a", Unit: "ns", Dimensions: "mode=x, size=8", N: 2, Mean: 5, Stdev: math.Sqrt(2), Low: 5 - Z, High: 5 + Z, Ratio: 2.5},
		{Input: 0, Benchmark: "b", Unit: "bytes", N: 1, Mean: 0, Stdev: nan, Low: 0, High: 0, Ratio: nan},
		{Input: 1, Benchmark: "b", Unit: "bytes", N: 1, Mean: 7, Stdev: nan, Low: 7, High: 7, Ratio: nan},
	}
	c := New(ms, 0)
	if d := cmp.Diff(want, c.Series, cmpopts.EquateApprox(1e-12, 0), cmpopts.EquateNaNs()); d != "" {
		t.Errorf("series (-want +got):\n%s", d)
	}
	// Widths: group "a" is scaled to its largest interval end, 5 + Z.
	var b bytes.Buffer
	if err := c.WriteSVG(&b, "<t>"); err != nil {
		t.Fatal(err)
	}
	svg := b.String()
	for _, s := range []string{
		`width="` + f3(2/(5+Z)*Plot) + `"`, `width="` + f3(5/(5+Z)*Plot) + `"`, // bars of a
		`x2="` + f3(Label+Plot) + `"`, // a's candidate interval ends at the full width
		`data-benchmark="b" data-unit="bytes" data-dimensions="" data-n="1" data-mean="0" data-stdev="" data-low="0" data-high="0" data-ratio=""`,
		`width="` + f3(Plot) + `"`, // b's input 1 is its group's maximum
		"&lt;t&gt;",
	} {
		if !strings.Contains(svg, s) {
			t.Errorf("the SVG lacks %s:\n%s", s, svg)
		}
	}
	if n := strings.Count(svg, `class="ci"`); n != 2 {
		t.Errorf("%d interval lines, want 2 (single values have none)", n)
	}
}

// f3 is a coordinate as the SVG writes it.
func f3(v float64) string { return fmt.Sprintf("%.3f", v) }
