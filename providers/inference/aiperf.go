package inference

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
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

// maxAIPerfLine bounds one per-request record: streamed records carry every inter-chunk
// gap, about 20 bytes per chunk.
const maxAIPerfLine = 4 << 20

// maxRequests bounds the requests of one export whose values are kept for percentiles
// (8 bytes per request and metric).
const maxRequests = 5_000_000

// AIPerf exports come in three shapes, one format: per-request records, the aggregate
// JSON document and the aggregate CSV.
const (
	variantRequests  = "request records"
	variantAggregate = "aggregate export"
)

// aiperfVariant tells a per-request export (JSON Lines whose first record has metadata or
// metrics) from the aggregate JSON document and the two-table CSV.
func aiperfVariant(in providers.Input) (string, error) {
	f, err := providers.OpenInput(in)
	if err != nil {
		return "", err
	}
	defer f.Close()
	lr := newLineReader(f, in.Index, maxAIPerfLine, "AIPerf record")
	line, _, err := lr.Next()
	var le *providers.LimitError
	switch {
	case errors.Is(err, io.EOF):
		return "", &providers.DecodeError{Source: in.Index, Message: "the AIPerf export is empty"}
	case errors.As(err, &le):
		// No per-request record is this long: a one-line aggregate document, bounded as such.
		return variantAggregate, nil
	case err != nil:
		return "", err
	}
	if bytes.HasPrefix(bytes.TrimPrefix(line, []byte("\ufeff")), []byte("Metric,")) {
		return variantAggregate, nil
	}
	var probe struct {
		Metadata jsontext.Value `json:"metadata"`
		Metrics  jsontext.Value `json:"metrics"`
	}
	if json.Unmarshal(line, &probe) == nil && (probe.Metadata != nil || probe.Metrics != nil) {
		return variantRequests, nil
	}
	return variantAggregate, nil
}

// aiperfMetric is one per-request metric value with its display unit.
type aiperfMetric struct {
	Value *float64 `json:"value"`
	Unit  string   `json:"unit"`
}

// aiperfMetadata is what Flameox reads of a record's metadata: identifiers, timestamps
// and the phase (credit_phase before AIPerf 0.3, benchmark_phase after).
type aiperfMetadata struct {
	XRequestID     *string `json:"x_request_id"`
	ConversationID *string `json:"conversation_id"`
	TurnIndex      *int64  `json:"turn_index"`
	TimestampNS    *int64  `json:"timestamp_ns"`
	RequestStartNS *int64  `json:"request_start_ns"`
	CreditIssuedNS *int64  `json:"credit_issued_ns"`
	CreditPhase    *string `json:"credit_phase"`
	BenchmarkPhase *string `json:"benchmark_phase"`
	WasCancelled   bool    `json:"was_cancelled"`
}

// aiperfMetrics are the per-request metrics Flameox reads (ttft is time_to_first_token in
// some AIPerf versions).
type aiperfMetrics struct {
	InputSequenceLength  *aiperfMetric `json:"input_sequence_length"`
	OutputSequenceLength *aiperfMetric `json:"output_sequence_length"`
	ReasoningTokenCount  *aiperfMetric `json:"reasoning_token_count"`
	TTFT                 *aiperfMetric `json:"ttft"`
	TimeToFirstToken     *aiperfMetric `json:"time_to_first_token"`
	RequestLatency       *aiperfMetric `json:"request_latency"`
	InterTokenLatency    *aiperfMetric `json:"inter_token_latency"`
	InterChunkLatency    *struct {
		Value []float64 `json:"value"`
		Unit  string    `json:"unit"`
	} `json:"inter_chunk_latency"`
}

// aiperfRecord is what Flameox reads of a per-request record; prompts, responses and the
// error's message are skipped unread.
type aiperfRecord struct {
	Metadata *aiperfMetadata `json:"metadata"`
	Metrics  *aiperfMetrics  `json:"metrics"`
	Error    *struct {
		Code *int64  `json:"code"`
		Type *string `json:"type"`
	} `json:"error"`
}

// request is one decoded request, times in integer nanoseconds.
type request struct {
	line                           int
	requestID, conversationID      *string
	turn                           *int64
	phase                          *string
	outcome                        string
	errorType                      *string
	errorCode                      *int64
	input, output, reasoning       *int64
	started, scheduled             *int64
	ttft, latency, tpot, meanGapNS *int64
}

var timeScale = map[string]float64{"ns": 1, "us": 1e3, "µs": 1e3, "ms": 1e6, "s": 1e9, "sec": 1e9}

// cancelledErrors are the error types AIPerf gives a request it cancelled on purpose.
var cancelledErrors = map[string]bool{"RequestCancellationError": true, "CancelledError": true}

// decodeRequest decodes the per-request record on one line.
func decodeRequest(line []byte, index int, lr *lineReader) (*request, error) {
	var rec aiperfRecord
	if err := json.Unmarshal(line, &rec); err != nil {
		return nil, lr.lineError(index, err, "not an AIPerf per-request record (%s)", jsonProblem(err))
	}
	if rec.Metadata == nil && rec.Metrics == nil {
		return nil, lr.lineError(index, nil, "not an AIPerf per-request record (it has neither metadata nor metrics)")
	}
	md, m := rec.Metadata, rec.Metrics
	if md == nil {
		md = &aiperfMetadata{}
	}
	if m == nil {
		m = &aiperfMetrics{}
	}
	r := &request{line: index, requestID: md.XRequestID, conversationID: md.ConversationID, turn: md.TurnIndex,
		phase: md.BenchmarkPhase, scheduled: md.CreditIssuedNS, started: md.RequestStartNS, outcome: "succeeded"}
	if r.phase == nil {
		r.phase = md.CreditPhase
	}
	if r.started == nil {
		r.started = md.TimestampNS
	}
	if rec.Error != nil {
		r.outcome, r.errorCode = "failed", rec.Error.Code
		if t := rec.Error.Type; t != nil {
			name := *t
			if len(name) > 120 {
				name = name[:120]
			}
			r.errorType = &name
			if cancelledErrors[name] {
				r.outcome = "cancelled"
			}
		}
	}
	if md.WasCancelled {
		r.outcome = "cancelled"
	}
	var err error
	tokens := func(name string, v *aiperfMetric) *int64 {
		if v == nil || v.Value == nil || err != nil {
			return nil
		}
		x := *v.Value
		if x < 0 || x != math.Trunc(x) || x > 1<<53 {
			err = lr.lineError(index, nil, "%s is %v, not a token count", name, x)
			return nil
		}
		n := int64(x)
		return &n
	}
	duration := func(name string, v *aiperfMetric) *int64 {
		if v == nil || v.Value == nil || err != nil {
			return nil
		}
		ns, e := toNS(name, *v.Value, v.Unit)
		if e != "" {
			err = lr.lineError(index, nil, "%s", e)
			return nil
		}
		return &ns
	}
	r.input = tokens("input_sequence_length", m.InputSequenceLength)
	r.output = tokens("output_sequence_length", m.OutputSequenceLength)
	r.reasoning = tokens("reasoning_token_count", m.ReasoningTokenCount)
	if m.TTFT == nil {
		m.TTFT = m.TimeToFirstToken
	}
	r.ttft = duration("ttft", m.TTFT)
	r.latency = duration("request_latency", m.RequestLatency)
	r.tpot = duration("inter_token_latency", m.InterTokenLatency)
	if icl := m.InterChunkLatency; icl != nil && len(icl.Value) > 0 && err == nil {
		var sum float64
		for _, g := range icl.Value {
			sum += g
		}
		r.meanGapNS = duration("inter_chunk_latency", &aiperfMetric{Value: &[]float64{sum / float64(len(icl.Value))}[0], Unit: icl.Unit})
	}
	if err != nil {
		return nil, err
	}
	return r, nil
}

// toNS converts a time of a display unit to integer nanoseconds.
func toNS(name string, v float64, unit string) (int64, string) {
	scale, ok := timeScale[unit]
	if !ok {
		return 0, fmt.Sprintf("%s has unit %q, not a time unit", name, unit)
	}
	ns := math.Round(v * scale)
	if math.IsNaN(ns) || ns < 0 || ns > math.MaxInt64/2 {
		return 0, fmt.Sprintf("%s is %v %s, not a duration", name, v, unit)
	}
	return int64(ns), ""
}

// jsonProblem says briefly what is wrong with a JSON record, without library text.
func jsonProblem(err error) string {
	var se *json.SemanticError
	var syn *jsontext.SyntacticError
	switch {
	case errors.As(err, &se):
		return fmt.Sprintf("a value has the wrong type at %s", se.JSONPointer)
	case errors.As(err, &syn):
		return "invalid JSON"
	}
	return "invalid JSON"
}

// requestStats are the statistics of a per-request export: counts, token totals, and a
// series per metric over the successful profiling-phase requests.
type requestStats struct {
	records, successful, failed, cancelled, warmup int
	inputTokens, outputTokens                      int64
	firstStart                                     *int64
	series                                         map[string]*series
}

// requestMetrics are the per-request metrics, in the order the metrics report them; a
// comparison accepts exactly these names.
var requestMetrics = []string{"input_tokens", "output_tokens", "ttft_ns", "latency_ns", "tpot_ns", "mean_itl_ns"}

func (r *request) metric(name string) *int64 {
	switch name {
	case "input_tokens":
		return r.input
	case "output_tokens":
		return r.output
	case "ttft_ns":
		return r.ttft
	case "latency_ns":
		return r.latency
	case "tpot_ns":
		return r.tpot
	case "mean_itl_ns":
		return r.meanGapNS
	}
	return nil
}

// scanRequests reads every record of a per-request export once. With keep, the values of
// every metric are kept for percentiles; otherwise only the metrics named are summed.
func scanRequests(ctx context.Context, in providers.Input, keep bool, only ...string) (*requestStats, error) {
	st := &requestStats{series: map[string]*series{}}
	names := requestMetrics
	if len(only) > 0 {
		names = only
	}
	for _, n := range names {
		st.series[n] = &series{keep: keep}
	}
	err := eachLine(ctx, in, maxAIPerfLine, "AIPerf record", func(line []byte, index int, lr *lineReader) error {
		r, err := decodeRequest(line, index, lr)
		if err != nil {
			return err
		}
		if r.started != nil && (st.firstStart == nil || *r.started < *st.firstStart) {
			v := *r.started
			st.firstStart = &v
		}
		if r.phase != nil && *r.phase == "warmup" {
			st.warmup++
			return nil
		}
		st.records++
		if keep && st.records > maxRequests {
			return &providers.LimitError{Source: in.Index, Limit: maxRequests, Unit: "requests",
				Message: fmt.Sprintf("the AIPerf export holds more than %d requests, the bound of an exact percentile summary", maxRequests)}
		}
		switch r.outcome {
		case "failed":
			st.failed++
		case "cancelled":
			st.cancelled++
		}
		if r.input != nil {
			st.inputTokens += *r.input
		}
		if r.output != nil {
			st.outputTokens += *r.output
		}
		if r.outcome != "succeeded" {
			return nil
		}
		st.successful++
		for n, s := range st.series {
			if v := r.metric(n); v != nil {
				s.add(float64(*v))
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if st.records+st.warmup == 0 {
		return nil, &providers.DecodeError{Source: in.Index, Message: "the AIPerf export holds no record"}
	}
	return st, nil
}

// requestIdentity is the identity a per-request export allows: the issued request count.
func requestIdentity(st *requestStats) identity {
	return newIdentity([]identityField{{axisWorkload, "request_count", false}},
		map[string]any{"workload.request_count": st.records})
}

// requestRow projects a request; times are offsets from the earliest request start,
// since epoch nanoseconds exceed what JSON numbers carry exactly.
func requestRow(r *request, origin *int64) gen.InferenceRequestRow {
	offset := func(t *int64) *int64 {
		if t == nil || origin == nil {
			return nil
		}
		v := *t - *origin
		return &v
	}
	return gen.InferenceRequestRow{LineIndex: int64(r.line), RequestID: r.requestID, ConversationID: r.conversationID,
		TurnIndex: r.turn, Phase: r.phase, Outcome: r.outcome, ErrorType: r.errorType, ErrorCode: r.errorCode,
		InputTokens: r.input, OutputTokens: r.output, ReasoningTokens: r.reasoning,
		StartOffsetNS: offset(r.started), ScheduledOffsetNS: offset(r.scheduled),
		TtftNS: r.ttft, LatencyNS: r.latency, TpotNS: r.tpot, MeanItlNS: r.meanGapNS}
}

// summarizeRequests is summarize_inference of a per-request export.
func summarizeRequests(ctx context.Context, in providers.Input) (*providers.Analysis, error) {
	st, err := scanRequests(ctx, in, true)
	if err != nil {
		return nil, err
	}
	stats := map[string]any{}
	for _, n := range requestMetrics {
		stats[n] = st.series[n].summary()
	}
	var first any
	if st.firstStart != nil {
		first = strconv.FormatInt(*st.firstStart, 10)
	}
	m := map[string]any{"variant": variantRequests, "request_count": st.records, "successful_requests": st.successful,
		"failed_requests": st.failed, "cancelled_requests": st.cancelled, "error_requests": st.failed + st.cancelled,
		"warmup_requests": st.warmup, "input_tokens": st.inputTokens, "output_tokens": st.outputTokens,
		"median_ttft_ns": st.series["ttft_ns"].at(0.5), "p95_latency_ns": st.series["latency_ns"].at(0.95),
		"statistics": stats, "statistics_source": "computed by Flameox from the successful profiling-phase request records",
		"first_request_start_ns": first}
	requestIdentity(st).metrics(m)
	origin := st.firstStart
	a := &providers.Analysis{Provider: gen.Provider{ID: "aiperf", Version: "request-records-v1"}, Metrics: m,
		Rows: lineRows{in: in, records: int64(st.records + st.warmup), max: maxAIPerfLine, what: "AIPerf record",
			row: func(line []byte, index int, lr *lineReader) (any, error) {
				r, err := decodeRequest(line, index, lr)
				if err != nil {
					return nil, err
				}
				return requestRow(r, origin), nil
			}}}
	if st.warmup > 0 {
		a.Limitations = append(a.Limitations, fmt.Sprintf("%d warmup-phase records are listed but excluded from the counts and statistics.", st.warmup))
	}
	if st.successful == 0 {
		a.Limitations = append(a.Limitations, "No request succeeded: the statistics are empty.")
	}
	return a, nil
}

// aiperfStats are the statistic columns of AIPerf's aggregate exports, in row order, with
// their aggregation.
var aiperfStats = [][2]string{{"avg", "mean"}, {"min", "min"}, {"max", "max"}, {"p1", "percentile"}, {"p5", "percentile"},
	{"p10", "percentile"}, {"p25", "percentile"}, {"p50", "percentile"}, {"p75", "percentile"}, {"p90", "percentile"},
	{"p95", "percentile"}, {"p99", "percentile"}, {"std", "std"}, {"sum", "sum"}, {"count", "count"}}

// aiperfIdentity are the configuration fields of the aggregate JSON export's input_config.
var aiperfIdentity = []identityField{
	{axisSystem, "model_names", true},
	{axisWorkload, "endpoint_type", false}, {axisWorkload, "streaming", false},
	{axisWorkload, "input", true}, {axisWorkload, "loadgen", true},
}

// aggregateRows turns one metric's stats block into rows: a single run-level value
// (aggregate, derived and count metrics carry avg alone) is aiperf.<tag>; a distribution
// is aiperf.<tag>.<stat> per statistic present.
func aggregateRows(tag, unit string, stats map[string]float64) []measurement {
	distribution := false
	for k := range stats {
		if k != "avg" && k != "count" {
			distribution = true
		}
	}
	if !distribution {
		if v, ok := stats["avg"]; ok {
			return []measurement{{name: "aiperf." + tag, value: v, unit: unit, aggregation: "aggregate"}}
		}
		return nil
	}
	var out []measurement
	for _, s := range aiperfStats {
		v, ok := stats[s[0]]
		if !ok {
			continue
		}
		u := unit
		if s[0] == "count" {
			u = "records"
		}
		out = append(out, measurement{name: "aiperf." + tag + "." + s[0], value: v, unit: u, aggregation: s[1]})
	}
	return out
}

// decodeAIPerfAggregate reads profile_export_aiperf.json (metric blocks under records, or
// at the top level since schema 1.1) or profile_export_aiperf.csv.
func decodeAIPerfAggregate(in providers.Input) (*aggregates, error) {
	b, err := readDocument(in, "AIPerf aggregate export")
	if err != nil {
		return nil, err
	}
	if t := bytes.TrimLeft(bytes.TrimPrefix(b, []byte("\ufeff")), " \t\r\n"); bytes.HasPrefix(t, []byte("Metric,")) {
		return decodeAIPerfCSV(in, t)
	}
	b, nonFinite := nonfinite.Accept(b)
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, &providers.DecodeError{Source: in.Index, Err: err,
			Message: "the AIPerf export is neither per-request JSON Lines nor an aggregate JSON document or CSV (" + jsonProblem(err) + ")"}
	}
	blocks := map[string]map[string]any{}
	switch recs := doc["records"].(type) {
	case map[string]any:
		for tag, v := range recs {
			if blk, ok := v.(map[string]any); ok {
				blocks[tag] = blk
			}
		}
	case []any:
		for _, v := range recs {
			if blk, ok := v.(map[string]any); ok {
				if tag, ok := blk["tag"].(string); ok {
					blocks[tag] = blk
				}
			}
		}
	default:
		for tag, v := range doc {
			if blk, ok := v.(map[string]any); ok {
				if _, ok := blk["unit"].(string); ok {
					blocks[tag] = blk
				}
			}
		}
	}
	if len(blocks) == 0 {
		return nil, &providers.DecodeError{Source: in.Index, Message: "the AIPerf aggregate JSON holds no metric block (records, or top-level blocks with a unit)"}
	}
	tags := make([]string, 0, len(blocks))
	for t := range blocks {
		tags = append(tags, t)
	}
	sort.Strings(tags)
	a := &aggregates{records: 1}
	for _, tag := range tags {
		blk := blocks[tag]
		unit, _ := blk["unit"].(string)
		stats := map[string]float64{}
		for _, s := range aiperfStats {
			if v, ok := number(blk[s[0]]); ok {
				stats[s[0]] = v
			}
		}
		a.measurements = append(a.measurements, aggregateRows(tag, unit, stats)...)
	}
	values := map[string]any{}
	if cfg, ok := doc["input_config"].(map[string]any); ok {
		ep, _ := cfg["endpoint"].(map[string]any)
		for _, kv := range [][3]any{{"system.model_names", ep, "model_names"}, {"workload.endpoint_type", ep, "type"},
			{"workload.streaming", ep, "streaming"}, {"workload.input", cfg, "input"}, {"workload.loadgen", cfg, "loadgen"}} {
			if m, _ := kv[1].(map[string]any); m != nil {
				if v, ok := m[kv[2].(string)]; ok {
					values[kv[0].(string)] = v
				}
			}
		}
	}
	a.identity = newIdentity(aiperfIdentity, values)
	a.metrics = map[string]any{"variant": variantAggregate}
	for _, k := range []string{"aiperf_version", "schema_version"} {
		if v, ok := doc[k].(string); ok {
			a.metrics[k] = v
		}
	}
	if nonFinite {
		a.limitations = append(a.limitations, runNotes(nil, true, "AIPerf")...)
	}
	return a, nil
}

// csvTags maps the metric headers of AIPerf's CSV whose tag is not the header in snake
// case to the tag its JSON export uses, so both exports name their rows alike.
var csvTags = map[string]string{"Time to First Token": "ttft", "Time to Second Token": "ttst",
	"Total Input Sequence Length": "total_isl", "Total Output Sequence Length": "total_osl",
	"Minimum Request Timestamp": "min_request_timestamp", "Maximum Response Timestamp": "max_response_timestamp"}

var csvHeader = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(.*?)\s*\(([^()]*)\)$`) })

// csvMetric splits "Time to First Token (ms)" into its tag and unit.
func csvMetric(cell string) (string, string) {
	header, unit := strings.TrimSpace(cell), ""
	if m := csvHeader().FindStringSubmatch(header); m != nil {
		header, unit = m[1], m[2]
	}
	if tag, ok := csvTags[header]; ok {
		return tag, unit
	}
	return strings.ToLower(strings.Join(strings.Fields(header), "_")), unit
}

// decodeAIPerfCSV reads AIPerf's CSV export: tables separated by blank lines, a statistics
// table (Metric,avg,min,max,p1,...) and a run-level table (Metric,Value). Tables of
// another header are skipped and said so.
func decodeAIPerfCSV(in providers.Input, b []byte) (*aggregates, error) {
	a := &aggregates{records: 1, identity: newIdentity(aiperfIdentity, nil), metrics: map[string]any{"variant": variantAggregate}}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, maxDocumentBytes)
	var tables [][]string
	var cur []string
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		if strings.TrimSpace(line) == "" {
			if len(cur) > 0 {
				tables = append(tables, cur)
			}
			cur = nil
			continue
		}
		cur = append(cur, line)
	}
	if len(cur) > 0 {
		tables = append(tables, cur)
	}
	for ti, t := range tables {
		r := csv.NewReader(strings.NewReader(strings.Join(t, "\n")))
		recs, err := r.ReadAll()
		if err != nil {
			return nil, &providers.DecodeError{Source: in.Index, Err: err, Details: map[string]any{"table": ti},
				Message: fmt.Sprintf("table %d of the AIPerf CSV is not valid CSV (ragged or badly quoted rows)", ti)}
		}
		header := recs[0]
		if len(header) < 2 || strings.TrimPrefix(header[0], "\ufeff") != "Metric" {
			a.limitations = append(a.limitations, fmt.Sprintf("Table %d of the AIPerf CSV (first column %q) is not a metric table and was not read.", ti, header[0]))
			continue
		}
		for ri, rec := range recs[1:] {
			tag, unit := csvMetric(rec[0])
			stats := map[string]float64{}
			for ci, col := range header[1:] {
				cell := strings.TrimSpace(rec[ci+1])
				if cell == "" || cell == "N/A" {
					continue
				}
				v, err := strconv.ParseFloat(strings.ReplaceAll(cell, ",", ""), 64)
				if err != nil {
					return nil, &providers.DecodeError{Source: in.Index, Details: map[string]any{"table": ti, "row": ri + 1},
						Message: fmt.Sprintf("table %d row %d of the AIPerf CSV: %q is not a number", ti, ri+1, cell)}
				}
				stat := strings.ToLower(strings.TrimSpace(col))
				if stat == "value" {
					stat = "avg"
				}
				stats[stat] = v
			}
			a.measurements = append(a.measurements, aggregateRows(tag, unit, stats)...)
		}
	}
	if len(a.measurements) == 0 {
		return nil, &providers.DecodeError{Source: in.Index, Message: "the AIPerf CSV holds no metric table"}
	}
	a.limitations = append(a.limitations, "AIPerf's CSV rounds every figure to two decimals and records no configuration: its workload and system identities are unavailable.")
	return a, nil
}
