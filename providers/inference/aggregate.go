package inference

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/providers"
	"github.com/flameox/flameox/providers/internal/nonfinite"
)

// maxDocumentBytes bounds the aggregate documents (vLLM and SGLang results, AIPerf's
// aggregate exports), which are read whole: the catalog's vLLM bound.
const maxDocumentBytes = 16 << 20

// maxRecords bounds the run records of one aggregate file.
const maxRecords = 10_000

// measurement is one aggregate a producer computed for a run.
type measurement struct {
	record      int
	name        string
	value       float64
	unit        string
	aggregation string
}

func (m measurement) row() gen.InferenceMeasurementRow {
	r := gen.InferenceMeasurementRow{RecordIndex: int64(m.record), Name: m.name, Unit: providers.Nullable(m.unit), Aggregation: m.aggregation}
	if !math.IsNaN(m.value) && !math.IsInf(m.value, 0) {
		v := m.value
		r.Value = &v
	}
	return r
}

// aggregates is a decoded aggregate export: its measurements, its identity and what the
// reader noticed.
type aggregates struct {
	records      int
	measurements []measurement
	identity     identity
	metrics      map[string]any
	limitations  []string
}

// readDocument reads an aggregate document whole, bounded, transparently gunzipped.
func readDocument(in providers.Input, what string) ([]byte, error) {
	f, err := providers.OpenInput(in)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxDocumentBytes+1))
	if err != nil {
		return nil, &providers.DecodeError{Source: in.Index, Err: err, Message: "the input could not be read (bad compression or I/O error)"}
	}
	if len(b) > maxDocumentBytes {
		return nil, &providers.LimitError{Source: in.Index, Limit: maxDocumentBytes, Unit: "bytes",
			Message: fmt.Sprintf("the %s is larger than %d bytes, the bound of a document read whole", what, maxDocumentBytes)}
	}
	return b, nil
}

// number reads a decoded JSON number, including a marked non-finite literal.
func number(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case string:
		return nonfinite.Float(x)
	}
	return 0, false
}

// readRecords decodes a file of one or more JSON objects (a document, or one per line as
// --append-result and bench_serving write), Python's non-finite literals accepted.
func readRecords(in providers.Input, what string) ([]map[string]any, bool, error) {
	b, err := readDocument(in, what)
	if err != nil {
		return nil, false, err
	}
	b, nonFinite := nonfinite.Accept(b)
	dec := jsontext.NewDecoder(bytes.NewReader(b))
	var records []map[string]any
	for {
		v, err := dec.ReadValue()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			problem := "is not valid JSON"
			switch {
			case errors.Is(err, io.ErrUnexpectedEOF):
				problem = "is not complete JSON (the file may be truncated)"
			case errors.Is(err, jsontext.ErrDuplicateName):
				problem = "has a duplicate name"
			}
			return nil, false, &providers.DecodeError{Source: in.Index, Err: err, Details: map[string]any{"record": len(records)},
				Message: fmt.Sprintf("record %d of the %s %s", len(records), what, problem)}
		}
		if v.Kind() != '{' {
			return nil, false, &providers.DecodeError{Source: in.Index, Details: map[string]any{"record": len(records)},
				Message: fmt.Sprintf("record %d of the %s is not a JSON object", len(records), what)}
		}
		if len(records) == maxRecords {
			return nil, false, &providers.LimitError{Source: in.Index, Limit: maxRecords, Unit: "records",
				Message: fmt.Sprintf("the %s holds more than %d run records", what, maxRecords)}
		}
		var m map[string]any
		if err := json.Unmarshal(v, &m); err != nil {
			return nil, false, &providers.DecodeError{Source: in.Index, Err: err, Details: map[string]any{"record": len(records)},
				Message: fmt.Sprintf("record %d of the %s is not valid JSON (duplicate names or invalid UTF-8)", len(records), what)}
		}
		records = append(records, m)
	}
	if len(records) == 0 {
		return nil, false, &providers.DecodeError{Source: in.Index, Message: fmt.Sprintf("the %s holds no record", what)}
	}
	return records, nonFinite, nil
}

// perRequestArrays are the per-request lists vLLM and SGLang may write into a result;
// they are never read.
var perRequestArrays = []string{"input_lens", "output_lens", "ttfts", "itls", "latencies", "start_times",
	"queue_times", "generated_texts", "errors"}

// recordIdentity digests the declared fields of run records: each field's values across
// the records (null where a record lacks it), when any record has it.
func recordIdentity(declared []identityField, records []map[string]any) identity {
	values := map[string]any{}
	for _, f := range declared {
		per := make([]any, len(records))
		seen := false
		for i, r := range records {
			if v, ok := r[f.name]; ok {
				per[i], seen = v, true
			}
		}
		if seen {
			values[f.key()] = per
		}
	}
	return newIdentity(declared, values)
}

// runNotes are the dynamic limitations of run records: non-finite values, per-request
// arrays that were skipped, numeric fields of unknown kind.
func runNotes(records []map[string]any, nonFinite bool, producer string) []string {
	var notes []string
	if nonFinite {
		count := map[string]int{}
		for _, r := range records {
			for k, v := range r {
				if s, ok := v.(string); ok && strings.HasPrefix(s, nonfinite.Mark) {
					count[k]++
				}
			}
		}
		var fields []string
		for k, n := range count {
			fields = append(fields, fmt.Sprintf("%s in %d of %d records", k, n, len(records)))
		}
		sort.Strings(fields)
		where := "nested values"
		if len(fields) > 0 {
			where = strings.Join(fields, ", ")
		}
		notes = append(notes, fmt.Sprintf("This file writes bare non-finite literals (NaN, Infinity), read as non-finite numbers: %s.", where))
	}
	skipped := map[string]bool{}
	for _, r := range records {
		for _, k := range perRequestArrays {
			if _, ok := r[k]; ok {
				skipped[k] = true
			}
		}
	}
	if len(skipped) > 0 {
		names := make([]string, 0, len(skipped))
		for k := range skipped {
			names = append(names, k)
		}
		sort.Strings(names)
		notes = append(notes, fmt.Sprintf("The %s result carries per-request arrays (%s); they were not read: the rows are %s's own aggregates.",
			producer, strings.Join(names, ", "), producer))
	}
	return notes
}

// vllmFamilies names vLLM's per-request metric families as the catalog's rows do.
var vllmFamilies = map[string]string{"ttft": "time_to_first_token", "tpot": "time_per_output_token", "itl": "inter_token_latency",
	"e2el": "end_to_end_latency", "client_queue_time": "client_queue_time", "e2el_including_client_queue": "end_to_end_latency_including_client_queue"}

var vllmStat = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(mean|median|std|p[0-9]+(?:\.[0-9]+)?)_(e2el_including_client_queue|client_queue_time|ttft|tpot|itl|e2el)_ms$`)
})

// vllmFixed are a vLLM result's run-level figures, in row order: field, row name, unit,
// aggregation.
var vllmFixed = [][4]string{
	{"request_throughput", "vllm.request_throughput", "requests/sec", "aggregate"},
	{"request_goodput", "vllm.request_goodput", "requests/sec", "aggregate"},
	{"output_throughput", "vllm.output_throughput", "tokens/sec", "aggregate"},
	{"total_token_throughput", "vllm.total_token_throughput", "tokens/sec", "aggregate"},
	{"total_input_tokens", "vllm.total_input_tokens", "tokens", "sum"},
	{"total_output_tokens", "vllm.total_output_tokens", "tokens", "sum"},
	{"completed", "vllm.completed_requests", "requests", "count"},
	{"failed", "vllm.failed_requests", "requests", "count"},
	{"duration", "vllm.duration_seconds", "s", "aggregate"},
	{"max_output_tokens_per_s", "vllm.max_output_tokens_per_s", "tokens/sec", "max"},
	{"max_concurrent_requests", "vllm.max_concurrent_requests", "requests", "max"},
	{"rtfx", "vllm.rtfx", "", "aggregate"},
}

// vllmIdentity are the configuration fields a vLLM result records.
var vllmIdentity = []identityField{
	{axisSystem, "backend", false}, {axisSystem, "model_id", true}, {axisSystem, "tokenizer_id", true},
	{axisWorkload, "dataset_name", true}, {axisWorkload, "num_prompts", true}, {axisWorkload, "request_rate", true},
	{axisWorkload, "burstiness", false}, {axisWorkload, "max_concurrency", false}, {axisWorkload, "ramp_up_strategy", false},
	{axisWorkload, "ramp_up_start_rps", false}, {axisWorkload, "ramp_up_end_rps", false},
	{axisWorkload, "best_of", false}, {axisWorkload, "use_beam_search", false},
}

// vllmConfig are the fields of a vLLM result that are configuration or text, not figures.
var vllmConfig = map[string]bool{"date": true, "endpoint_type": true, "label": true, "version": true}

// decodeVLLM reads a `vllm bench serve` / benchmark_serving.py --save-result file: one
// flat result document per run, the producer's aggregates named as the catalog names them.
func decodeVLLM(in providers.Input) (*aggregates, error) {
	records, nonFinite, err := readRecords(in, "vLLM result")
	if err != nil {
		return nil, err
	}
	a := &aggregates{records: len(records), identity: recordIdentity(vllmIdentity, records)}
	known := map[string]bool{}
	for _, f := range vllmIdentity {
		known[f.name] = true
	}
	for _, f := range vllmFixed {
		known[f[0]] = true
	}
	successful, failed := 0.0, 0.0
	derived := false
	for i, r := range records {
		completed, okC := number(r["completed"])
		_, okD := number(r["duration"])
		if !okC || !okD {
			return nil, &providers.DecodeError{Source: in.Index, Details: map[string]any{"record": i},
				Message: fmt.Sprintf("record %d is not a vLLM benchmark result: it has no numeric completed and duration", i)}
		}
		add := func(name, unit, aggregation string, v float64) {
			a.measurements = append(a.measurements, measurement{record: i, name: name, value: v, unit: unit, aggregation: aggregation})
		}
		successful += completed
		for _, f := range vllmFixed {
			v, ok := number(r[f[0]])
			if f[0] == "failed" {
				if !ok {
					if prompts, okP := number(r["num_prompts"]); okP {
						v, ok, derived = prompts-completed, true, true
					}
				}
				if ok {
					failed += v
					add(f[1], f[2], f[3], v)
					add("vllm.total_requests", "requests", "count", completed+v)
				}
				continue
			}
			// rtfx is 0 unless the benchmark transcribed audio.
			if ok && (f[0] != "rtfx" || v != 0) {
				add(f[1], f[2], f[3], v)
			}
		}
		var rest []string
		for k, v := range r {
			if _, isNum := number(v); isNum && !known[k] && !vllmConfig[k] {
				rest = append(rest, k)
			}
		}
		sort.Slice(rest, func(x, y int) bool { return vllmOrder(rest[x]) < vllmOrder(rest[y]) })
		for _, k := range rest {
			v, _ := number(r[k])
			if m := vllmStat().FindStringSubmatch(k); m != nil {
				stat, agg := m[1], m[1]
				if strings.HasPrefix(stat, "p") {
					agg = "percentile"
				}
				add(fmt.Sprintf("vllm.%s.%s_ms", vllmFamilies[m[2]], stat), "ms", agg, v)
				continue
			}
			add("vllm."+k, "", "reported", v)
		}
	}
	a.metrics = map[string]any{"successful_requests": successful, "failed_requests": failed}
	a.limitations = runNotes(records, nonFinite, "vLLM")
	if derived {
		a.limitations = append(a.limitations, "A result without a failed count (older vLLM) has vllm.failed_requests derived as num_prompts - completed.")
	}
	return a, nil
}

// vllmOrder sorts a vLLM result's per-request statistics by family, then mean, median,
// std and percentiles by rank, and unknown fields last by name.
func vllmOrder(k string) string {
	m := vllmStat().FindStringSubmatch(k)
	if m == nil {
		return "9" + k
	}
	families := []string{"ttft", "tpot", "itl", "e2el", "client_queue_time", "e2el_including_client_queue"}
	fam := 0
	for i, f := range families {
		if f == m[2] {
			fam = i
		}
	}
	stat := map[string]string{"mean": "0", "median": "1", "std": "2"}[m[1]]
	if stat == "" {
		p, _ := strconv.ParseFloat(m[1][1:], 64)
		stat = fmt.Sprintf("3%08.3f", p)
	}
	return fmt.Sprintf("1%d%s", fam, stat)
}

// sglangIdentity are the configuration fields an SGLang bench_serving record carries.
var sglangIdentity = []identityField{
	{axisSystem, "backend", false}, {axisSystem, "model_id", true}, {axisSystem, "tokenizer_id", true}, {axisSystem, "server_info", true},
	{axisWorkload, "dataset_name", true}, {axisWorkload, "request_rate", true}, {axisWorkload, "max_concurrency", false},
	{axisWorkload, "num_prompts", true}, {axisWorkload, "sharegpt_output_len", false}, {axisWorkload, "sharegpt_context_len", false},
	{axisWorkload, "random_input_len", true}, {axisWorkload, "random_output_len", true}, {axisWorkload, "random_range_ratio", false},
}

var sglangStat = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(mean|median|std|min|max|p[0-9]+(?:\.[0-9]+)?)_.*_ms$`)
})

// sglangUnit is the unit and aggregation of an SGLang record field, from its name.
func sglangUnit(k string) (string, string) {
	switch {
	case sglangStat().MatchString(k):
		stat := sglangStat().FindStringSubmatch(k)[1]
		if strings.HasPrefix(stat, "p") {
			return "ms", "percentile"
		}
		return "ms", stat
	case k == "duration":
		return "s", "aggregate"
	case k == "completed" || k == "failed" || k == "aborted" || k == "total_turns":
		return "requests", "count"
	case strings.HasPrefix(k, "total_") && strings.Contains(k, "tokens"):
		return "tokens", "sum"
	case k == "request_throughput":
		return "requests/sec", "aggregate"
	case strings.Contains(k, "throughput"):
		return "tokens/sec", "aggregate"
	case k == "max_output_tokens_per_s":
		return "tokens/sec", "max"
	case k == "concurrency":
		return "requests", "mean"
	case k == "accept_length":
		return "tokens", "mean"
	}
	return "", "reported"
}

// decodeSGLang reads an SGLang bench_serving output file: one aggregate record per run,
// appended line by line; every numeric field that is not configuration is a row.
func decodeSGLang(in providers.Input) (*aggregates, error) {
	records, nonFinite, err := readRecords(in, "SGLang bench_serving output")
	if err != nil {
		return nil, err
	}
	a := &aggregates{records: len(records), identity: recordIdentity(sglangIdentity, records)}
	config := map[string]bool{}
	for _, f := range sglangIdentity {
		config[f.name] = true
	}
	completed := 0.0
	for i, r := range records {
		c, okC := number(r["completed"])
		_, okD := number(r["duration"])
		if !okC || !okD {
			return nil, &providers.DecodeError{Source: in.Index, Details: map[string]any{"record": i},
				Message: fmt.Sprintf("record %d is not an SGLang bench_serving result: it has no numeric completed and duration", i)}
		}
		completed += c
		keys := make([]string, 0, len(r))
		for k, v := range r {
			if _, ok := number(v); ok && !config[k] {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			v, _ := number(r[k])
			unit, agg := sglangUnit(k)
			a.measurements = append(a.measurements, measurement{record: i, name: "sglang." + k, value: v, unit: unit, aggregation: agg})
		}
	}
	a.metrics = map[string]any{"completed_requests": completed}
	a.limitations = runNotes(records, nonFinite, "SGLang")
	return a, nil
}
