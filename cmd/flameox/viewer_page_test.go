package main

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/flamegraph"
	"github.com/flameox/flameox/internal/testtool"
)

// svgFrame is one box of the flame graph SVG: its data attributes and its rectangle.
type svgFrame struct {
	Depth    int     `xml:"data-depth,attr" json:"depth"`
	Function string  `xml:"data-function,attr" json:"function"`
	File     string  `xml:"data-file,attr" json:"file"`
	Line     int     `xml:"data-line,attr" json:"line"`
	X        float64 `json:"x"`
	Width    float64 `json:"width"`
	Rect     struct {
		X     float64 `xml:"x,attr"`
		Width float64 `xml:"width,attr"`
	} `xml:"rect" json:"-"`
}

// pstatsIcicle is the layout of docs/decisions/0029 computed by Python's own pstats
// module from the profile file, without Flameox: every frame with its depth, x and width
// in pixels of a flamegraph.Width-wide drawing.
const pstatsIcicle = `
import json, pstats, sys
stats = pstats.Stats(sys.argv[1]).stats
width, min_fraction = float(sys.argv[2]), float(sys.argv[3])
incl = {f: v[3] for f, v in stats.items()}
callees, called = {}, set()
for f, v in stats.items():
    for caller, e in v[4].items():
        callees.setdefault(caller, {})
        callees[caller][f] = callees[caller].get(f, 0) + e[3]
        if caller != f:
            called.add(f)
roots = [(f, incl[f]) for f in stats if f not in called]
total = sum(w for _, w in roots)
out = [{"depth": 0, "function": "all", "file": "", "line": 0, "x": 0.0, "width": width}]
def place(depth, start, parent_w, kids, path):
    s = sum(w for _, w in kids)
    scale = parent_w / s if s > parent_w and s > 0 else 1.0
    for f, w in sorted(kids, key=lambda k: (-k[1], k[0][2], k[0][0], k[0][1])):
        w *= scale
        if w <= 0 or w < total * min_fraction:
            continue
        out.append({"depth": depth, "function": f[2], "file": f[0], "line": f[1],
                    "x": start / total * width, "width": w / total * width})
        nxt = [(g, e * w / incl[f]) for g, e in callees.get(f, {}).items() if g not in path | {f}] if incl[f] > 0 else []
        place(depth + 1, start, w, nxt, path | {f})
        start += w
place(1, 0.0, total, roots, frozenset())
json.dump(out, sys.stdout)
`

func pythonIcicle(t *testing.T, pstatsPath string) []svgFrame {
	t.Helper()
	py := testtool.Require(t, "python3")
	out, err := exec.Command(py, "-c", pstatsIcicle, pstatsPath, jsonString(flamegraph.Width), jsonString(flamegraph.MinFraction)).Output()
	if err != nil {
		t.Fatalf("python3 pstats: %v", err)
	}
	var want []svgFrame
	if err := json.Unmarshal(out, &want); err != nil {
		t.Fatal(err)
	}
	return want
}

func parseFlameGraph(t *testing.T, svg []byte) []svgFrame {
	t.Helper()
	var doc struct {
		G []svgFrame `xml:"g"`
	}
	if err := xml.Unmarshal(svg, &doc); err != nil {
		t.Fatalf("the flame graph is not XML: %v", err)
	}
	for i := range doc.G {
		doc.G[i].X, doc.G[i].Width = doc.G[i].Rect.X, doc.G[i].Rect.Width
	}
	return doc.G
}

// TestViewerFlameGraph checks the server-side flame graph of preserved cProfile evidence
// against the same layout computed by Python's pstats from the corpus file: every frame,
// in order, with its depth, name, location, x and width (to the SVG's 0.001 px).
func TestViewerFlameGraph(t *testing.T) {
	fx := newViewerFixture(t)
	want := pythonIcicle(t, filepath.Join(corpusDir(t), "gprof2dot__print1.pstats"))
	resp, err := http.Get(fx.base + "/charts/flamegraph/" + fx.evidence[0])
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	svg, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "image/svg+xml" || resp.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("status %d, Content-Type %q, Cache-Control %q: %s", resp.StatusCode,
			resp.Header.Get("Content-Type"), resp.Header.Get("Cache-Control"), svg)
	}
	got := parseFlameGraph(t, svg)
	if d := cmp.Diff(want, got, cmpopts.IgnoreFields(svgFrame{}, "Rect"), cmpopts.EquateApprox(0, 0.0011)); d != "" {
		t.Errorf("flame graph frames (-python pstats +viewer):\n%s", d)
	}
	// The top frame under "all" is the heaviest function nothing calls.
	if len(got) < 2 || got[1].Function != "<built-in method builtins.exec>" || got[1].Depth != 1 {
		t.Errorf("top frame %+v, want <built-in method builtins.exec> at depth 1", got[1])
	}
}

// TestViewerPageRoutes checks the page routes: the page and its assets with no-store and a
// same-origin CSP, and typed 4xx failures for unknown paths, path tricks and writes.
func TestViewerPageRoutes(t *testing.T) {
	fx := newViewerFixture(t)
	for path, ctype := range map[string]string{"/": "text/html; charset=utf-8",
		"/assets/app.js": "text/javascript; charset=utf-8", "/assets/app.css": "text/css; charset=utf-8"} {
		resp, err := http.Get(fx.base + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != ctype || resp.Header.Get("Cache-Control") != "no-store" ||
			!strings.Contains(resp.Header.Get("Content-Security-Policy"), "default-src 'none'") {
			t.Errorf("%s: status %d, headers %v", path, resp.StatusCode, resp.Header)
		}
	}
	cases := []struct {
		name, method, path string
		status             int
		code               gen.FailureCode
		field              string
	}{
		{"unknown page", "GET", "/index.html", 404, gen.FailureCodeUnknownOperation, "path"},
		{"dot-dot out of assets", "GET", "/assets/../../etc/passwd", 404, gen.FailureCodeUnknownOperation, "path"},
		{"encoded dot-dot", "GET", "/assets/%2e%2e/%2e%2e/etc/passwd", 404, gen.FailureCodeUnknownOperation, "path"},
		{"double slash", "GET", "//etc/passwd", 404, gen.FailureCodeUnknownOperation, "path"},
		{"asset directory", "GET", "/assets/", 404, gen.FailureCodeUnknownOperation, "path"},
		{"embedded source name", "GET", "/viewerpage/app.js", 404, gen.FailureCodeUnknownOperation, "path"},
		{"query on an asset", "GET", "/assets/app.js?x=1", 400, gen.FailureCodeInvalidInput, "query"},
		{"write to the page", "POST", "/", 405, gen.FailureCodeInvalidInput, "method"},
		{"chart of a bad id", "GET", "/charts/flamegraph/..%2F..%2Fetc%2Fpasswd", 400, gen.FailureCodeInvalidInput, "evidence_id"},
		{"chart of absent evidence", "GET", "/charts/flamegraph/" + strings.Repeat("0", 64), 404, gen.FailureCodeMissingEvidence, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req, err := http.NewRequest(c.method, fx.base+"/", nil)
			if err != nil {
				t.Fatal(err)
			}
			req.URL.Opaque = strings.SplitN(c.path, "?", 2)[0]
			if q := strings.SplitN(c.path, "?", 2); len(q) == 2 {
				req.URL.RawQuery = q[1]
			}
			if strings.HasPrefix(req.URL.Opaque, "//") {
				// The client sends //etc/passwd as http://etc/passwd, a request for host
				// etc (421): the absolute form naming the viewer keeps the path as written.
				req.URL.Opaque = "//" + req.URL.Host + req.URL.Opaque
			}
			expectFailure(t, req, c.status, c.code, c.field)
		})
	}
}

// TestViewerBrowser drives the page in headless Chromium: the list shows the preserved
// evidence, opening one shows its flame graph (top frame as Python's pstats computes it)
// and its rows (the first ones as pstats ranks them by self time), and each view is
// screenshotted into $FLAMEOX_SCREENSHOT_DIR or the test's artifact directory.
// headless starts the Chromium at browser (a 1400x1000 window, a fresh profile) and
// returns its context, which ends after timeout or with the test.
func headless(t *testing.T, browser string, timeout time.Duration) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(browser), chromedp.NoSandbox,
		chromedp.WindowSize(1400, 1000), chromedp.UserDataDir(t.TempDir()))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelBrowser := chromedp.NewContext(actx)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	t.Cleanup(func() { cancel(); cancelBrowser(); cancelAlloc() })
	return ctx
}

// screenshotDir is where a browser test writes its screenshots: $FLAMEOX_SCREENSHOT_DIR,
// or the test's artifact directory.
func screenshotDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("FLAMEOX_SCREENSHOT_DIR")
	if dir == "" {
		return t.ArtifactDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestViewerBrowser(t *testing.T) {
	browser := testtool.Require(t, "chromium")
	fx := newViewerFixture(t)
	want := pythonIcicle(t, filepath.Join(corpusDir(t), "gprof2dot__print1.pstats"))
	py := testtool.Require(t, "python3")
	out, err := exec.Command(py, "-c", `
import pstats, sys
s = pstats.Stats(sys.argv[1]).stats
print("\n".join(k[2] for k, v in sorted(s.items(), key=lambda kv: -kv[1][2])[:10]))`,
		filepath.Join(corpusDir(t), "gprof2dot__print1.pstats")).Output()
	if err != nil {
		t.Fatal(err)
	}
	wantRows := strings.Split(strings.TrimSpace(string(out)), "\n")
	// The trace's slices as Python reads them, and the longest one's name.
	out, err = exec.Command(py, "-c", pythonTimeline, filepath.Join(corpusDir(t), "h200__torch-mlp-train.pt.trace.json"),
		"0", "1", "0").Output()
	if err != nil {
		t.Fatal(err)
	}
	var tl struct {
		Bars []svgBar `json:"bars"`
	}
	if err := json.Unmarshal(out, &tl); err != nil {
		t.Fatal(err)
	}
	wantBars, wantLongest := tl.Bars, ""
	widest := 0.0
	for _, b := range tl.Bars {
		if b.Width > widest {
			widest, wantLongest = b.Width, b.Name
		}
	}

	shots := screenshotDir(t)
	ctx := headless(t, browser, 60*time.Second)

	step := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	step("open the list", chromedp.Do(ctx, chromedp.Navigate(fx.base+"/"),
		chromedp.WaitVisible(`body[data-view="list"][data-ready="true"]`)))
	listed, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#evidence-table tbody tr").length`))
	step("count the list", err)
	listShot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	step("screenshot the list", err)
	step("open the evidence", chromedp.Do(ctx,
		chromedp.Click(`#evidence-table tbody tr[data-evidence-id="`+fx.evidence[0]+`"] a`),
		chromedp.WaitVisible(`body[data-view="evidence"][data-ready="true"]`),
		chromedp.WaitVisible(`#flamegraph svg g.frame[data-depth="1"]`)))
	topAttr, err := chromedp.Run(ctx, chromedp.AttributeValue(`#flamegraph svg g.frame[data-depth="1"]`, "data-function"))
	step("read the top frame", err)
	top := topAttr.Value
	firstRows, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](
		`[...document.querySelectorAll("#rows-table tbody tr")].slice(0, 3).map(r => r.cells[0].textContent)`))
	step("read the rows", err)
	evidenceShot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	step("screenshot the evidence", err)
	// Rows paging: pages of 5, then "Next page"; its first row is pstats' sixth by self time.
	loaded, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.dataset.rows`))
	step("read the rows counter", err)
	n, _ := strconv.Atoi(loaded)
	step("page the rows", chromedp.Do(ctx,
		chromedp.SetValue(`#analysis input[name="page_size"]`, "5"),
		chromedp.Click(`#analysis button[type="submit"]`),
		chromedp.WaitVisible(`body[data-rows="`+itoa(n+1)+`"]`),
		chromedp.Click(`#rows-next`),
		chromedp.WaitVisible(`body[data-rows="`+itoa(n+2)+`"]`)))
	second, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](
		`[...document.querySelectorAll("#rows-table tbody tr")].map(r => r.cells[0].textContent)`))
	step("read the second page", err)
	pageShot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	step("screenshot the second page", err)
	// A trace evidence shows its slice timeline; a benchmark comparison its chart.
	traceID := preserveEvidence(t, fx.store, "summarize_trace", "pytorch", "h200__torch-mlp-train.pt.trace.json")
	benchID := preserveEvidence(t, fx.store, "compare_benchmarks", "pyperf", "pyperf__telco.json", "pyperf__telco.json")
	step("open the trace evidence", chromedp.Do(ctx, chromedp.Navigate(fx.base+"/#/evidence/"+traceID),
		chromedp.WaitVisible(`#timeline svg g.slice`)))
	bars, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#timeline svg g.slice").length`))
	step("count the timeline bars", err)
	longest, err := chromedp.Run(ctx, chromedp.Evaluate[bool](
		`!!document.querySelector('#timeline svg g.slice[data-name="' + CSS.escape(`+jsonString(wantLongest)+`) + '"]')`))
	step("find the longest slice", err)
	flameHidden, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.querySelector("#flamegraph-section").hidden`))
	step("read the flame graph section", err)
	timelineShot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	step("screenshot the timeline", err)
	// A window of the middle third (nanoseconds beyond 2^53: BigInt) draws fewer bars,
	// clipped to it, under a caption that names it.
	window, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`(() => {
		const s = [...document.querySelectorAll("#timeline svg g.slice")].map(g => [BigInt(g.dataset.ts), BigInt(g.dataset.ts) + BigInt(g.dataset.dur)]);
		const t0 = s.reduce((m, x) => x[0] < m ? x[0] : m, s[0][0]), t1 = s.reduce((m, x) => x[1] > m ? x[1] : m, s[0][1]);
		return [String(t0 + (t1 - t0) / 3n), String(t0 + 2n * (t1 - t0) / 3n)];
	})()`))
	step("choose a window", err)
	if len(window) != 2 {
		t.Fatalf("window = %v", window)
	}
	step("show the window", chromedp.Do(ctx,
		chromedp.SetValue(`#timeline-window input[name="start_ns"]`, window[0]),
		chromedp.SetValue(`#timeline-window input[name="end_ns"]`, window[1]),
		chromedp.Click(`#timeline-window button[type="submit"]`)))
	_, err = chromedp.Run(ctx, chromedp.Poll[bool](`(document.querySelector("#timeline svg text.caption")?.textContent ?? "").includes("in the window [`+window[0]+`, `+window[1]+`)")`))
	step("wait for the window's timeline", err)
	windowBars, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#timeline svg g.slice").length`))
	step("count the window's bars", err)
	windowShot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	step("screenshot the window", err)
	if windowBars == 0 || windowBars >= bars {
		t.Errorf("the window shows %d bars of the trace's %d", windowBars, bars)
	}
	// inspect_trace_window evidence opens on its own preserved window.
	windowID := preserveEvidenceWith(t, fx.store, "inspect_trace_window", "pytorch",
		map[string]any{"start_ns": window[0], "end_ns": window[1]}, "h200__torch-mlp-train.pt.trace.json")
	// The typed window's timeline has the same caption: clear it first, so that only the
	// new evidence's timeline can satisfy the wait.
	_, err = chromedp.Run(ctx, chromedp.Evaluate[bool](`document.querySelector("#timeline").replaceChildren(), true`))
	step("clear the timeline", err)
	step("open the window evidence", chromedp.Do(ctx, chromedp.Navigate(fx.base+"/#/evidence/"+windowID)))
	_, err = chromedp.Run(ctx, chromedp.Poll[bool](`(document.querySelector("#timeline svg text.caption")?.textContent ?? "").includes("in the window [`+window[0]+`, `+window[1]+`)")`))
	step("wait for the preserved window's timeline", err)
	preservedBars, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#timeline svg g.slice").length`))
	step("count the preserved window's bars", err)
	if preservedBars != windowBars {
		t.Errorf("the preserved window shows %d bars, the same window typed in %d", preservedBars, windowBars)
	}
	step("open the benchmark evidence", chromedp.Do(ctx, chromedp.Navigate(fx.base+"/#/evidence/"+benchID),
		chromedp.WaitVisible(`#benchchart svg g.series`)))
	series, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#benchchart svg g.series").length`))
	step("count the benchmark series", err)
	benchShot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	step("screenshot the benchmark chart", err)
	if bars != len(wantBars) || !longest || !flameHidden {
		t.Errorf("timeline: %d bars (python: %d), longest slice %q shown %v, flame graph hidden %v", bars, len(wantBars), wantLongest, longest, flameHidden)
	}
	if series != 2 {
		t.Errorf("benchmark chart: %d series, want telco of each input", series)
	}
	for name, b := range map[string][]byte{"viewer-list.png": listShot, "viewer-evidence.png": evidenceShot, "viewer-rows-page2.png": pageShot,
		"viewer-timeline.png": timelineShot, "viewer-timeline-window.png": windowShot, "viewer-benchmarks.png": benchShot} {
		if err := os.WriteFile(filepath.Join(shots, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("screenshots in %s", shots)
	if listed != len(fx.evidence) {
		t.Errorf("the list shows %d evidence, want %d", listed, len(fx.evidence))
	}
	var wantTop string
	for _, f := range want {
		if f.Depth == 1 {
			wantTop = f.Function
			break
		}
	}
	if top != wantTop {
		t.Errorf("flame graph top frame %q, want %q (python pstats)", top, wantTop)
	}
	if d := cmp.Diff(wantRows[5:10], second); d != "" {
		t.Errorf("second page of 5 rows by self time (-python pstats +page):\n%s", d)
	}
	if d := cmp.Diff(wantRows[:3], firstRows); d != "" {
		t.Errorf("first rows by self time (-python pstats +page):\n%s", d)
	}
}
