package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/testtool"
	"github.com/flameox/flameox/providers"
)

// Pyperformance-like suites: 84 benchmarks, each a calibration run of four warmups and
// 20 worker runs of one warmup and three values, as pyperf writes them. 32 suites hold
// 161,280 values and 64,512 warmups.
const (
	suiteCount      = 32
	suiteBenchmarks = 84
	suiteRuns       = 20
	suiteValues     = 3
)

// suites writes (once) the 32 suites and returns their paths.
func suites(tb testing.TB) []string {
	dir := filepath.Join(testtool.BenchDir(), fmt.Sprintf("flameox-bench-pyperf-%dx%d", suiteCount, suiteBenchmarks))
	var paths []string
	for s := 0; s < suiteCount; s++ {
		paths = append(paths, filepath.Join(dir, fmt.Sprintf("suite-%02d.json", s)))
	}
	if _, err := os.Stat(paths[len(paths)-1]); err == nil {
		return paths
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	for s, p := range paths {
		if err := os.WriteFile(p, []byte(suiteJSON(s)), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	return paths
}

// suiteJSON is suite s: pyperf JSON version 1.0 with the suite, benchmark and run
// metadata pyperf records.
func suiteJSON(s int) string {
	r := rand.New(rand.NewPCG(uint64(s), 7))
	f := func(x float64) string { return fmt.Sprintf("%.17g", x) }
	var benches []string
	for bi := 0; bi < suiteBenchmarks; bi++ {
		base := 1e-4 * float64(1+bi%17) * (1 + 0.01*float64(s%5))
		loops := 1 << (bi % 12)
		var runs []string
		var cal []string
		for l := 1; l <= 8; l *= 2 {
			cal = append(cal, fmt.Sprintf("[%d,%s]", l, f(base*(1+r.Float64()*0.1))))
		}
		runs = append(runs, fmt.Sprintf(`{"metadata":{"calibrate_loops":%d,"date":"2026-11-30 10:%02d:00.%06d","duration":%s,"load_avg_1min":%s,"mem_max_rss":%d,"runnable_threads":1,"uptime":%s},"warmups":[%s]}`,
			loops, bi%60, r.IntN(1000000), f(r.Float64()), f(r.Float64()*2), 20000000+r.IntN(1000000), f(100000+r.Float64()*1000), strings.Join(cal, ",")))
		for run := 0; run < suiteRuns; run++ {
			vals := make([]string, suiteValues)
			for v := range vals {
				vals[v] = f(base * (1 + r.NormFloat64()*0.02))
			}
			runs = append(runs, fmt.Sprintf(`{"metadata":{"date":"2026-11-30 10:%02d:%02d.%06d","duration":%s,"load_avg_1min":%s,"mem_max_rss":%d,"runnable_threads":1,"uptime":%s},"warmups":[[%d,%s]],"values":[%s]}`,
				bi%60, run, r.IntN(1000000), f(r.Float64()), f(r.Float64()*2), 20000000+r.IntN(1000000), f(100000+r.Float64()*1000),
				loops, f(base*1.05), strings.Join(vals, ",")))
		}
		benches = append(benches, fmt.Sprintf(`{"metadata":{"name":"bench_%02d","description":"benchmark %d","loops":%d,"tags":["apps"],"unit":"second"},"runs":[%s]}`,
			bi, bi, loops, strings.Join(runs, ",")))
	}
	return fmt.Sprintf(`{"version":"1.0","metadata":{"aslr":"Full randomization","boot_time":"2026-11-29 08:00:00","cpu_count":2,"cpu_model_name":"Intel(R) Xeon(R) Processor @ 2.80GHz","hostname":"bench","perf_version":"2.8.0","platform":"Linux-6.1-x86_64-with-glibc2.36","python_cflags":"-O3","python_executable":"/usr/bin/python3","python_implementation":"cpython","python_version":"3.11.7 (64-bit)","timer":"clock_gettime(CLOCK_MONOTONIC), resolution: 1.00 ns"},"benchmarks":[%s]}`,
		strings.Join(benches, ","))
}

// pythonSuites is the same work in Python's json and statistics: a summary pools every
// suite's values per benchmark (count, mean, median, stdev, min, max, warmups); a
// comparison takes each suite's mean per benchmark and its ratio to the first suite's.
// It prints the figures as JSON.
const pythonSuites = `
import json, statistics, sys
mode, paths = sys.argv[1], sys.argv[2:]
if mode == "summarize":
    series, warm = {}, {}
    for p in paths:
        with open(p) as f:
            d = json.load(f)
        for b in d["benchmarks"]:
            name = b["metadata"]["name"]
            vals = series.setdefault(name, [])
            for r in b["runs"]:
                vals.extend(r.get("values", []))
                warm[name] = warm.get(name, 0) + len(r.get("warmups", []))
    out = {n: [len(v), warm[n], statistics.mean(v), statistics.median(v), statistics.stdev(v), min(v), max(v)] for n, v in series.items()}
else:
    means = []
    for p in paths:
        with open(p) as f:
            d = json.load(f)
        means.append({b["metadata"]["name"]: statistics.mean([v for r in b["runs"] for v in r.get("values", [])]) for b in d["benchmarks"]})
    out = {n: [m[n] / means[0][n] for m in means[1:]] for n in means[0]}
print(json.dumps(out))
`

// benchChildEnv names the operation and inputs a re-executed test binary runs.
const benchChildEnv = "FLAMEOX_BENCH_BENCH_CHILD"

func TestMain(m *testing.M) {
	testtool.RunChild(benchChildEnv, func(spec string) error {
		op, paths, _ := strings.Cut(spec, ":")
		return firstPage(op, strings.Split(paths, ":"))
	})
	os.Exit(m.Run())
}

// firstPage runs summarize_benchmarks or compare_benchmarks on paths and encodes the
// first page of 100 rows.
func firstPage(op string, paths []string) error {
	var in []providers.Input
	for i, p := range paths {
		in = append(in, providers.Input{Index: i, Path: p, Format: gen.FormatPyperf})
	}
	ctx := context.Background()
	var a *providers.Analysis
	var err error
	if op == "summarize" {
		a, err = summarize(ctx, &providers.Request[gen.BenchmarkSummaryFields]{Fields: &gen.BenchmarkSummaryFields{View: "measurements"}, Inputs: in})
	} else {
		a, err = compare(ctx, &providers.Request[gen.CompareFields]{Fields: &gen.CompareFields{}, Inputs: in})
	}
	if err != nil {
		return err
	}
	page, err := a.Rows.Page(ctx, 0, 100, nil)
	if err != nil {
		return err
	}
	if len(page.Rows) != 100 {
		return fmt.Errorf("%d rows", len(page.Rows))
	}
	return nil
}

// BenchmarkSuites summarizes and compares the 32 suites (first page of 100 rows) beside
// Python's json and statistics computing the same figures from the same files.
func BenchmarkSuites(b *testing.B) {
	python := testtool.Require(b, "python3")
	paths := suites(b)
	var size int64
	for _, p := range paths {
		st, _ := os.Stat(p)
		size += st.Size()
	}
	for _, op := range []string{"summarize", "compare"} {
		b.Run(op, func(b *testing.B) {
			testtool.Compared{Run: func() error { return firstPage(op, paths) }, ChildEnv: benchChildEnv,
				ChildSpec: op + ":" + strings.Join(paths, ":"),
				Reference: exec.Command(python, append([]string{"-c", pythonSuites, op}, paths...)...), Name: "python"}.Bench(b)
			b.ReportMetric(float64(size)/1e6, "input-MB")
		})
	}
}
