package main

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/benchchart"
	"github.com/flameox/flameox/internal/failure"
	"github.com/flameox/flameox/internal/flamegraph"
	"github.com/flameox/flameox/internal/timeline"
	"github.com/flameox/flameox/runtime"
)

// viewerPage holds the page's assets: plain HTML, CSS and a small script that calls the
// JSON API. Nothing is fetched from the network.
//
//go:embed viewerpage/index.html viewerpage/app.js viewerpage/app.css
var viewerPage embed.FS

// pageAssets maps each page route to its embedded file and content type. Only these exact
// paths are served; anything else outside /api/ is a typed 404.
var pageAssets = map[string][2]string{
	"/":               {"viewerpage/index.html", "text/html; charset=utf-8"},
	"/assets/app.js":  {"viewerpage/app.js", "text/javascript; charset=utf-8"},
	"/assets/app.css": {"viewerpage/app.css", "text/css; charset=utf-8"},
}

// chartRoutes serve an evidence's charts as SVG: /charts/<kind>/{evidence_id}. Only the
// timeline takes query parameters (start_ns and end_ns: a window; origin_ns: where its
// axis labels count from).
var chartRoutes = map[string]func(context.Context, *runtime.Runtime, string, url.Values) ([]byte, *failure.Failure){
	"/charts/flamegraph/": flameGraphSVG,
	"/charts/timeline/":   timelineSVG,
	"/charts/benchmarks/": benchmarkSVG,
}

// benchmarkMaxPages bounds the summarize_benchmarks pages read for one chart; statistics
// of a prefix would mislead, so more is LIMIT_EXCEEDED.
const benchmarkMaxPages = 100

// Bounds of the rows read for one timeline: pages of summarize_trace; a longer trace is
// drawn from its first timelineMaxPages*flameGraphPageSize slices and says so.
const timelineMaxPages = timeline.MaxSlices / flameGraphPageSize

// Bounds of the rows read for one flame graph: pages of rank_cpu_hotspots and
// inspect_cpu_callers, each of flameGraphPageSize rows.
const (
	flameGraphPageSize = 100
	flameGraphMaxPages = 200
)

// pageCSP keeps the page to its own origin: no inline script or style (index.html has
// none; the script sets text and attributes, never markup or style attributes), no remote
// anything. It is set on the page and its assets only.
const pageCSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// sandboxCSP is the policy of every other response (the API, artifacts, charts, failures):
// nothing they hold is a document the viewer navigates to, so a browser that renders one
// anyway (an artifact that is XHTML or SVG, a chart opened by its URL) runs no script in
// it, loads nothing, and gives it an opaque origin that cannot read the API.
const sandboxCSP = "default-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'; sandbox"

// servePage answers the page routes (everything outside /api/): GET, and HEAD with the
// same headers (Content-Length included) and no body.
func (v *viewer) servePage(w http.ResponseWriter, r *http.Request) {
	path := r.URL.Path
	asset, isAsset := pageAssets[path]
	chartPrefix := ""
	for prefix := range chartRoutes {
		if strings.HasPrefix(path, prefix) {
			chartPrefix = prefix
		}
	}
	isChart := chartPrefix != ""
	if !isAsset && !isChart {
		unknownRoute(w, "there is no viewer page at this path")
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		httpFailure(w, http.StatusMethodNotAllowed, failure.Invalid(failure.Path("method"), []string{"GET", "HEAD"},
			"the viewer is read-only: this page accepts GET, HEAD"))
		return
	}
	if r.URL.RawQuery != "" && chartPrefix != "/charts/timeline/" {
		httpFailure(w, http.StatusBadRequest, failure.Invalid(failure.Path("query"), nil,
			"this viewer page takes no query parameters (only /charts/timeline/ takes start_ns, end_ns and origin_ns)"))
		return
	}
	if isAsset {
		w.Header().Set("Content-Security-Policy", pageCSP)
		b, err := viewerPage.ReadFile(asset[0])
		if err != nil {
			httpFailure(w, http.StatusInternalServerError, failure.Wrap(err, gen.FailureCodeInternalFailure, "the viewer page is missing"))
			return
		}
		w.Header().Set("Content-Type", asset[1])
		w.Header().Set("Content-Length", strconv.Itoa(len(b)))
		_, _ = w.Write(b)
		return
	}
	id := strings.TrimPrefix(path, chartPrefix)
	if !isSHA256(id) {
		httpFailure(w, http.StatusBadRequest, failure.Invalid(failure.Path("evidence_id"), nil,
			"an evidence_id is 64 lowercase hexadecimal characters"))
		return
	}
	query, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		httpFailure(w, http.StatusBadRequest, failure.Invalid(failure.Path("query"), nil, "the query string is not URL-encoded"))
		return
	}
	svg, f := chartRoutes[chartPrefix](r.Context(), v.rt, id, query)
	if f != nil {
		httpFailure(w, httpStatus(f.Code), f)
		return
	}
	w.Header().Set("Content-Type", "image/svg+xml")
	w.Header().Set("Content-Length", strconv.Itoa(len(svg)))
	_, _ = w.Write(svg)
}

// flameGraphSVG lays out the flame graph of CPU evidence from the rows of
// rank_cpu_hotspots (inclusive weights) and inspect_cpu_callers (edges) over its sources.
func flameGraphSVG(ctx context.Context, rt *runtime.Runtime, id string, _ url.Values) ([]byte, *failure.Failure) {
	sources, f := rt.EvidenceSources(id)
	if f != nil {
		return nil, f
	}
	functions, more, f := allRows(ctx, rt, "rank_cpu_hotspots", sources, flameGraphMaxPages)
	if f == nil && more {
		f = tooManyRows("rank_cpu_hotspots")
	}
	if f != nil {
		return nil, f
	}
	edges, more, f := allRows(ctx, rt, "inspect_cpu_callers", sources, flameGraphMaxPages)
	if f == nil && more {
		f = tooManyRows("inspect_cpu_callers")
	}
	if f != nil {
		return nil, f
	}
	l := flamegraph.FromRows(functions, edges).Layout()
	var b bytes.Buffer
	if err := l.WriteSVG(&b, "Flame graph (icicle) of "+id[:12]); err != nil {
		return nil, failure.Wrap(err, gen.FailureCodeInternalFailure, "the flame graph could not be rendered")
	}
	return b.Bytes(), nil
}

func tooManyRows(op string) *failure.Failure {
	return failure.New(gen.FailureCodeLimitExceeded, "the profile has more than %d rows of %s: too large for a flame graph",
		flameGraphPageSize*flameGraphMaxPages, op)
}

// timelineSVG lays out the slice timeline of trace evidence from summarize_trace's rows
// over its sources (the first timeline.MaxSlices by start). With start_ns and end_ns
// (decimal nanoseconds, both or neither) it lays out the window instead: the rows of
// inspect_trace_window over the same sources, each slice clipped to the window. Those
// rows carry no thread or process names, so lanes are labelled by track. origin_ns
// (optional) is the time the axis labels count from: the page sends the whole trace's
// start with a window, so that the window's axis reads as times into the trace.
func timelineSVG(ctx context.Context, rt *runtime.Runtime, id string, q url.Values) ([]byte, *failure.Failure) {
	params := []string{"start_ns", "end_ns", "origin_ns"}
	bounds := map[string]int64{}
	for _, k := range params {
		v, ok := q[k]
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(v[0], 10, 64)
		if err != nil || len(v) != 1 {
			return nil, failure.Invalid(failure.Path(k), nil, "%s is one decimal integer of nanoseconds", k)
		}
		bounds[k] = n
	}
	for k := range q {
		if !slices.Contains(params, k) {
			return nil, failure.Invalid(failure.Path("query"), params, "the timeline takes start_ns, end_ns and origin_ns only")
		}
	}
	_, hasStart := bounds["start_ns"]
	_, hasEnd := bounds["end_ns"]
	if hasStart != hasEnd {
		return nil, failure.Invalid(failure.Path("end_ns"), nil, "a window needs both start_ns and end_ns")
	}
	window := hasStart && hasEnd
	sources, f := rt.EvidenceSources(id)
	if f != nil {
		return nil, f
	}
	op, extra := "summarize_trace", map[string]any{}
	if window {
		op = "inspect_trace_window"
		extra["start_ns"] = strconv.FormatInt(bounds["start_ns"], 10)
		extra["end_ns"] = strconv.FormatInt(bounds["end_ns"], 10)
	}
	rows, more, f := allRows(ctx, rt, op, sources, timelineMaxPages, extra)
	if f != nil {
		return nil, f
	}
	var l *timeline.Layout
	if window {
		l = timeline.NewWindow(timeline.FromRows(rows), bounds["start_ns"], bounds["end_ns"])
	} else {
		l = timeline.New(timeline.FromRows(rows))
	}
	if origin, ok := bounds["origin_ns"]; ok {
		l.SetOrigin(origin)
	}
	l.More = more
	var b bytes.Buffer
	if err := l.WriteSVG(&b, "Slice timeline of "+id[:12]); err != nil {
		return nil, failure.Wrap(err, gen.FailureCodeInternalFailure, "the timeline could not be rendered")
	}
	return b.Bytes(), nil
}

// benchmarkSVG draws the series of benchmark evidence (summarize_benchmarks' measurement
// rows over its sources): medians with benchstat's 95% intervals and the ratio of medians
// to the baseline input: the evidence's own baseline_index when it has one
// (compare_benchmarks), else input 0. Inputs are named by what the manifest holds (the
// projection keeps no file names): role, format and digest prefix.
func benchmarkSVG(ctx context.Context, rt *runtime.Runtime, id string, _ url.Values) ([]byte, *failure.Failure) {
	sources, f := rt.EvidenceSources(id)
	if f != nil {
		return nil, f
	}
	baseline := 0
	var names []string
	raw, _ := json.Marshal(map[string]any{"evidence_id": id})
	if res, f := rt.Call(ctx, "inspect_evidence", raw); f == nil {
		// body.analysis_request.inputs[i] is analysis source i: the input_index of the rows.
		var ev struct {
			Body struct {
				AnalysisRequest struct {
					Inputs []struct {
						Role   string `json:"role"`
						Format string `json:"format"`
						SHA256 string `json:"sha256"`
					} `json:"inputs"`
					Arguments struct {
						BaselineIndex *int `json:"baseline_index"`
					} `json:"arguments"`
				} `json:"analysis_request"`
			} `json:"body"`
		}
		if b, err := json.Marshal(res); err == nil && json.Unmarshal(b, &ev) == nil {
			if ev.Body.AnalysisRequest.Arguments.BaselineIndex != nil {
				baseline = *ev.Body.AnalysisRequest.Arguments.BaselineIndex
			}
			for _, in := range ev.Body.AnalysisRequest.Inputs {
				names = append(names, fmt.Sprintf("%s · %s · %.8s", in.Role, in.Format, in.SHA256))
			}
		}
	}
	rows, more, f := allRows(ctx, rt, "summarize_benchmarks", sources, benchmarkMaxPages)
	if f == nil && more {
		f = failure.New(gen.FailureCodeLimitExceeded, "the benchmark results have more than %d measurements: too many for a chart",
			flameGraphPageSize*benchmarkMaxPages)
	}
	if f != nil {
		return nil, f
	}
	c := benchchart.New(benchchart.FromRows(rows), baseline)
	c.Inputs = names
	var b bytes.Buffer
	if err := c.WriteSVG(&b, "Benchmarks of "+id[:12]); err != nil {
		return nil, failure.Wrap(err, gen.FailureCodeInternalFailure, "the benchmark chart could not be rendered")
	}
	return b.Bytes(), nil
}

// allRows pages through one analysis over sources and returns its table rows, at most
// maxPages pages; more reports that rows remain.
func allRows(ctx context.Context, rt *runtime.Runtime, op string, sources []gen.EvidenceSource, maxPages int, extra ...map[string]any) (rows []map[string]any, more bool, _ *failure.Failure) {
	args := map[string]any{"sources": sources, "page_size": flameGraphPageSize}
	for _, e := range extra {
		for k, v := range e {
			args[k] = v
		}
	}
	raw, _ := json.Marshal(args)
	for range maxPages {
		res, f := rt.AnalyzeEvidence(ctx, op, raw)
		if f != nil {
			return nil, false, f
		}
		b, err := json.Marshal(res)
		if err != nil {
			return nil, false, failure.Unencodable(err)
		}
		var page struct {
			Blocks []struct {
				Type string           `json:"type"`
				Rows []map[string]any `json:"rows"`
			} `json:"blocks"`
			NextPage *struct {
				Arguments json.RawMessage `json:"arguments"`
			} `json:"next_page"`
		}
		if err := json.Unmarshal(b, &page); err != nil {
			return nil, false, failure.Wrap(err, gen.FailureCodeInternalFailure, "the %s result could not be read", op)
		}
		for _, bl := range page.Blocks {
			if bl.Type == "table" {
				rows = append(rows, bl.Rows...)
			}
		}
		if page.NextPage == nil {
			return rows, false, nil
		}
		raw = page.NextPage.Arguments
	}
	return rows, true, nil
}
