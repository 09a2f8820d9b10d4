// Package inference reads inference benchmark evidence: AIPerf per-request records and
// aggregate exports, vLLM bench serve and SGLang bench_serving results, and Mooncake
// request traces. It summarizes one export and compares a metric of several against a
// baseline, with workload and system identities that keep unlike runs apart.
package inference

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/prepare"
	"github.com/flameox/flameox/providers"
)

// Register adds summarize_inference and compare_inference, the detectors of the
// aiperf, vllm-benchmark, sglang-benchmark and mooncake-trace formats, and aiperf's
// record.
func Register(r *providers.Registry) {
	r.Analyzer(providers.Analyze(gen.OperationNameSummarizeInference, summarize))
	r.Analyzer(providers.Analyze(gen.OperationNameCompareInference, compare))
	for _, d := range detectors {
		r.Detector(d)
	}
	r.Tool(aiperfTool)
}

// aiperfTool is AIPerf's record (decision 0068): its exports are read natively.
var aiperfTool = prepare.Tool{ID: gen.PreparableProviderAiperf, Class: prepare.BuiltIn,
	Note: "Flameox reads AIPerf per-request exports (profile_export.jsonl) natively; run aiperf yourself and pass its export as a source."}

// has reports whether head contains every marker.
func has(head []byte, all ...string) bool {
	for _, m := range all {
		if !bytes.Contains(head, []byte(m)) {
			return false
		}
	}
	return true
}

// The AIPerf detectors name no container: one format is written as JSON Lines, JSON or
// CSV, and the registry keeps one container per format. The file's suffix still lists
// its generic format after aiperf.
var detectors = []providers.Detector{
	{Format: gen.FormatAiperf, Match: func(_ string, head []byte) bool {
		return bytes.HasPrefix(bytes.TrimLeft(head, " \ufeff"), []byte(`{`)) && has(head, `"metadata"`) &&
			(has(head, `"x_request_id"`) || has(head, `"record_processor_id"`) || has(head, `"benchmark_phase"`) || has(head, `"credit_phase"`))
	}},
	{Format: gen.FormatAiperf, Match: func(_ string, head []byte) bool {
		return has(head, `"aiperf_version"`) || has(head, `"tag"`, `"header"`, `"unit"`, `"avg"`) ||
			bytes.HasPrefix(bytes.TrimPrefix(head, []byte("\ufeff")), []byte("Metric,avg,"))
	}},
	{Format: gen.FormatVllmBenchmark, Container: gen.FormatJSON, Match: func(_ string, head []byte) bool {
		return has(head, `"model_id"`, `"tokenizer_id"`, `"num_prompts"`)
	}},
	{Format: gen.FormatSglangBenchmark, Container: gen.FormatJsonl, Match: func(_ string, head []byte) bool {
		return has(head, `"backend"`) && (has(head, `"e2e_latency_ms"`) || has(head, `"random_input_len"`) || has(head, `"sharegpt_output_len"`))
	}},
	{Format: gen.FormatMooncakeTrace, Container: gen.FormatJsonl, Match: func(_ string, head []byte) bool {
		return has(head, `"hash_ids"`, `"input_length"`, `"output_length"`)
	}},
}

// decodeAggregates decodes an export of run-level aggregates.
func decodeAggregates(in providers.Input) (*aggregates, gen.Provider, error) {
	var (
		a   *aggregates
		err error
		p   gen.Provider
	)
	switch in.Format {
	case gen.FormatVllmBenchmark:
		p = gen.Provider{ID: "vllm-benchmark", Version: "aggregate-v1"}
		a, err = decodeVLLM(in)
	case gen.FormatSglangBenchmark:
		p = gen.Provider{ID: "sglang-benchmark", Version: "aggregate-v1"}
		a, err = decodeSGLang(in)
	default:
		p = gen.Provider{ID: "aiperf", Version: "aggregate-v1"}
		a, err = decodeAIPerfAggregate(in)
	}
	return a, p, err
}

// variant is the shape of an input: request records (AIPerf per-request, Mooncake) or
// run-level aggregates (vLLM, SGLang, AIPerf's aggregate exports).
func variant(in providers.Input) (string, error) {
	switch in.Format {
	case gen.FormatAiperf:
		return aiperfVariant(in)
	case gen.FormatMooncakeTrace:
		return variantRequests, nil
	}
	return variantAggregate, nil
}

func summarize(ctx context.Context, req *providers.Request[gen.NoFields]) (*providers.Analysis, error) {
	in := req.Inputs[0]
	v, err := variant(in)
	if err != nil {
		return nil, err
	}
	switch {
	case in.Format == gen.FormatMooncakeTrace:
		return summarizeTrace(ctx, in)
	case v == variantRequests:
		return summarizeRequests(ctx, in)
	}
	a, p, err := decodeAggregates(in)
	if err != nil {
		return nil, err
	}
	m := a.metrics
	m["record_count"], m["measurement_count"] = a.records, len(a.measurements)
	m["statistics_source"] = "computed by the producer; reported as written"
	a.identity.metrics(m)
	return &providers.Analysis{Provider: p, Metrics: m, Limitations: a.limitations,
		Rows: providers.ProjectSlice(a.measurements, measurement.row)}, nil
}

// defaultMetric is each format's comparison metric when the request names none.
func defaultMetric(f gen.Format, v string) string {
	switch {
	case f == gen.FormatVllmBenchmark:
		return "vllm.request_throughput"
	case f == gen.FormatSglangBenchmark:
		return "sglang.request_throughput"
	case f == gen.FormatMooncakeTrace:
		return "input_length"
	case v == variantRequests:
		return "latency_ns"
	}
	return "aiperf.request_latency.avg"
}

// side is one compared input: its samples of the metric and its identity.
type side struct {
	samples  int
	sum      float64
	identity identity
	// names are the metrics an aggregate export holds in every record, for the field error.
	names []string
}

func compare(ctx context.Context, req *providers.Request[gen.InferenceCompareFields]) (*providers.Analysis, error) {
	in, fields := req.Inputs, req.Fields
	base := int(fields.BaselineIndex)
	if base >= len(in) {
		return nil, &providers.FieldError{Field: []any{"baseline_index"},
			Message: fmt.Sprintf("baseline_index does not select an input: %d names no source; there are %d sources", base, len(in)),
			Details: map[string]any{"source_count": len(in)}}
	}
	variants := make([]string, len(in))
	for i, s := range in {
		if s.Format != in[0].Format {
			return nil, &providers.FieldError{Field: []any{"sources", i, "format"}, Accepted: []string{string(in[0].Format)},
				Message: fmt.Sprintf("compare_inference compares exports of one format: source 0 is %s, source %d is %s", in[0].Format, i, s.Format)}
		}
		v, err := variant(s)
		if err != nil {
			return nil, providers.AtSource(err, s.Index)
		}
		variants[i] = v
		if v != variants[0] {
			return nil, &providers.FieldError{Field: []any{"sources", i},
				Message: fmt.Sprintf("source 0 holds AIPerf %s and source %d an AIPerf %s: per-request records (statistics computed by Flameox) and aggregate exports (computed by AIPerf) are never compared", variants[0], i, v)}
		}
	}
	metric := defaultMetric(in[0].Format, variants[0])
	if fields.Metric != nil {
		metric = *fields.Metric
	}
	var vocabulary []string
	switch {
	case in[0].Format == gen.FormatMooncakeTrace:
		vocabulary = traceMetrics
	case variants[0] == variantRequests:
		vocabulary = requestMetrics
	}
	if vocabulary != nil && !slices.Contains(vocabulary, metric) {
		return nil, &providers.FieldError{Field: []any{"metric"}, Accepted: vocabulary,
			Message: fmt.Sprintf("%s compares per-request metrics; %q is not one", in[0].Format, metric)}
	}
	sides := make([]side, len(in))
	var provider gen.Provider
	for i, s := range in {
		var err error
		sides[i], provider, err = compareSide(ctx, s, variants[i], metric)
		if err != nil {
			return nil, providers.AtSource(err, s.Index)
		}
	}
	for i, s := range sides {
		if s.samples > 0 {
			continue
		}
		accepted := vocabulary
		if accepted == nil {
			accepted = common(sides)
		}
		return nil, &providers.FieldError{Field: []any{"metric"}, Accepted: accepted,
			Message: fmt.Sprintf("source %d holds no value of %s to compare", i, metric), Details: map[string]any{"source_index": i}}
	}
	ids := make([]identity, len(sides))
	for i, s := range sides {
		ids[i] = s.identity
	}
	bm := sides[base].sum / float64(sides[base].samples)
	var rows []gen.InferenceComparisonRow
	var pairs []pairing
	for c, s := range sides {
		if c == base {
			continue
		}
		p := pair(ids[base], ids[c])
		pairs = append(pairs, p)
		if p.compatibility == "heterogeneous" && !fields.AllowHeterogeneous {
			return nil, &providers.FieldError{Field: []any{"allow_heterogeneous"}, Accepted: []string{"true"},
				Message: fmt.Sprintf("source %d and the baseline (source %d) have known-different identities (%s); set allow_heterogeneous to true for an exploratory comparison",
					c, base, strings.Join(sortedKeys(p.differences), ", ")),
				Details: map[string]any{"candidate_index": c, "identity_differences": p.differences}}
		}
		cm := s.sum / float64(s.samples)
		for _, i := range []int{base, c} {
			if mean := sides[i].sum / float64(sides[i].samples); math.IsInf(mean, 0) || math.IsNaN(mean) {
				return nil, &providers.LimitError{Source: i, Message: fmt.Sprintf("source %d: the mean of %s is not finite; a ratio needs finite values", i, metric)}
			}
		}
		row := gen.InferenceComparisonRow{Metric: metric, BaselineIndex: int64(base), CandidateIndex: int64(c),
			BaselineMean: bm, CandidateMean: cm, BaselineSamples: int64(sides[base].samples), CandidateSamples: int64(s.samples),
			Compatibility: p.compatibility, IdentityDifferences: p.differences, IdentityUnavailable: p.unavailable}
		if bm != 0 {
			r := cm / bm
			row.Ratio = &r
		}
		rows = append(rows, row)
	}
	compat, diffs, unavailable := overall(ids, pairs)
	a := &providers.Analysis{Provider: provider, Rows: providers.Project(len(rows), func(i int) gen.InferenceComparisonRow { return rows[i] }),
		Metrics: map[string]any{"input_count": len(in), "metric": metric, "baseline_index": base, "compatibility": compat,
			"identity_differences": diffs, "identity_unavailable": unavailable, "samples": sampleKind(in[0].Format, variants[0])}}
	if compat == "heterogeneous" {
		a.Limitations = append(a.Limitations, "Known-different identities were compared only because allow_heterogeneous is true: ratios mix unlike workloads or systems.")
	}
	if in[0].Format == gen.FormatSglangBenchmark || in[0].Format == gen.FormatVllmBenchmark {
		a.Limitations = append(a.Limitations, "Each run record of a file is one sample: a file of several runs is compared by the mean over its runs.")
	}
	return a, nil
}

// sampleKind says what one sample of a comparison is.
func sampleKind(f gen.Format, v string) string {
	switch {
	case f == gen.FormatMooncakeTrace:
		return "trace requests"
	case v == variantRequests:
		return "successful profiling-phase requests"
	}
	return "run records (producer aggregates)"
}

// compareSide reads one compared input: the metric's count and sum, and the identity.
func compareSide(ctx context.Context, in providers.Input, v, metric string) (side, gen.Provider, error) {
	switch {
	case in.Format == gen.FormatMooncakeTrace:
		st, err := scanTrace(ctx, in, false)
		if err != nil {
			return side{}, gen.Provider{}, err
		}
		s := st.metric(metric)
		return side{samples: s.n, sum: s.sum, identity: traceIdentity(st)}, gen.Provider{ID: "mooncake-trace", Version: "request-trace-v1"}, nil
	case v == variantRequests:
		st, err := scanRequests(ctx, in, false, metric)
		if err != nil {
			return side{}, gen.Provider{}, err
		}
		s := st.series[metric]
		return side{samples: s.n, sum: s.sum, identity: requestIdentity(st)}, gen.Provider{ID: "aiperf", Version: "request-records-v1"}, nil
	}
	a, p, err := decodeAggregates(in)
	if err != nil {
		return side{}, p, err
	}
	out := side{identity: a.identity}
	perRecord := map[string]map[int]bool{}
	for _, m := range a.measurements {
		if perRecord[m.name] == nil {
			perRecord[m.name] = map[int]bool{}
		}
		perRecord[m.name][m.record] = true
		if m.name == metric && !math.IsNaN(m.value) {
			out.samples++
			out.sum += m.value
		}
	}
	for name, recs := range perRecord {
		if len(recs) == a.records {
			out.names = append(out.names, name)
		}
	}
	return out, p, nil
}

// common lists the metrics every aggregate input holds in every record.
func common(sides []side) []string {
	count := map[string]int{}
	for _, s := range sides {
		for _, n := range s.names {
			count[n]++
		}
	}
	var out []string
	for n, c := range count {
		if c == len(sides) {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

func sortedKeys(m map[string]any) []string { return slices.Sorted(maps.Keys(m)) }
