package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/prepare"
	"github.com/flameox/flameox/internal/stats"
	"github.com/flameox/flameox/providers"
)

// Register adds summarize_benchmarks, analyze_benchmark_scaling and compare_benchmarks,
// the benchmark-samples, pyperf, nvbench and hyperfine capture providers, the
// benchmark format detectors and NVBench's record.
func Register(r *providers.Registry) {
	r.Analyzer(providers.Analyze(gen.OperationNameSummarizeBenchmarks, summarize))
	r.Analyzer(providers.Analyze(gen.OperationNameAnalyzeBenchmarkScaling, scaling))
	r.Analyzer(providers.Analyze(gen.OperationNameCompareBenchmarks, compare))
	for _, c := range collectors {
		r.Collector(c)
	}
	for _, d := range detectors {
		r.Detector(d)
	}
	r.Tool(nvbenchTool)
}

// nvbenchTool is NVBench's record (decision 0068): a library the benchmark is built
// with, whose JSON is read natively.
var nvbenchTool = prepare.Tool{ID: gen.PreparableProviderNvbench, Class: prepare.BuiltIn,
	Note: "NVBench is a C++ library: build the benchmark with it (github.com/NVIDIA/nvbench); Flameox runs the benchmark executable you name and reads its JSON natively."}

// goBenchHead recognizes Go benchmark output: configuration lines or a result line.
var goBenchHead = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?m)^(goos: |goarch: |pkg: |Benchmark\S*\s+\d+\s+[0-9.]+ \S+)`)
})

// jsonMarkers detects a JSON document by keys near its start.
func jsonMarkers(all ...string) func(string, []byte) bool {
	return func(_ string, head []byte) bool {
		for _, m := range all {
			if !bytes.Contains(head, []byte(m)) {
				return false
			}
		}
		return true
	}
}

var detectors = []providers.Detector{
	{Format: gen.FormatSamples, Container: gen.FormatJSON, Match: jsonMarkers(`"flameox.benchmark-samples.v1"`)},
	{Format: gen.FormatPyperf, Container: gen.FormatJSON, Match: func(name string, head []byte) bool {
		return jsonMarkers(`"benchmarks"`, `"runs"`)(name, head) || jsonMarkers(`"benchmarks"`, `"version"`)(name, head)
	}},
	{Format: gen.FormatHyperfine, Container: gen.FormatJSON, Match: jsonMarkers(`"results"`, `"command"`)},
	{Format: gen.FormatNvbench, Container: gen.FormatJSON, Match: jsonMarkers(`"benchmarks"`, `"states"`)},
	// The directory nvbench --jsonbin X.json writes: X.json beside X.json-bin/ (decision 0058).
	{Format: gen.FormatNvbench, Directory: isNVBenchDirNames},
	{Format: gen.FormatGoBench, Container: gen.FormatText, Match: func(_ string, head []byte) bool { return goBenchHead().Match(head) }},
}

// providerIDs names the reader of each benchmark format.
var providerIDs = map[gen.Format]string{gen.FormatPyperf: "pyperf", gen.FormatSamples: "benchmark-samples",
	gen.FormatNvbench: "nvbench", gen.FormatHyperfine: "hyperfine", gen.FormatGoBench: "go-bench"}

// provider is the provider identity of a benchmark result: the reader, or benchmarks
// when the sources are of several formats.
func provider(in []providers.Input) gen.Provider {
	id := providerIDs[in[0].Format]
	for _, r := range in[1:] {
		if providerIDs[r.Format] != id {
			id = "benchmarks"
		}
	}
	return gen.Provider{ID: id}
}

// decodeAll decodes every source, handing each measurement to emit, bound by
// MaxMeasurements overall; it returns the producers the sources name and the
// limitations of what a source holds but could not be read.
func decodeAll(ctx context.Context, in []providers.Input, limits gen.EffectiveLimits, emit emitter) ([]string, []string, error) {
	var producers, limitations []string
	total := 0
	for _, r := range in {
		var file io.ReadCloser = io.NopCloser(strings.NewReader(""))
		var err error
		if r.Members == nil {
			file, err = providers.OpenBounded(ctx, r, limits.MaxInputBytes)
		} else if r.Format != gen.FormatNvbench {
			err = &providers.UnsupportedError{Source: r.Index,
				Message: fmt.Sprintf("source %d is a directory; of the benchmark formats only nvbench (an nvbench --jsonbin output directory) is one", r.Index)}
		}
		if err != nil {
			return nil, nil, err
		}
		count := 0
		// The bound over all sources applies as measurements arrive, not after a source.
		// It is no one source's error: it is returned as it is, not placed at the source.
		var overallErr error
		overall := func() error {
			overallErr = &providers.LimitError{Source: providers.NoSource, Message: fmt.Sprintf("the sources hold more than %d measurements", MaxMeasurements),
				Limit: MaxMeasurements, Unit: "measurements"}
			return overallErr
		}
		sink := func(m *Measurement) error {
			if count++; total+count > MaxMeasurements {
				return overall()
			}
			return emit(m)
		}
		if name, block, ok := r.CaptureCase(); ok {
			// A capture experiment's case is part of the identity, so baseline and candidate
			// never pool into one series; the block is recorded beside it.
			blockID := strconv.FormatInt(block, 10)
			var variantIn, variantOut string
			cased := false
			sink = func(m *Measurement) error {
				if count++; total+count > MaxMeasurements {
					return overall()
				}
				if !cased || m.Variant != variantIn {
					variantIn, variantOut, cased = m.Variant, strings.TrimSuffix(name+"/"+m.Variant, "/"), true
				}
				c := *m
				c.Variant, c.Block = variantOut, blockID
				return emit(&c)
			}
		}
		var ms []Measurement
		switch r.Format {
		case gen.FormatPyperf:
			err = decodePyperf(file, r.Index, sink)
		case gen.FormatSamples:
			var p []string
			ms, p, err = DecodeSamples(file, r.Index)
			producers = append(producers, p...)
		case gen.FormatNvbench:
			if r.Members != nil {
				err = decodeNVBenchDir(ctx, r, sink)
				break
			}
			var unread int
			unread, err = decodeNVBench(file, r.Index, nil, sink)
			if err == nil && unread > 0 {
				limitations = append(limitations, fmt.Sprintf(
					"Source %d is NVBench --jsonbin output read as a single file: the %d per-sample files its nv/json/bin summaries name were not read; give the directory holding it as the source to list per-sample values.", r.Index, unread))
			}
		case gen.FormatHyperfine:
			ms, err = DecodeHyperfine(file, r.Index)
		case gen.FormatGoBench:
			err = decodeGoBench(file, r.Index, sink)
		}
		for i := 0; err == nil && i < len(ms); i++ {
			err = sink(&ms[i])
		}
		file.Close()
		if overallErr != nil {
			return nil, nil, overallErr
		}
		if err != nil {
			return nil, nil, providers.AtSource(err, r.Index)
		}
		if total += count; total > MaxMeasurements {
			return nil, nil, &providers.LimitError{Source: providers.NoSource, Message: fmt.Sprintf("the sources hold more than %d measurements", MaxMeasurements),
				Limit: MaxMeasurements, Unit: "measurements"}
		}
	}
	return producers, limitations, nil
}

func nullable(s string) *string { return providers.Nullable(s) }

func dimensions(d map[string]string) map[string]any {
	out := make(map[string]any, len(d))
	for k, v := range d {
		out[k] = v
	}
	return out
}

func measurementRow(m Measurement) gen.BenchmarkMeasurementRow {
	r := gen.BenchmarkMeasurementRow{InputIndex: int64(m.Input), Benchmark: m.Benchmark, Unit: m.Unit,
		RunIndex: int64(m.Run), ValueIndex: int64(m.Index), LoopCount: m.Loops, IsWarmup: m.Warmup,
		Dimensions: dimensions(m.Dimensions), Scope: nullable(m.Scope), Phase: nullable(m.Phase), Worker: nullable(m.Worker),
		Variant: nullable(m.Variant), Trial: nullable(m.Trial), Block: nullable(m.Block)}
	if m.Integer {
		v := int64(m.Value)
		r.ValueInt = &v
	} else {
		v := m.Value
		r.ValueFloat = &v
	}
	return r
}

func summarize(ctx context.Context, req *providers.Request[gen.BenchmarkSummaryFields]) (*providers.Analysis, error) {
	t := newTable()
	producers, limitations, err := decodeAll(ctx, req.Inputs, req.Limits, t.add)
	if err != nil {
		return nil, err
	}
	names := map[string]bool{}
	for i := range t.list {
		names[t.list[i].Benchmark] = true
	}
	benchmarkNames := slices.Sorted(maps.Keys(names))
	series := t.summaries()
	a := &providers.Analysis{Provider: provider(req.Inputs),
		Metrics: map[string]any{"input_count": len(req.Inputs), "measurement_count": t.n, "warmup_count": t.warmups,
			"benchmark_names": benchmarkNames, "series_count": len(series)}}
	if req.Fields != nil && req.Fields.View == "series" {
		a.Rows = providers.ProjectSlice(series, seriesRow)
	} else {
		a.Rows = providers.Project(t.n, func(i int) gen.BenchmarkMeasurementRow { return measurementRow(t.at(i)) })
	}
	if len(producers) > 0 {
		a.Metrics["producers"] = producers
	}
	a.Limitations = limitations
	return a, nil
}

// seriesRow is the row of view series for one series summary (decision 0045).
func seriesRow(s Series) gen.BenchmarkSeriesRow {
	inputs := make([]int64, len(s.Inputs))
	for i, in := range s.Inputs {
		inputs[i] = int64(in)
	}
	return gen.BenchmarkSeriesRow{Benchmark: s.Benchmark, Unit: s.Unit, Dimensions: dimensions(s.Dimensions), LoopCount: s.Loops,
		Scope: nullable(s.Scope), Phase: nullable(s.Phase), Worker: nullable(s.Worker), Variant: nullable(s.Variant),
		InputIndices: inputs, ValueCount: int64(s.ValueCount), WarmupCount: int64(s.WarmupCount),
		Mean: s.Mean, Median: s.Median, Stdev: s.Stdev, Min: s.Min, Max: s.Max,
		MedianCiLow: s.MedianLow, MedianCiHigh: s.MedianHigh, MeanCiLow: s.MeanLow, MeanCiHigh: s.MeanHigh}
}

func optional(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func scaling(ctx context.Context, req *providers.Request[gen.ScalingFields]) (*providers.Analysis, error) {
	t := newTable()
	_, limitations, err := decodeAll(ctx, req.Inputs, req.Limits, t.add)
	if err != nil {
		return nil, err
	}
	metric := optional(req.Fields.Metric)
	fits := t.scaling(req.Fields.InputDimension, metric)
	estimated := 0
	for _, f := range fits {
		if f.Status == "estimated" {
			estimated++
		}
	}
	var metricValue any
	if metric != "" {
		metricValue = metric
	}
	a := &providers.Analysis{Provider: provider(req.Inputs),
		Metrics: map[string]any{"input_dimension": req.Fields.InputDimension, "metric": metricValue,
			"series_count": len(fits), "estimated_count": estimated},
		Rows: providers.ProjectSlice(fits, func(f Fit) gen.BenchmarkScalingRow {
			return gen.BenchmarkScalingRow{Benchmark: f.Benchmark, Unit: f.Unit, Dimensions: dimensions(f.Dimensions),
				InputValues: f.Inputs, MeanValues: f.Means, PointCount: int64(f.PointCount), Exponent: f.Exponent,
				Coefficient: f.Coefficient, RSquared: f.RSquared, Status: f.Status, Reason: f.Reason}
		})}
	a.Limitations = limitations
	if len(fits) == 0 {
		a.Limitations = append(a.Limitations, fmt.Sprintf(
			"No non-warmup series has a finite positive %q dimension and positive values; nothing was fitted.", req.Fields.InputDimension))
	}
	return a, nil
}

func compare(ctx context.Context, req *providers.Request[gen.CompareFields]) (*providers.Analysis, error) {
	if int(req.Fields.BaselineIndex) >= len(req.Inputs) {
		return nil, &providers.FieldError{Field: []any{"baseline_index"},
			Message: fmt.Sprintf("baseline_index %d names no source; there are %d sources", req.Fields.BaselineIndex, len(req.Inputs)),
			Details: map[string]any{"source_count": len(req.Inputs)}}
	}
	metric := optional(req.Fields.Metric)
	c := newComparer(len(req.Inputs), int(req.Fields.BaselineIndex), metric)
	_, limitations, err := decodeAll(ctx, req.Inputs, req.Limits, c.add)
	if err != nil {
		return nil, err
	}
	cmps, unmatched, err := c.result()
	var nf *NonFiniteError
	if errors.As(err, &nf) {
		return nil, &providers.LimitError{Source: nf.Input, Message: nf.Error() + "; means and ratios need finite values",
			Details: map[string]any{"benchmark": nf.Benchmark}}
	}
	var metricValue any
	if metric != "" {
		metricValue = metric
	}
	a := &providers.Analysis{Provider: provider(req.Inputs),
		Metrics: map[string]any{"input_count": len(req.Inputs), "baseline_index": req.Fields.BaselineIndex, "metric": metricValue,
			"compatible_metric_count": len(cmps) / max(1, len(req.Inputs)-1), "unmatched_identity_count": unmatched,
			"alpha": stats.Alpha, "confidence_level": stats.Level},
		Rows: providers.ProjectSlice(cmps, comparisonRow)}
	a.Limitations = limitations
	if unmatched > 0 {
		a.Limitations = append(a.Limitations, fmt.Sprintf("%d series are not present in every source and are not compared.", unmatched))
	}
	if len(cmps) == 0 {
		a.Limitations = append(a.Limitations, "No series is present in every source; name runs alike (for example hyperfine --command-name) to compare them.")
	}
	return a, nil
}

// nvbenchArtifact is the nvbench provider's artifact: the directory --jsonbin writes into.
const nvbenchArtifact = "nvbench"

var collectors = []providers.Collector{
	providers.Collect(providers.CollectorSpec[gen.BenchmarkSamplesProvider]{Kind: "benchmark-samples", File: "benchmark-samples.json",
		MissingHint: "A benchmark-samples workload writes a flameox.benchmark-samples.v1 document to the file FLAMEOX_BENCHMARK_OUTPUT names; a Python workload can use `with flameox_benchmark.recorder() as rec:` (rec.add, rec.torch_benchmark), which writes it when the block ends.",
		Env:         samplesEnv}),
	// NVBench's --jsonbin output directory (catalog §3.1; decision 0063): results.json
	// beside results.json-bin/N.bin and results.json-freqs-bin/N.bin, read as a directory
	// source, so a capture lists every sample. The runtime creates nvbench/ before the run.
	providers.Collect(providers.CollectorSpec[gen.NVBenchProvider]{Kind: "nvbench", File: nvbenchArtifact, Directory: true,
		Command: func(_ *gen.NVBenchProvider, _ *providers.Executable, c providers.Case, dir string) []string {
			return append(append([]string{}, c.Argv...), "--jsonbin", filepath.Join(dir, nvbenchArtifact, "results.json"))
		}}),
	providers.Collect(providers.CollectorSpec[gen.HyperfineProvider]{Kind: "hyperfine", File: "hyperfine.json",
		Admit: func([]providers.Case) (*providers.Executable, error) {
			exe, err := exec.LookPath("hyperfine")
			if err != nil {
				return nil, providers.HostToolUnavailable("hyperfine", "Install hyperfine (Debian/Ubuntu: apt-get install hyperfine; or cargo install hyperfine), then retry.")
			}
			return providers.Bind(exe, func() error {
				return providers.HostToolUnavailable("hyperfine", "The hyperfine executable cannot be read; reinstall it.")
			})
		},
		Command: func(o *gen.HyperfineProvider, exe *providers.Executable, c providers.Case, dir string) []string {
			argv := []string{exe.Path, "--shell=none", "--style", "none", "--runs", strconv.FormatInt(o.Runs, 10),
				"--warmup", strconv.FormatInt(o.Warmup, 10), "--export-json", filepath.Join(dir, "hyperfine.json")}
			if o.Name != nil {
				argv = append(argv, "--command-name", *o.Name)
			}
			words := append([]string{c.Launch()}, c.Argv[1:]...)
			return append(argv, shellWords(words))
		}}),
	providers.Collect(providers.CollectorSpec[gen.PyperfProvider]{Kind: "pyperf", File: "pyperf.json",
		Admit: func([]providers.Case) (*providers.Executable, error) {
			exe, err := exec.LookPath("python3")
			if err != nil {
				return nil, pyperfUnavailable("python3 is not on PATH")
			}
			b, err := providers.Bind(exe, func() error { return pyperfUnavailable("python3 cannot be read") })
			if err != nil {
				return nil, err
			}
			if _, ok := providers.Probe(b.Path, "-I", "-c", "import pyperf"); !ok {
				return nil, pyperfUnavailable("the python3 on PATH cannot import pyperf")
			}
			return b, nil
		},
		Command: func(o *gen.PyperfProvider, exe *providers.Executable, c providers.Case, dir string) []string {
			n := func(v int64) string { return strconv.FormatInt(v, 10) }
			argv := []string{exe.Path, "-m", "pyperf", "command", "--quiet", "--output", filepath.Join(dir, "pyperf.json"),
				"--processes", n(o.Processes), "--values", n(o.Values), "--warmups", n(o.Warmups),
				"--loops", n(o.Loops), "--min-time", strconv.FormatFloat(o.MinTime, 'g', -1, 64), "--name", o.Name, "--", c.Launch()}
			return append(argv, c.Argv[1:]...)
		}}),
}

func pyperfUnavailable(why string) error {
	return &providers.UnavailableError{Provider: "pyperf", Module: "pyperf",
		Message:     why + "; the pyperf provider runs python3 -m pyperf command",
		Remediation: "Install pyperf for the python3 on PATH (python3 -m pip install pyperf), or use the benchmark-samples or hyperfine provider; then retry."}
}

// shellWords quotes argv as one command line that hyperfine --shell=none splits back into
// the same words.
func shellWords(argv []string) string {
	quoted := make([]string, len(argv))
	for i, a := range argv {
		quoted[i] = "'" + strings.ReplaceAll(a, "'", `'"'"'`) + "'"
	}
	return strings.Join(quoted, " ")
}
