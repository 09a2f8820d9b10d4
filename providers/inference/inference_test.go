package inference

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/testtool"
	"github.com/flameox/flameox/providers"
	"github.com/flameox/flameox/providers/internal/nonfinite"
	"github.com/flameox/flameox/providers/providerstest"
)

func corpus(t testing.TB, name string) string { return testtool.Corpus(t, name) }

func write(t testing.TB, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// python runs script with args and decodes its JSON output into v.
func python(t *testing.T, v any, script string, args ...string) {
	t.Helper()
	py := testtool.Require(t, "python3")
	out, err := exec.Command(py, append([]string{"-c", script}, args...)...).Output()
	if err != nil {
		t.Fatalf("python: %v", err)
	}
	if err := json.Unmarshal(out, v); err != nil {
		t.Fatalf("python output %s: %v", out, err)
	}
}

// runSummary summarizes in and returns every row.
func runSummary(t *testing.T, in providers.Input) (*providers.Analysis, []map[string]any) {
	t.Helper()
	a, err := providerstest.Analyze(t, summarize, &gen.NoFields{}, in)
	if err != nil {
		t.Fatalf("summarize: %v", err)
	}
	return a, providerstest.Maps(t, providerstest.Rows(t, a.Rows, 1000))
}

func near(got, want, tol float64) bool { return math.Abs(got-want) <= tol }

func num(v any) float64 {
	switch x := v.(type) {
	case float64:
		return x
	case int:
		return float64(x)
	case int64:
		return float64(x)
	}
	return math.NaN()
}

// requestTruth computes, from the per-request JSONL, what summarize_inference reports:
// Python reads the records itself, converts milliseconds to integer nanoseconds, and
// takes statistics.median, statistics.pstdev and statistics.quantiles(method="inclusive")
// (linear interpolation between closest ranks, numpy's default, which AIPerf uses).
const requestTruth = `
import json, statistics, sys
recs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
ok = [r for r in recs if r.get("error") is None]
ns = lambda m: round(m["value"] * 1e6)
series = {
  "ttft_ns": [ns(r["metrics"]["ttft"]) for r in ok],
  "latency_ns": [ns(r["metrics"]["request_latency"]) for r in ok],
  "tpot_ns": [ns(r["metrics"]["inter_token_latency"]) for r in ok],
  "mean_itl_ns": [round(sum(r["metrics"]["inter_chunk_latency"]["value"]) / len(r["metrics"]["inter_chunk_latency"]["value"]) * 1e6) for r in ok],
  "input_tokens": [r["metrics"]["input_sequence_length"]["value"] for r in ok],
  "output_tokens": [r["metrics"]["output_sequence_length"]["value"] for r in ok],
}
out = {"records": len(recs), "ok": len(ok), "errors": len(recs) - len(ok),
       "input_tokens": sum(r["metrics"].get("input_sequence_length", {}).get("value", 0) for r in recs),
       "output_tokens": sum(r["metrics"].get("output_sequence_length", {}).get("value", 0) for r in recs),
       "first_start": str(min(r["metadata"]["timestamp_ns"] for r in recs)), "stats": {}}
for k, v in series.items():
  q = statistics.quantiles(v, n=100, method="inclusive")
  out["stats"][k] = {"count": len(v), "mean": statistics.fmean(v), "std": statistics.pstdev(v), "min": min(v), "max": max(v),
    "p1": q[0], "p5": q[4], "p10": q[9], "p25": q[24], "p50": statistics.median(v), "p75": q[74], "p90": q[89], "p95": q[94], "p99": q[98]}
print(json.dumps(out))
`

func TestAIPerfRequestsAgainstPython(t *testing.T) {
	path := corpus(t, "aiperf__profile_export.jsonl")
	var want struct {
		Records, OK, Errors int
		InputTokens         int64  `json:"input_tokens"`
		OutputTokens        int64  `json:"output_tokens"`
		FirstStart          string `json:"first_start"`
		Stats               map[string]map[string]float64
	}
	python(t, &want, requestTruth, path)
	a, rows := runSummary(t, providerstest.Input(t, path, gen.FormatAiperf))
	m := a.Metrics
	if m["request_count"] != want.Records || m["successful_requests"] != want.OK || m["error_requests"] != want.Errors ||
		m["input_tokens"] != want.InputTokens || m["output_tokens"] != want.OutputTokens || m["first_request_start_ns"] != want.FirstStart {
		t.Errorf("counts %v, want %+v", m, want)
	}
	stats := m["statistics"].(map[string]any)
	for metric, ws := range want.Stats {
		got := stats[metric].(map[string]any)
		for k, w := range ws {
			// Each value is an integer of nanoseconds on both sides; the statistics agree
			// up to floating-point rounding.
			if g := num(got[k]); !near(g, w, 1e-6*math.Max(1, math.Abs(w))*1e-3) {
				t.Errorf("%s.%s = %v, Python says %v", metric, k, g, w)
			}
		}
	}
	if num(m["median_ttft_ns"]) != want.Stats["ttft_ns"]["p50"] || !near(num(m["p95_latency_ns"]), want.Stats["latency_ns"]["p95"], 1e-3) {
		t.Errorf("median_ttft_ns %v p95_latency_ns %v", m["median_ttft_ns"], m["p95_latency_ns"])
	}
	if len(rows) != want.Records || rows[99]["line_index"] != 99.0 {
		t.Fatalf("%d rows", len(rows))
	}
	ok := 0
	for _, r := range rows {
		if r["outcome"] == "succeeded" {
			ok++
		} else if r["outcome"] != "cancelled" || r["error_type"] != "RequestCancellationError" || r["error_code"] != 499.0 || r["ttft_ns"] != nil {
			t.Errorf("error row %v", r)
		}
	}
	if ok != want.OK {
		t.Errorf("%d succeeded rows, want %d", ok, want.OK)
	}
}

// aggregateTruth reads AIPerf's own aggregate export of the same run.
const aggregateTruth = `
import json, sys
d = json.load(open(sys.argv[1]))["records"]
print(json.dumps({k: {s: v for s, v in d[k].items() if isinstance(v, (int, float)) and s != "count"} | {"count": d[k]["count"]} for k in d}))
`

// TestAIPerfAgreesWithItsAggregate checks what summarize_inference computes from the
// per-request records against AIPerf's profile_export_aiperf.json of the same run: request
// and error counts, and every statistic of TTFT, request latency, inter-token latency and
// the sequence lengths. AIPerf works in milliseconds and Flameox in integer nanoseconds,
// so each value may differ by half a nanosecond, and so may every statistic.
func TestAIPerfAgreesWithItsAggregate(t *testing.T) {
	var want map[string]map[string]float64
	python(t, &want, aggregateTruth, corpus(t, "aiperf__profile_export_aiperf.json"))
	a, _ := runSummary(t, providerstest.Input(t, corpus(t, "aiperf__profile_export.jsonl"), gen.FormatAiperf))
	m := a.Metrics
	if float64(m["successful_requests"].(int)) != want["request_count"]["avg"] || float64(m["error_requests"].(int)) != want["error_request_count"]["avg"] {
		t.Errorf("successful %v errors %v; AIPerf says request_count %v error_request_count %v",
			m["successful_requests"], m["error_requests"], want["request_count"]["avg"], want["error_request_count"]["avg"])
	}
	stats := m["statistics"].(map[string]any)
	for ours, theirs := range map[string]struct {
		tag   string
		scale float64
	}{"ttft_ns": {"ttft", 1e6}, "latency_ns": {"request_latency", 1e6}, "tpot_ns": {"inter_token_latency", 1e6},
		"input_tokens": {"input_sequence_length", 1}, "output_tokens": {"output_sequence_length", 1}} {
		got := stats[ours].(map[string]any)
		for stat, v := range want[theirs.tag] {
			key := map[string]string{"avg": "mean"}[stat]
			if key == "" {
				key = stat
			}
			if stat != "count" {
				v *= theirs.scale
			}
			if g := num(got[key]); !near(g, v, 1) {
				t.Errorf("%s.%s = %v; AIPerf's %s.%s is %v", ours, key, g, theirs.tag, stat, v)
			}
		}
	}
}

func measurements(rows []map[string]any) map[string]float64 {
	out := map[string]float64{}
	for _, r := range rows {
		key := fmt.Sprintf("%v/%s", r["record_index"], r["name"])
		if r["value"] == nil {
			out[key] = math.NaN()
			continue
		}
		out[key] = r["value"].(float64)
	}
	return out
}

func TestAIPerfAggregateExports(t *testing.T) {
	var blocks map[string]map[string]any
	python(t, &blocks, `import json, sys; print(json.dumps(json.load(open(sys.argv[1]))["records"]))`, corpus(t, "aiperf__profile_export_aiperf.json"))
	a, rows := runSummary(t, providerstest.Input(t, corpus(t, "aiperf__profile_export_aiperf.json"), gen.FormatAiperf))
	got := measurements(rows)
	stats := []string{"avg", "min", "max", "p1", "p5", "p10", "p25", "p50", "p75", "p90", "p95", "p99", "std"}
	n := 0
	for tag, b := range blocks {
		if b["min"] == nil {
			n++
			if got["0/aiperf."+tag] != b["avg"] {
				t.Errorf("aiperf.%s = %v, AIPerf wrote %v", tag, got["0/aiperf."+tag], b["avg"])
			}
			continue
		}
		n++ // count
		for _, s := range stats {
			if v, ok := b[s].(float64); ok {
				n++
				if got["0/aiperf."+tag+"."+s] != v {
					t.Errorf("aiperf.%s.%s = %v, AIPerf wrote %v", tag, s, got["0/aiperf."+tag+"."+s], v)
				}
			}
		}
	}
	if len(rows) != n {
		t.Errorf("%d rows, want %d", len(rows), n)
	}
	ids := a.Metrics["comparison_identity"].(map[string]string)
	if len(ids) != 5 || len(a.Metrics["comparison_identity_unavailable"].([]string)) != 0 {
		t.Errorf("identity %v", a.Metrics)
	}
	// The CSV of the same run names its rows alike and rounds to two decimals.
	_, csvRows := runSummary(t, providerstest.Input(t, corpus(t, "aiperf__profile_export_aiperf.csv"), gen.FormatAiperf))
	if len(csvRows) < 100 {
		t.Fatalf("%d CSV rows", len(csvRows))
	}
	for k, v := range measurements(csvRows) {
		j, ok := got[k]
		if !ok || !near(v, j, 0.005+1e-15*math.Abs(j)) {
			t.Errorf("CSV %s = %v, JSON %v (present %v)", k, v, j, ok)
		}
	}
}

// TestSGLangAgainstPython reads both corpus files, whose every line is one run and whose
// offline runs have request_rate Infinity. Python's json module reads the bare literal
// natively, so it gives the truth.
func TestSGLangAgainstPython(t *testing.T) {
	config := map[string]bool{"request_rate": true, "max_concurrency": true, "random_input_len": true, "random_output_len": true,
		"random_range_ratio": true, "sharegpt_output_len": true}
	for _, name := range []string{"h200-benchmarks__sglang_bench_serving_llama70b_offline.jsonl", "h200-benchmarks__sglang_bench_serving_llama70b_online.jsonl"} {
		t.Run(name, func(t *testing.T) {
			var want []map[string]any
			python(t, &want, `
import json, sys
out = []
for l in open(sys.argv[1]):
  r = json.loads(l)
  out.append({k: (str(v) if v in (float("inf"), float("-inf")) else v) for k, v in r.items() if isinstance(v, (int, float)) and not isinstance(v, bool)})
print(json.dumps(out))`, corpus(t, name))
			a, rows := runSummary(t, providerstest.Input(t, corpus(t, name), gen.FormatSglangBenchmark))
			got := measurements(rows)
			n, completed := 0, 0.0
			for i, rec := range want {
				completed += rec["completed"].(float64)
				for k, v := range rec {
					if config[k] {
						continue
					}
					n++
					if g, ok := got[fmt.Sprintf("%d/sglang.%s", i, k)]; !ok || g != v {
						t.Errorf("record %d %s = %v, want %v", i, k, g, v)
					}
				}
			}
			if len(rows) != n || a.Metrics["record_count"] != 7 || a.Metrics["completed_requests"] != completed {
				t.Errorf("%d rows (want %d), metrics %v", len(rows), n, a.Metrics)
			}
			if strings.Contains(name, "offline") != strings.Contains(strings.Join(a.Limitations, " "), "request_rate in 7 of 7 records") {
				t.Errorf("limitations %q", a.Limitations)
			}
			if u := a.Metrics["comparison_identity_unavailable"].([]string); len(u) != 1 || u[0] != "system" {
				t.Errorf("unavailable %v", u)
			}
		})
	}
}

// traceTruth computes the trace figures in Python from the same file.
const traceTruth = `
import json, statistics, sys
recs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
ins = [r["input_length"] for r in recs]
ids = [h for r in recs for h in r["hash_ids"]]
ts = [r["timestamp"] for r in recs]
q = statistics.quantiles(ins, n=100, method="inclusive")
print(json.dumps({"n": len(recs), "max_in": max(ins), "max_out": max(r["output_length"] for r in recs), "mean_in": statistics.fmean(ins),
  "p50_in": statistics.median(ins), "p95_in": q[94], "total": len(ids), "distinct": len(set(ids)), "span": max(ts) - min(ts),
  "regressions": sum(1 for a, b in zip(ts, ts[1:]) if b < a), "mean_out": statistics.fmean(r["output_length"] for r in recs)}))
`

type traceFigures struct {
	N, MaxIn, MaxOut, Total, Distinct, Span, Regressions int64
	MeanIn, P50In, P95In, MeanOut                        float64
}

func (f *traceFigures) UnmarshalJSON(b []byte) error {
	var m map[string]float64
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	*f = traceFigures{N: int64(m["n"]), MaxIn: int64(m["max_in"]), MaxOut: int64(m["max_out"]), Total: int64(m["total"]),
		Distinct: int64(m["distinct"]), Span: int64(m["span"]), Regressions: int64(m["regressions"]),
		MeanIn: m["mean_in"], P50In: m["p50_in"], P95In: m["p95_in"], MeanOut: m["mean_out"]}
	return nil
}

func TestMooncakeAgainstPython(t *testing.T) {
	for _, name := range []string{"Mooncake__conversation_trace_head2000.jsonl", "Mooncake__synthetic_trace_head500.jsonl"} {
		t.Run(name, func(t *testing.T) {
			var want traceFigures
			python(t, &want, traceTruth, corpus(t, name))
			a, rows := runSummary(t, providerstest.Input(t, corpus(t, name), gen.FormatMooncakeTrace))
			m := a.Metrics
			in := m["statistics"].(map[string]any)["input_length"].(map[string]any)
			if int64(m["request_count"].(int)) != want.N || m["max_input_length"] != want.MaxIn || m["max_output_length"] != want.MaxOut ||
				m["total_prefix_hashes"] != want.Total || m["distinct_prefix_hashes"] != want.Distinct ||
				m["reused_prefix_hashes"] != want.Total-want.Distinct || m["span_ms"] != want.Span || int64(m["timestamp_regressions"].(int)) != want.Regressions {
				t.Errorf("metrics %v, want %+v", m, want)
			}
			if !near(in["mean"].(float64), want.MeanIn, 1e-9*want.MeanIn) || in["p50"] != want.P50In || !near(in["p95"].(float64), want.P95In, 1e-9*want.P95In) {
				t.Errorf("input_length statistics %v, want %+v", in, want)
			}
			if int64(len(rows)) != want.N || rows[0]["line_index"] != 0.0 {
				t.Errorf("%d rows", len(rows))
			}
		})
	}
}

// vllmResult is a result document shaped as `vllm bench serve --save-result` writes it.
// No real vLLM result file was available: the keys follow vLLM's own source
// (vllm/benchmarks/serve.py: the benchmark() result dict and main_async's result_json,
// non-detailed, so latencies and queue_times stay while ttfts, itls and generated_texts
// are removed), and the figures are made up. It is labelled as constructed, not produced.
const vllmResult = `{"date": "20260101-120000", "endpoint_type": "vllm", "backend": "vllm", "label": null, "model_id": "meta-llama/Llama-3.1-8B-Instruct", "tokenizer_id": "meta-llama/Llama-3.1-8B-Instruct", "num_prompts": 100, "request_rate": "inf", "burstiness": 1.0, "max_concurrency": 8, "duration": 12.5, "completed": 98, "failed": 2, "total_input_tokens": 100352, "total_output_tokens": 12544, "request_throughput": 7.84, "request_goodput": null, "output_throughput": 1003.52, "total_token_throughput": 9031.68, "latencies": [1.2, 1.3], "queue_times": [0.0, 0.1], "max_output_tokens_per_s": 1200.0, "max_concurrent_requests": 8, "rtfx": 0.0, "mean_ttft_ms": 45.2, "median_ttft_ms": 41.0, "std_ttft_ms": NaN, "p99_ttft_ms": 90.1, "mean_tpot_ms": 9.5, "median_tpot_ms": 9.4, "std_tpot_ms": 0.7, "p99_tpot_ms": 11.9, "mean_itl_ms": 9.6, "median_itl_ms": 9.3, "std_itl_ms": 1.1, "p99_itl_ms": 15.0, "mean_e2el_ms": 1250.0, "median_e2el_ms": 1240.0, "std_e2el_ms": 80.0, "p99_e2el_ms": 1500.0, "p99.9_e2el_ms": 1510.0, "spec_decode_acceptance_rate": 61.5}`

func TestVLLMConstructedResult(t *testing.T) {
	second := strings.Replace(strings.Replace(vllmResult, `"request_throughput": 7.84`, `"request_throughput": 8.16`, 1), `"completed": 98, "failed": 2`, `"completed": 100, "failed": 0`, 1)
	path := write(t, "vllm-constructed.json", vllmResult+"\n"+second+"\n")
	a, rows := runSummary(t, providerstest.Input(t, path, gen.FormatVllmBenchmark))
	got := measurements(rows)
	for k, v := range map[string]float64{
		"0/vllm.request_throughput": 7.84, "1/vllm.request_throughput": 8.16, "0/vllm.output_throughput": 1003.52,
		"0/vllm.total_input_tokens": 100352, "0/vllm.completed_requests": 98, "0/vllm.failed_requests": 2, "0/vllm.total_requests": 100,
		"0/vllm.duration_seconds": 12.5, "0/vllm.time_to_first_token.mean_ms": 45.2, "0/vllm.time_to_first_token.median_ms": 41,
		"0/vllm.time_to_first_token.p99_ms": 90.1, "0/vllm.time_per_output_token.std_ms": 0.7, "0/vllm.inter_token_latency.p99_ms": 15,
		"0/vllm.end_to_end_latency.p99.9_ms": 1510, "0/vllm.max_concurrent_requests": 8, "0/vllm.spec_decode_acceptance_rate": 61.5,
	} {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
	if !math.IsNaN(got["0/vllm.time_to_first_token.std_ms"]) {
		t.Errorf("NaN std is %v, want null", got["0/vllm.time_to_first_token.std_ms"])
	}
	for _, absent := range []string{"0/vllm.request_goodput", "0/vllm.rtfx", "0/vllm.burstiness", "0/vllm.num_prompts", "0/vllm.latencies"} {
		if _, ok := got[absent]; ok {
			t.Errorf("%s is a row", absent)
		}
	}
	if rows[0]["name"] != "vllm.request_throughput" || rows[0]["unit"] != "requests/sec" || rows[0]["aggregation"] != "aggregate" {
		t.Errorf("first row %v", rows[0])
	}
	notes := strings.Join(a.Limitations, "\n")
	if !strings.Contains(notes, "std_ttft_ms in 2 of 2 records") || !strings.Contains(notes, "(latencies, queue_times)") {
		t.Errorf("limitations %q", a.Limitations)
	}
	if a.Metrics["record_count"] != 2 || a.Metrics["successful_requests"] != 198.0 || len(a.Metrics["comparison_identity_unavailable"].([]string)) != 0 {
		t.Errorf("metrics %v", a.Metrics)
	}
	// An older benchmark_serving.py result has no failed count: it is derived and said so.
	old := strings.Replace(vllmResult, `"failed": 2, `, "", 1)
	a, rows = runSummary(t, providerstest.Input(t, write(t, "old.json", old), gen.FormatVllmBenchmark))
	if measurements(rows)["0/vllm.failed_requests"] != 2 || !strings.Contains(strings.Join(a.Limitations, " "), "num_prompts - completed") {
		t.Errorf("derived failed count: %v %q", measurements(rows)["0/vllm.failed_requests"], a.Limitations)
	}
}

// TestMalformedInputs: every format's malformed, truncated and oversized inputs fail with
// a typed error naming the source.
func TestMalformedInputs(t *testing.T) {
	aiperfLine, err := os.ReadFile(corpus(t, "aiperf__profile_export.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(aiperfLine), "\n")
	mooncake := `{"timestamp": 0, "input_length": 10, "output_length": 2, "hash_ids": [0]}` + "\n"
	sglang := `{"backend": "sglang", "request_rate": Infinity, "duration": 1.5, "completed": 3, "output_throughput": 2.0}` + "\n"
	huge := strings.Repeat("x", maxAIPerfLine+10)
	tests := []struct {
		name, content string
		format        gen.Format
		want          string // "decode" or "limit"
		message       string
	}{
		{"aiperf truncated", lines[0] + lines[1][:200], gen.FormatAiperf, "decode", "truncated"},
		{"aiperf not a record", lines[0] + `{"foo": 1}` + "\n", gen.FormatAiperf, "decode", "neither metadata nor metrics"},
		{"aiperf wrong type", lines[0] + `{"metadata": {}, "metrics": {"ttft": {"value": "fast", "unit": "ms"}}}` + "\n", gen.FormatAiperf, "decode", "wrong type"},
		{"aiperf bad unit", lines[0] + `{"metadata": {}, "metrics": {"ttft": {"value": 1, "unit": "fortnights"}}}` + "\n", gen.FormatAiperf, "decode", "not a time unit"},
		{"aiperf oversized line", lines[0] + `{"metadata": {"x_request_id": "` + huge + `"}}` + "\n", gen.FormatAiperf, "limit", "longer than"},
		{"aiperf empty", "\n\n", gen.FormatAiperf, "decode", "empty"},
		{"aiperf aggregate truncated", `{"records": {"ttft": {"unit": "ms", "avg": 1.0`, gen.FormatAiperf, "decode", "neither"},
		{"aiperf aggregate oversized", `{"records": {}, "pad": "` + strings.Repeat("x", maxDocumentBytes) + `"}`, gen.FormatAiperf, "limit", "larger than"},
		{"aiperf csv ragged", "Metric,avg,min\nRequest Latency (ms),1.0\n", gen.FormatAiperf, "decode", "not valid CSV"},
		{"aiperf csv not a number", "Metric,avg,min\nRequest Latency (ms),fast,1\n", gen.FormatAiperf, "decode", "not a number"},
		{"vllm truncated", vllmResult[:300], gen.FormatVllmBenchmark, "decode", "truncated"},
		{"vllm not an object", "[1, 2]", gen.FormatVllmBenchmark, "decode", "not a JSON object"},
		{"vllm no completed", `{"duration": 1.0}`, gen.FormatVllmBenchmark, "decode", "completed and duration"},
		{"vllm oversized", `{"pad": "` + strings.Repeat("x", maxDocumentBytes) + `"}`, gen.FormatVllmBenchmark, "limit", "larger than"},
		{"vllm empty", "  \n", gen.FormatVllmBenchmark, "decode", "no record"},
		{"sglang truncated", sglang + sglang[:40], gen.FormatSglangBenchmark, "decode", "record 1"},
		{"sglang no duration", `{"backend": "sglang", "completed": 3}`, gen.FormatSglangBenchmark, "decode", "completed and duration"},
		{"sglang duplicate names", `{"completed": 1, "completed": 2, "duration": 1}`, gen.FormatSglangBenchmark, "decode", "duplicate"},
		{"mooncake truncated", mooncake + mooncake[:30], gen.FormatMooncakeTrace, "decode", "truncated"},
		{"mooncake negative", `{"timestamp": 0, "input_length": -1, "output_length": 2, "hash_ids": []}`, gen.FormatMooncakeTrace, "decode", "negative"},
		{"mooncake missing", `{"input_length": 1, "output_length": 2, "hash_ids": []}`, gen.FormatMooncakeTrace, "decode", "timestamp is missing"},
		{"mooncake fraction", `{"timestamp": 0.5, "input_length": 1, "output_length": 2, "hash_ids": []}`, gen.FormatMooncakeTrace, "decode", "wrong type"},
		{"mooncake oversized", `{"timestamp": 0, "input_length": 1, "output_length": 2, "hash_ids": [` + strings.Repeat("1,", 40000) + `1]}`, gen.FormatMooncakeTrace, "limit", "longer than"},
		{"mooncake empty", "", gen.FormatMooncakeTrace, "decode", "no request"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := providers.Input{Index: 3, Path: write(t, "in", tt.content), Format: tt.format}
			_, err := summarize(context.Background(), &providers.Request[gen.NoFields]{Fields: &gen.NoFields{}, Inputs: []providers.Input{in}})
			var de *providers.DecodeError
			var le *providers.LimitError
			switch {
			case tt.want == "decode" && errors.As(err, &de):
				if de.Source != 3 || !strings.Contains(de.Message, tt.message) {
					t.Errorf("source %d message %q", de.Source, de.Message)
				}
			case tt.want == "limit" && errors.As(err, &le):
				if le.Source != 3 || !strings.Contains(le.Message, tt.message) {
					t.Errorf("source %d message %q", le.Source, le.Message)
				}
			default:
				t.Errorf("error %T %v, want a %s error", err, err, tt.want)
			}
		})
	}
}

func TestComparisons(t *testing.T) {
	conv, synth := corpus(t, "Mooncake__conversation_trace_head2000.jsonl"), corpus(t, "Mooncake__synthetic_trace_head500.jsonl")
	mc := func(p string) providers.Input { return providers.Input{Path: p, Format: gen.FormatMooncakeTrace} }
	t.Run("known-different traces need allow_heterogeneous", func(t *testing.T) {
		_, err := providerstest.Analyze(t, compare, &gen.InferenceCompareFields{}, mc(conv), mc(synth))
		var fe *providers.FieldError
		if !errors.As(err, &fe) || fe.Field[0] != "allow_heterogeneous" || fe.Details["identity_differences"].(map[string]any)["workload.trace"] == nil {
			t.Fatalf("error %v", err)
		}
		var c, s traceFigures
		python(t, &c, traceTruth, conv)
		python(t, &s, traceTruth, synth)
		metric := "output_length"
		a, err := providerstest.Analyze(t, compare, &gen.InferenceCompareFields{AllowHeterogeneous: true, Metric: &metric}, mc(conv), mc(synth))
		if err != nil {
			t.Fatal(err)
		}
		rows := providerstest.Maps(t, providerstest.Rows(t, a.Rows, 100))
		r := rows[0]
		if r["compatibility"] != "heterogeneous" || !near(r["baseline_mean"].(float64), c.MeanOut, 1e-9) || !near(r["candidate_mean"].(float64), s.MeanOut, 1e-9) ||
			!near(r["ratio"].(float64), s.MeanOut/c.MeanOut, 1e-12) || r["baseline_samples"] != float64(c.N) || r["candidate_samples"] != float64(s.N) {
			t.Errorf("row %v, want means %v %v", r, c.MeanOut, s.MeanOut)
		}
		if u := r["identity_unavailable"].([]any); len(u) != 1 || u[0] != "system" || a.Metrics["compatibility"] != "heterogeneous" {
			t.Errorf("row %v metrics %v", r, a.Metrics)
		}
	})
	t.Run("same trace is partial: a trace names no system", func(t *testing.T) {
		a, err := providerstest.Analyze(t, compare, &gen.InferenceCompareFields{BaselineIndex: 1}, mc(synth), mc(synth), mc(synth))
		if err != nil {
			t.Fatal(err)
		}
		rows := providerstest.Maps(t, providerstest.Rows(t, a.Rows, 100))
		if len(rows) != 2 || rows[0]["candidate_index"] != 0.0 || rows[1]["candidate_index"] != 2.0 || rows[0]["ratio"] != 1.0 ||
			rows[0]["compatibility"] != "partial" || a.Metrics["metric"] != "input_length" {
			t.Errorf("rows %v metrics %v", rows, a.Metrics)
		}
	})
	aiperf := providers.Input{Path: corpus(t, "aiperf__profile_export.jsonl"), Format: gen.FormatAiperf}
	t.Run("aiperf requests against themselves", func(t *testing.T) {
		var want struct{ Stats map[string]map[string]float64 }
		python(t, &want, requestTruth, aiperf.Path)
		metric := "ttft_ns"
		a, err := providerstest.Analyze(t, compare, &gen.InferenceCompareFields{Metric: &metric}, aiperf, aiperf)
		if err != nil {
			t.Fatal(err)
		}
		r := providerstest.Maps(t, providerstest.Rows(t, a.Rows, 10))[0]
		if r["ratio"] != 1.0 || r["baseline_samples"] != 89.0 || !near(r["baseline_mean"].(float64), want.Stats["ttft_ns"]["mean"], 1e-3) ||
			r["compatibility"] != "partial" || fmt.Sprint(r["identity_unavailable"]) != "[system workload]" {
			t.Errorf("row %v", r)
		}
		bad := "p95"
		_, err = providerstest.Analyze(t, compare, &gen.InferenceCompareFields{Metric: &bad}, aiperf, aiperf)
		var fe *providers.FieldError
		if !errors.As(err, &fe) || fe.Field[0] != "metric" || len(fe.Accepted) != len(requestMetrics) {
			t.Errorf("unknown metric: %v", err)
		}
	})
	t.Run("aiperf records and aggregates are never mixed", func(t *testing.T) {
		agg := providers.Input{Path: corpus(t, "aiperf__profile_export_aiperf.json"), Format: gen.FormatAiperf}
		_, err := providerstest.Analyze(t, compare, &gen.InferenceCompareFields{}, aiperf, agg)
		var fe *providers.FieldError
		if !errors.As(err, &fe) || fmt.Sprint(fe.Field) != "[sources 1]" {
			t.Errorf("error %v", err)
		}
		csv := providers.Input{Path: corpus(t, "aiperf__profile_export_aiperf.csv"), Format: gen.FormatAiperf}
		a, err := providerstest.Analyze(t, compare, &gen.InferenceCompareFields{}, agg, csv)
		if err != nil {
			t.Fatal(err)
		}
		r := providerstest.Maps(t, providerstest.Rows(t, a.Rows, 10))[0]
		if r["metric"] != "aiperf.request_latency.avg" || !near(r["ratio"].(float64), 1, 1e-6) || r["compatibility"] != "partial" {
			t.Errorf("row %v", r)
		}
	})
	offline := providers.Input{Path: corpus(t, "h200-benchmarks__sglang_bench_serving_llama70b_offline.jsonl"), Format: gen.FormatSglangBenchmark}
	online := providers.Input{Path: corpus(t, "h200-benchmarks__sglang_bench_serving_llama70b_online.jsonl"), Format: gen.FormatSglangBenchmark}
	t.Run("sglang", func(t *testing.T) {
		_, err := providerstest.Analyze(t, compare, &gen.InferenceCompareFields{}, offline, online)
		var fe *providers.FieldError
		if !errors.As(err, &fe) || fe.Field[0] != "metric" || !slices.Contains(fe.Accepted, "sglang.output_throughput") || slices.Contains(fe.Accepted, "sglang.request_throughput") {
			t.Fatalf("these runs carry no request_throughput: %v", err)
		}
		metric := "sglang.output_throughput"
		_, err = providerstest.Analyze(t, compare, &gen.InferenceCompareFields{Metric: &metric}, offline, online)
		if !errors.As(err, &fe) || fe.Field[0] != "allow_heterogeneous" {
			t.Fatalf("online and offline runs differ: %v", err)
		}
		diffs := sortedKeys(fe.Details["identity_differences"].(map[string]any))
		if !slices.Contains(diffs, "workload.request_rate") || !slices.Contains(diffs, "workload.random_input_len") {
			t.Errorf("differences %v", diffs)
		}
		var mean float64
		python(t, &mean, `import json, sys, statistics; print(statistics.fmean(json.loads(l)["output_throughput"] for l in open(sys.argv[1])))`, offline.Path)
		a, err := providerstest.Analyze(t, compare, &gen.InferenceCompareFields{Metric: &metric}, offline, offline)
		if err != nil {
			t.Fatal(err)
		}
		r := providerstest.Maps(t, providerstest.Rows(t, a.Rows, 10))[0]
		if !near(r["baseline_mean"].(float64), mean, 1e-9*mean) || r["baseline_samples"] != 7.0 || r["compatibility"] != "partial" ||
			!strings.Contains(strings.Join(a.Limitations, " "), "mean over its runs") {
			t.Errorf("row %v, python mean %v", r, mean)
		}
	})
	t.Run("vllm identities", func(t *testing.T) {
		base := providers.Input{Path: write(t, "a.json", vllmResult), Format: gen.FormatVllmBenchmark}
		other := providers.Input{Path: write(t, "b.json", strings.Replace(strings.ReplaceAll(vllmResult, "Llama-3.1-8B", "Llama-3.1-70B"), `"request_throughput": 7.84`, `"request_throughput": 3.92`, 1)), Format: gen.FormatVllmBenchmark}
		_, err := providerstest.Analyze(t, compare, &gen.InferenceCompareFields{}, base, other)
		var fe *providers.FieldError
		if !errors.As(err, &fe) || fmt.Sprint(sortedKeys(fe.Details["identity_differences"].(map[string]any))) != "[system.model_id system.tokenizer_id]" {
			t.Fatalf("error %v", err)
		}
		a, err := providerstest.Analyze(t, compare, &gen.InferenceCompareFields{AllowHeterogeneous: true}, base, other, base)
		if err != nil {
			t.Fatal(err)
		}
		rows := providerstest.Maps(t, providerstest.Rows(t, a.Rows, 10))
		if rows[0]["ratio"] != 0.5 || rows[0]["compatibility"] != "heterogeneous" || rows[1]["compatibility"] != "compatible" || rows[1]["ratio"] != 1.0 {
			t.Errorf("rows %v", rows)
		}
		diffs := a.Metrics["identity_differences"].(map[string]any)["system.model_id"].([]any)
		if len(diffs) != 3 || diffs[0] != diffs[2] || diffs[0] == diffs[1] {
			t.Errorf("metrics %v", a.Metrics)
		}
	})
	t.Run("request errors", func(t *testing.T) {
		_, err := providerstest.Analyze(t, compare, &gen.InferenceCompareFields{}, aiperf, mc(synth))
		var fe *providers.FieldError
		if !errors.As(err, &fe) || fmt.Sprint(fe.Field) != "[sources 1 format]" {
			t.Errorf("mixed formats: %v", err)
		}
		_, err = providerstest.Analyze(t, compare, &gen.InferenceCompareFields{BaselineIndex: 2}, aiperf, aiperf)
		if !errors.As(err, &fe) || fe.Field[0] != "baseline_index" {
			t.Errorf("baseline_index: %v", err)
		}
		_, err = providerstest.Analyze(t, compare, &gen.InferenceCompareFields{}, mc(synth), providers.Input{Path: write(t, "bad.jsonl", "{}\n"), Format: gen.FormatMooncakeTrace})
		var de *providers.DecodeError
		if !errors.As(err, &de) || de.Source != 1 || !strings.HasPrefix(de.Message, "source 1: ") {
			t.Errorf("decode error of source 1: %v", err)
		}
	})
}

// TestPaging: request rows are paged by reading the export again; a page starts where
// asked and says whether rows follow.
func TestPaging(t *testing.T) {
	a, _ := runSummary(t, providerstest.Input(t, corpus(t, "aiperf__profile_export.jsonl"), gen.FormatAiperf))
	p, err := a.Rows.Page(context.Background(), 40, 40, nil)
	if err != nil || len(p.Rows) != 40 || !p.More || p.Observed != 81 {
		t.Fatalf("page %v %v", p, err)
	}
	p, err = a.Rows.Page(context.Background(), 80, 40, nil)
	if err != nil {
		t.Fatal(err)
	}
	rows := providerstest.Maps(t, p.Rows)
	if len(rows) != 20 || rows[0]["line_index"] != 80.0 || rows[19]["line_index"] != 99.0 {
		t.Errorf("last page %d rows", len(rows))
	}
	if _, err := a.Rows.Page(context.Background(), 100, 10, nil); !errors.As(err, new(*providers.OffsetError)) {
		t.Errorf("offset past the end: %v", err)
	}
}

// TestDefaultPageBytes: a default page (100 rows) with its metrics stays well under the
// 100 KB a page may hold, for every format's row shape.
func TestDefaultPageBytes(t *testing.T) {
	for _, c := range []struct {
		name   string
		format gen.Format
	}{{"aiperf__profile_export.jsonl", gen.FormatAiperf}, {"aiperf__profile_export_aiperf.json", gen.FormatAiperf},
		{"Mooncake__conversation_trace_head2000.jsonl", gen.FormatMooncakeTrace},
		{"h200-benchmarks__sglang_bench_serving_llama70b_online.jsonl", gen.FormatSglangBenchmark}} {
		a, err := providerstest.Analyze(t, summarize, &gen.NoFields{}, providerstest.Input(t, corpus(t, c.name), c.format))
		if err != nil {
			t.Fatal(err)
		}
		p, err := a.Rows.Page(context.Background(), 0, 100, nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.MarshalIndent(map[string]any{"metrics": a.Metrics, "rows": p.Rows, "limitations": a.Limitations}, "    ", "  ")
		if len(b) > 90_000 {
			t.Errorf("%s: a default page is %d bytes", c.name, len(b))
		}
	}
}

func TestQuantileMatchesNumpy(t *testing.T) {
	// numpy.percentile([1, 2, 3, 4], [0, 25, 50, 95, 100]) = [1, 1.75, 2.5, 3.85, 4]
	s := []float64{1, 2, 3, 4}
	for q, want := range map[float64]float64{0: 1, 0.25: 1.75, 0.5: 2.5, 0.95: 3.85, 1: 4} {
		if got := quantile(s, q); !near(got, want, 1e-12) {
			t.Errorf("quantile(%v) = %v, want %v", q, got, want)
		}
	}
	one := series{keep: true}
	one.add(7)
	if m := one.summary(); m["p99"] != 7.0 || m["std"] != 0.0 {
		t.Errorf("one value: %v", m)
	}
	keys := []string{}
	for k := range (&series{}).summary() {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if fmt.Sprint(keys) != "[count]" {
		t.Errorf("empty summary %v", keys)
	}
}

func TestAcceptNonFinite(t *testing.T) {
	in := `{"a": NaN, "b": "NaN Infinity", "c": [-Infinity, 1], "d": "\"Infinity"}`
	out, found := nonfinite.Accept([]byte(in))
	var m map[string]any
	if err := json.Unmarshal(out, &m); err != nil || !found {
		t.Fatalf("%s: %v", out, err)
	}
	if v, _ := number(m["a"]); !math.IsNaN(v) || m["b"] != "NaN Infinity" || m["d"] != `"Infinity` {
		t.Errorf("%v", m)
	}
	if v, _ := number(m["c"].([]any)[0]); !math.IsInf(v, -1) {
		t.Errorf("%v", m["c"])
	}
	if _, found := nonfinite.Accept([]byte(`{"a": 1}`)); found {
		t.Error("found a literal in plain JSON")
	}
}
