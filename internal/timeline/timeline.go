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
//     max(dur / (t1 - t0) * Plot, MinBarWidth) wide;
//   - the axis has ticks at multiples of a 1-2-5 step counted from an origin (the axis
//     start unless the caller names another, such as the whole trace's start for a
//     window), labelled in ns, µs, ms or s (Ticks);
//   - a flow joins a CPU launch to the GPU activity it launched: slices that share a
//     correlation id (Kineto's), from each one on a track without a stream to each one
//     with a stream, when both are drawn (Flows).
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
	"strconv"
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
	// Correlation links a CPU launch to its GPU activity (Kineto's correlation id);
	// 0 with HasCorrelation false when the row has none.
	Correlation    int64
	HasCorrelation bool
	// GPU: the row names a stream (GPU activity: a kernel, memcpy or memset).
	GPU bool
}

// Flow is an arrow from a launch bar to the bar of the GPU activity it launched: indices
// into Layout.Bars.
type Flow struct {
	From, To    int
	Correlation int64
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
	Flows          []Flow
	// Origin is the time the axis labels count from: T0 unless HasOrigin (SetOrigin).
	Origin    int64
	HasOrigin bool
}

// SetOrigin makes the axis labels count from origin (nanoseconds) instead of the axis
// start: a window's axis then reads as times into the whole trace.
func (l *Layout) SetOrigin(origin int64) { l.Origin, l.HasOrigin = origin, true }

// origin is the time the axis labels count from.
func (l *Layout) origin() int64 {
	if l.HasOrigin {
		return l.Origin
	}
	return l.T0
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
	l.Flows = flows(l.Bars)
	y := headerH
	for i := range l.Lanes {
		l.Lanes[i].Y = y
		y += float64(max(l.Lanes[i].Depths, 1))*RowHeight + LaneGap
	}
	l.Height = y + 4
	return l
}

// flows joins, per correlation id, each drawn bar on a track without a stream (the CPU
// launch) to each drawn bar with a stream (the GPU activity), in bar order.
func flows(bars []Bar) []Flow {
	type group struct{ cpu, gpu []int }
	groups := map[int64]*group{}
	var order []int64
	for i, b := range bars {
		if !b.HasCorrelation {
			continue
		}
		g := groups[b.Correlation]
		if g == nil {
			g = &group{}
			groups[b.Correlation] = g
			order = append(order, b.Correlation)
		}
		if b.GPU {
			g.gpu = append(g.gpu, i)
		} else {
			g.cpu = append(g.cpu, i)
		}
	}
	var out []Flow
	for _, c := range order {
		for _, from := range groups[c].cpu {
			for _, to := range groups[c].gpu {
				out = append(out, Flow{From: from, To: to, Correlation: c})
			}
		}
	}
	return out
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
	if len(l.Flows) > 0 {
		s += fmt.Sprintf("; %d launch → GPU flows", len(l.Flows))
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

// WriteSVG renders the layout. The <svg> carries data-t0, data-t1 and data-origin (ns)
// and data-plot-x, data-plot-w (the plot's left edge and width in SVG units), which a
// page needs to turn a drag across the plot into a window. The axis is a <g class="axis">
// of <g class="tick" data-ns="..."> (a line and a <text> label). Every bar is a
// <g class="slice"> carrying data-id, data-name, data-lane (the lane's label), data-track,
// data-depth, data-ts and data-dur (ns), with a <title> tooltip; lane labels are
// <text class="lane"> with data-track and data-label (the full label; the text is cut
// to the column) and a <title>; flows are <line class="flow"> with data-from and data-to
// (slice ids) and data-correlation, drawn over the bars.
func (l *Layout) WriteSVG(w io.Writer, title string) error {
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" class="timeline" width="%g" height="%g" viewBox="0 0 %g %g" font-family="monospace" font-size="11" data-t0="%d" data-t1="%d" data-origin="%d" data-plot-x="%g" data-plot-w="%g">`+"\n",
		Width, l.Height, Width, l.Height, l.T0, l.T1, l.origin(), Label, Plot)
	fmt.Fprintf(&b, `<text class="caption" x="4" y="16" font-size="13">%s: %s</text>`+"\n", esc(title), esc(l.Caption()))
	b.WriteString(`<g class="axis">`)
	fmt.Fprintf(&b, `<line x1="%g" x2="%g" y1="%g" y2="%g" stroke="#999"/>`, Label, Label+Plot, headerH-3, headerH-3)
	for _, tk := range Ticks(l.T0, l.T1, l.origin()) {
		x := Label + l.frac(tk.At-l.T0)*Plot
		anchor := "middle"
		switch {
		case x < Label+20:
			anchor = "start"
		case x > Label+Plot-20:
			anchor = "end"
		}
		fmt.Fprintf(&b, `<g class="tick" data-ns="%d"><line x1="%.3f" x2="%.3f" y1="%g" y2="%.1f" stroke="#ddd"/><text x="%.3f" y="32" text-anchor="%s">%s</text></g>`,
			tk.At, x, x, headerH-6, l.Height-4, x, anchor, esc(tk.Label))
	}
	b.WriteString("</g>\n")
	for i, ln := range l.Lanes {
		h := float64(max(ln.Depths, 1)) * RowHeight
		if i%2 == 1 {
			fmt.Fprintf(&b, `<rect class="band" x="0" y="%.1f" width="%g" height="%.1f" fill="#f4f1ee" fill-opacity="0.6"/>`, ln.Y-LaneGap/2, Width, h+LaneGap)
		}
		label := clip(ln.Label, labelChars)
		fmt.Fprintf(&b, `<text class="lane" data-track="%d" data-label="%s" x="4" y="%.1f"><title>%s</title>%s</text>`+"\n",
			ln.Track, esc(ln.Label), ln.Y+RowHeight-4, esc(ln.Label), esc(label))
	}
	for _, bar := range l.Bars {
		x, wd, y := l.X(bar), l.W(bar), l.Y(bar)
		fmt.Fprintf(&b, `<g class="slice" data-id="%d" data-name="%s" data-lane="%s" data-track="%d" data-depth="%d" data-ts="%d" data-dur="%d">`,
			bar.ID, esc(bar.Name), esc(bar.Slice.Lane), bar.Track, bar.Depth, bar.Start, bar.Dur)
		fmt.Fprintf(&b, `<title>%s: %s at %s</title>`, esc(bar.Name), esc(Duration(bar.Dur)), esc(Duration(bar.Start-l.origin())))
		fmt.Fprintf(&b, `<rect x="%.3f" y="%.1f" width="%.3f" height="%.1f" fill="%s" stroke="#fff" stroke-width="0.3"/>`,
			x, y, wd, RowHeight-1, color(bar.Name))
		if chars := int((wd - 4) / 6.6); chars >= 3 {
			fmt.Fprintf(&b, `<text x="%.3f" y="%.1f">%s</text>`, x+2, y+RowHeight-5, esc(clip(bar.Name, chars)))
		}
		b.WriteString("</g>\n")
	}
	if len(l.Flows) > 0 {
		b.WriteString(`<defs><marker id="flow-arrow" viewBox="0 0 6 6" refX="6" refY="3" markerWidth="6" markerHeight="6" orient="auto-start-reverse"><path d="M0,0 L6,3 L0,6 z" fill="#b03060"/></marker></defs>`)
		b.WriteString(`<g class="flows">`)
		for _, f := range l.Flows {
			from, to := l.Bars[f.From], l.Bars[f.To]
			x1, y1 := l.X(from), l.Y(from)+RowHeight-1
			x2, y2 := l.X(to), l.Y(to)
			if y2 < y1 { // the kernel's lane is above the launch's
				y1, y2 = l.Y(from), l.Y(to)+RowHeight-1
			}
			fmt.Fprintf(&b, `<line class="flow" data-from="%d" data-to="%d" data-correlation="%d" x1="%.3f" y1="%.1f" x2="%.3f" y2="%.1f" stroke="#b03060" stroke-width="0.8" stroke-opacity="0.7" marker-end="url(#flow-arrow)"/>`,
				from.ID, to.ID, f.Correlation, x1, y1, x2, y2)
		}
		b.WriteString("</g>\n")
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// Tick is one mark of the time axis: its time (ns) and label.
type Tick struct {
	At    int64
	Label string
}

// MaxTickIntervals bounds the intervals between ticks over an axis: the step is the
// smallest 1, 2 or 5 times a power of ten nanoseconds that gives at most this many.
const MaxTickIntervals = 8

// TickStep is the axis step for a span of nanoseconds (1 for an empty span).
func TickStep(span int64) int64 {
	if span <= 0 {
		return 1
	}
	for p := int64(1); ; p *= 10 {
		for _, m := range []int64{1, 2, 5} {
			s := m * p
			if (span-1)/s+1 <= MaxTickIntervals { // ceil(span / s) without overflow
				return s
			}
		}
		if p > math.MaxInt64/100 {
			return 5 * p
		}
	}
}

// timeUnits are the axis units, largest first.
var timeUnits = []struct {
	name  string
	scale int64
}{{"s", 1e9}, {"ms", 1e6}, {"µs", 1e3}, {"ns", 1}}

// Ticks marks the axis [t0, t1] at the multiples of TickStep(t1 - t0) counted from
// origin, labelled as times since origin: in the largest of s, ms, µs and ns that the
// farthest label reaches one of (so the span alone picks it when origin is t0), exact
// decimals, no trailing zeros ("0 ms", "2.5 ms", "5 ms").
func Ticks(t0, t1, origin int64) []Tick {
	if t1 < t0 {
		return nil
	}
	step := TickStep(t1 - t0)
	reach := max(abs(t0-origin), abs(t1-origin))
	unit := timeUnits[len(timeUnits)-1]
	for _, u := range timeUnits {
		if reach >= u.scale {
			unit = u
			break
		}
	}
	// The first multiple of step from origin at or after t0.
	k := floorDiv(t0-origin, step)
	if origin+k*step < t0 {
		k++
	}
	var out []Tick
	for at := origin + k*step; at <= t1; at += step {
		out = append(out, Tick{At: at, Label: fixed(at-origin, unit.scale) + " " + unit.name})
		if at > math.MaxInt64-step {
			break
		}
	}
	return out
}

// fixed writes v / scale in decimal, exactly, without trailing zeros.
func fixed(v, scale int64) string {
	sign := ""
	if v < 0 {
		sign, v = "-", -v
	}
	whole, frac := v/scale, v%scale
	if frac == 0 {
		return sign + strconv.FormatInt(whole, 10)
	}
	digits := len(strconv.FormatInt(scale, 10)) - 1
	f := fmt.Sprintf("%0*d", digits, frac)
	return sign + strconv.FormatInt(whole, 10) + "." + strings.TrimRight(f, "0")
}

func abs(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
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
