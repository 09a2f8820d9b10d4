package runtime

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/testtool"
)

// fakePyperfPython stands in for a python3 that has pyperf, named as such: it answers the
// import probe, and as `-m pyperf command` records its argv (one per line) in
// $FAKE_PYPERF_ARGV and writes a real pyperf JSON document to --output.
const fakePyperfPython = `#!/bin/sh
# A fake python3 with pyperf, for tests.
if [ "$1" = "-I" ]; then exit 0; fi
printf '%s\n' "$@" > "$FAKE_PYPERF_ARGV"
out=""
while [ "$#" -gt 0 ]; do
  if [ "$1" = "--output" ]; then out="$2"; shift 2; else shift; fi
done
cat > "$out" <<'EOF'
{"version": "1.0", "metadata": {"name": "command", "unit": "second", "loops": 4},
 "benchmarks": [{"runs": [{"metadata": {}, "values": [0.001, 0.0012, 0.0011]}]}]}
EOF
`

// TestCapturePyperfMinTimeFakePyperf: min_time reaches pyperf command as --min-time,
// beside the other fields, before the workload's argv (a fake python3: pyperf is not
// installable on this machine; TestCapturePyperfMinTimeReal runs the real one).
func TestCapturePyperfMinTimeFakePyperf(t *testing.T) {
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "python3"), []byte(fakePyperfPython), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	rt := newRuntime(t)
	dir := t.TempDir()
	argvFile := filepath.Join(dir, "argv")
	res, f := call(t, rt, "capture_and_summarize_benchmarks", map[string]any{
		"target":   map[string]any{"argv": []string{"sh", "-c", "exit 0"}, "cwd": dir, "environment": map[string]any{"FAKE_PYPERF_ARGV": argvFile}},
		"provider": map[string]any{"kind": "pyperf", "min_time": 0.25, "values": 5, "name": "nap"}})
	if f != nil {
		t.Fatal(f)
	}
	if cr := res.(*CaptureResult); cr.Status != "complete" || cr.Inputs[0].Format != gen.FormatPyperf {
		t.Fatalf("capture = %s %+v %+v", cr.Status, cr.Inputs, cr.AnalysisFailure)
	}
	b, err := os.ReadFile(argvFile)
	if err != nil {
		t.Fatal(err)
	}
	argv := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	want := []string{"-m", "pyperf", "command", "--quiet", "--output"}
	if len(argv) < len(want) || !slices.Equal(argv[:len(want)], want) {
		t.Errorf("argv = %q", argv)
	}
	for flag, v := range map[string]string{"--min-time": "0.25", "--values": "5", "--processes": "1", "--warmups": "1", "--loops": "0", "--name": "nap"} {
		if i := slices.Index(argv, flag); i < 0 || argv[i+1] != v {
			t.Errorf("argv %q lacks %s %s", argv, flag, v)
		}
	}
	if i := slices.Index(argv, "--"); i < 0 || filepath.Base(argv[i+1]) != "sh" || !slices.Equal(argv[i+2:], []string{"-c", "exit 0"}) {
		t.Errorf("the workload does not follow --: %q", argv)
	}
}

// TestCapturePyperfMinTimeReal runs pyperf command with min_time where python3 has pyperf.
// Only the shape is checked: pyperf's calibration depends on the machine's speed.
func TestCapturePyperfMinTimeReal(t *testing.T) {
	python := testtool.Require(t, "python3")
	if exec.Command(python, "-I", "-c", "import pyperf").Run() != nil {
		t.Skip("the python3 on PATH has no pyperf")
	}
	rt := newRuntime(t)
	res, f := call(t, rt, "capture_and_summarize_benchmarks", map[string]any{
		"target":   map[string]any{"argv": []string{"true"}, "cwd": t.TempDir()},
		"provider": map[string]any{"kind": "pyperf", "min_time": 0.01, "values": 2, "warmups": 0}})
	if f != nil {
		t.Fatal(f)
	}
	cr := res.(*CaptureResult)
	if cr.Status != "complete" || cr.Inputs[0].Format != gen.FormatPyperf || len(tableRows(t, res)) == 0 {
		t.Fatalf("capture = %s %+v %+v", cr.Status, cr.Inputs, cr.AnalysisFailure)
	}
}

// torchBenchmarkWorkload times a small matrix product with flameox_benchmark, the helper
// the benchmark-samples provider puts on PYTHONPATH, and records one manual series.
const torchBenchmarkWorkload = `import torch, flameox_benchmark
a = torch.ones(16, 16)
with flameox_benchmark.recorder() as rec:
    rec.torch_benchmark("matmul", lambda: a @ a, dimensions={"n": 16})
    rec.add("manual", [3, 4], unit="ns")
print(flameox_benchmark.config())
`

// torchPython returns a Python that has torch (the system Python with Debian's
// python3-torch), or skips.
func torchPython(t *testing.T) string {
	t.Helper()
	testtool.Short(t, "runs torch")
	for _, p := range []string{"python3", "/usr/bin/python3"} {
		// find_spec does not import torch (seconds on a loaded machine); the workload does.
		if exe, err := exec.LookPath(p); err == nil && exec.Command(exe, "-c",
			"import importlib.util, sys; sys.exit(importlib.util.find_spec('torch') is None)").Run() == nil {
			return exe
		}
	}
	t.Skip("no Python here has torch")
	return ""
}

// TestCaptureTorchBenchmarkSamples: with torch_benchmark set, the workload's
// flameox_benchmark.torch_benchmark times with torch.utils.benchmark under those settings
// (FLAMEOX_TORCH_BENCHMARK_CONFIG) and writes samples within max_samples, per iteration
// in seconds, with the loop count behind them. Shape only: the timings are real.
func TestCaptureTorchBenchmarkSamples(t *testing.T) {
	python := torchPython(t)
	rt := newRuntime(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "bench.py"), []byte(torchBenchmarkWorkload), 0o644); err != nil {
		t.Fatal(err)
	}
	res, f := call(t, rt, "capture_and_summarize_benchmarks", map[string]any{
		"target": map[string]any{"argv": []string{python, "bench.py"}, "cwd": dir},
		"provider": map[string]any{"kind": "benchmark-samples",
			"torch_benchmark": map[string]any{"min_run_time_seconds": 0.05, "max_samples": 3, "num_threads": 1}},
		"view": "series"})
	if f != nil {
		t.Fatal(f)
	}
	cr := res.(*CaptureResult)
	if cr.Status != "complete" || cr.Inputs[0].Format != gen.FormatSamples {
		t.Fatalf("capture = %s %+v %+v", cr.Status, cr.Inputs, cr.AnalysisFailure)
	}
	rows := tableRows(t, res)
	series := map[string]map[string]any{}
	for _, r := range rows {
		name, _ := r["benchmark"].(string)
		series[name] = r
	}
	mm, manual := series["matmul"], series["manual"]
	if mm == nil || manual == nil {
		t.Fatalf("series = %v", rows)
	}
	if n, _ := mm["value_count"].(float64); n < 1 || n > 3 {
		t.Errorf("matmul has %v samples; max_samples is 3: %v", mm["value_count"], mm)
	}
	if mm["unit"] != "ns" || mm["median"].(float64) <= 0 || mm["loop_count"].(float64) < 1 || mm["dimensions"].(map[string]any)["n"] != "16" {
		t.Errorf("matmul = %v", mm)
	}
	if manual["value_count"] != 2.0 {
		t.Errorf("manual = %v", manual)
	}
}
