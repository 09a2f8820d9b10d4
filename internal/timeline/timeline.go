// Package timeline lays out the slices of a trace as a timeline and renders it as SVG:
// one lane per track (a thread, an async track, a GPU stream), bars at their start and
// duration, nested slices one row below their parent. The input is what Flameox's trace
// operations report (summarize_trace's or inspect_trace_window's slice rows).
//
// The layout (docs/decisions/0029-evidence-viewer.md):
//   - slices are taken in row order (by start) up to MaxSlices; later ones are left out;
//   - lanes are the slices' tracks, ordered by their first slice's start, then track id;
//     lanes past MaxLanes are left out with their slices;
//   - a slice's row inside its lane is its depth: its parent's depth + 1 when its parent
//     is among the slices, else 0; rows deeper than MaxDepth are left out;
//   - the time axis spans the earliest start to the latest end of the drawn slices (or,
//     with NewWindow, exactly the window chosen, each bar clipped to it); a bar
//     starts at Label + (ts - t0) / (t1 - t0) * Plot pixels and is
//     max(dur / (t1 - t0) * Plot, MinBarWidth) wide.
//
// Everything left out is counted, and the caption says so.
package timeline

import (
	"cmp"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/flameox/flameox/internal/svgtext"
)

// Bounds of a layout.
const (
	MaxSlices = 4000
	MaxLanes  = 48
	MaxDepth  = 15
)

// SVG geometry: a Label-wide column of lane names, then a Plot-wide time axis.
const (
	Width       = 1200.0
	Label       = 200.0
	Plot        = Width - Label - 8
	RowHeight   = 16.0
	LaneGap     = 6.0
	MinBarWidth = 0.5
	headerH     = 40.0
	labelChars  = 29 // (Label - 8) / 6.6
)

// Slice is one slice of a trace; times are in nanoseconds.
type Slice struct {
	ID     int64
	Parent int64 // -1 at the top
	Name   string
	Track  int64
	Lane   string // the lane's label: process and thread names, or "track N"
	Start  int64
	Dur    int64
}

// Bar is a laid-out slice.
type Bar struct {
	Slice
	Lane  int // index into Layout.Lanes
	Depth int
}

// Lane is one track's lane.
type Lane struct {
	Track  int64
	Label  string
	Depths int     // rows used (max depth + 1)
	Y      float64 // top of the lane in the SVG
}

// Layout is a laid-out timeline.
type Layout struct {
	Lanes          []Lane
	Bars           []Bar
	T0, T1         int64
	Total          int // slices given
	LeftOutSlices  int // past MaxSlices
	LeftOutLanes   int // lanes past MaxLanes
	LeftOutInLanes int // slices of those lanes
	LeftOutDeep    int // slices deeper than MaxDepth
	Height         float64
	More           bool // the caller read only a prefix of the trace's slices
	Window         bool // the axis is a window [T0, T1) chosen by the caller (NewWindow)
}

// NewWindow lays out the slices (in row order, by start) that overlap the window [t0, t1)
// clipped to it: a bar starts at max(ts, t0) and ends at min(ts+dur, t1), and the axis
// spans exactly the window. A slice with nothing inside the window is not drawn.
func NewWindow(in []Slice, t0, t1 int64) *Layout {
	clipped := make([]Slice, 0, len(in))
	for _, s := range in {
		start, end := max(s.Start, t0), min(s.Start+max(s.Dur, 0), t1)
		if end <= start {
			continue
		}
		s.Start, s.Dur = start, end-start
		clipped = append(clipped, s)
	}
	l := New(clipped)
	l.T0, l.T1, l.Window = t0, t1, true
	return l
}

// New lays out slices (in row order, by start).
func New(in []Slice) *Layout {
	l := &Layout{Total: len(in)}
	if len(in) > MaxSlices {
		l.LeftOutSlices = len(in) - MaxSlices
		in = in[:MaxSlices]
	}
	type first struct {
		start int64
		label string
	}
	tracks := map[int64]first{}
	for _, s := range in {
		if f, ok := tracks[s.Track]; !ok || s.Start < f.start {
			tracks[s.Track] = first{s.Start, s.Lane}
		}
	}
	order := make([]int64, 0, len(tracks))
	for t := range tracks {
		order = append(order, t)
	}
	slices.SortFunc(order, func(a, b int64) int {
		return cmp.Or(cmp.Compare(tracks[a].start, tracks[b].start), cmp.Compare(a, b))
	})
	laneOf := map[int64]int{}
	for i, t := range order {
		if i >= MaxLanes {
			l.LeftOutLanes++
			continue
		}
		laneOf[t] = i
		l.Lanes = append(l.Lanes, Lane{Track: t, Label: tracks[t].label})
	}
	depth := map[int64]int{}
	for _, s := range in {
		d := 0
		if p, ok := depth[s.Parent]; ok && s.Parent >= 0 {
			d = p + 1
		}
		depth[s.ID] = d
	}
	empty := true
	for _, s := range in {
		lane, ok := laneOf[s.Track]
		if !ok {
			l.LeftOutInLanes++
			continue
		}
		if depth[s.ID] > MaxDepth {
			l.LeftOutDeep++
			continue
		}
		end := s.Start + max(s.Dur, 0)
		if empty || s.Start < l.T0 {
			l.T0 = s.Start
		}
		if empty || end > l.T1 {
			l.T1 = end
		}
		empty = false
		l.Bars = append(l.Bars, Bar{Slice: s, Lane: lane, Depth: depth[s.ID]})
		l.Lanes[lane].Depths = max(l.Lanes[lane].Depths, depth[s.ID]+1)
	}
	y := headerH
	for i := range l.Lanes {
		l.Lanes[i].Y = y
		y += float64(max(l.Lanes[i].Depths, 1))*RowHeight + LaneGap
	}
	l.Height = y + 4
	return l
}

// X is a bar's left edge in the SVG.
func (l *Layout) X(b Bar) float64 { return Label + l.frac(b.Start-l.T0)*Plot }

// W is a bar's width in the SVG.
func (l *Layout) W(b Bar) float64 { return math.Max(l.frac(b.Dur)*Plot, MinBarWidth) }

// Y is a bar's top in the SVG.
func (l *Layout) Y(b Bar) float64 { return l.Lanes[b.Lane].Y + float64(b.Depth)*RowHeight }

func (l *Layout) frac(ns int64) float64 {
	if l.T1 <= l.T0 {
		return 0
	}
	return float64(ns) / float64(l.T1-l.T0)
}

// Caption is the chart's one-line summary, naming what was left out.
func (l *Layout) Caption() string {
	s := fmt.Sprintf("%d slices on %d lanes over %s", len(l.Bars), len(l.Lanes), Duration(l.T1-l.T0))
	if l.Window {
		s = fmt.Sprintf("%d slices on %d lanes in the window [%d, %d) ns, clipped to it", len(l.Bars), len(l.Lanes), l.T0, l.T1)
	}
	var out []string
	if l.LeftOutSlices > 0 {
		out = append(out, fmt.Sprintf("%d slices after the first %d by start", l.LeftOutSlices, MaxSlices))
	}
	if l.LeftOutLanes > 0 {
		out = append(out, fmt.Sprintf("%d lanes past %d (%d slices)", l.LeftOutLanes, MaxLanes, l.LeftOutInLanes))
	}
	if l.LeftOutDeep > 0 {
		out = append(out, fmt.Sprintf("%d slices nested deeper than %d", l.LeftOutDeep, MaxDepth))
	}
	if l.More {
		out = append(out, "the trace's later slices (not read)")
	}
	if len(out) > 0 {
		s += "; left out: " + strings.Join(out, ", ")
	}
	return s
}

// Duration formats nanoseconds with a readable unit.
func Duration(ns int64) string {
	f := float64(ns)
	switch {
	case ns >= 1e9:
		return fmt.Sprintf("%.6g s", f/1e9)
	case ns >= 1e6:
		return fmt.Sprintf("%.6g ms", f/1e6)
	case ns >= 1e3:
		return fmt.Sprintf("%.6g µs", f/1e3)
	}
	return fmt.Sprintf("%d ns", ns)
}

// WriteSVG renders the layout. Every bar is a <g class="slice"> carrying data-id,
// data-name, data-lane (the lane's label), data-depth, data-ts and data-dur (ns), with a
// <title> tooltip; lane labels are <text class="lane">.
func (l *Layout) WriteSVG(w io.Writer, title string) error {
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" class="timeline" width="%g" height="%g" viewBox="0 0 %g %g" font-family="monospace" font-size="11">`+"\n",
		Width, l.Height, Width, l.Height)
	fmt.Fprintf(&b, `<text class="caption" x="4" y="16" font-size="13">%s: %s</text>`+"\n", esc(title), esc(l.Caption()))
	fmt.Fprintf(&b, `<text class="axis" x="%g" y="32">0</text><text class="axis" x="%g" y="32" text-anchor="end">+%s</text>`+"\n",
		Label, Label+Plot, esc(Duration(l.T1-l.T0)))
	for i, ln := range l.Lanes {
		h := float64(max(ln.Depths, 1)) * RowHeight
		if i%2 == 1 {
			fmt.Fprintf(&b, `<rect x="0" y="%.1f" width="%g" height="%.1f" fill="#f4f1ee"/>`, ln.Y-LaneGap/2, Width, h+LaneGap)
		}
		label := clip(ln.Label, labelChars)
		fmt.Fprintf(&b, `<text class="lane" data-track="%d" x="4" y="%.1f"><title>%s</title>%s</text>`+"\n",
			ln.Track, ln.Y+RowHeight-4, esc(ln.Label), esc(label))
	}
	for _, bar := range l.Bars {
		x, wd, y := l.X(bar), l.W(bar), l.Y(bar)
		fmt.Fprintf(&b, `<g class="slice" data-id="%d" data-name="%s" data-lane="%s" data-depth="%d" data-ts="%d" data-dur="%d">`,
			bar.ID, esc(bar.Name), esc(bar.Slice.Lane), bar.Depth, bar.Start, bar.Dur)
		fmt.Fprintf(&b, `<title>%s: %s at +%s</title>`, esc(bar.Name), esc(Duration(bar.Dur)), esc(Duration(bar.Start-l.T0)))
		fmt.Fprintf(&b, `<rect x="%.3f" y="%.1f" width="%.3f" height="%.1f" fill="%s" stroke="#fff" stroke-width="0.3"/>`,
			x, y, wd, RowHeight-1, color(bar.Name))
		if chars := int((wd - 4) / 6.6); chars >= 3 {
			fmt.Fprintf(&b, `<text x="%.3f" y="%.1f">%s</text>`, x+2, y+RowHeight-5, esc(clip(bar.Name, chars)))
		}
		b.WriteString("</g>\n")
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// clip shortens s to at most n runes, ending with an ellipsis when cut.
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n || n < 1 {
		return s
	}
	return string(r[:n-1]) + "…"
}

// esc escapes s for SVG text and attribute values (svgtext.Escape).
func esc(s string) string { return svgtext.Escape(s) }

// color is a cool hue picked from the slice name, so a name keeps its colour.
func color(name string) string {
	f := fnv.New32a()
	io.WriteString(f, name)
	h := f.Sum32()
	return fmt.Sprintf("rgb(%d,%d,%d)", 70+h%60, 120+(h>>8)%80, 170+(h>>16)%70)
}
