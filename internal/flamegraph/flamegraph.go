// Package flamegraph lays out a CPU profile's call graph as an icicle (a flame graph
// drawn top-down) and renders it as SVG. The input is what Flameox's CPU operations
// report: each function's inclusive weight (rank_cpu_hotspots: cumulative_time_seconds of
// pstats, inclusive_weight of sampled formats) and the caller to callee edges with the
// callee's inclusive weight under that caller (inspect_cpu_callers: the edge's
// cumulative_time_seconds, or its weight).
//
// The layout (docs/decisions/0029-evidence-viewer.md):
//   - the top frame is a synthetic "all" whose weight is the sum of the roots' weights;
//   - roots are the functions no edge calls (self-calls aside), each with its inclusive
//     weight, heaviest first;
//   - a node for function f reached with weight w has one child per callee g of f, of
//     weight edge(f, g) * w / inclusive(f) (a callee's time is shared among the paths to
//     f in proportion to their weight, as gprof assumes), heaviest first; a callee already
//     on the path (recursion) is left out; children whose weights exceed w are scaled to w;
//   - nodes narrower than MinFraction of the total, deeper than MaxDepth, or past MaxNodes
//     are left out, and the graph says so (Elided).
//
// Functions reachable only through a cycle that no root enters have no box.
package flamegraph

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
	MaxDepth    = 64
	MaxNodes    = 4000
	MinFraction = 1.0 / 2400
)

// Frame names a function.
type Frame struct {
	Function string
	File     string
	Line     int
}

func (f Frame) String() string {
	if f.File == "" {
		return f.Function
	}
	return fmt.Sprintf("%s (%s:%d)", f.Function, f.File, f.Line)
}

// Graph is a call graph with inclusive weights.
type Graph struct {
	Unit      string
	inclusive map[Frame]float64
	self      map[Frame]float64
	callees   map[Frame]map[Frame]float64
	called    map[Frame]bool
}

// New returns an empty graph whose weights are in unit.
func New(unit string) *Graph {
	return &Graph{Unit: unit, inclusive: map[Frame]float64{}, self: map[Frame]float64{},
		callees: map[Frame]map[Frame]float64{}, called: map[Frame]bool{}}
}

// AddFunction adds inclusive weight to a function.
func (g *Graph) AddFunction(f Frame, inclusive float64) {
	g.inclusive[f] += clean(inclusive)
}

// AddSelf adds self (exclusive) weight to a function. It is reported with the function's
// boxes (Layout.Self); the layout does not use it.
func (g *Graph) AddSelf(f Frame, self float64) {
	g.self[f] += clean(self)
}

// AddEdge adds the weight of callee under caller.
func (g *Graph) AddEdge(caller, callee Frame, weight float64) {
	if g.callees[caller] == nil {
		g.callees[caller] = map[Frame]float64{}
	}
	g.callees[caller][callee] += clean(weight)
	if caller != callee {
		g.called[callee] = true
	}
}

func clean(w float64) float64 {
	if math.IsNaN(w) || math.IsInf(w, 0) || w < 0 {
		return 0
	}
	return w
}

// Node is one box of the layout: Start and Weight are in the graph's unit, Depth 0 is
// the synthetic root.
type Node struct {
	Frame    Frame
	Weight   float64
	Start    float64
	Depth    int
	Children []*Node
}

// Layout is a laid-out icicle.
type Layout struct {
	Root   *Node
	Unit   string
	Nodes  int
	Elided bool // some nodes were left out by the bounds
	// Inclusive and Self are each function's whole-profile weights (rank_cpu_hotspots'),
	// whatever boxes it has: the figures a tooltip gives beside a box's own weight.
	Inclusive, Self map[Frame]float64
}

type weighted struct {
	f Frame
	w float64
}

func sorted(m map[Frame]float64) []weighted {
	out := make([]weighted, 0, len(m))
	for f, w := range m {
		out = append(out, weighted{f, w})
	}
	slices.SortFunc(out, func(a, b weighted) int {
		if c := cmp.Compare(b.w, a.w); c != 0 {
			return c
		}
		return cmp.Or(strings.Compare(a.f.Function, b.f.Function), strings.Compare(a.f.File, b.f.File), cmp.Compare(a.f.Line, b.f.Line))
	})
	return out
}

// Layout lays the graph out.
func (g *Graph) Layout() *Layout {
	roots := map[Frame]float64{}
	for f, w := range g.inclusive {
		if !g.called[f] {
			roots[f] = w
		}
	}
	l := &Layout{Unit: g.Unit, Root: &Node{Frame: Frame{Function: "all"}}, Inclusive: g.inclusive, Self: g.self}
	for _, r := range sorted(roots) {
		l.Root.Weight += r.w
	}
	minW := l.Root.Weight * MinFraction
	onPath := map[Frame]bool{}
	var place func(parent *Node, kids []weighted)
	place = func(parent *Node, kids []weighted) {
		sum := 0.0
		for _, k := range kids {
			sum += k.w
		}
		scale := 1.0
		if sum > parent.Weight && sum > 0 {
			scale = parent.Weight / sum
		}
		start := parent.Start
		for _, k := range kids {
			w := k.w * scale
			if w <= 0 || w < minW || parent.Depth+1 > MaxDepth || l.Nodes >= MaxNodes {
				if w > 0 {
					l.Elided = true
				}
				continue
			}
			n := &Node{Frame: k.f, Weight: w, Start: start, Depth: parent.Depth + 1}
			start += w
			l.Nodes++
			parent.Children = append(parent.Children, n)
			onPath[k.f] = true
			var next []weighted
			if total := g.inclusive[k.f]; total > 0 {
				for _, c := range sorted(g.callees[k.f]) {
					if !onPath[c.f] {
						next = append(next, weighted{c.f, c.w * w / total})
					}
				}
			}
			place(n, next)
			delete(onPath, k.f)
		}
	}
	place(l.Root, sorted(roots))
	return l
}

// SVG geometry.
const (
	Width     = 1200.0
	RowHeight = 18.0
	headerH   = 24.0
)

// X and W are a node's horizontal position and width in the SVG.
func (l *Layout) X(n *Node) float64 { return l.px(n.Start) }

// W is a node's width in the SVG.
func (l *Layout) W(n *Node) float64 { return l.px(n.Weight) }

func (l *Layout) px(v float64) float64 {
	if l.Root.Weight <= 0 {
		return 0
	}
	return v / l.Root.Weight * Width
}

// WriteSVG renders the layout. The SVG is Width wide with a viewBox, so a page may scale
// it or lay it out again at its own width from the data attributes. Every box is a
// <g class="frame"> carrying
//   - data-index (pre-order, the root 0) and data-parent (the parent's index, -1 at the
//     root), data-depth;
//   - data-function, data-file, data-line;
//   - data-x and data-w: the box's start and width as fractions of the root's weight
//     (full precision, so that a zoomed view can re-scale a box without the rounding of
//     the rectangle's pixels);
//   - data-weight (the box's own weight), data-total and data-self (the function's
//     inclusive and self weight over the whole profile, empty for the root), all in the
//     graph's unit;
//
// with a <title> tooltip, a <rect> and a <text> label (empty when the box is too narrow).
// The <svg> carries data-unit and data-total (the root's weight).
func (l *Layout) WriteSVG(w io.Writer, title string) error {
	depth := 0
	var walk func(n *Node, f func(*Node))
	walk = func(n *Node, f func(*Node)) {
		f(n)
		for _, c := range n.Children {
			walk(c, f)
		}
	}
	walk(l.Root, func(n *Node) { depth = max(depth, n.Depth) })
	height := headerH + float64(depth+1)*RowHeight + 4
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" class="flamegraph" width="%g" height="%g" viewBox="0 0 %g %g" font-family="monospace" font-size="11" data-unit="%s" data-total="%s">`+"\n",
		Width, height, Width, height, esc(l.Unit), exact(l.Root.Weight))
	note := ""
	if l.Elided {
		note = " (narrow or deep frames left out)"
	}
	fmt.Fprintf(&b, `<text class="caption" x="4" y="16" font-size="13">%s: %s in %d frames%s</text>`+"\n",
		esc(title), esc(humanWeight(l.Root.Weight, l.Unit)), l.Nodes, esc(note))
	index := 0
	var draw func(n *Node, parent int)
	draw = func(n *Node, parent int) {
		me := index
		index++
		x, wd, y := l.X(n), l.W(n), headerH+float64(n.Depth)*RowHeight
		pct := l.share(n.Weight)
		total, self := "", ""
		if n.Depth > 0 {
			total, self = exact(l.Inclusive[n.Frame]), exact(l.Self[n.Frame])
		}
		fmt.Fprintf(&b, `<g class="frame" data-index="%d" data-parent="%d" data-depth="%d" data-function="%s" data-file="%s" data-line="%d" data-x="%s" data-w="%s" data-weight="%s" data-total="%s" data-self="%s">`,
			me, parent, n.Depth, esc(n.Frame.Function), esc(n.Frame.File), n.Frame.Line,
			exact(l.fraction(n.Start)), exact(l.fraction(n.Weight)), formatWeight(n.Weight), total, self)
		tip := fmt.Sprintf("%s: %s %s (%.2f%%)", n.Frame.String(), formatWeight(n.Weight), l.Unit, pct)
		if n.Depth > 0 {
			tip += fmt.Sprintf("; function total %s %s (%.2f%%), self %s %s (%.2f%%)",
				formatWeight(l.Inclusive[n.Frame]), l.Unit, l.share(l.Inclusive[n.Frame]),
				formatWeight(l.Self[n.Frame]), l.Unit, l.share(l.Self[n.Frame]))
		}
		fmt.Fprintf(&b, `<title>%s</title>`, esc(tip))
		fmt.Fprintf(&b, `<rect x="%.3f" y="%.1f" width="%.3f" height="%.1f" rx="1" fill="%s" stroke="#fff" stroke-width="0.5"/>`,
			x, y, wd, RowHeight-1, color(n))
		fmt.Fprintf(&b, `<text x="%.3f" y="%.1f">%s</text>`, x+3, y+RowHeight-6, esc(Label(n.Frame.Function, wd)))
		b.WriteString("</g>\n")
		for _, c := range n.Children {
			draw(c, me)
		}
	}
	draw(l.Root, -1)
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// Label is the text a box of width px shows: the name, cut with an ellipsis to the
// characters that fit (6.6 px each after 6 px of padding), or nothing under 3 of them.
// The page's script applies the same rule when it lays boxes out again.
func Label(name string, px float64) string {
	chars := int((px - 6) / 6.6)
	if chars < 3 {
		return ""
	}
	if r := []rune(name); len(r) > chars {
		return string(r[:chars-1]) + "…"
	}
	return name
}

// fraction is v as a fraction of the root's weight (0 when the root weighs nothing).
func (l *Layout) fraction(v float64) float64 {
	if l.Root.Weight <= 0 {
		return 0
	}
	return v / l.Root.Weight
}

// share is v in percent of the root's weight.
func (l *Layout) share(v float64) float64 { return l.fraction(v) * 100 }

// exact is v with the digits that round-trip a float64.
func exact(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

func formatWeight(v float64) string { return fmt.Sprintf("%.6g", v) }

// humanWeight writes a weight for the caption: seconds and nanoseconds in the time unit
// that keeps four significant digits readable (67.27 µs), other units as they are.
func humanWeight(v float64, unit string) string {
	ns, ok := map[string]float64{"seconds": 1e9, "nanoseconds": 1, "ns": 1}[unit]
	if !ok || v <= 0 {
		return formatWeight(v) + " " + unit
	}
	v *= ns
	for _, u := range []struct {
		name  string
		scale float64
	}{{"s", 1e9}, {"ms", 1e6}, {"µs", 1e3}} {
		if x := v / u.scale; x >= 1e4 {
			return fmt.Sprintf("%.0f %s", x, u.name)
		} else if x >= 1 {
			return fmt.Sprintf("%.4g %s", x, u.name)
		}
	}
	return fmt.Sprintf("%.4g ns", v)
}

// esc escapes s for SVG text and attribute values (svgtext.Escape).
func esc(s string) string { return svgtext.Escape(s) }

// color is a warm hue picked from the function name, so a function keeps its colour.
func color(n *Node) string {
	if n.Depth == 0 {
		return "#c8c8c8"
	}
	f := fnv.New32a()
	io.WriteString(f, n.Frame.Function)
	h := f.Sum32()
	return fmt.Sprintf("rgb(%d,%d,%d)", 205+h%50, 80+(h>>8)%120, 40+(h>>16)%40)
}
