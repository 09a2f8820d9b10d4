package main

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"net/http"
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

// preserveEvidence analyzes corpus files with op (explicit format) in a store and
// preserves the result; it returns the evidence id.
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
		sources = append(sources, map[string]any{"kind": "path", "path": filepath.Join(corpusDir(t), f), "format": format})
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
        slices.append({"id": i, "name": e["name"] or "<unnamed>", "key": (str(e["pid"]), str(e["tid"])),
                       "pid": e["pid"], "tid": e["tid"],
                       "ts": int(Decimal(e["ts"]) * 1000), "dur": int(Decimal(e["dur"]) * 1000)})
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
json.dump({"t0": full[0], "t1": full[1], "bars": bars, "lanes": [lane({"pid": next(s["pid"] for s in slices if s["key"] == k),
                                         "tid": next(s["tid"] for s in slices if s["key"] == k)}) for k in lanes]}, sys.stdout)
`

// TestViewerTimeline checks the slice timeline of preserved summarize_trace evidence of a
// torch.profiler trace against Python reading the same JSON: every bar's id, name, lane,
// depth, x and width (to the SVG's 0.001 px), and the lanes' order.
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
			Track int    `xml:"data-track,attr"`
			Class string `xml:"class,attr"`
		} `xml:"text"`
	}
	if err := xml.Unmarshal(svg, &doc); err != nil {
		t.Fatalf("the timeline is not XML: %v", err)
	}
	got := doc.G
	for i := range got {
		got[i].X, got[i].Width = got[i].Rect.X, got[i].Rect.Width
	}
	var lanes []string
	for _, l := range doc.Lanes {
		if l.Class == "lane" {
			lanes = append(lanes, l.Title)
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
	if d := cmp.Diff(want.Bars, gotByID, sortBars, cmpopts.IgnoreFields(svgBar{}, "Rect"), cmpopts.EquateApprox(0, 0.0011)); d != "" {
		t.Errorf("timeline bars (-python +viewer):\n%s", d)
	}
	if len(got) != 296 {
		t.Errorf("%d bars, want the trace's 296 complete events", len(got))
	}
}

// svgSeries is one series of the benchmark chart.
type svgSeries struct {
	Input     int      `xml:"data-input,attr" json:"input"`
	Benchmark string   `xml:"data-benchmark,attr" json:"benchmark"`
	Unit      string   `xml:"data-unit,attr" json:"unit"`
	N         int      `xml:"data-n,attr" json:"n"`
	Mean      float64  `xml:"data-mean,attr" json:"mean"`
	Stdev     float64  `xml:"data-stdev,attr" json:"stdev"`
	Low       float64  `xml:"data-low,attr" json:"low"`
	High      float64  `xml:"data-high,attr" json:"high"`
	Ratio     *float64 `json:"ratio"`
	RatioAttr string   `xml:"data-ratio,attr" json:"-"`
	Width     float64  `json:"width"`
	Rect      struct {
		Width float64 `xml:"width,attr"`
	} `xml:"rect" json:"-"`
}

// pythonBenchmarks computes the chart's figures from pyperf JSON files with Python's
// statistics module, without Flameox: per file and benchmark, the run values (warmups
// excluded; seconds as nanoseconds), mean, sample stdev, mean ± NormalDist's 97.5%
// quantile · stdev/√n, the ratio of means to the baseline file's same benchmark, and the
// bar width: mean / the largest interval end among the benchmark's bars · plot.
const pythonBenchmarks = `
import json, math, statistics, sys
baseline, plot, files = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3:]
z = statistics.NormalDist().inv_cdf(0.975)
out = []
for i, path in enumerate(files):
    doc = json.load(open(path))
    for b in doc["benchmarks"]:
        meta = dict(doc.get("metadata", {}), **b.get("metadata", {}))
        unit = meta.get("unit", "second")
        scale = 1e9 if unit == "second" else 1
        vs = [v * scale for r in b["runs"] for v in r.get("values", [])]
        m = statistics.mean(vs)
        s = statistics.stdev(vs) if len(vs) > 1 else float("nan")
        h = z * s / math.sqrt(len(vs)) if len(vs) > 1 else 0
        out.append({"input": i, "benchmark": meta["name"], "unit": {"second": "ns", "byte": "bytes"}.get(unit, unit),
                    "n": len(vs), "mean": m, "stdev": s, "low": m - h, "high": m + h})
for o in out:
    base = [b for b in out if b["input"] == baseline and b["benchmark"] == o["benchmark"]]
    o["ratio"] = o["mean"] / base[0]["mean"] if base and base[0]["mean"] else None
    o["width"] = o["mean"] / max(b["high"] for b in out if b["benchmark"] == o["benchmark"]) * plot
out.sort(key=lambda o: (o["benchmark"], o["input"]))
print(json.dumps(out).replace("NaN", "null"))
`

// TestViewerBenchmarkChart checks the benchmark chart of preserved pyperf evidence against
// Python's statistics module over the same files: per input and benchmark the value count
// (exact), mean, standard deviation, 95% interval and ratio (to 1e-6 relative: Flameox
// keeps nanoseconds as integers) and the bar width (to 0.01 px).
func TestViewerBenchmarkChart(t *testing.T) {
	store := filepath.Join(t.TempDir(), "store")
	cases := []struct {
		name, op string
		files    []string
	}{
		{"summary of two results", "summarize_benchmarks", []string{"pyperf__telco.json", "pyperf__track_memory.json"}},
		{"comparison with itself", "compare_benchmarks", []string{"pyperf__telco.json", "pyperf__telco.json"}},
	}
	ids := map[string]string{}
	for _, c := range cases {
		ids[c.name] = preserveEvidence(t, store, c.op, "pyperf", c.files...)
	}
	base := serveViewer(t, store)
	py := testtool.Require(t, "python3")
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := []string{"-c", pythonBenchmarks, "0", jsonString(benchchart.Plot)}
			for _, f := range c.files {
				args = append(args, filepath.Join(corpusDir(t), f))
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
			for i := range doc.G {
				g := &doc.G[i]
				g.Width = g.Rect.Width
				if g.RatioAttr != "" {
					r, err := strconv.ParseFloat(g.RatioAttr, 64)
					if err != nil {
						t.Fatal(err)
					}
					g.Ratio = &r
				}
			}
			opts := cmp.Options{cmpopts.IgnoreFields(svgSeries{}, "Rect", "RatioAttr", "Width"), cmpopts.EquateApprox(1e-6, 0)}
			if d := cmp.Diff(want, doc.G, opts); d != "" {
				t.Errorf("series (-python statistics +viewer):\n%s", d)
			}
			for i := range min(len(want), len(doc.G)) {
				if math.Abs(want[i].Width-doc.G[i].Width) > 0.01 {
					t.Errorf("series %d: bar width %.3f, python %.3f", i, doc.G[i].Width, want[i].Width)
				}
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
	for i := range doc.G {
		doc.G[i].X, doc.G[i].Width = doc.G[i].Rect.X, doc.G[i].Rect.Width
	}
	sortBars := cmpopts.SortSlices(func(a, b svgBar) bool { return a.ID < b.ID })
	if d := cmp.Diff(want.Bars, doc.G, sortBars, cmpopts.IgnoreFields(svgBar{}, "Rect", "Lane"), cmpopts.EquateApprox(0, 0.0011)); d != "" {
		t.Errorf("window bars (-python +viewer):\n%s", d)
	}
	wantCaption := fmt.Sprintf("in the window [%d, %d) ns", w0, w1)
	if len(doc.Caption) == 0 || !strings.Contains(doc.Caption[0].Text, wantCaption) {
		t.Errorf("caption %v does not name %q", doc.Caption, wantCaption)
	}

	for _, tc := range []struct{ query, field string }{
		{"start_ns=1", "end_ns"},
		{"start_ns=abc&end_ns=2", "start_ns"},
		{"start_ns=1&start_ns=2&end_ns=3", "start_ns"},
		{"start_ns=1&end_ns=2&zoom=3", "query"},
		{"start_ns=5&end_ns=5", "end_ns"},
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
