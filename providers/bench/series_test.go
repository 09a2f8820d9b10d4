package bench

import (
	"context"
	"encoding/json"
	"math"
	"os/exec"
	"testing"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/testtool"
	"github.com/flameox/flameox/providers"
	"github.com/flameox/flameox/providers/providerstest"
)

// seriesRows summarizes in with view series and decodes every row.
func seriesRows(t *testing.T, in []providers.Input) (*providers.Analysis, []gen.BenchmarkSeriesRow) {
	t.Helper()
	a, err := providerstest.Analyze(t, summarize, &gen.BenchmarkSummaryFields{View: "series"}, in...)
	if err != nil {
		t.Fatal(err)
	}
	return a, providerstest.Decode[gen.BenchmarkSeriesRow](t, providerstest.Rows(t, a.Rows, 1000))
}

// seriesTruth groups the values of a pyperf suite or an NVBench --json document into
// series with Python's json and statistics modules, in first-seen order: identity
// (benchmark, unit, dimensions, loop count), value and warmup counts, then mean, median,
// sample stdev, min and max of the values (null without values; stdev null under two).
// Durations are whole nanoseconds (half away from zero); pyperf warmups are counted in
// the series of their benchmark.
const seriesTruth = `
import json, math, statistics, sys
d = json.load(open(sys.argv[1]))
series, warm = {}, {}
def ns(v):
    return math.floor(v * 1e9 + 0.5)
def add(key, v):
    series.setdefault(key, []).append(v)
if sys.argv[2] == "nvbench":
    for b in d["benchmarks"]:
        for s in b["states"]:
            if s.get("is_skipped"):
                continue
            dims = tuple(sorted((a["name"], str(a["value"])) for a in (s.get("axis_values") or [])))
            for m in s.get("summaries") or []:
                for x in m["data"]:
                    if x["name"] != "value":
                        continue
                    v, unit = float(x["value"]), m.get("hint") or ""
                    if unit == "duration":
                        v, unit = ns(v), "ns"
                    elif unit == "bytes":
                        v = math.floor(v + 0.5)
                    add((b["name"] + ":" + m["tag"], unit, dims, 1), v)
else:
    meta = d.get("metadata", {})
    for b in d["benchmarks"]:
        bm = b.get("metadata", {})
        name = bm.get("name") or meta.get("name")
        for r in b["runs"]:
            rm = r.get("metadata", {})
            loops = rm.get("loops") or bm.get("loops") or meta.get("loops") or 1
            inner = rm.get("inner_loops") or bm.get("inner_loops") or meta.get("inner_loops") or 1
            assert (rm.get("unit") or bm.get("unit") or meta.get("unit") or "second") == "second"
            for v in r.get("values", []):
                add((name, "ns", (), loops * inner), ns(v))
            warm[name] = warm.get(name, 0) + len(r.get("warmups", []))
out = []
for (name, unit, dims, loops), v in series.items():
    w = warm.pop(name, 0)
    out.append([name, unit, dict(dims), loops, len(v), w, statistics.mean(v), statistics.median(v),
                statistics.stdev(v) if len(v) > 1 else None, min(v), max(v)])
json.dump(out, sys.stdout)
`

// TestSeriesRowsMatchPython checks every series row of the corpus's NVBench export (543
// series) and a pyperf suite against seriesTruth's reading of the same file: same
// series, same order, same figures.
func TestSeriesRowsMatchPython(t *testing.T) {
	python := testtool.Require(t, "python3")
	for _, c := range []struct {
		name   string
		format gen.Format
		series int
	}{{"nvbench__test_ref.json", gen.FormatNvbench, 543}, {"pyperf__telco.json", gen.FormatPyperf, 1}} {
		t.Run(c.name, func(t *testing.T) {
			path := corpus(t, c.name)
			out, err := exec.Command(python, "-c", seriesTruth, path, string(c.format)).Output()
			if err != nil {
				t.Fatalf("python: %v", err)
			}
			var want [][11]any
			if err := json.Unmarshal(out, &want); err != nil {
				t.Fatal(err)
			}
			a, rows := seriesRows(t, []providers.Input{providerstest.Input(t, path, c.format)})
			if len(want) != c.series || len(rows) != len(want) || a.Metrics["series_count"] != len(want) {
				t.Fatalf("%d series rows, series_count %v; Python has %d series, want %d", len(rows), a.Metrics["series_count"], len(want), c.series)
			}
			for i, r := range rows {
				w := want[i]
				dims, _ := json.Marshal(r.Dimensions)
				wantDims, _ := json.Marshal(w[2])
				if r.Benchmark != w[0] || r.Unit != w[1] || string(dims) != string(wantDims) || float64(r.LoopCount) != w[3] ||
					float64(r.ValueCount) != w[4] || float64(r.WarmupCount) != w[5] || len(r.InputIndices) != 1 || r.InputIndices[0] != 0 {
					t.Fatalf("row %d: %s %s %s loops %d, %d values %d warmups from %v; Python %v",
						i, r.Benchmark, r.Unit, dims, r.LoopCount, r.ValueCount, r.WarmupCount, r.InputIndices, w[:6])
				}
				for j, got := range []*float64{r.Mean, r.Median, r.Stdev, r.Min, r.Max} {
					wv, ok := w[6+j].(float64)
					if got == nil || !ok {
						if got != nil || ok {
							t.Errorf("row %d (%s) figure %d: %v, Python %v", i, r.Benchmark, j, got, w[6+j])
						}
						continue
					}
					if math.Abs(*got-wv) > 1e-9*math.Max(1, math.Abs(wv)) {
						t.Errorf("row %d (%s) figure %d: %v, Python %v", i, r.Benchmark, j, *got, wv)
					}
				}
			}
		})
	}
}

// TestSummaryViews pins what each view of summarize_benchmarks answers for the NVBench
// export: view measurements (the default) one row per value, view series one row per
// series; neither carries per-series data in its metrics, which stay under 4 KB (2.7 KB,
// most of it the 57 benchmark names).
func TestSummaryViews(t *testing.T) {
	in := providerstest.Input(t, corpus(t, "nvbench__test_ref.json"), gen.FormatNvbench)
	ctx := context.Background()
	for _, view := range []string{"", "measurements", "series"} {
		fields := &gen.BenchmarkSummaryFields{View: view}
		fields.ApplyDefaults()
		a, err := providerstest.Analyze(t, summarize, fields, in)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(a.Metrics)
		if _, ok := a.Metrics["series"]; ok || len(b) > 4096 || a.Metrics["series_count"] != 543 {
			t.Errorf("view %q: metrics are %d bytes: %s", view, len(b), b)
		}
		page, err := a.Rows.Page(ctx, 0, 1, nil)
		if err != nil {
			t.Fatal(err)
		}
		var row map[string]any
		json.Unmarshal(page.Rows[0], &row)
		_, measurement := row["value_index"]
		_, series := row["median"]
		if measurement != (view != "series") || series != (view == "series") || page.Observed != 2 {
			t.Errorf("view %q: first row %s", view, page.Rows[0])
		}
	}
}
