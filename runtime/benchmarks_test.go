package runtime

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/testtool"
)

func pathSource(p string) map[string]any { return map[string]any{"kind": "path", "path": p} }

// TestScalingOfAQuadraticGoBenchmark runs `go test -bench` on a function whose cost grows
// as n^2 and fits its sub-benchmarks n=...: real timings vary with the machine's load, so
// only the shape is checked (four points, estimated, cost growing with n); the fit itself
// is checked exactly in TestScalingFitIsExactOnPowerLaws.
func TestScalingOfAQuadraticGoBenchmark(t *testing.T) {
	gobin := testtool.Require(t, "go")
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/quad\n\ngo 1.26\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "quad_test.go"), []byte(`package quad

import (
	"strconv"
	"testing"
)

var sink int

//go:noinline
func pairs(n int) int {
	s := 0
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			s += (i ^ j) & 1
		}
	}
	return s
}

func BenchmarkPairs(b *testing.B) {
	for _, n := range []int{250, 500, 1000, 2000} {
		b.Run("n="+strconv.Itoa(n), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				sink += pairs(n)
			}
		})
	}
}
`), 0o644)
	cmd := exec.Command(gobin, "test", "-run", "^$", "-bench", "Pairs", "-benchtime", "200ms", "-count", "2", ".")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go test -bench: %v\n%s", err, out)
	}
	results := filepath.Join(dir, "bench.txt")
	os.WriteFile(results, out, 0o644)
	rt := newRuntime(t)
	res, f := call(t, rt, "analyze_benchmark_scaling", map[string]any{"sources": []any{pathSource(results)},
		"input_dimension": "n", "metric": "BenchmarkPairs"})
	if f != nil {
		t.Fatal(f)
	}
	if res.(*Result).Inputs[0].Format != gen.FormatGoBench {
		t.Errorf("format = %s", res.(*Result).Inputs[0].Format)
	}
	var fit map[string]any
	for _, r := range tableRows(t, res) {
		if r["unit"] == "ns" {
			fit = r
		}
	}
	if fit == nil || fit["status"] != "estimated" || fit["exponent"].(float64) <= 0 || fit["point_count"] != 4.0 {
		t.Fatalf("fit = %v\n%s", fit, out)
	}
	// One input size cannot be fitted.
	single := filepath.Join(dir, "single.txt")
	os.WriteFile(single, []byte("BenchmarkPairs/n=250-2   1000   62500 ns/op\n"), 0o644)
	res, f = call(t, rt, "analyze_benchmark_scaling", map[string]any{"sources": []any{pathSource(single)}, "input_dimension": "n"})
	if f != nil {
		t.Fatal(f)
	}
	rows := tableRows(t, res)
	if len(rows) != 1 || rows[0]["status"] != "inconclusive" || rows[0]["reason"] != "fewer than two distinct positive input values" {
		t.Errorf("single size: %v", rows)
	}
}

// TestScalingFitIsExactOnPowerLaws fits Go benchmark results whose values follow exact
// power laws: the exponent, coefficient and r_squared are those of the law.
func TestScalingFitIsExactOnPowerLaws(t *testing.T) {
	var text strings.Builder
	text.WriteString("goos: linux\npkg: example.com/laws\n")
	for _, n := range []float64{100, 200, 400, 800, 1600} {
		fmt.Fprintf(&text, "BenchmarkQuad/n=%g-2   1000   %g ns/op\n", n, 3*n*n)
		fmt.Fprintf(&text, "BenchmarkRoot/n=%g-2   1000   %g ns/op\n", n, 5*math.Pow(n, 1.5))
	}
	p := filepath.Join(t.TempDir(), "laws.txt")
	os.WriteFile(p, []byte(text.String()), 0o644)
	res, f := call(t, newRuntime(t), "analyze_benchmark_scaling", map[string]any{"sources": []any{pathSource(p)}, "input_dimension": "n"})
	if f != nil {
		t.Fatal(f)
	}
	want := map[string][2]float64{"BenchmarkQuad": {2, 3}, "BenchmarkRoot": {1.5, 5}}
	rows := tableRows(t, res)
	if len(rows) != 2 {
		t.Fatalf("rows = %v", rows)
	}
	for _, r := range rows {
		w := want[r["benchmark"].(string)]
		if r["status"] != "estimated" || r["point_count"] != 5.0 || math.Abs(r["exponent"].(float64)-w[0]) > 1e-9 ||
			math.Abs(r["coefficient"].(float64)-w[1]) > 1e-6 || math.Abs(r["r_squared"].(float64)-1) > 1e-12 {
			t.Errorf("%s: fit = %v, want exponent %v coefficient %v", r["benchmark"], r, w[0], w[1])
		}
	}
}

// TestCompareTwoHyperfineRuns compares two real hyperfine runs of commands of different
// speed: the direction is right and the ratio is hyperfine's own means divided.
func TestCompareTwoHyperfineRuns(t *testing.T) {
	hf := testtool.Require(t, "hyperfine")
	dir := t.TempDir()
	var means []float64
	var files []any
	for i, d := range []string{"0.02", "0.08"} {
		p := filepath.Join(dir, "run"+string(rune('a'+i))+".json")
		if out, err := exec.Command(hf, "--shell=none", "--style", "none", "--runs", "5", "--warmup", "1", "--command-name", "nap",
			"--export-json", p, "sleep "+d).CombinedOutput(); err != nil {
			t.Fatalf("hyperfine: %v\n%s", err, out)
		}
		var doc struct {
			Results []struct{ Mean float64 } `json:"results"`
		}
		b, _ := os.ReadFile(p)
		json.Unmarshal(b, &doc)
		means = append(means, doc.Results[0].Mean)
		files = append(files, pathSource(p))
	}
	rt := newRuntime(t)
	res, f := call(t, rt, "compare_benchmarks", map[string]any{"sources": files})
	if f != nil {
		t.Fatal(f)
	}
	rows := tableRows(t, res)
	if len(rows) != 1 {
		t.Fatalf("rows = %v", rows)
	}
	ratio := rows[0]["ratio"].(float64)
	want := means[1] / means[0]
	if ratio <= 1 || math.Abs(ratio-want)/want > 1e-6 {
		t.Errorf("ratio %v, hyperfine's means give %v", ratio, want)
	}
	if rows[0]["benchmark"] != "nap" || rows[0]["candidate_index"] != 1.0 {
		t.Errorf("row = %v", rows[0])
	}
	// The other way round, the candidate is faster.
	res, _ = call(t, rt, "compare_benchmarks", map[string]any{"sources": files, "baseline_index": 1})
	if r := tableRows(t, res)[0]["ratio"].(float64); r >= 1 {
		t.Errorf("reversed ratio %v", r)
	}
}

func TestCompareRules(t *testing.T) {
	rt := newRuntime(t)
	dir := t.TempDir()
	write := func(name, doc string) map[string]any {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(doc), 0o644)
		return pathSource(p)
	}
	a := write("a.json", `{"schema":"flameox.benchmark-samples.v1","benchmarks":[{"name":"x","unit":"s","samples":[1,2]},{"name":"y","unit":"s","samples":[1]}]}`)
	b := write("b.json", `{"schema":"flameox.benchmark-samples.v1","benchmarks":[{"name":"x","unit":"s","samples":[3]}]}`)
	huge := write("c.json", `{"schema":"flameox.benchmark-samples.v1","benchmarks":[{"name":"x","unit":"s","samples":[1e308]}]}`)
	bad := write("d.json", `{"schema":"flameox.benchmark-samples.v1","benchmarks":[{"name":"x","unit":"s","samples":["1"]}]}`)
	res, f := call(t, rt, "compare_benchmarks", map[string]any{"sources": []any{a, b}})
	if f != nil {
		t.Fatal(f)
	}
	r := res.(*Result)
	m := r.Blocks[0].(MetricsBlock).Values
	if m["unmatched_identity_count"] != 1 || tableRows(t, res)[0]["ratio"] != 2.0 {
		t.Errorf("metrics %v rows %v", m, tableRows(t, res))
	}
	for _, tt := range []struct {
		name string
		args map[string]any
		code gen.FailureCode
	}{
		{"baseline index", map[string]any{"sources": []any{a, b}, "baseline_index": 2}, gen.FailureCodeInvalidInput},
		{"one source", map[string]any{"sources": []any{a}}, gen.FailureCodeInvalidInput},
		// 1e308 s overflows float64 in nanoseconds: the decoder refuses it.
		{"non-finite", map[string]any{"sources": []any{a, huge}}, gen.FailureCodeDecodeFailure},
		{"schema", map[string]any{"sources": []any{a, bad}}, gen.FailureCodeDecodeFailure},
	} {
		if _, f := call(t, rt, "compare_benchmarks", tt.args); f == nil || f.Code != tt.code {
			t.Errorf("%s: got %v, want %s", tt.name, f, tt.code)
		}
	}
}

// samplesWorkload writes a benchmark-samples document for n = 150..1200 whose samples
// follow the cost model 7 n^2 ns exactly (one warmup far off the model, then three samples
// per size), so that the fit is deterministic on any machine.
const samplesWorkload = `import json, os
bench = []
for n in (150, 300, 600, 1200):
    bench.append({"name": "pairs", "unit": "ns", "dimensions": {"n": n}, "warmup_samples": [1],
                  "samples": [7 * n * n for _ in range(3)]})
json.dump({"schema": "flameox.benchmark-samples.v1", "producer": {"name": "samples-workload"}, "benchmarks": bench},
          open(os.environ["FLAMEOX_BENCHMARK_OUTPUT"], "w"))
`

func TestCaptureBenchmarkSamplesScaling(t *testing.T) {
	testtool.Require(t, "python3")
	rt := newRuntime(t)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "bench.py"), []byte(samplesWorkload), 0o644)
	res, f := call(t, rt, "capture_and_analyze_benchmark_scaling", map[string]any{
		"target": map[string]any{"argv": []string{"python3", "bench.py"}, "cwd": dir}, "provider": map[string]any{"kind": "benchmark-samples"},
		"input_dimension": "n"})
	if f != nil {
		t.Fatal(f)
	}
	cr := res.(*CaptureResult)
	if cr.Status != "complete" || cr.Inputs[0].Format != gen.FormatSamples || cr.Inputs[0].Role != "capture-0001/benchmark" {
		t.Fatalf("capture = %s %+v %+v", cr.Status, cr.Inputs, cr.AnalysisFailure)
	}
	fit := tableRows(t, res)[0]
	if math.Abs(fit["exponent"].(float64)-2) > 1e-9 || math.Abs(fit["coefficient"].(float64)-7) > 1e-6 || fit["point_count"] != 4.0 {
		t.Errorf("fit = %v; warmups must not enter the fit", fit)
	}
}

// fakeNVBench stands in for an NVBench executable, named as such: it honours --jsonbin
// by writing a real NVBench JSON document there, without per-sample files (a run whose
// states recorded none); nvbench_capture_test.go writes them.
const fakeNVBench = `#!/bin/sh
out=""
while [ "$#" -gt 0 ]; do
  if [ "$1" = "--jsonbin" ]; then out="$2"; shift 2; else shift; fi
done
cat > "$out" <<'DOC'
{"benchmarks":[{"name":"copy","states":[{"name":"T=I32","axis_values":[{"name":"T","type":"type","value":"I32"}],
"summaries":[{"tag":"nv/cold/time/gpu/mean","hint":"duration","data":[{"name":"value","type":"float64","value":"0.000125"}]}]}]}]}
DOC
`

func TestCaptureNVBenchWithFakeExecutable(t *testing.T) {
	rt := newRuntime(t)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "fake-nvbench"), []byte(fakeNVBench), 0o755)
	res, f := call(t, rt, "capture_and_summarize_benchmarks", map[string]any{
		"target": map[string]any{"argv": []string{"./fake-nvbench"}, "cwd": dir}, "provider": map[string]any{"kind": "nvbench"}})
	if f != nil {
		t.Fatal(f)
	}
	rows := tableRows(t, res)
	if len(rows) != 1 || rows[0]["value_int"] != 125000.0 || rows[0]["benchmark"] != "copy:nv/cold/time/gpu/mean" {
		t.Errorf("rows = %v", rows)
	}
}

func TestCapturePyperfUnavailable(t *testing.T) {
	python := testtool.Require(t, "python3")
	if exec.Command(python, "-c", "import pyperf").Run() == nil {
		t.Skip("pyperf is installed here; the unavailable state cannot be shown")
	}
	rt := newRuntime(t)
	_, f := call(t, rt, "capture_and_summarize_benchmarks", map[string]any{
		"target": map[string]any{"argv": []string{"true"}, "cwd": t.TempDir()}, "provider": map[string]any{"kind": "pyperf"}})
	if f == nil || f.Code != gen.FailureCodeUnavailableCapability || f.Details["missing_module"] != "pyperf" {
		t.Fatalf("got %v", f)
	}
	if r, ok := f.Recoverable(); !ok || r.Status != "unavailable" || r.NextAction.OperatorAction == nil {
		t.Errorf("recoverable = %+v", r)
	}
}

// experimentSamples is a benchmark-samples workload whose wall time is the case's SLEEP.
const experimentSamples = `import json, os, sys, time
time.sleep(float(os.environ["SLEEP"]))
json.dump({"schema": "flameox.benchmark-samples.v1", "benchmarks": [{"name": "nap", "unit": "s", "samples": [float(os.environ["SLEEP"])]}]},
          open(os.environ["FLAMEOX_BENCHMARK_OUTPUT"], "w"))
`

func TestBenchmarkExperimentCases(t *testing.T) {
	testtool.Require(t, "python3")
	rt := newRuntime(t)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "nap.py"), []byte(experimentSamples), 0o644)
	res, f := call(t, rt, "capture_and_summarize_benchmarks", map[string]any{
		"target":   map[string]any{"argv": []string{"python3", "nap.py"}, "cwd": dir},
		"provider": map[string]any{"kind": "benchmark-samples"},
		"experiment": map[string]any{"cases": []any{
			map[string]any{"name": "baseline", "environment": map[string]any{"SLEEP": "0.01"}},
			map[string]any{"name": "candidate", "environment": map[string]any{"SLEEP": "0.25"}}},
			"blocks": 3, "seed": 11, "practical_threshold": 50e6}})
	if f != nil {
		t.Fatal(f)
	}
	cr := res.(*CaptureResult)
	row := experimentRow(t, cr)
	// Real timings, which a loaded machine can reorder: the shape only (the rules are
	// checked on fixed inputs in TestExperimentComparisonRules).
	if _, ok := row["estimate"].(float64); !ok || row["point_estimate_classification"] == nil || len(cr.Inputs) != 6 {
		t.Fatalf("row %v inputs %d", row, len(cr.Inputs))
	}
	// The experiment summary leads; the summary of the six captured documents follows.
	if m := cr.Blocks[1].(MetricsBlock).Values; m["measurement_count"] != 6 || m["input_count"] != 6 || m["series_count"] != 2 {
		t.Errorf("summary metrics = %v; baseline and candidate must be two series", m)
	}
	// Every measurement row carries its case (as the variant) and its block.
	table := cr.Blocks[len(cr.Blocks)-1].(TableBlock)
	seen := map[string]bool{}
	for _, raw := range table.Rows {
		var m map[string]any
		json.Unmarshal(raw, &m)
		seen[fmt.Sprint(m["variant"], "/", m["block"])] = true
	}
	if len(seen) != 6 || !seen["baseline/1"] || !seen["candidate/3"] {
		t.Errorf("rows carry case/block %v", seen)
	}
}

// TestBenchmarkSummaryPagesAreSmall summarizes the corpus's NVBench export (543 series) at
// the server's defaults: the first page of either view is a metrics block of a few KB (no
// per-series list, decision 0045) and a page of rows; an unknown view is refused at its
// field with the accepted values.
func TestBenchmarkSummaryPagesAreSmall(t *testing.T) {
	rt := newRuntime(t)
	src := []any{map[string]any{"kind": "path", "path": testtool.Corpus(t, "nvbench__test_ref.json"), "format": "nvbench"}}
	for _, view := range []string{"", "measurements", "series"} {
		args := map[string]any{"sources": src}
		if view != "" {
			args["view"] = view
		}
		res, f := call(t, rt, "summarize_benchmarks", args)
		if f != nil {
			t.Fatalf("view %q: %v", view, f)
		}
		r := res.(*Result)
		block, ok := r.Blocks[0].(MetricsBlock)
		if !ok {
			t.Fatalf("view %q: the first block is %T", view, r.Blocks[0])
		}
		metrics, _ := json.Marshal(block)
		whole, _ := json.Marshal(r)
		rows := tableRows(t, r)
		_, isSeries := rows[0]["median"]
		if len(metrics) > 4096 || strings.Contains(string(metrics), `"series":`) || len(rows) == 0 || isSeries != (view == "series") {
			t.Errorf("view %q: metrics block %d bytes, %d rows (series rows %v)", view, len(metrics), len(rows), isSeries)
		}
		t.Logf("view %q: metrics block %d bytes, result %d bytes, %d rows", view, len(metrics), len(whole), len(rows))
	}
	_, f := call(t, rt, "summarize_benchmarks", map[string]any{"sources": src, "view": "serie"})
	if f == nil || f.Code != gen.FailureCodeInvalidInput || mustJSON(f.FieldPath) != `["view"]` || strings.Join(f.AcceptedValues, ",") != "measurements,series" {
		t.Errorf("unknown view: %+v", f)
	}
}

// TestCaptureArtifactIsBoundedByMaxOutputBytes: a collector output (here the benchmark
// document the workload writes to FLAMEOX_BENCHMARK_OUTPUT) may not grow past
// limits.max_output_bytes (issue 40, item 7: "collector output files bounded by
// max_output_bytes"): the run is stopped with writable_limit_exceeded, and the capture is a
// partial result that says which bound to raise.
func TestCaptureArtifactIsBoundedByMaxOutputBytes(t *testing.T) {
	testtool.Require(t, "sh")
	rt := newRuntime(t)
	dir := t.TempDir()
	// Two MiB into the artifact, in a workload that would otherwise run for a minute.
	script := `head -c 2097152 /dev/zero > "$FLAMEOX_BENCHMARK_OUTPUT"; sleep 60`
	res, f := call(t, rt, "capture_and_summarize_benchmarks", map[string]any{
		"target": map[string]any{"argv": []string{"sh", "-c", script}, "cwd": dir}, "provider": map[string]any{"kind": "benchmark-samples"},
		"limits": map[string]any{"max_output_bytes": 1 << 20}})
	if f != nil {
		t.Fatal(f)
	}
	cr := res.(*CaptureResult)
	ex := cr.Capture.Executions[0]
	if cr.Status != "partial" || ex.Limit == nil || ex.Limit.Kind != "writable_limit_exceeded" || ex.Limit.Configured != 1<<20 {
		t.Fatalf("capture = %s, execution %+v", cr.Status, ex)
	}
	if fix := cr.Fix(); fix == nil || fmt.Sprint(fix.FieldPath) != "[limits max_output_bytes]" {
		t.Errorf("fix = %+v", fix)
	}
}
