package flamegraph

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

type box struct {
	Depth         int
	Function      string
	Start, Weight float64
}

func flatten(l *Layout) []box {
	var out []box
	var walk func(n *Node)
	walk = func(n *Node) {
		out = append(out, box{n.Depth, n.Frame.Function, n.Start, n.Weight})
		for _, c := range n.Children {
			walk(c)
		}
	}
	walk(l.Root)
	return out
}

// TestLayout checks the documented rules on small graphs whose layouts are worked out by
// hand: roots heaviest first, children scaled to their parent, recursion cut, a callee's
// weight shared by the paths to its caller, tiny boxes elided.
func TestLayout(t *testing.T) {
	f := func(name string) Frame { return Frame{Function: name, File: "m.py", Line: 1} }
	cases := []struct {
		name   string
		build  func(g *Graph)
		want   []box
		elided bool
	}{
		{"roots heaviest first, ties by name", func(g *Graph) {
			g.AddFunction(f("b"), 2)
			g.AddFunction(f("a"), 2)
			g.AddFunction(f("c"), 6)
		}, []box{{0, "all", 0, 10}, {1, "c", 0, 6}, {1, "a", 6, 2}, {1, "b", 8, 2}}, false},
		{"children heavier than the parent are scaled; recursion is cut", func(g *Graph) {
			g.AddFunction(f("main"), 10)
			g.AddEdge(f("main"), f("a"), 10)
			g.AddFunction(f("a"), 10)
			g.AddFunction(f("b"), 6)
			g.AddFunction(f("c"), 6)
			g.AddEdge(f("a"), f("b"), 6)
			g.AddEdge(f("a"), f("c"), 6)
			g.AddEdge(f("b"), f("a"), 4) // b calls back into a: a is on the path
		}, []box{{0, "all", 0, 10}, {1, "main", 0, 10}, {2, "a", 0, 10}, {3, "b", 0, 5}, {3, "c", 5, 5}}, false},
		{"a callee's weight is shared by the paths to its caller", func(g *Graph) {
			g.AddFunction(f("r1"), 6)
			g.AddFunction(f("r2"), 2)
			g.AddFunction(f("s"), 8)
			g.AddFunction(f("t"), 4)
			g.AddEdge(f("r1"), f("s"), 6)
			g.AddEdge(f("r2"), f("s"), 2)
			g.AddEdge(f("s"), f("t"), 4)
		}, []box{{0, "all", 0, 8}, {1, "r1", 0, 6}, {2, "s", 0, 6}, {3, "t", 0, 3},
			{1, "r2", 6, 2}, {2, "s", 6, 2}, {3, "t", 6, 1}}, false},
		{"boxes under 1/2400 of the total are elided", func(g *Graph) {
			g.AddFunction(f("a"), 2400)
			g.AddFunction(f("tiny"), 0.5)
			g.AddEdge(f("a"), f("tiny"), 0.5)
		}, []box{{0, "all", 0, 2400}, {1, "a", 0, 2400}}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := New("seconds")
			c.build(g)
			l := g.Layout()
			if d := cmp.Diff(c.want, flatten(l), cmp.AllowUnexported(box{}), cmpopts.EquateApprox(0, 1e-9)); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
			if l.Elided != c.elided {
				t.Errorf("Elided %v, want %v", l.Elided, c.elided)
			}
		})
	}
}

// TestSVGEscapes checks that names with markup survive as data, not as SVG.
func TestSVGEscapes(t *testing.T) {
	g := New("seconds")
	name := `<script>alert("x")</script> & 'q'`
	g.AddFunction(Frame{Function: name, File: "<f>", Line: 3}, 1)
	var b bytes.Buffer
	if err := g.Layout().WriteSVG(&b, "t<"); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		G []struct {
			Function string `xml:"data-function,attr"`
			File     string `xml:"data-file,attr"`
			Script   []byte `xml:"script"`
		} `xml:"g"`
	}
	if err := xml.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatalf("not XML: %v\n%s", err, b.String())
	}
	if len(doc.G) != 2 || doc.G[1].Function != name || doc.G[1].File != "<f>" || doc.G[1].Script != nil {
		t.Errorf("frames %+v", doc.G)
	}
}

// TestSVGControlCharacters checks that a function name, file, unit or title holding any
// control character (C0, DEL, C1), a noncharacter or invalid UTF-8 still gives an SVG
// that encoding/xml parses: characters XML 1.0 cannot hold become U+FFFD, tab, newline
// and carriage return survive in attribute values, and the rest is kept.
func TestSVGControlCharacters(t *testing.T) {
	type tc struct {
		name, in, want string
	}
	var cases []tc
	for c := rune(0); c < 0x20; c++ {
		want := "\uFFFD"
		if c == '\t' || c == '\n' || c == '\r' {
			want = string(c)
		}
		cases = append(cases, tc{fmt.Sprintf("U+%04X", c), string(c), want})
	}
	for c := rune(0x7f); c <= 0x9f; c++ { // DEL and C1: XML 1.0 characters, kept
		cases = append(cases, tc{fmt.Sprintf("U+%04X", c), string(c), string(c)})
	}
	cases = append(cases, tc{"U+FFFE", "\uFFFE", "\uFFFD"}, tc{"U+FFFF", "\uFFFF", "\uFFFD"},
		tc{"invalid UTF-8", "\xff", "\uFFFD"}, tc{"markup", `<&>"'`, `<&>"'`})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			name := "f" + c.in + "g" + strings.Repeat("x", 20) // long enough for a label
			g := New("s" + c.in)
			g.AddFunction(Frame{Function: name, File: "m" + c.in + ".py", Line: 1}, 1)
			var b bytes.Buffer
			if err := g.Layout().WriteSVG(&b, "t"+c.in); err != nil {
				t.Fatal(err)
			}
			var doc struct {
				Caption string `xml:"text"`
				G       []struct {
					Function string `xml:"data-function,attr"`
					File     string `xml:"data-file,attr"`
					Title    string `xml:"title"`
					Label    string `xml:"text"`
				} `xml:"g"`
			}
			if err := xml.Unmarshal(b.Bytes(), &doc); err != nil {
				t.Fatalf("the SVG is not XML: %v\n%q", err, b.String())
			}
			if !utf8.Valid(b.Bytes()) {
				t.Errorf("the SVG is not UTF-8: %q", b.String())
			}
			want := "f" + c.want + "g" + strings.Repeat("x", 20)
			if len(doc.G) != 2 || doc.G[1].Function != want || doc.G[1].File != "m"+c.want+".py" ||
				!strings.HasPrefix(doc.G[1].Title, want+" (m"+c.want+".py:1)") || doc.G[1].Label != want {
				t.Errorf("frames %q, want function %q", doc.G, want)
			}
			if !strings.HasPrefix(doc.Caption, "t"+c.want+": ") || !strings.Contains(doc.Caption, " s"+c.want+" in ") {
				t.Errorf("caption %q", doc.Caption)
			}
		})
	}
}

// The SVG carries what the page's zoom, search and tooltip need: each box's pre-order
// index and its parent's, its start and width as exact fractions of the total, and its
// function's whole-profile inclusive and self weight.
func TestSVGData(t *testing.T) {
	f := func(name string) Frame { return Frame{Function: name, File: "m.py", Line: 1} }
	g := New("seconds")
	g.AddFunction(f("main"), 3)
	g.AddSelf(f("main"), 0.5)
	g.AddFunction(f("a"), 2)
	g.AddSelf(f("a"), 2)
	g.AddFunction(f("b"), 0.5)
	g.AddSelf(f("b"), 0.5)
	g.AddEdge(f("main"), f("a"), 2)
	g.AddEdge(f("main"), f("b"), 0.5)
	g.AddFunction(f("other"), 1)
	g.AddSelf(f("other"), 1)
	var b bytes.Buffer
	if err := g.Layout().WriteSVG(&b, "t"); err != nil {
		t.Fatal(err)
	}
	type frame struct {
		Index    int    `xml:"data-index,attr"`
		Parent   int    `xml:"data-parent,attr"`
		Function string `xml:"data-function,attr"`
		X        string `xml:"data-x,attr"`
		W        string `xml:"data-w,attr"`
		Total    string `xml:"data-total,attr"`
		Self     string `xml:"data-self,attr"`
		Label    string `xml:"text"`
	}
	var doc struct {
		Unit  string  `xml:"data-unit,attr"`
		Total string  `xml:"data-total,attr"`
		Text  string  `xml:"text"`
		G     []frame `xml:"g"`
	}
	if err := xml.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatalf("not XML: %v\n%s", err, b.String())
	}
	// all = 4: main [0, 3) with a [0, 2) and b [2, 2.5), then other [3, 4).
	want := []frame{
		{0, -1, "all", "0", "1", "", "", "all"},
		{1, 0, "main", "0", "0.75", "3", "0.5", "main"},
		{2, 1, "a", "0", "0.5", "2", "2", "a"},
		{3, 1, "b", "0.5", "0.125", "0.5", "0.5", "b"},
		{4, 0, "other", "0.75", "0.25", "1", "1", "other"},
	}
	if d := cmp.Diff(want, doc.G); d != "" {
		t.Errorf("frames (-want +got):\n%s", d)
	}
	if doc.Unit != "seconds" || doc.Total != "4" || doc.Text != "t: 4 s in 4 frames" {
		t.Errorf("svg data-unit %q, data-total %q, caption %q", doc.Unit, doc.Total, doc.Text)
	}
}

// Labels keep what fits at 6.6 px a character after 6 px of padding.
func TestLabel(t *testing.T) {
	for _, c := range []struct {
		px   float64
		want string
	}{{25.8, "ab…"}, {25.7, ""}, {32.4, "abc…"}, {45.6, "abcdef"}, {45.5, "abcd…"}, {1000, "abcdef"}} {
		if got := Label("abcdef", c.px); got != c.want {
			t.Errorf("Label(abcdef, %g) = %q, want %q", c.px, got, c.want)
		}
	}
}
