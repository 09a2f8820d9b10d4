package timeline

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

type placed struct {
	ID          int64
	Lane, Depth int
	X, W, Y     float64
}

func place(l *Layout) []placed {
	var out []placed
	for _, b := range l.Bars {
		out = append(out, placed{b.ID, b.Lane, b.Depth, l.X(b), l.W(b), l.Y(b)})
	}
	return out
}

// Hand-worked layouts: the axis is [t0, t1] of the drawn slices, Plot pixels wide after
// a Label-wide column; lanes by their first start; depth from parent ids.
func TestLayout(t *testing.T) {
	px := func(ns float64, span float64) float64 { return ns / span * Plot }
	cases := []struct {
		name  string
		in    []Slice
		lanes []string
		want  []placed
	}{
		{
			name: "one track, nested",
			// [100, 1100): outer 0..1000, inner 200..700 (depth 1), a sibling 800..1000.
			in: []Slice{
				{ID: 1, Parent: -1, Name: "outer", Track: 7, Lane: "p / t", Start: 100, Dur: 1000},
				{ID: 2, Parent: 1, Name: "inner", Track: 7, Lane: "p / t", Start: 300, Dur: 500},
				{ID: 3, Parent: 1, Name: "late", Track: 7, Lane: "p / t", Start: 900, Dur: 200},
			},
			lanes: []string{"p / t"},
			want: []placed{
				{1, 0, 0, Label, Plot, headerH},
				{2, 0, 1, Label + px(200, 1000), px(500, 1000), headerH + RowHeight},
				{3, 0, 1, Label + px(800, 1000), px(200, 1000), headerH + RowHeight},
			},
		},
		{
			name: "lanes by first start, then track id; a tiny bar keeps MinBarWidth",
			// Track 9 starts first (at 0), tracks 2 and 5 both at 50: 2 before 5.
			in: []Slice{
				{ID: 10, Parent: -1, Name: "a", Track: 9, Lane: "nine", Start: 0, Dur: 4000},
				{ID: 11, Parent: -1, Name: "b", Track: 5, Lane: "five", Start: 50, Dur: 1},
				{ID: 12, Parent: -1, Name: "c", Track: 2, Lane: "two", Start: 50, Dur: 3950},
			},
			lanes: []string{"nine", "two", "five"},
			want: []placed{
				{10, 0, 0, Label, Plot, headerH},
				{11, 2, 0, Label + px(50, 4000), MinBarWidth, headerH + 2*(RowHeight+LaneGap)},
				{12, 1, 0, Label + px(50, 4000), px(3950, 4000), headerH + RowHeight + LaneGap},
			},
		},
		{
			name: "a parent outside the rows (a window) puts the child at depth 0",
			in: []Slice{
				{ID: 5, Parent: 4, Name: "child", Track: 1, Lane: "track 1", Start: 10, Dur: 10},
			},
			lanes: []string{"track 1"},
			want:  []placed{{5, 0, 0, Label, Plot, headerH}},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l := New(c.in)
			var lanes []string
			for _, ln := range l.Lanes {
				lanes = append(lanes, ln.Label)
			}
			if d := cmp.Diff(c.lanes, lanes); d != "" {
				t.Errorf("lanes (-want +got):\n%s", d)
			}
			if d := cmp.Diff(c.want, place(l)); d != "" {
				t.Errorf("bars (-want +got):\n%s", d)
			}
		})
	}
}

// The bounds leave slices out and the caption counts them.
func TestBounds(t *testing.T) {
	var in []Slice
	// MaxLanes+2 tracks with one slice each, then a chain nested MaxDepth+2 deep on track 0,
	// then filler up to MaxSlices+3 slices. The axis: 0 to the end of track 47's slice, 47+1000.
	for i := range MaxLanes + 2 {
		in = append(in, Slice{ID: int64(i), Parent: -1, Track: int64(i), Start: int64(i), Dur: 1000})
	}
	parent := int64(0)
	for d := 1; d <= MaxDepth+2; d++ {
		id := int64(1000 + d)
		in = append(in, Slice{ID: id, Parent: parent, Track: 0, Start: 100 + int64(d), Dur: 10})
		parent = id
	}
	for len(in) < MaxSlices+3 {
		in = append(in, Slice{ID: int64(10000 + len(in)), Parent: -1, Track: 1, Start: 500, Dur: 1})
	}
	l := New(in)
	if len(l.Lanes) != MaxLanes || l.LeftOutLanes != 2 || l.LeftOutInLanes != 2 || l.LeftOutDeep != 2 || l.LeftOutSlices != 3 {
		t.Errorf("lanes %d, left out: lanes %d (%d slices), deep %d, past the bound %d", len(l.Lanes), l.LeftOutLanes,
			l.LeftOutInLanes, l.LeftOutDeep, l.LeftOutSlices)
	}
	if len(l.Bars) != MaxSlices-2-2 {
		t.Errorf("%d bars, want %d", len(l.Bars), MaxSlices-4)
	}
	want := fmt.Sprintf("%d slices on %d lanes over 1.047 µs; left out: 3 slices after the first %d by start, 2 lanes past %d (2 slices), 2 slices nested deeper than %d",
		MaxSlices-4, MaxLanes, MaxSlices, MaxLanes, MaxDepth)
	if got := l.Caption(); got != want {
		t.Errorf("caption\n got %q\nwant %q", got, want)
	}
}

// Rows as the API returns them: numbers or decimal strings; names escaped and clipped.
func TestRowsAndSVG(t *testing.T) {
	var rows []map[string]any
	dec := json.NewDecoder(strings.NewReader(`[
 {"id": 3, "parent_id": null, "name": "<script>&", "ts": "9007199254740993", "dur": 2000, "track_id": 4, "thread_name": "main", "process_name": "py"},
 {"id": 4, "parent_id": 3, "name": "a-very-long-slice-name-that-does-not-fit", "ts": 9007199254741093, "dur": 100, "track_id": 4, "thread_name": null, "process_name": null}]`))
	dec.UseNumber()
	if err := dec.Decode(&rows); err != nil {
		t.Fatal(err)
	}
	in := FromRows(rows)
	want := []Slice{
		{ID: 3, Parent: -1, Name: "<script>&", Track: 4, Lane: "py / main", Start: 9007199254740993, Dur: 2000},
		{ID: 4, Parent: 3, Name: "a-very-long-slice-name-that-does-not-fit", Track: 4, Lane: "track 4", Start: 9007199254741093, Dur: 100},
	}
	if d := cmp.Diff(want, in); d != "" {
		t.Fatalf("slices (-want +got):\n%s", d)
	}
	var b bytes.Buffer
	if err := New(in).WriteSVG(&b, "t"); err != nil {
		t.Fatal(err)
	}
	svg := b.String()
	// The second bar is 100/2000 of Plot = 49.6 px wide: (49.6-4)/6.6 = 6 characters.
	for _, s := range []string{`data-name="&lt;script&gt;&amp;"`, `data-ts="9007199254740993"`, `>a-ver…</text>`, `data-lane="py / main"`} {
		if !strings.Contains(svg, s) {
			t.Errorf("the SVG lacks %s:\n%s", s, svg)
		}
	}
	if strings.Contains(svg, "<script>") {
		t.Error("a name reached the SVG unescaped")
	}
}
