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
	callees   map[Frame]map[Frame]float64
	called    map[Frame]bool
}

// New returns an empty graph whose weights are in unit.
func New(unit string) *Graph {
	return &Graph{Unit: unit, inclusive: map[Frame]float64{}, callees: map[Frame]map[Frame]float64{}, called: map[Frame]bool{}}
}

// AddFunction adds inclusive weight to a function.
func (g *Graph) AddFunction(f Frame, inclusive float64) {
	g.inclusive[f] += clean(inclusive)
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
	l := &Layout{Unit: g.Unit, Root: &Node{Frame: Frame{Function: "all"}}}
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

// WriteSVG renders the layout. Every box is a <g class="frame"> carrying data-depth,
// data-function, data-file, data-line and data-weight, with a <title> tooltip.
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
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" class="flamegraph" width="%g" height="%g" viewBox="0 0 %g %g" font-family="monospace" font-size="11">`+"\n",
		Width, height, Width, height)
	note := ""
	if l.Elided {
		note = " (narrow or deep frames left out)"
	}
	fmt.Fprintf(&b, `<text class="caption" x="4" y="16" font-size="13">%s: %s %s in %d frames%s</text>`+"\n",
		esc(title), formatWeight(l.Root.Weight), esc(l.Unit), l.Nodes, esc(note))
	walk(l.Root, func(n *Node) {
		x, wd, y := l.X(n), l.W(n), headerH+float64(n.Depth)*RowHeight
		pct := 0.0
		if l.Root.Weight > 0 {
			pct = n.Weight / l.Root.Weight * 100
		}
		fmt.Fprintf(&b, `<g class="frame" data-depth="%d" data-function="%s" data-file="%s" data-line="%d" data-weight="%s">`,
			n.Depth, esc(n.Frame.Function), esc(n.Frame.File), n.Frame.Line, formatWeight(n.Weight))
		fmt.Fprintf(&b, `<title>%s: %s %s (%.2f%%)</title>`, esc(n.Frame.String()), formatWeight(n.Weight), esc(l.Unit), pct)
		fmt.Fprintf(&b, `<rect x="%.3f" y="%.1f" width="%.3f" height="%.1f" rx="1" fill="%s" stroke="#fff" stroke-width="0.5"/>`,
			x, y, wd, RowHeight-1, color(n))
		if chars := int((wd - 6) / 6.6); chars >= 3 {
			label := n.Frame.Function
			if r := []rune(label); len(r) > chars {
				label = string(r[:chars-1]) + "…"
			}
			fmt.Fprintf(&b, `<text x="%.3f" y="%.1f">%s</text>`, x+3, y+RowHeight-6, esc(label))
		}
		b.WriteString("</g>\n")
	})
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func formatWeight(v float64) string { return fmt.Sprintf("%.6g", v) }

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
