package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/flameox/flameox/internal/flamegraph"
	"github.com/flameox/flameox/internal/testtool"
	"github.com/flameox/flameox/internal/timeline"
)

// pstatsSearch is pstatsIcicle (the layout of docs/decisions/0029 from Python's pstats)
// followed by a search for argv[4] as the page does it (decision 0066): the frames below
// the root whose function name contains it, case-insensitively, and their share of the
// total, each match counted only when no ancestor frame matched (a match nested in
// another is inside its share already). Each frame also gets the function's self and
// inclusive time (pstats' tottime and cumtime) and the total (the root's width in time).
var pstatsSearch = strings.Replace(pstatsIcicle, "json.dump(out, sys.stdout)", `
q = sys.argv[4].lower()
share, naive, matches, stack = 0.0, 0.0, [], []
for f in out:
    while stack and stack[-1][0] >= f["depth"]:
        stack.pop()
    nested = any(m for _, m in stack)
    m = f["depth"] > 0 and q in f["function"].lower()
    if m:
        matches.append(f["function"])
        naive += f["width"] / width
        if not nested:
            share += f["width"] / width
    stack.append((f["depth"], m or nested))
    v = stats.get((f["file"], f["line"], f["function"]))
    f["self"], f["incl"] = (v[2], v[3]) if v else (0.0, 0.0)
json.dump({"frames": out, "share": share, "naive": naive, "matches": matches, "total": total}, sys.stdout)
`, 1)

// pyFrame is one frame of pstatsSearch's layout.
type pyFrame struct {
	Depth    int     `json:"depth"`
	Function string  `json:"function"`
	File     string  `json:"file"`
	Line     int     `json:"line"`
	Width    float64 `json:"width"`
	Self     float64 `json:"self"`
	Incl     float64 `json:"incl"`
	parent   int
}

// TestViewerInteractions drives the page's interactions in headless Chromium and writes a
// screenshot after each: the list newest first with statuses and inputs; the flame graph
// at the page's width, zoomed into a frame (it fills the width, its sibling is gone, its
// child scales with it), out through an ancestor and Reset, searched (highlighted frames
// and their share against Python's pstats) and hovered (the tooltip's figures); the
// timeline's full lane name on hover, a drag that shows a window (the URL and the
// section name its bounds, the axis labels change, the bars are Python's for that
// window) and Whole trace.
func TestViewerInteractions(t *testing.T) {
	browser := testtool.Require(t, "chromium")
	py := testtool.Require(t, "python3")
	fx := newViewerFixture(t)
	profile := filepath.Join(corpusDir(t), "gprof2dot__print1.pstats")
	tracePath := filepath.Join(corpusDir(t), "h200__torch-mlp-train.pt.trace.json")
	traceID := preserveEvidence(t, fx.store, "summarize_trace", "pytorch", "h200__torch-mlp-train.pt.trace.json")
	const query = "ELEMS"
	out, err := exec.Command(py, "-c", pstatsSearch, profile, jsonString(flamegraph.Width), jsonString(flamegraph.MinFraction), query).Output()
	if err != nil {
		t.Fatalf("python3 pstats: %v", err)
	}
	var want struct {
		Frames       []pyFrame `json:"frames"`
		Share, Naive float64
		Matches      []string
		Total        float64
	}
	if err := json.Unmarshal(out, &want); err != nil {
		t.Fatal(err)
	}
	if want.Naive <= want.Share {
		t.Fatalf("no match of %q is nested in another (share %g, naive sum %g): the case does not check the rule", query, want.Share, want.Naive)
	}
	// Parents by depth in pre-order; the clicked frame is the first below depth 1 with a
	// sibling, and has a child.
	var stack []int
	for i := range want.Frames {
		f := &want.Frames[i]
		for len(stack) > 0 && want.Frames[stack[len(stack)-1]].Depth >= f.Depth {
			stack = stack[:len(stack)-1]
		}
		f.parent = -1
		if len(stack) > 0 {
			f.parent = stack[len(stack)-1]
		}
		stack = append(stack, i)
	}
	children := func(p int) (out []int) {
		for i, f := range want.Frames {
			if f.parent == p {
				out = append(out, i)
			}
		}
		return out
	}
	clicked, sibling, child := -1, -1, -1
	for i, f := range want.Frames {
		if sibs := children(f.parent); f.Depth >= 2 && len(sibs) >= 2 && len(children(i)) > 0 {
			clicked, child = i, children(i)[0]
			sibling = sibs[0]
			if sibling == i {
				sibling = sibs[1]
			}
			break
		}
	}
	if clicked < 0 {
		t.Fatal("the profile has no frame with a sibling and a child to zoom into")
	}
	parent := want.Frames[clicked].parent

	shots := screenshotDir(t)
	ctx := headless(t, browser, 90*time.Second)
	// Scripts that fail and policy violations (an inline style the CSP refuses) are
	// collected for the end of the test.
	var mu sync.Mutex
	var problems []string
	messages := chromedp.Console(ctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.IsException() || m.Source == "security" || m.Type == chromedp.ConsoleError && m.Source == "" {
				mu.Lock()
				problems = append(problems, m.String())
				mu.Unlock()
			}
		}
	}()
	step := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	eval := func(what, js string, into any) {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[json.RawMessage](js))
		step(what, err)
		step(what+": decode", json.Unmarshal(v, into))
	}
	shot := func(name string, full bool) {
		t.Helper()
		var b []byte
		var err error
		if full {
			b, err = chromedp.Run(ctx, chromedp.FullScreenshot(100))
		} else {
			b, err = chromedp.Run(ctx, chromedp.CaptureScreenshot())
		}
		step("screenshot "+name, err)
		step("write "+name, os.WriteFile(filepath.Join(shots, name), b, 0o644))
	}
	// center scrolls an element into view and returns its centre in viewport pixels.
	center := func(what, selector string) (x, y float64) {
		t.Helper()
		var c [2]float64
		eval(what, `(() => { const e = document.querySelector(`+jsonString(selector)+`);
			e.scrollIntoView({block: "center", inline: "center"});
			const r = e.getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; })()`, &c)
		return c[0], c[1]
	}

	// ---- the list: newest first, with status and inputs ----
	step("open the list", chromedp.Do(ctx, chromedp.Navigate(fx.base+"/"),
		chromedp.WaitVisible(`body[data-view="list"][data-ready="true"][data-list-details="done"]`)))
	var rows []struct {
		ID, Created, Status, Inputs, Operation string
	}
	eval("read the list", `[...document.querySelectorAll("#evidence-table tbody tr")].map(r => ({ID: r.dataset.evidenceId,
		Created: r.dataset.created, Operation: r.cells[2].textContent, Status: r.cells[3].textContent, Inputs: r.cells[4].textContent}))`, &rows)
	shot("viewer-list-newest.png", true)
	if len(rows) != 3 {
		t.Fatalf("the list shows %d evidence, want the fixture's 2 and the trace", len(rows))
	}
	sum := sha256.Sum256(fx.pstats)
	for i, r := range rows {
		if i > 0 {
			prev, _ := time.Parse(time.RFC3339Nano, rows[i-1].Created)
			cur, _ := time.Parse(time.RFC3339Nano, r.Created)
			if cur.After(prev) || cur.Equal(prev) && r.ID < rows[i-1].ID {
				t.Errorf("row %d (%s, %s) is listed after an older one (%s, %s)", i, r.Created, r.ID, rows[i-1].Created, rows[i-1].ID)
			}
		}
		wantInputs := "input (pstats, " + hex.EncodeToString(sum[:])[:8] + ")"
		if r.ID == traceID {
			tsum, err := os.ReadFile(tracePath)
			step("read the trace", err)
			s := sha256.Sum256(tsum)
			wantInputs = "input (pytorch, " + hex.EncodeToString(s[:])[:8] + ")"
		}
		if r.Inputs != wantInputs || r.Status == "" || r.Operation == "" {
			t.Errorf("row %s: operation %q, status %q, inputs %q (want %q)", r.ID[:12], r.Operation, r.Status, r.Inputs, wantInputs)
		}
	}
	if rows[0].ID != traceID {
		t.Errorf("the newest evidence (the trace, preserved last) is not first: %+v", rows[0])
	}

	// ---- the flame graph: full width, zoom, ancestors, reset ----
	step("open the profile", chromedp.Do(ctx, chromedp.Navigate(fx.base+"/#/evidence/"+fx.evidence[0]),
		chromedp.WaitVisible(`body[data-view="evidence"][data-ready="true"]`),
		chromedp.WaitVisible(`#flamegraph svg g.frame[data-depth="1"]`)))
	type frameState struct {
		X, W  float64
		Off   bool
		Width float64
		Focus string
	}
	frame := func(i int) (s frameState) {
		t.Helper()
		eval("read frame", fmt.Sprintf(`(() => { const svg = document.querySelector("#flamegraph svg");
			const g = svg.querySelector('g.frame[data-index="%d"]'); const r = g.querySelector("rect");
			return {X: Number(r.getAttribute("x")), W: Number(r.getAttribute("width")), Off: getComputedStyle(g).display === "none",
				Width: Number(svg.getAttribute("width")), Focus: svg.dataset.focus}; })()`, i), &s)
		return s
	}
	var box struct{ Box, SVG float64 }
	eval("read the widths", `({Box: document.querySelector("#flamegraph").clientWidth, SVG: document.querySelector("#flamegraph svg").getBoundingClientRect().width})`, &box)
	if box.Box < 1200 || math.Abs(box.SVG-box.Box) > 1 {
		t.Errorf("the flame graph is %.1f px wide in a box of %.1f px: it should fill it", box.SVG, box.Box)
	}
	W := box.Box
	before := frame(clicked)
	if math.Abs(before.W-want.Frames[clicked].Width/flamegraph.Width*W) > 0.01 || before.Off {
		t.Errorf("before zoom: frame %d is %+v, want width %.3f", clicked, before, want.Frames[clicked].Width/flamegraph.Width*W)
	}
	x, y := center("find the frame", fmt.Sprintf(`#flamegraph g.frame[data-index="%d"] rect`, clicked))
	step("click the frame", chromedp.Do(ctx, chromedp.MouseClickXY(x, y)))
	_, err = chromedp.Run(ctx, chromedp.Poll[bool](fmt.Sprintf(`document.querySelector("#flamegraph svg").dataset.focus === "%d"`, clicked)))
	step("wait for the zoom", err)
	zoomed, sib, kid, par := frame(clicked), frame(sibling), frame(child), frame(parent)
	shot("viewer-flame-zoom.png", true)
	if zoomed.X != 0 || math.Abs(zoomed.W-W) > 0.01 {
		t.Errorf("the zoomed frame %q is at %.3f, %.3f px wide; want 0 and the full %.0f px", want.Frames[clicked].Function, zoomed.X, zoomed.W, W)
	}
	if !sib.Off {
		t.Errorf("the sibling %q is still drawn after the zoom: %+v", want.Frames[sibling].Function, sib)
	}
	if wantW := want.Frames[child].Width / want.Frames[clicked].Width * W; math.Abs(kid.W-wantW) > 0.01 {
		t.Errorf("the child %q is %.3f px wide, want %.3f (scaled with its parent)", want.Frames[child].Function, kid.W, wantW)
	}
	if par.Off || math.Abs(par.W-W) > 0.01 {
		t.Errorf("the parent %q should span the width above the zoomed frame: %+v", want.Frames[parent].Function, par)
	}
	// Clicking the parent zooms out to it: the sibling comes back, scaled to it.
	x, y = center("find the parent", fmt.Sprintf(`#flamegraph g.frame[data-index="%d"] rect`, parent))
	step("click the parent", chromedp.Do(ctx, chromedp.MouseClickXY(x, y)))
	_, err = chromedp.Run(ctx, chromedp.Poll[bool](fmt.Sprintf(`document.querySelector("#flamegraph svg").dataset.focus === "%d"`, parent)))
	step("wait for the parent's zoom", err)
	sib = frame(sibling)
	if wantW := want.Frames[sibling].Width / want.Frames[parent].Width * W; sib.Off || math.Abs(sib.W-wantW) > 0.01 {
		t.Errorf("zoomed to the parent, the sibling is %+v, want %.3f px wide", sib, wantW)
	}
	step("reset the zoom", chromedp.Do(ctx, chromedp.Click(`#flame-reset`)))
	_, err = chromedp.Run(ctx, chromedp.Poll[bool](`document.querySelector("#flamegraph svg").dataset.focus === "0"`))
	step("wait for the reset", err)
	if after := frame(clicked); after != before {
		t.Errorf("after Reset the frame is %+v, before the zoom %+v", after, before)
	}
	shot("viewer-flame-reset.png", true)

	// ---- search: highlighted frames and their share ----
	step("search", chromedp.Do(ctx, chromedp.SendKeys(`#flame-search`, query)))
	_, err = chromedp.Run(ctx, chromedp.Poll[bool](`document.querySelector("#flame-match").dataset.share !== ""`))
	step("wait for the search", err)
	var found struct {
		Share   string
		Text    string
		Matches []string
	}
	eval("read the search", `({Share: document.querySelector("#flame-match").dataset.share, Text: document.querySelector("#flame-match").textContent,
		Matches: [...document.querySelectorAll("#flamegraph g.frame.match")].map(g => g.dataset.function)})`, &found)
	shot("viewer-flame-search.png", true)
	var share float64
	if _, err := fmt.Sscan(found.Share, &share); err != nil || math.Abs(share-want.Share) > 1e-9 {
		t.Errorf("search %q: share %q, python pstats %.12f (the naive sum would be %.12f)", query, found.Share, want.Share, want.Naive)
	}
	if d := cmp.Diff(want.Matches, found.Matches); d != "" {
		t.Errorf("highlighted frames (-python +page):\n%s", d)
	}
	if wantText := fmt.Sprintf("%.2f%% of the total", want.Share*100); !strings.Contains(found.Text, wantText) {
		t.Errorf("the search says %q, want %q", found.Text, wantText)
	}
	var cleared bool
	eval("clear the search", `(() => { const s = document.querySelector("#flame-search"); s.value = "";
		s.dispatchEvent(new Event("input")); return document.querySelectorAll("#flamegraph g.frame.match").length === 0; })()`, &cleared)
	if !cleared {
		t.Error("frames stay highlighted after the search is cleared")
	}

	// ---- tooltip: the frame's location and figures ----
	x, y = center("find the frame", fmt.Sprintf(`#flamegraph g.frame[data-index="%d"] rect`, clicked))
	step("hover the frame", chromedp.Do(ctx, chromedp.MouseEvent(chromedp.MouseMoved, x, y)))
	tip, err := chromedp.Run(ctx, chromedp.Poll[string](`!document.querySelector("#tooltip").hidden && document.querySelector("#tooltip").textContent`))
	step("wait for the tooltip", err)
	shot("viewer-flame-tooltip.png", false)
	f := want.Frames[clicked]
	for _, s := range []string{f.Function, fmt.Sprintf("%s:%d", f.File, f.Line),
		fmt.Sprintf("(%.2f%% of total)", f.Width/flamegraph.Width*100),
		fmt.Sprintf("function total (inclusive): "), fmt.Sprintf("(%.2f%%)", f.Incl/want.Total*100),
		fmt.Sprintf("function self: "), fmt.Sprintf("(%.2f%%)", f.Self/want.Total*100)} {
		if !strings.Contains(tip, s) {
			t.Errorf("the tooltip lacks %q:\n%s", s, tip)
		}
	}

	// ---- timeline: lane names, drag to a window, reset ----
	step("open the trace", chromedp.Do(ctx, chromedp.Navigate(fx.base+"/#/evidence/"+traceID),
		chromedp.WaitVisible(`#timeline svg g.slice`)))
	_, err = chromedp.Run(ctx, chromedp.Poll[bool](`document.body.dataset.ready === "true" && document.querySelector("#timeline").dataset.loading === ""`))
	step("wait for the timeline", err)
	type axis struct {
		Ticks      []string
		T0, T1     string
		Start, End string
		Hash       string
		Bars       int
		Caption    string
		Lanes      []string
	}
	readAxis := func() (a axis) {
		t.Helper()
		eval("read the axis", `(() => { const svg = document.querySelector("#timeline svg"), box = document.querySelector("#timeline");
			return {Ticks: [...svg.querySelectorAll("g.axis g.tick text")].map(e => e.textContent), T0: svg.dataset.t0, T1: svg.dataset.t1,
				Start: box.dataset.startNs, End: box.dataset.endNs, Hash: location.hash, Bars: svg.querySelectorAll("g.slice").length,
				Caption: svg.querySelector("text.caption").textContent, Lanes: [...svg.querySelectorAll("text.lane")].map(e => e.dataset.label)}; })()`, &a)
		return a
	}
	whole := readAxis()
	if len(whole.Ticks) < 3 || whole.Ticks[0] != "0 ms" {
		t.Errorf("the whole trace's axis: %q", whole.Ticks)
	}
	// The longest lane name is cut on the page and whole in the tooltip.
	var lane struct{ Label, Shown string }
	eval("find a cut lane", `(() => { const l = [...document.querySelectorAll("#timeline svg text.lane")].find(e => e.textContent !== e.dataset.label);
		return l ? {Label: l.dataset.label, Shown: l.textContent} : {}; })()`, &lane)
	if lane.Label == "" || !strings.HasSuffix(lane.Shown, "…") {
		t.Fatalf("no lane name is cut on the page: %q", whole.Lanes)
	}
	x, y = center("find the lane", `#timeline svg text.lane[data-label=`+jsonString(lane.Label)+`]`)
	step("hover the lane", chromedp.Do(ctx, chromedp.MouseEvent(chromedp.MouseMoved, x, y)))
	tip, err = chromedp.Run(ctx, chromedp.Poll[string](`!document.querySelector("#tooltip").hidden && document.querySelector("#tooltip").textContent`))
	step("wait for the lane's tooltip", err)
	shot("viewer-timeline-lane.png", false)
	if tip != lane.Label {
		t.Errorf("hovering the lane %q shows %q, want its full name", lane.Shown, tip)
	}
	// Drag from a third of the plot to two thirds.
	var plot struct{ X0, X1, Y float64 }
	eval("find the plot", `(() => { const svg = document.querySelector("#timeline svg");
		svg.scrollIntoView({block: "center"});
		const m = svg.getScreenCTM(), px = Number(svg.dataset.plotX), pw = Number(svg.dataset.plotW);
		const at = (x) => new DOMPoint(x, 0).matrixTransform(m).x;
		const r = svg.getBoundingClientRect();
		return {X0: at(px + pw / 3), X1: at(px + 2 * pw / 3), Y: r.y + r.height / 2}; })()`, &plot)
	step("drag across the plot", chromedp.Do(ctx,
		chromedp.MouseEvent(chromedp.MouseMoved, plot.X0, plot.Y),
		chromedp.MouseEvent(chromedp.MousePressed, plot.X0, plot.Y, chromedp.ButtonLeft, chromedp.ClickCount(1)),
		chromedp.MouseEvent(chromedp.MouseMoved, (plot.X0+plot.X1)/2, plot.Y, chromedp.ButtonLeft),
		chromedp.MouseEvent(chromedp.MouseMoved, plot.X1, plot.Y, chromedp.ButtonLeft),
		chromedp.MouseEvent(chromedp.MouseReleased, plot.X1, plot.Y, chromedp.ButtonLeft, chromedp.ClickCount(1))))
	_, err = chromedp.Run(ctx, chromedp.Poll[bool](`document.querySelector("#timeline").dataset.startNs !== "" &&
		document.querySelector("#timeline").dataset.loading === "" && (document.querySelector("#timeline svg text.caption")?.textContent ?? "").includes("in the window")`))
	step("wait for the window", err)
	win := readAxis()
	shot("viewer-timeline-drag.png", true)
	hash, err := url.ParseQuery(strings.TrimPrefix(win.Hash[strings.Index(win.Hash, "?")+1:], "?"))
	step("read the URL", err)
	if !strings.HasPrefix(win.Hash, "#/evidence/"+traceID+"?") || hash.Get("start_ns") != win.Start || hash.Get("end_ns") != win.End ||
		hash.Get("origin_ns") != whole.T0 {
		t.Errorf("the URL %q does not name the window [%s, %s) from origin %s", win.Hash, win.Start, win.End, whole.T0)
	}
	t0, t1 := bigInt(t, whole.T0), bigInt(t, whole.T1)
	span := new(big.Float).SetInt(new(big.Int).Sub(t1, t0))
	frac := func(v string) float64 {
		d := new(big.Float).SetInt(new(big.Int).Sub(bigInt(t, v), t0))
		q, _ := new(big.Float).Quo(d, span).Float64()
		return q
	}
	if a, b := frac(win.Start), frac(win.End); math.Abs(a-1.0/3) > 0.01 || math.Abs(b-2.0/3) > 0.01 {
		t.Errorf("the window [%s, %s) is at %.4f to %.4f of the trace, dragged from 1/3 to 2/3", win.Start, win.End, a, b)
	}
	if win.T0 != win.Start || win.T1 != win.End || !strings.Contains(win.Caption, "in the window ["+win.Start+", "+win.End+")") {
		t.Errorf("the drawn window is [%s, %s], caption %q; the URL says [%s, %s)", win.T0, win.T1, win.Caption, win.Start, win.End)
	}
	if slices.Equal(win.Ticks, whole.Ticks) || len(win.Ticks) < 2 {
		t.Errorf("the axis labels did not change with the window: %q", win.Ticks)
	}
	// The window's axis counts from the trace's start: its first label is past a third of it.
	if !slices.Contains(win.Lanes, lane.Label) {
		t.Errorf("the window's lanes %q lost the whole trace's names (%q)", win.Lanes, lane.Label)
	}
	out, err = exec.Command(py, "-c", pythonTimeline, tracePath, jsonString(timeline.Label), jsonString(timeline.Plot),
		jsonString(timeline.MinBarWidth), win.Start, win.End).Output()
	step("python3 window", err)
	var pyWin struct {
		Bars []svgBar `json:"bars"`
	}
	step("decode the python window", json.Unmarshal(out, &pyWin))
	if win.Bars != len(pyWin.Bars) || win.Bars >= whole.Bars {
		t.Errorf("the window shows %d bars, python finds %d in it (the whole trace: %d)", win.Bars, len(pyWin.Bars), whole.Bars)
	}
	step("show the whole trace", chromedp.Do(ctx, chromedp.Click(`#timeline-window button[type="reset"]`)))
	_, err = chromedp.Run(ctx, chromedp.Poll[bool](`document.querySelector("#timeline").dataset.startNs === "" && document.querySelector("#timeline").dataset.loading === ""`))
	step("wait for the whole trace", err)
	back := readAxis()
	shot("viewer-timeline-reset.png", true)
	if d := cmp.Diff(whole, back, cmpopts.IgnoreFields(axis{}, "Hash")); d != "" || strings.Contains(back.Hash, "start_ns") {
		t.Errorf("Whole trace does not restore the trace (URL %q; -before +after):\n%s", back.Hash, d)
	}
	// The flows can be hidden.
	step("hide the flows", chromedp.Do(ctx, chromedp.Click(`#timeline-flows`)))
	var flows struct {
		N      int
		Hidden bool
	}
	eval("read the flows", `({N: document.querySelectorAll("#timeline svg line.flow").length,
		Hidden: getComputedStyle(document.querySelector("#timeline svg g.flows")).display === "none"})`, &flows)
	if flows.N == 0 || !flows.Hidden {
		t.Errorf("flows: %d drawn, hidden after unchecking: %v", flows.N, flows.Hidden)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(problems) > 0 {
		t.Errorf("the page reported errors:\n%s", strings.Join(problems, "\n"))
	}
	t.Logf("screenshots in %s", shots)
}

func bigInt(t *testing.T, s string) *big.Int {
	t.Helper()
	v, ok := new(big.Int).SetString(s, 10)
	if !ok {
		t.Fatalf("%q is not an integer", s)
	}
	return v
}
