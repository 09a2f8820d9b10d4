package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/failure"
	"github.com/flameox/flameox/providers/bench"
)

// maxSeriesSummaries bounds the series statistics a summary reports in its metrics.
const maxSeriesSummaries = 1000

// benchProviders names the reader of each benchmark format.
var benchProviders = map[gen.Format]string{gen.FormatPyperf: "pyperf", gen.FormatSamples: "benchmark-samples",
	gen.FormatNvbench: "nvbench", gen.FormatHyperfine: "hyperfine", gen.FormatGoBench: "go-bench"}

// benchInput decodes every source into measurements, bound by MaxMeasurements overall.
func (rt *Runtime) benchInput(req *request) ([]resolved, []bench.Measurement, []string, *failure.Failure) {
	in, f := rt.resolveSources(req)
	if f != nil {
		return nil, nil, nil, f
	}
	if f := req.bind(in); f != nil {
		return nil, nil, nil, f
	}
	var all []bench.Measurement
	var producers []string
	for i, r := range in {
		file, err := os.Open(r.path)
		if err != nil {
			return nil, nil, nil, failure.Wrap(err, gen.FailureCodeMissingOrChangedInput, "source %d could not be read", i).
				Field(failure.Path("sources", i), nil)
		}
		var ms []bench.Measurement
		switch r.format {
		case gen.FormatPyperf:
			ms, err = bench.DecodePyperf(file, i)
		case gen.FormatSamples:
			var p []string
			ms, p, err = bench.DecodeSamples(file, i)
			producers = append(producers, p...)
		case gen.FormatNvbench:
			ms, err = bench.DecodeNVBench(file, i)
		case gen.FormatHyperfine:
			ms, err = bench.DecodeHyperfine(file, i)
		case gen.FormatGoBench:
			ms, err = bench.DecodeGoBench(file, i)
		default:
			file.Close()
			return nil, nil, nil, unsupportedFormat(req.tool.Operation, i, string(r.format))
		}
		file.Close()
		if err != nil {
			return nil, nil, nil, benchFailure(err, i)
		}
		all = append(all, ms...)
		if len(all) > bench.MaxMeasurements {
			return nil, nil, nil, failure.New(gen.FailureCodeLimitExceeded, "the sources hold more than %d measurements", bench.MaxMeasurements).
				With("limit", bench.MaxMeasurements)
		}
	}
	if f := recheck(in); f != nil {
		return nil, nil, nil, f
	}
	return in, all, producers, nil
}

func benchFailure(err error, i int) *failure.Failure {
	var de *bench.DecodeError
	var le *bench.LimitError
	var se *bench.SchemaError
	switch {
	case errors.As(err, &se):
		return failure.Wrap(err, gen.FailureCodeDecodeFailure, "source %d: %s", i, se.Message).
			With("source_index", i).With("document_field_path", se.FieldPath)
	case errors.As(err, &de):
		return failure.Wrap(err, gen.FailureCodeDecodeFailure, "source %d: %s", i, de.Message).With("source_index", i)
	case errors.As(err, &le):
		return failure.Wrap(err, gen.FailureCodeLimitExceeded, "source %d: %s", i, le.Message).With("source_index", i).With("limit", le.Limit)
	}
	return failure.Wrap(err, gen.FailureCodeDecodeFailure, "source %d could not be decoded", i).With("source_index", i)
}

// benchProvider is the provider identity of a benchmark result.
func benchProvider(in []resolved) gen.Provider {
	id := benchProviders[in[0].format]
	for _, r := range in[1:] {
		if benchProviders[r.format] != id {
			id = "benchmarks"
		}
	}
	return gen.Provider{ID: id, Version: Version}
}

func mustRow(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

func analyzeBenchSummary(ctx context.Context, rt *Runtime, req *request) (*Result, *failure.Failure) {
	in, ms, producers, f := rt.benchInput(req)
	if f != nil {
		return nil, f
	}
	row := func(i int) json.RawMessage {
		m := ms[i]
		r := map[string]any{"input_index": m.Input, "benchmark": m.Benchmark, "unit": m.Unit,
			"value_int": nil, "value_float": nil, "run_index": m.Run, "value_index": m.Index,
			"loop_count": m.Loops, "is_warmup": m.Warmup, "dimensions": dimensionsOf(m),
			"scope": nullable(m.Scope), "phase": nullable(m.Phase), "worker": nullable(m.Worker),
			"variant": nullable(m.Variant), "trial": nullable(m.Trial), "block": nullable(m.Block)}
		if m.Integer {
			r["value_int"] = int64(m.Value)
		} else {
			r["value_float"] = m.Value
		}
		return mustRow(r)
	}
	warmups := 0
	names := map[string]bool{}
	for _, m := range ms {
		names[m.Benchmark] = true
		if m.Warmup {
			warmups++
		}
	}
	var benchmarkNames []string
	for n := range names {
		benchmarkNames = append(benchmarkNames, n)
	}
	sort.Strings(benchmarkNames)
	series := bench.Summaries(ms)
	metrics := map[string]any{"input_count": len(in), "measurement_count": len(ms), "warmup_count": warmups,
		"benchmark_names": benchmarkNames, "series_count": len(series), "series": series[:min(len(series), maxSeriesSummaries)]}
	if len(producers) > 0 {
		metrics["producers"] = producers
	}
	res := newResult(req, in, nil, false, 0)
	res.Provider = benchProvider(in)
	res.Limitations = append([]string{}, req.tool.Operation.Limitations...)
	if len(series) > maxSeriesSummaries {
		res.Limitations = append(res.Limitations, fmt.Sprintf("Series statistics are reported for the first %d of %d series.", maxSeriesSummaries, len(series)))
	}
	res.Blocks = []any{MetricsBlock{Type: "metrics", Values: metrics}}
	if f := rt.pageProjection(req, in, res, projection{n: len(ms), row: row}); f != nil {
		return nil, f
	}
	return res, nil
}

func analyzeBenchScaling(ctx context.Context, rt *Runtime, req *request) (*Result, *failure.Failure) {
	fields := req.typed.(*gen.ScalingFields)
	in, ms, _, f := rt.benchInput(req)
	if f != nil {
		return nil, f
	}
	metric := ""
	if fields.Metric != nil {
		metric = *fields.Metric
	}
	fits := bench.Scaling(ms, fields.InputDimension, metric)
	estimated := 0
	var rows []json.RawMessage
	for _, fit := range fits {
		if fit.Status == "estimated" {
			estimated++
		}
		rows = append(rows, mustRow(fit))
	}
	res := newResult(req, in, nil, false, 0)
	res.Provider = benchProvider(in)
	res.Limitations = append([]string{}, req.tool.Operation.Limitations...)
	if len(fits) == 0 {
		res.Limitations = append(res.Limitations, fmt.Sprintf(
			"No non-warmup series has a finite positive %q dimension and positive values; nothing was fitted.", fields.InputDimension))
	}
	res.Blocks = []any{MetricsBlock{Type: "metrics", Values: map[string]any{"input_dimension": fields.InputDimension,
		"metric": nullable(metric), "series_count": len(fits), "estimated_count": estimated}}}
	if f := rt.pageProjection(req, in, res, rawProjection(rows, false)); f != nil {
		return nil, f
	}
	return res, nil
}

func analyzeBenchCompare(ctx context.Context, rt *Runtime, req *request) (*Result, *failure.Failure) {
	fields := req.typed.(*gen.CompareFields)
	if int(fields.BaselineIndex) >= len(req.sources) {
		return nil, failure.Invalid(failure.Path("baseline_index"), nil,
			"baseline_index %d names no source; there are %d sources", fields.BaselineIndex, len(req.sources)).
			With("source_count", len(req.sources))
	}
	in, ms, _, f := rt.benchInput(req)
	if f != nil {
		return nil, f
	}
	metric := ""
	if fields.Metric != nil {
		metric = *fields.Metric
	}
	cmps, unmatched, err := bench.Compare(ms, len(in), int(fields.BaselineIndex), metric)
	var nf *bench.NonFiniteError
	if errors.As(err, &nf) {
		return nil, failure.New(gen.FailureCodeLimitExceeded, "%s; means and ratios need finite values", nf.Error()).
			With("source_index", nf.Input).With("benchmark", nf.Benchmark)
	}
	var rows []json.RawMessage
	for _, c := range cmps {
		rows = append(rows, mustRow(c))
	}
	res := newResult(req, in, nil, false, 0)
	res.Provider = benchProvider(in)
	res.Limitations = append([]string{}, req.tool.Operation.Limitations...)
	if unmatched > 0 {
		res.Limitations = append(res.Limitations, fmt.Sprintf("%d series are not present in every source and are not compared.", unmatched))
	}
	if len(cmps) == 0 {
		res.Limitations = append(res.Limitations, "No series is present in every source; name runs alike (for example hyperfine --command-name) to compare them.")
	}
	res.Blocks = []any{MetricsBlock{Type: "metrics", Values: map[string]any{"input_count": len(in),
		"baseline_index": fields.BaselineIndex, "metric": nullable(metric),
		"compatible_metric_count": len(cmps) / max(1, len(in)-1), "unmatched_identity_count": unmatched}}}
	if f := rt.pageProjection(req, in, res, rawProjection(rows, false)); f != nil {
		return nil, f
	}
	return res, nil
}

func dimensionsOf(m bench.Measurement) map[string]string {
	if m.Dimensions == nil {
		return map[string]string{}
	}
	return m.Dimensions
}
