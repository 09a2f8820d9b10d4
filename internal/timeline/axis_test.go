package timeline

import (
	"bytes"
	"encoding/xml"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// labels returns the ticks' labels and times.
func labels(ts []Tick) (out []string, at []int64) {
	for _, t := range ts {
		out = append(out, t.Label)
		at = append(at, t.At)
	}
	return out, at
}

// The axis step is the smallest 1-2-5 step giving at most MaxTickIntervals intervals;
// the unit is the largest one the farthest label reaches; labels are exact decimals
// without trailing zeros. Worked by hand for spans from 3 ns to 100 s.
func TestTicks(t *testing.T) {
	cases := []struct {
		name           string
		t0, t1, origin int64
		step           int64
		want           []string
	}{
		{"3 ns", 0, 3, 0, 1, []string{"0 ns", "1 ns", "2 ns", "3 ns"}},
		{"10 ns: 10 steps of 1 are too many", 0, 10, 0, 2, []string{"0 ns", "2 ns", "4 ns", "6 ns", "8 ns", "10 ns"}},
		{"999 ns", 0, 999, 0, 200, []string{"0 ns", "200 ns", "400 ns", "600 ns", "800 ns"}},
		{"1.5 µs", 0, 1500, 0, 200, []string{"0 µs", "0.2 µs", "0.4 µs", "0.6 µs", "0.8 µs", "1 µs", "1.2 µs", "1.4 µs"}},
		{"80 µs", 0, 80_000, 0, 10_000, []string{"0 µs", "10 µs", "20 µs", "30 µs", "40 µs", "50 µs", "60 µs", "70 µs", "80 µs"}},
		{"3.72 ms (the corpus trace)", 0, 3_724_167, 0, 500_000,
			[]string{"0 ms", "0.5 ms", "1 ms", "1.5 ms", "2 ms", "2.5 ms", "3 ms", "3.5 ms"}},
		{"12 ms", 0, 12_000_000, 0, 2_000_000, []string{"0 ms", "2 ms", "4 ms", "6 ms", "8 ms", "10 ms", "12 ms"}},
		{"1 s", 0, 1_000_000_000, 0, 200_000_000, []string{"0 s", "0.2 s", "0.4 s", "0.6 s", "0.8 s", "1 s"}},
		{"100 s", 0, 100_000_000_000, 0, 20_000_000_000, []string{"0 s", "20 s", "40 s", "60 s", "80 s", "100 s"}},
		{"an axis away from 0 counts from its start", 5_202_328_581_227_184, 5_202_328_581_227_184 + 12_000_000, 5_202_328_581_227_184,
			2_000_000, []string{"0 ms", "2 ms", "4 ms", "6 ms", "8 ms", "10 ms", "12 ms"}},
		{"a window counts from the trace's start, in the unit its far end reaches", 12_300_000, 12_400_000, 0, 20_000,
			[]string{"12.3 ms", "12.32 ms", "12.34 ms", "12.36 ms", "12.38 ms", "12.4 ms"}},
		{"a window not on a step starts at the next multiple", 1005, 1013, 1000, 1,
			[]string{"5 ns", "6 ns", "7 ns", "8 ns", "9 ns", "10 ns", "11 ns", "12 ns", "13 ns"}},
		{"a window of 30 ns 3 s in keeps every digit", 3_000_000_010, 3_000_000_040, 0, 5,
			[]string{"3.00000001 s", "3.000000015 s", "3.00000002 s", "3.000000025 s", "3.00000003 s", "3.000000035 s", "3.00000004 s"}},
		{"an empty span has its one tick", 7, 7, 7, 1, []string{"0 ns"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := TickStep(c.t1 - c.t0); got != c.step {
				t.Errorf("step %d, want %d", got, c.step)
			}
			got, at := labels(Ticks(c.t0, c.t1, c.origin))
			if d := cmp.Diff(c.want, got); d != "" {
				t.Errorf("labels (-want +got):\n%s", d)
			}
			for i, a := range at {
				if a < c.t0 || a > c.t1 || (a-c.origin)%c.step != 0 || i > 0 && a-at[i-1] != c.step {
					t.Errorf("tick %d at %d: outside [%d, %d] or off the step %d from %d", i, a, c.t0, c.t1, c.step, c.origin)
				}
			}
			if len(got) > MaxTickIntervals+1 {
				t.Errorf("%d ticks", len(got))
			}
		})
	}
	// The largest spans do not overflow.
	if s := TickStep(1<<63 - 1); s <= 0 {
		t.Errorf("step of the largest span: %d", s)
	}
}

// Flows join a launch (no stream) to the GPU activity of the same correlation id; the
// SVG draws them with the slice ids, and the axis with its ticks.
func TestFlowsAndAxis(t *testing.T) {
	in := []Slice{
		{ID: 1, Parent: -1, Name: "cudaLaunchKernel", Track: 1, Lane: "cpu", Start: 0, Dur: 10, Correlation: 7, HasCorrelation: true},
		{ID: 2, Parent: -1, Name: "kernel", Track: 2, Lane: "stream 7", Start: 20, Dur: 30, Correlation: 7, HasCorrelation: true, GPU: true},
		{ID: 3, Parent: -1, Name: "cudaMemcpyAsync", Track: 1, Lane: "cpu", Start: 12, Dur: 5, Correlation: 8, HasCorrelation: true},
		{ID: 4, Parent: -1, Name: "no launch", Track: 2, Lane: "stream 7", Start: 60, Dur: 5, Correlation: 9, HasCorrelation: true, GPU: true},
		{ID: 5, Parent: -1, Name: "uncorrelated", Track: 1, Lane: "cpu", Start: 70, Dur: 10},
	}
	l := New(in)
	if d := cmp.Diff([]Flow{{From: 0, To: 1, Correlation: 7}}, l.Flows); d != "" {
		t.Errorf("flows (-want +got):\n%s", d)
	}
	if got := l.Caption(); got != "5 slices on 2 lanes over 80 ns; 1 launch → GPU flows" {
		t.Errorf("caption %q", got)
	}
	l.SetOrigin(-20)
	var b bytes.Buffer
	if err := l.WriteSVG(&b, "t"); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		T0     int64 `xml:"data-t0,attr"`
		T1     int64 `xml:"data-t1,attr"`
		Origin int64 `xml:"data-origin,attr"`
		G      []struct {
			Class string `xml:"class,attr"`
			Ticks []struct {
				NS    int64  `xml:"data-ns,attr"`
				Label string `xml:"text"`
			} `xml:"g"`
			Flows []struct {
				From int64 `xml:"data-from,attr"`
				To   int64 `xml:"data-to,attr"`
			} `xml:"line"`
		} `xml:"g"`
		Lanes []struct {
			Label string `xml:"data-label,attr"`
			Title string `xml:"title"`
		} `xml:"text"`
	}
	if err := xml.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatalf("not XML: %v\n%s", err, b.String())
	}
	if doc.T0 != 0 || doc.T1 != 80 || doc.Origin != -20 {
		t.Errorf("axis data %d %d %d", doc.T0, doc.T1, doc.Origin)
	}
	var ticks []string
	var flows [][2]int64
	for _, g := range doc.G {
		switch g.Class {
		case "axis":
			for _, tk := range g.Ticks {
				ticks = append(ticks, tk.Label)
			}
		case "flows":
			for _, f := range g.Flows {
				flows = append(flows, [2]int64{f.From, f.To})
			}
		}
	}
	// Span 80: step 10; labels from the origin at -20 ns.
	if d := cmp.Diff([]string{"20 ns", "30 ns", "40 ns", "50 ns", "60 ns", "70 ns", "80 ns", "90 ns", "100 ns"}, ticks); d != "" {
		t.Errorf("ticks (-want +got):\n%s", d)
	}
	if d := cmp.Diff([][2]int64{{1, 2}}, flows); d != "" {
		t.Errorf("flows in the SVG (-want +got):\n%s", d)
	}
	if len(doc.Lanes) < 3 || doc.Lanes[1].Label != "cpu" || doc.Lanes[1].Title != "cpu" {
		t.Errorf("lane labels %+v", doc.Lanes)
	}
}
