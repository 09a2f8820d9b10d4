package trace

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math"
	"strings"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/providers"
)

// otlpSource is an OpenTelemetry trace, OTLP/JSON or OTLP/protobuf: a span source (its
// slice rows are spans, otlpslices.go), with its own operations (otlpops.go), lifecycle
// (otlplifecycle.go) and, for summarize_trace, view "tables" (otlptables.go). It is no
// slice source: the Nester does not read spans.
type otlpSource struct{ sourceBase }

func (o otlpSource) summarizeSpans(f *filter) *providers.Analysis { return summarizeOTLP(o.in, f) }

func (o otlpSource) windowSpans(start, end int64, f *filter) *providers.Analysis {
	return windowOTLP(o.in, start, end, f)
}

func (o otlpSource) operations(ctx context.Context, _ gen.EffectiveLimits, f *filter) (*providers.Analysis, error) {
	return otlpOperations(ctx, o.in, f)
}

func (o otlpSource) lifecycle(context.Context, gen.EffectiveLimits) (*providers.Analysis, error) {
	return otlpLifecycle(o.in), nil
}

// hasTables: an OTLP trace has view "tables" for summarize_trace (catalog §1.3).
func (o otlpSource) hasTables(op gen.OperationName) bool {
	return op == gen.OperationNameSummarizeTrace
}

func (o otlpSource) tables(ctx context.Context, _ gen.OperationName, f *gen.TableViewFields, _ gen.EffectiveLimits) (*providers.Analysis, error) {
	return otlpTablesAnalysis(ctx, o.in, f.Tables)
}

// readOTLP decodes one OTLP source, calling visit for every span in file order, in the
// encoding otlpIsProto chooses.
func readOTLP(ctx context.Context, in providers.Input, visit func(*OTLPSpan) error) (*OTLPStats, error) {
	return readOTLPTables(ctx, in, visit, nil)
}

// readOTLPTables is readOTLP, also passing every record whole to tables when it is set.
func readOTLPTables(ctx context.Context, in providers.Input, visit func(*OTLPSpan) error, tables otlpTableSink) (*OTLPStats, error) {
	r, err := providers.OpenReadAhead(ctx, in, maxTraceBytes)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	br := bufio.NewReaderSize(r, 64<<10)
	head, _ := br.Peek(4096)
	return decodeOTLP(ctx, br, in.Index, otlpIsProto(in.Path, head), visit, tables)
}

// otlpIsProto chooses the encoding of a source already known to be OTLP (declared, or
// detected). A name ending .json is JSON (the catalog's rule). Otherwise protobuf when
// the head sniffs as an ExportTraceServiceRequest (IsOTLPProto), and also when it does
// not but its first byte past a BOM and white space is neither '{' nor '[': a protobuf
// export whose first resource is larger than the sniffed head, or whose first span
// writes its name before its trace id, is still OTLP when declared so, and a JSON
// document starts with one of those (a protobuf export cannot: both are groups). The
// sniff comes first because a protobuf export starts with 0x0a, a newline. An empty or
// blank file goes to the JSON reader, which refuses it as empty.
func otlpIsProto(path string, head []byte) bool {
	if strings.HasSuffix(strings.ToLower(path), ".json") {
		return false
	}
	if IsOTLPProto(head) {
		return true
	}
	head = bytes.TrimPrefix(head, []byte("\xef\xbb\xbf"))
	head = bytes.TrimLeft(head, " \t\r\n")
	return len(head) > 0 && head[0] != '{' && head[0] != '['
}

// timing is a span's start and duration, when both timestamps are present, the end is
// not before the start, and both fit int64 nanoseconds.
func timing(s *OTLPSpan) (ts, dur int64, ok bool) {
	if s.Start == 0 || s.End == 0 || s.End < s.Start || s.End > math.MaxInt64 {
		return 0, 0, false
	}
	return int64(s.Start), int64(s.End - s.Start), true
}

// otlpTables are the table counts every OTLP result reports.
func otlpTables(st *OTLPStats, m map[string]any) map[string]any {
	if m == nil {
		m = map[string]any{}
	}
	m["resources_count"], m["scopes_count"], m["spans_count"] = st.Resources, st.Scopes, st.Spans
	m["events_count"], m["links_count"] = st.Events, st.Links
	// The whole file is read: the counts are exact.
	m["counts_are_lower_bounds"] = false
	return m
}

func otlpLimitations(st *OTLPStats) []string {
	if st.SpansBeforeResource > 0 {
		return []string{fmt.Sprintf("%d spans were written before their resource; their service.name is unknown to a streaming read (process_name null).", st.SpansBeforeResource)}
	}
	return nil
}
