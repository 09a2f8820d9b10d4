package main

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/flameox/flameox/internal/benchchart"
	"github.com/flameox/flameox/internal/testtool"
	"github.com/flameox/flameox/internal/timeline"
	"github.com/flameox/flameox/runtime"
)

// preserveEvidence analyzes corpus files (or files at absolute paths) with op (explicit
// format) in a store and preserves the result; it returns the evidence id.
func preserveEvidence(t *testing.T, store, op, format string, files ...string) string {
	t.Helper()
	return preserveEvidenceWith(t, store, op, format, nil, files...)
}

// preserveEvidenceWith is preserveEvidence with more operation arguments.
func preserveEvidenceWith(t *testing.T, store, op, format string, extra map[string]any, files ...string) string {
	t.Helper()
	rt, err := newRuntime(nil, runtime.WithStoreDir(store))
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	var sources []any
	for _, f := range files {
		if !filepath.IsAbs(f) {
			f = filepath.Join(corpusDir(t), f)
		}
		sources = append(sources, map[string]any{"kind": "path", "path": f, "format": format})
	}
	fields := map[string]any{"sources": sources, "page_size": 5}
	for k, v := range extra {
		fields[k] = v
	}
	args, _ := json.Marshal(fields)
	res, f := rt.Call(context.Background(), op, args)
	if f != nil {
		t.Fatal(f)
	}
	p, f := rt.Preserve(res.(*runtime.Result).AnalysisID)
	if f != nil {
		t.Fatal(f)
	}
	return p.EvidenceID
}

// getSVG fetches a chart and checks its status and headers.
func getSVG(t *testing.T, url string) []byte {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	svg, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "image/svg+xml" || resp.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("%s: status %d, Content-Type %q, Cache-Control %q: %s", url, resp.StatusCode,
			resp.Header.Get("Content-Type"), resp.Header.Get("Cache-Control"), svg)
	}
	return svg
}

// svgBar is one slice of the timeline SVG.
type svgBar struct {
	Class string  `xml:"class,attr" json:"-"`
	ID    int64   `xml:"data-id,attr" json:"id"`
	Name  string  `xml:"data-name,attr" json:"name"`
	Lane  string  `xml:"data-lane,attr" json:"lane"`
	Depth int     `xml:"data-depth,attr" json:"depth"`
	X     float64 `json:"x"`
	Width float64 `json:"width"`
	Rect  struct {
		X     float64 `xml:"x,attr"`
		Width float64 `xml:"width,attr"`
	} `xml:"rect" json:"-"`
	// Lines are the flows of the <g class="flows"> group.
	Lines []struct {
		From int64 `xml:"data-from,attr"`
		To   int64 `xml:"data-to,attr"`
	} `xml:"line" json:"-"`
}

// pythonTimeline computes the timeline of docs/decisions/0029 from a Chrome/PyTorch trace
// JSON with Python's json and decimal modules, without Flameox: the complete (X) events of
// positive duration in file order (an event's id is its index), times converted exactly
// from decimal microseconds to integer nanoseconds, lanes per (pid, tid) labelled from the
// process_name and thread_name metadata and ordered by their first start, depth by time
// containment on the same thread, and each bar's x and width in pixels.
const pythonTimeline = `
import json, sys
from decimal import Decimal
path, label, plot, min_w = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
doc = json.load(open(path), parse_float=Decimal, parse_int=Decimal)
events = doc["traceEvents"] if isinstance(doc, dict) else doc
procs, threads, slices = {}, {}, []
for i, e in enumerate(events):
    if e.get("ph") == "M" and e.get("name") == "process_name":
        procs[e["pid"]] = e["args"]["name"]
    if e.get("ph") == "M" and e.get("name") == "thread_name":
        threads[(e["pid"], e["tid"])] = e["args"]["name"]
    if e.get("ph") == "X" and int(Decimal(e.get("dur", 0)) * 1000) > 0:
        a = e.get("args") or {}
        slices.append({"id": i, "name": e["name"] or "<unnamed>", "key": (str(e["pid"]), str(e["tid"])),
                       "pid": e["pid"], "tid": e["tid"],
                       "ts": int(Decimal(e["ts"]) * 1000), "dur": int(Decimal(e["dur"]) * 1000),
                       "corr": a.get("correlation", a.get("correlation_id")), "gpu": "stream" in a})
def lane(s):
    p, t = procs.get(s["pid"], ""), threads.get((s["pid"], s["tid"]), "")
    if p and t: return p + " / " + t
    return t or None  # a lane without a thread name is labelled by its track number
by_key = {}
for s in sorted(slices, key=lambda s: (s["ts"], -s["dur"], s["id"])):
    stack = by_key.setdefault(s["key"], [])
    while stack and stack[-1]["ts"] + stack[-1]["dur"] < s["ts"] + s["dur"]:
        stack.pop()
    s["depth"] = stack[-1]["depth"] + 1 if stack else 0
    stack.append(s)
t0 = min(s["ts"] for s in slices)
t1 = max(s["ts"] + s["dur"] for s in slices)
full = (t0, t1)
if len(sys.argv) > 6:
    # A window [w0, w1): the slices with something inside it, clipped to it; depths stay
    # those of the whole trace (a parent holds its child, so it overlaps too).
    t0, t1 = int(sys.argv[5]), int(sys.argv[6])
    kept = []
    for s in slices:
        a, b = max(s["ts"], t0), min(s["ts"] + s["dur"], t1)
        if b > a:
            s["ts"], s["dur"] = a, b - a
            kept.append(s)
    slices = kept
firsts = {}
for s in slices:
    firsts[s["key"]] = min(firsts.get(s["key"], s["ts"]), s["ts"])
assert len(sys.argv) > 6 or len(set(firsts.values())) == len(firsts), "two lanes start together: their order is Flameox's track id"
lanes = sorted(firsts, key=lambda k: firsts[k])
bars = [{"id": s["id"], "name": s["name"], "lane": lane(s), "depth": s["depth"],
         "x": label + (s["ts"] - t0) / (t1 - t0) * plot, "width": max(s["dur"] / (t1 - t0) * plot, min_w)}
        for s in sorted(slices, key=lambda s: s["id"])]
# Flows: per correlation id, from each slice without a stream (the CPU launch) to each
# slice with one (the GPU activity).
groups = {}
for s in slices:
    if s["corr"] is not None:
        groups.setdefault(int(s["corr"]), []).append(s)
flows = sorted([l["id"], g["id"]] for grp in groups.values() for l in grp if not l["gpu"] for g in grp if g["gpu"])
json.dump({"t0": full[0], "t1": full[1], "bars": bars, "flows": flows, "lanes": [lane({"pid": next(s["pid"] for s in slices if s["key"] == k),
                                         "tid": next(s["tid"] for s in slices if s["key"] == k)}) for k in lanes]}, sys.stdout)
`

// slicesOf keeps the slices of a timeline's top-level groups (not its axis or flows),
// with their rectangles' x and width.
func slicesOf(gs []svgBar) []svgBar {
	var out []svgBar
	for _, g := range gs {
		if g.Class == "slice" {
			g.X, g.Width = g.Rect.X, g.Rect.Width
			out = append(out, g)
		}
	}
	return out
}

// TestViewerTimeline checks the slice timeline of preserved summarize_trace evidence of a
// torch.profiler trace against Python reading the same JSON: every bar's id, name, lane,
// depth, x and width (to the SVG's 0.001 px), the lanes' order, and the flows from each
// CPU launch to the GPU activity of the same Kineto correlation id.
func TestViewerTimeline(t *testing.T) {
	store := filepath.Join(t.TempDir(), "store")
	id := preserveEvidence(t, store, "summarize_trace", "pytorch", "h200__torch-mlp-train.pt.trace.json")
	base := serveViewer(t, store)
	py := testtool.Require(t, "python3")
	out, err := exec.Command(py, "-c", pythonTimeline, filepath.Join(corpusDir(t), "h200__torch-mlp-train.pt.trace.json"),
		jsonString(timeline.Label), jsonString(timeline.Plot), jsonString(timeline.MinBarWidth)).Output()
	if err != nil {
		t.Fatalf("python3: %v", err)
	}
	var want struct {
		Bars  []svgBar `json:"bars"`
		Flows [][2]int64
		Lanes []*string
	}
	if err := json.Unmarshal(out, &want); err != nil {
		t.Fatal(err)
	}
	svg := getSVG(t, base+"/charts/timeline/"+id)
	var doc struct {
		G     []svgBar `xml:"g"`
		Lanes []struct {
			Title string `xml:"title"`
			Label string `xml:"data-label,attr"`
			Track int    `xml:"data-track,attr"`
			Class string `xml:"class,attr"`
		} `xml:"text"`
	}
	if err := xml.Unmarshal(svg, &doc); err != nil {
		t.Fatalf("the timeline is not XML: %v", err)
	}
	got := slicesOf(doc.G)
	var flows [][2]int64
	for _, g := range doc.G {
		if g.Class == "flows" {
			for _, f := range g.Lines {
				flows = append(flows, [2]int64{f.From, f.To})
			}
		}
	}
	sortPairs := cmpopts.SortSlices(func(a, b [2]int64) bool { return a[0] < b[0] || a[0] == b[0] && a[1] < b[1] })
	if d := cmp.Diff(want.Flows, flows, sortPairs); d != "" {
		t.Errorf("launch to GPU flows (-python correlation args +viewer):\n%s", d)
	}
	if len(want.Flows) < 40 {
		t.Errorf("python finds %d flows in the trace: the corpus trace should have its 41 kernel launches", len(want.Flows))
	}
	var lanes []string
	for _, l := range doc.Lanes {
		if l.Class == "lane" {
			lanes = append(lanes, l.Title)
			if l.Label != l.Title {
				t.Errorf("lane %q: data-label %q", l.Title, l.Label)
			}
		}
	}
	// Python labels a lane without a thread name null; Flameox names it "track N" by its
	// track id, which only Flameox numbers: take that label from the SVG, once.
	var wantLanes []string
	unnamed := ""
	for i, l := range want.Lanes {
		switch {
		case l != nil:
			wantLanes = append(wantLanes, *l)
		case unnamed == "" && i < len(lanes) && strings.HasPrefix(lanes[i], "track "):
			unnamed = lanes[i]
			wantLanes = append(wantLanes, unnamed)
		default:
			t.Fatalf("lane %d: no thread name, and the viewer's label is not a single \"track N\": %q", i, lanes)
		}
	}
	for i := range want.Bars {
		if want.Bars[i].Lane == "" {
			want.Bars[i].Lane = unnamed
		}
	}
	if d := cmp.Diff(wantLanes, lanes); d != "" {
		t.Errorf("lanes (-python +viewer):\n%s", d)
	}
	gotByID := append([]svgBar{}, got...)
	sortBars := cmpopts.SortSlices(func(a, b svgBar) bool { return a.ID < b.ID })
	if d := cmp.Diff(want.Bars, gotByID, sortBars, cmpopts.IgnoreFields(svgBar{}, "Rect", "Class", "Lines"), cmpopts.EquateApprox(0, 0.0011)); d != "" {
		t.Errorf("timeline bars (-python +viewer):\n%s", d)
	}
	if len(got) != 296 {
		t.Errorf("%d bars, want the trace's 296 complete events", len(got))
	}
}

// svgSeries is one series of the benchmark chart.
type svgSeries struct {
	Input     int      `xml:"data-input,attr" json:"input"`
	InputName string   `xml:"data-input-name,attr" json:"input_name"`
	Benchmark string   `xml:"data-benchmark,attr" json:"benchmark"`
	Unit      string   `xml:"data-unit,attr" json:"unit"`
	N         int      `xml:"data-n,attr" json:"n"`
	Median    float64  `xml:"data-median,attr" json:"median"`
	Mean      float64  `xml:"data-mean,attr" json:"mean"`
	Low       *float64 `json:"low"`
	High      *float64 `json:"high"`
	Ratio     *float64 `json:"ratio"`
	Figures   string   `json:"figures"`
	LowAttr   string   `xml:"data-low,attr" json:"-"`
	HighAttr  string   `xml:"data-high,attr" json:"-"`
	RatioAttr string   `xml:"data-ratio,attr" json:"-"`
	Width     float64  `json:"width"`
	Rect      struct {
		Width float64 `xml:"width,attr"`
	} `xml:"rect" json:"-"`
	Texts []struct {
		Class string `xml:"class,attr"`
		Text  string `xml:",chardata"`
	} `xml:"text" json:"-"`
}

// pythonBenchmarks computes the chart's figures from pyperf JSON and Go benchmark text
// files with Python's statistics module, without Flameox: per file and benchmark (and
// unit), the run values (pyperf: warmups excluded, seconds as nanoseconds; Go: ns/op as
// ns, B/op as bytes, allocs/op as count, other units as written), their count, median
// and mean, the median's 95% confidence interval as golang.org/x/perf/benchmath computes
// it (AssumeNothing: go-moremath's QuantileCI, the order statistics around the median
// whose binomial coverage reaches 0.95, accumulated from the mode and left-biased on ties
// up to 30 values, its normal approximation with continuity correction beyond; no finite
// interval when an order is outside the sample), the ratio of medians to the baseline
// file's same benchmark, the bar width (median / the largest interval end or median of
// the benchmark's bars · plot), and the input's name: role (input, or input-NNNN of
// several), format and the file's SHA-256 prefix.
const pythonBenchmarks = `
import hashlib, json, math, re, statistics, sys
from fractions import Fraction
baseline, plot, fmt, files = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3], sys.argv[4:]

def median_orders(n, conf=0.95):
    p = 0.5
    if n <= 30:
        pmf = lambda k: Fraction(math.comb(n, k), 2 ** n) if 0 <= k <= n else Fraction(0)
        x = math.ceil((n + 1) * p) - 1
        accum, l, r = pmf(x), x, x + 1
        lp, rp = pmf(l - 1), pmf(r)
        while accum < conf and (lp > 0 or rp > 0):
            if lp >= rp:
                accum += lp; l -= 1; lp = pmf(l - 1)
            else:
                accum += rp; r += 1; rp = pmf(r)
    else:
        norm = statistics.NormalDist(n * p, math.sqrt(n * p * (1 - p)))
        l1 = norm.inv_cdf((1 - conf) / 2)
        r1 = 2 * norm.mean - l1
        l = math.floor(math.floor(l1 - 0.5) + 0.5) + 1
        r = math.floor(math.ceil(r1 - 0.5) + 0.5) + 1
        cdf = lambda l, r: norm.cdf(r - 0.5) - norm.cdf(l - 0.5)
        full, biased = cdf(l, r), cdf(l, r - 1)
        if biased >= conf and biased < full:
            r -= 1
    return max(l, 0), min(r, n + 1)

def series(i, path):
    if fmt == "pyperf":
        doc = json.load(open(path))
        for b in doc["benchmarks"]:
            meta = dict(doc.get("metadata", {}), **b.get("metadata", {}))
            unit = meta.get("unit", "second")
            scale = 1e9 if unit == "second" else 1
            yield meta["name"], {"second": "ns", "byte": "bytes"}.get(unit, unit), [v * scale for r in b["runs"] for v in r.get("values", [])]
        return
    units = {"ns/op": "ns", "B/op": "bytes", "allocs/op": "count"}
    vals = {}
    for line in open(path):
        m = re.match(r"^(Benchmark\S*?)(-\d+)?\s+\d+\s+(.+)$", line)
        if m:
            f = m.group(3).split()
            for v, u in zip(f[::2], f[1::2]):
                vals.setdefault((m.group(1), units.get(u, u)), []).append(float(v))
    for (name, unit), vs in vals.items():
        yield name, unit, vs

out = []
for i, path in enumerate(files):
    role = "input" if len(files) == 1 else "input-%04d" % (i + 1)
    name = "%s · %s · %s" % (role, fmt, hashlib.sha256(open(path, "rb").read()).hexdigest()[:8])
    for bench, unit, vs in series(i, path):
        xs = sorted(vs)
        l, r = median_orders(len(xs))
        lo = xs[l - 1] if l >= 1 else None
        hi = xs[r - 1] if r - 1 < len(xs) else None
        if lo is None or hi is None:
            lo = hi = None
        out.append({"input": i, "input_name": name, "benchmark": bench, "unit": unit, "n": len(xs),
                    "median": statistics.median(xs), "mean": statistics.mean(xs), "low": lo, "high": hi})
for o in out:
    base = [b for b in out if b["input"] == baseline and (b["benchmark"], b["unit"]) == (o["benchmark"], o["unit"])]
    o["ratio"] = o["median"] / base[0]["median"] if base and base[0]["median"] else None
    top = max(b["high"] if b["high"] is not None else b["median"] for b in out if (b["benchmark"], b["unit"]) == (o["benchmark"], o["unit"]))
    o["width"] = min(o["median"] / top, 1) * plot if top > 0 and o["median"] > 0 else 0
out.sort(key=lambda o: (o["benchmark"], o["unit"], o["input"]))
json.dump(out, sys.stdout)
`

// goBenchText writes Go benchmark output with count runs of two benchmarks (ns/op, MB/s,
// B/op, allocs/op): fixed values spread by a stride, scaled by factor.
func goBenchText(count int, factor float64) string {
	var b strings.Builder
	b.WriteString("goos: linux\ngoarch: amd64\npkg: example.com/codec\n")
	for i := range count {
		jitter := float64((i*7919)%13) - 6
		fmt.Fprintf(&b, "BenchmarkEncode-8\t%d\t%.0f ns/op\t%.2f MB/s\t2048 B/op\t12 allocs/op\n",
			50+i, (22530700+jitter*41000)*factor, (1200+jitter*3.5)/factor)
		fmt.Fprintf(&b, "BenchmarkDecode-8\t%d\t%.1f ns/op\t%d B/op\t%d allocs/op\n",
			1000+i, (835.5+jitter*2.25)*factor, 7360512+i*4096, 3+i%2)
	}
	b.WriteString("PASS\nok  \texample.com/codec\t12.3s\n")
	return b.String()
}

// TestViewerBenchmarkChart checks the benchmark chart of preserved pyperf and Go
// benchmark evidence against Python over the same files (statistics, fractions, and
// benchmath's method written out): per input and benchmark the value count (exact),
// median and its interval's ends (benchstat's order statistics: exact samples), mean and
// ratio of medians (1e-6 relative: Flameox keeps nanoseconds as integers), the bar width
// (to 0.01 px), the input's name, and the figures beside the bar in humanised units. The
// pyperf files have 120 values (the normal approximation) and 3 (no interval); the Go
// files 10 runs (exact binomial coverage) and 7 (the smallest finite intervals).
func TestViewerBenchmarkChart(t *testing.T) {
	store := filepath.Join(t.TempDir(), "store")
	dir := t.TempDir()
	goOld, goNew := filepath.Join(dir, "old.txt"), filepath.Join(dir, "new.txt")
	if err := os.WriteFile(goOld, []byte(goBenchText(10, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(goNew, []byte(goBenchText(7, 0.9)), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, op, format string
		files            []string
		figures          map[string]string // benchmark/unit/input -> figures text
	}{
		{"summary of two results", "summarize_benchmarks", "pyperf", []string{"pyperf__telco.json", "pyperf__track_memory.json"},
			map[string]string{"track_memory/bytes/1": "7.365 MB ±∞ (n=3)"}},
		{"comparison with itself", "compare_benchmarks", "pyperf", []string{"pyperf__telco.json", "pyperf__telco.json"}, nil},
		{"Go benchmarks, 10 runs against 7", "compare_benchmarks", "go-bench", []string{goOld, goNew},
			map[string]string{"BenchmarkEncode/MB/s/0": "1.195 GB/s ±2%  ×1.000", "BenchmarkDecode/count/1": "3 ±33%  ×0.857",
				"BenchmarkEncode/ns/1": "20.28 ms ±1%  ×0.902", "BenchmarkEncode/bytes/0": "2.048 kB ±0.0%  ×1.000"}},
	}
	ids := map[string]string{}
	for _, c := range cases {
		ids[c.name] = preserveEvidence(t, store, c.op, c.format, c.files...)
	}
	base := serveViewer(t, store)
	py := testtool.Require(t, "python3")
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := []string{"-c", pythonBenchmarks, "0", jsonString(benchchart.Plot), c.format}
			for _, f := range c.files {
				if !filepath.IsAbs(f) {
					f = filepath.Join(corpusDir(t), f)
				}
				args = append(args, f)
			}
			out, err := exec.Command(py, args...).Output()
			if err != nil {
				t.Fatalf("python3: %v", err)
			}
			var want []svgSeries
			if err := json.Unmarshal(out, &want); err != nil {
				t.Fatal(err)
			}
			var doc struct {
				G []svgSeries `xml:"g"`
			}
			if err := xml.Unmarshal(getSVG(t, base+"/charts/benchmarks/"+ids[c.name]), &doc); err != nil {
				t.Fatalf("the chart is not XML: %v", err)
			}
			optional := func(s string) *float64 {
				if s == "" {
					return nil
				}
				v, err := strconv.ParseFloat(s, 64)
				if err != nil {
					t.Fatal(err)
				}
				return &v
			}
			for i := range doc.G {
				g := &doc.G[i]
				g.Width = g.Rect.Width
				g.Low, g.High, g.Ratio = optional(g.LowAttr), optional(g.HighAttr), optional(g.RatioAttr)
				labels := 0
				for _, tx := range g.Texts {
					switch tx.Class {
					case "figures":
						g.Figures = tx.Text
					case "name":
						labels++
						if tx.Text != g.InputName {
							t.Errorf("series %d is labelled %q, its input is %q", i, tx.Text, g.InputName)
						}
					}
				}
				if labels != 1 {
					t.Errorf("series %d has %d labels", i, labels)
				}
				key := g.Benchmark + "/" + g.Unit + "/" + strconv.Itoa(g.Input)
				if w, ok := c.figures[key]; ok && g.Figures != w {
					t.Errorf("%s: figures %q, want %q", key, g.Figures, w)
				}
				if strings.Contains(g.Figures, "e+") || strings.Contains(g.Figures, "e-") {
					t.Errorf("%s: figures %q are not humanised", key, g.Figures)
				}
			}
			opts := cmp.Options{cmpopts.IgnoreFields(svgSeries{}, "Rect", "Texts", "LowAttr", "HighAttr", "RatioAttr", "Width", "Figures"),
				cmpopts.EquateApprox(1e-6, 0)}
			if d := cmp.Diff(want, doc.G, opts); d != "" {
				t.Errorf("series (-python +viewer):\n%s", d)
			}
			for i := range min(len(want), len(doc.G)) {
				if math.Abs(want[i].Width-doc.G[i].Width) > 0.01 {
					t.Errorf("series %d: bar width %.3f, python %.3f", i, doc.G[i].Width, want[i].Width)
				}
			}
			bounded := 0
			for _, w := range want {
				if w.Low != nil {
					bounded++
				}
			}
			if bounded == 0 && c.name != "summary of two results" {
				t.Error("no series has an interval: the case checks nothing of the method")
			}
		})
	}
}

// TestViewerTimelineWindow checks the timeline of a window chosen by the reader (the
// middle third of the trace) against Python reading the same JSON: the slices with
// something inside the window, clipped to it, each bar's id, name, depth, x and width on
// an axis that spans exactly the window. Lanes are labelled by track there (the window's
// rows carry no thread names), so labels are not compared. Malformed windows are typed 400s.
func TestViewerTimelineWindow(t *testing.T) {
	store := filepath.Join(t.TempDir(), "store")
	id := preserveEvidence(t, store, "summarize_trace", "pytorch", "h200__torch-mlp-train.pt.trace.json")
	base := serveViewer(t, store)
	py := testtool.Require(t, "python3")
	trace := filepath.Join(corpusDir(t), "h200__torch-mlp-train.pt.trace.json")
	python := func(window ...string) (out struct {
		T0, T1 int64
		Bars   []svgBar `json:"bars"`
	}) {
		args := append([]string{"-c", pythonTimeline, trace,
			jsonString(timeline.Label), jsonString(timeline.Plot), jsonString(timeline.MinBarWidth)}, window...)
		b, err := exec.Command(py, args...).Output()
		if err != nil {
			t.Fatalf("python3: %v", err)
		}
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	full := python()
	w0 := full.T0 + (full.T1-full.T0)/3
	w1 := full.T0 + 2*(full.T1-full.T0)/3
	want := python(strconv.FormatInt(w0, 10), strconv.FormatInt(w1, 10))
	if len(want.Bars) == 0 || len(want.Bars) >= len(python().Bars) {
		t.Fatalf("the window holds %d of the trace's slices: choose another", len(want.Bars))
	}
	svg := getSVG(t, fmt.Sprintf("%s/charts/timeline/%s?start_ns=%d&end_ns=%d", base, id, w0, w1))
	var doc struct {
		G       []svgBar `xml:"g"`
		Caption []struct {
			Class string `xml:"class,attr"`
			Text  string `xml:",chardata"`
		} `xml:"text"`
	}
	if err := xml.Unmarshal(svg, &doc); err != nil {
		t.Fatalf("the timeline is not XML: %v", err)
	}
	sortBars := cmpopts.SortSlices(func(a, b svgBar) bool { return a.ID < b.ID })
	if d := cmp.Diff(want.Bars, slicesOf(doc.G), sortBars, cmpopts.IgnoreFields(svgBar{}, "Rect", "Lane", "Class", "Lines"), cmpopts.EquateApprox(0, 0.0011)); d != "" {
		t.Errorf("window bars (-python +viewer):\n%s", d)
	}
	wantCaption := fmt.Sprintf("in the window [%d, %d) ns", w0, w1)
	if len(doc.Caption) == 0 || !strings.Contains(doc.Caption[0].Text, wantCaption) {
		t.Errorf("caption %v does not name %q", doc.Caption, wantCaption)
	}
	// With origin_ns the axis counts from the trace's start: the ticks are
	// timeline.Ticks(w0, w1, t0) (internal/timeline's tests check the rule), at their times.
	svg = getSVG(t, fmt.Sprintf("%s/charts/timeline/%s?start_ns=%d&end_ns=%d&origin_ns=%d", base, id, w0, w1, full.T0))
	var axis struct {
		Origin int64 `xml:"data-origin,attr"`
		G      []struct {
			Class string `xml:"class,attr"`
			Ticks []struct {
				NS    int64  `xml:"data-ns,attr"`
				Label string `xml:"text"`
			} `xml:"g"`
		} `xml:"g"`
	}
	if err := xml.Unmarshal(svg, &axis); err != nil {
		t.Fatal(err)
	}
	var gotTicks []timeline.Tick
	for _, g := range axis.G {
		if g.Class == "axis" {
			for _, tk := range g.Ticks {
				gotTicks = append(gotTicks, timeline.Tick{At: tk.NS, Label: tk.Label})
			}
		}
	}
	if d := cmp.Diff(timeline.Ticks(w0, w1, full.T0), gotTicks); d != "" || axis.Origin != full.T0 || len(gotTicks) < 2 {
		t.Errorf("window ticks from the trace's start %d (origin %d; -want +got):\n%s", full.T0, axis.Origin, d)
	}

	for _, tc := range []struct{ query, field string }{
		{"start_ns=1", "end_ns"},
		{"start_ns=abc&end_ns=2", "start_ns"},
		{"start_ns=1&start_ns=2&end_ns=3", "start_ns"},
		{"start_ns=1&end_ns=2&zoom=3", "query"},
		{"start_ns=5&end_ns=5", "end_ns"},
		{"start_ns=1&end_ns=2&origin_ns=x", "origin_ns"},
		{"origin_ns=1&end_ns=2", "end_ns"},
	} {
		resp, err := http.Get(base + "/charts/timeline/" + id + "?" + tc.query)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var f struct {
			Code      string `json:"code"`
			FieldPath []any  `json:"field_path"`
		}
		if resp.StatusCode != http.StatusBadRequest || json.Unmarshal(body, &f) != nil || f.Code != "INVALID_INPUT" ||
			len(f.FieldPath) == 0 || f.FieldPath[0] != tc.field {
			t.Errorf("%s: status %d: %s", tc.query, resp.StatusCode, body)
		}
	}
	resp, err := http.Get(base + "/charts/flamegraph/" + id + "?start_ns=1&end_ns=2")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("a flame graph with a query: status %d", resp.StatusCode)
	}
}
